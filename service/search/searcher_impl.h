/* search/searcher_impl — internal to search/: the vtable every strategy fills, the option
 * descriptors searcher.c validates requests against, and the registered strategies. A strategy's
 * create receives options already validated (a JSON object or NULL) and owns the state it returns
 * until destroy. */
#ifndef KT_SEARCH_SEARCHER_IMPL_H
#define KT_SEARCH_SEARCHER_IMPL_H

#include "search/searcher.h"

typedef enum {
    SEARCHER_OPT_INTEGER =
        0,               /* JSON integer (an integer-valued real is accepted) within [min, max] */
    SEARCHER_OPT_NUMBER, /* JSON number within [min, max] */
    SEARCHER_OPT_BOOLEAN,
    SEARCHER_OPT_STRING, /* one of choices ("a|b|c"), or any string when choices is NULL */
    SEARCHER_OPT_START,  /* a start state: one of choices ("random|default|paper") or a JSON object
                            {"param": value, ...} naming a configuration (checked against the space
                            by searcher_start_id at create) */
} searcher_opt_type;

typedef struct searcher_option {
    const char *name;
    searcher_opt_type type;
    const char *default_json; /* the default as JSON text, shown by the catalog */
    double min, max;          /* inclusive range for integers and numbers */
    const char *choices;
    const char *description;
} searcher_option;

typedef struct searcher_vtable {
    const char *name;
    const char *summary; /* one line for GET /v1/strategies */
    const searcher_option *options;
    int n_options;
    void *(*create)(const space *sp, const json_t *options, uint64_t seed, kt_error *err);
    int (*ask)(void *state, config_id *out, int max);
    /* NULL for strategies whose proposals do not depend on results. */
    void (*tell)(void *state, const config_id *ids, const trial_result *r, int n);
    void (*destroy)(void *state);
    /* NULL for strategies without a use for a prior. Receives the history already cleaned by
     * searcher_set_history (first deduplicated and in the space; prior in the space, finite
     * positive times, sources in range) before any ask; the arrays are borrowed for the call.
     * The strategy may mark the first ids as proposed (they are proposed by searcher.c, unless
     * proposes_first). */
    int (*history)(void *state, const searcher_history *h, kt_error *err);
    /* 1: the strategy proposes the first ids itself, as far as its measurements let the history
     * be trusted (auto: search/README.md, warm starts); searcher.c then neither hands them out
     * nor drops them. 0: searcher.c proposes them before anything else. */
    int proposes_first;
    /* 1 for strategies that cannot ask without a surrogate (searcher_needs_surrogate). */
    int needs_surrogate;
    /* NULL for strategies without a use for a surrogate (searcher_set_surrogate is a no-op). Before
     * any ask; fails (state unchanged) when the space is not the surrogate's. */
    int (*set_surrogate)(void *state, surrogate *m, const double *pf, int n, kt_error *err);
    /* NULL for strategies that ignore the oracle. */
    void (*set_oracle)(void *state, searcher_oracle_fn fn, void *arg);
    /* NULL for strategies without counters: else a new JSON object of them (searcher_stats). */
    json_t *(*stats)(const void *state);
} searcher_vtable;

extern const searcher_vtable searcher_random_vtable;
extern const searcher_vtable searcher_exhaustive_vtable;

/* Checks options (NULL or a JSON object) against a strategy's descriptors: KT_ERR_BAD_OPTION for a
 * non-object, an unknown key (hint lists the accepted options) or a value of the wrong type or
 * range. Returns 0 or -1. Exposed for the unit tests. */
int searcher_validate_options(const char *strategy, const searcher_option *opts, int n_opts,
                              const json_t *options, kt_error *err);

/* Typed option readers for create: the option's value if present in options, else its default. */
double searcher_option_number(const searcher_option *o, const json_t *options);
int searcher_option_bool(const searcher_option *o, const json_t *options);
/* Borrowed from options or from the descriptor's default text (copy it if kept); NULL if neither.
 */
const char *searcher_option_string(const searcher_option *o, const json_t *options, char *buf,
                                   size_t cap);

/* The start state a strategy that walks neighbours begins from, read from its SEARCHER_OPT_START
 * option o (the option's value in options, else its default):
 *   "random"  -> a uniform random configuration drawn from rng; *is_random = 1;
 *   "paper"   -> the last configuration in id order: every group's lexicographically last valid
 *                sub-configuration (first parameter at its largest valid value, then the next,
 * ...); on gemm_tiled the paper's s_0 = [[m,1,1,1],[k,1],[n,1,1,1]]; an object -> that
 * configuration (space_config_from_json); "default" -> never reaches a strategy: callers replace it
 * by the kernel's default configuration with searcher_options_resolve_start (searcher.h); met here
 * it is KT_ERR_BAD_OPTION. Returns 0 with *out set, or -1 with err (KT_ERR_BAD_OPTION naming the
 * option and the strategy, the space's message as hint; KT_ERR_BAD_OPTION for an empty space).
 * is_random may be NULL. */
int searcher_start_id(const char *strategy, const searcher_option *o, const json_t *options,
                      const space *sp, kt_rng *rng, config_id *out, int *is_random, kt_error *err);

#endif
