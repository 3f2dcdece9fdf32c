/* search/searcher — every search strategy behind one ask/tell interface. Searchers never measure:
 * they propose configurations of a space and learn from results. Deterministic: the same space,
 * options, seed and sequence of ask/tell calls give the same proposals, which is how a job resumes
 * after a crash (its stored trials are re-fed in the same batches).
 *
 * Lifecycle: searcher_new -> (searcher_ask, searcher_tell)* -> searcher_free. The searcher borrows
 * the space (it must outlive the searcher) and copies what it needs from options. */
#ifndef KT_SEARCH_SEARCHER_H
#define KT_SEARCH_SEARCHER_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"
#include "core/trial.h"
#include "model/surrogate.h"
#include "space/space.h"

typedef struct searcher searcher;

/* name: a strategy from searcher_catalog_json(). options: JSON object or NULL; an unknown option or
 * a value of the wrong type or range is KT_ERR_BAD_OPTION naming the accepted options. An unknown
 * name is KT_ERR_UNKNOWN_STRATEGY whose hint lists the valid names. */
searcher *searcher_new(const char *name, const space *sp, const json_t *options, uint64_t seed,
                       kt_error *err);
/* Writes up to max (> 0) configurations never proposed before by this searcher; returns how many. 0
 * means the searcher has nothing more to propose (space exhausted or the strategy converged). */
int searcher_ask(searcher *s, config_id *out, int max);
/* Results for configurations this searcher proposed, in any order. */
void searcher_tell(searcher *s, const config_id *ids, const trial_result *r, int n);

/* A searcher whose strategy runs outside search/ (cli's remote searcher: ktuned's, reached
 * through ask/tell): ask and tell behave as searcher_ask and searcher_tell, destroy frees state.
 * name (borrowed, outlives the searcher) is what searcher_name answers. History, the oracle and a
 * surrogate are not passed on (searcher_set_history keeps only its first ids; the setters are
 * no-ops). Returns the searcher, which owns state from then on (searcher_free calls destroy), or
 * NULL with err (KT_ERR_BAD_REQUEST for a missing operation, KT_ERR_NO_MEMORY), state still the
 * caller's. */
typedef struct searcher_ops {
    const char *name;
    int (*ask)(void *state, config_id *out, int max);
    void (*tell)(void *state, const config_id *ids, const trial_result *r, int n);
    void (*destroy)(void *state);
} searcher_ops;
searcher *searcher_new_ops(const searcher_ops *ops, void *state, const space *sp, kt_error *err);

/* History for a warm start: what related targets (the same kernel on other devices or problems)
 * suggest, mapped into this searcher's space by the caller.
 *
 * first: configurations to propose before anything else, in this order; duplicates and ids outside
 * the space are dropped (at most SEARCHER_MAX_FIRST are kept). Their results are told to the
 * strategy like its own; should the strategy propose one of them later, the searcher tells it the
 * known result again instead of returning it (no repeats), or drops it while still pending.
 * Except auto: it proposes them itself, in this order, as suggestions its measurements may
 * overrule (search/README.md, warm starts).
 * prior: observations of related targets (ids in this space, time in ms, and source: an index per
 * related target, 0..SEARCHER_MAX_SOURCES-1, so that a strategy can normalise each source on its
 * own: another GPU's times differ in scale). They are NOT told results: nothing is proposed because
 * of them being measured here. Strategies that cannot use a prior ignore it (auto uses it, see
 * search/README.md). Ids outside the space, non-finite or non-positive times and bad sources are
 * skipped; at most SEARCHER_MAX_PRIOR are read.
 *
 * The arrays are copied. Deterministic: the same history gives the same proposals, so a job that
 * resumes by replay must be given the same history again (the job records it). */
#define SEARCHER_MAX_FIRST   256
#define SEARCHER_MAX_PRIOR   200000
#define SEARCHER_MAX_SOURCES 64
typedef struct searcher_history {
    const config_id *first;
    int n_first;
    const config_id *prior_id;
    const double *prior_ms;
    const int *prior_source;
    int n_prior;
} searcher_history;

/* Call once, after searcher_new and before the first searcher_ask. Returns 0, or -1 with err:
 * KT_ERR_BAD_REQUEST when asks were made already or a count is negative or over its limit (the
 * searcher is unchanged), KT_ERR_NO_MEMORY. NULL h or an empty history is a no-op. */
int searcher_set_history(searcher *s, const searcher_history *h, kt_error *err);
/* How many of the kept first configurations were proposed so far (for reports), and how many
 * were kept. */
int searcher_first_proposed(const searcher *s);
int searcher_first_count(const searcher *s);
void searcher_free(searcher *s);
const char *searcher_name(const searcher *s);

/* A cheap validity check of the device for a configuration of the searcher's space: 1 valid, 0
 * invalid, -1 unknown (the device has no such check). */
typedef int (*searcher_oracle_fn)(void *arg, config_id id); /* 1 valid, 0 invalid, -1 unknown */
/* Optional cheap validity check of the device (accel: the cost model's limits), before ask. The
 * searcher calls fn from the thread that asks; arg is borrowed. Strategies without a use for it
 * ignore it (only mindmap uses it: it never proposes a configuration the oracle calls invalid). */
void searcher_set_oracle(searcher *s, searcher_oracle_fn fn, void *arg);
/* The strategy's counters so far as a new JSON object the caller frees, NULL when it keeps none
 * (mindmap: where its proposals came from, {"gradient","fallback","injection","start","random",
 * "restart"}: counts of proposals that sum to the proposals made). */
json_t *searcher_stats(const searcher *s);
/* Strategies that need a trained surrogate (mindmap): 1. */
int searcher_needs_surrogate(const char *name);
/* Borrowed surrogate (outlives the searcher; the searcher uses it from one thread) and the
 * problem's features (copied). KT_ERR_BAD_REQUEST when the space's parameters are not the
 * surrogate's; a no-op for strategies that do not use one. Before the first ask. */
int searcher_set_surrogate(searcher *s, surrogate *m, const double *problem_feat, int n,
                           kt_error *err);

/* The "start" option of the strategies that walk neighbours (gbfs, na2c, anneal, greedy_ils) may be
 * "default": the kernel variant's default configuration, which only the caller knows. Returns a new
 * reference to options with "start": "default" replaced by default_config (a {"param": value}
 * object, borrowed; copied), or options itself (a new reference; NULL stays NULL) when it asks for
 * no default. NULL with err (KT_ERR_BAD_OPTION, with a hint to pass a configuration or "paper")
 * when it asks for "default" and default_config is NULL. Call before searcher_new (the job driver,
 * the /v1/tune validation and `ktune bench` do). */
json_t *searcher_options_resolve_start(const json_t *options, const json_t *default_config,
                                       kt_error *err);

/* 1 if the strategy's proposals depend on told results, 0 if they do not (random, exhaustive: any
 * batch size gives the same sequence) or the name is unknown. */
int searcher_learns(const char *name);
/* 1 if name is a known strategy. */
int searcher_exists(const char *name);
/* Comma-separated strategy names, for hints ("random, exhaustive"). Static storage. */
const char *searcher_names(void);
/* "did you mean 'bo'?" before err's hint when a strategy is close to name, or name is a common
 * alias of one ("bayes", "sa", "ga", "grid", ...; core/suggest.h's rule otherwise). */
void searcher_suggest(const char *name, kt_error *err);
/* [{"name": ..., "summary": ..., "options": {"opt": {"type":..., "default":...,
 * "description":...}}}] New reference. */
json_t *searcher_catalog_json(void);

#endif
