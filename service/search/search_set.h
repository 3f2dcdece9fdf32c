/* search/search_set — internal to search/: what the result-driven strategies (anneal, greedy_ils,
 * genetic, gbfs, na2c, the xgb ones, ...) share: a set of the config ids already proposed (and,
 * for random, a map over it), a random unvisited configuration, the state, ask and tell of the
 * strategies that propose one configuration at a time (search_base), a start state proposed
 * once, the best result so far, the score of a told result (failures count as very bad) and the
 * strategies' vtables. */
#ifndef KT_SEARCH_SEARCH_SET_H
#define KT_SEARCH_SEARCH_SET_H

#include "search/searcher_impl.h"

/* Score of a failed trial (status != ok or a non-finite or negative time): worse than any real
 * time, finite so that differences and ratios stay defined. */
#define SEARCH_BAD_SCORE 1e30

/* Open-addressing set of config ids; zero-initialise it (search_set s = {0}). */
typedef struct search_set {
    config_id *slots; /* capacity a power of two, at most half full; UINT64_MAX marks empty */
    uint64_t cap, used;
} search_set;

/* 1 if id was added, 0 if it was already there, -1 if out of memory. */
int search_set_add(search_set *s, config_id id);
int search_set_has(const search_set *s, config_id id);
void search_set_free(search_set *s);

/* The same table with a value per id (random.c's lazy shuffle); zero-initialise it. Call
 * search_map_reserve before each put: the put itself then cannot fail. */
typedef struct search_map {
    search_set keys;
    uint64_t *vals; /* parallel to keys.slots */
} search_map;

/* Room for one more key: 0, or -1 out of memory (the map is unchanged). */
int search_map_reserve(search_map *m);
void search_map_put(search_map *m, config_id key, uint64_t val);
/* 1 with *val set when key is there, else 0. */
int search_map_get(const search_map *m, config_id key, uint64_t *val);
void search_map_free(search_map *m);

/* Proposes (adds to visited) a uniform random configuration not in visited: 1 with *out set, 0
 * when every configuration of sp is visited, -1 out of memory. Rejection sampling, then a scan
 * from a random start once the space is nearly exhausted, so it never loops forever. */
int search_random_unvisited(const space *sp, search_set *visited, kt_rng *rng, config_id *out);

/* Picks, in random order, the first of ids[0..n) not in visited and proposes it (ids is shuffled
 * in place). Returns 1 with *out set, 0 if all are visited, -1 out of memory. */
int search_pick_unvisited(search_set *visited, kt_rng *rng, config_id *ids, int n, config_id *out);

/* A told result as a time to minimise. */
double search_score(const trial_result *r);

/* One proposal of a strategy into *slot: 1 proposed (and added to visited), 0 none (the caller
 * proposes a random unvisited configuration instead), -1 out of memory. */
typedef int (*search_pick_fn)(void *state, config_id *slot);
/* One told result of a strategy: its id and search_score. 0, or -1 to ignore the rest of the
 * results told with it (out of memory). */
typedef int (*search_told_fn)(void *state, config_id id, double t);

/* A start state (a SEARCHER_OPT_START option, searcher_start_id) proposed once, first. */
typedef struct search_start {
    config_id id;
    int pending; /* not proposed yet */
} search_start;

/* Reads option o of strategy into s for a strategy whose "random" start is its first random
 * proposal: then nothing is pending, and rng is not advanced (searcher_start_id draws from a
 * copy), so the strategy's stream is what it was before the option existed. An empty space has
 * no start (nothing pending). 0, or -1 with err (searcher_start_id's errors). */
int search_start_init(search_start *s, const char *strategy, const searcher_option *o,
                      const json_t *options, const space *sp, const kt_rng *rng, kt_error *err);
/* The pending start, once: 1 with *out proposed (added to visited), 0 when none is pending or it
 * was already proposed, -1 out of memory. */
int search_start_take(search_start *s, search_set *visited, config_id *out);

/* What a strategy that proposes one configuration at a time gives search_base_new: its name (for
 * errors), its start option (NULL: none), its pick and its told (NULL: it has its own tell). */
typedef struct search_hooks {
    const char *name;
    const searcher_option *start;
    search_pick_fn pick;
    search_told_fn told;
} search_hooks;

/* What the state of such a strategy begins with (its first member, so that search_base_ask and
 * search_base_tell can be its vtable's ask and tell): the space (borrowed), the strategy's random
 * stream, the ids it proposed, a neighbour scratch list with room for a configuration's ADJACENT
 * and then its HAMMING or PAIR_SCALE neighbours, its start and its hooks. */
typedef struct search_base {
    const space *sp;
    kt_rng rng;
    search_set visited;
    config_id *nb;
    int nb_cap;
    search_start start; /* propose it with search_start_take */
    const search_hooks *h;
} search_base;

/* A zeroed state of size bytes beginning with a search_base, set up for sp: the stream seeded,
 * the scratch allocated, the start read from options (search_start_init). NULL with err
 * (KT_ERR_NO_MEMORY, or the start's errors). The strategy's destroy calls search_base_free, then
 * frees the state. */
void *search_base_new(size_t size, const search_hooks *h, const space *sp, const json_t *options,
                      uint64_t seed, kt_error *err);
void search_base_free(search_base *b);
/* The vtable ask of such a strategy: fills out[0..max) with its pick's proposals, a random
 * unvisited configuration (search_random_unvisited) wherever the pick has none, and stops at the
 * first slot neither fills (space exhausted, out of memory). Returns how many. */
int search_base_ask(void *state, config_id *out, int max);
/* The vtable tell of such a strategy with a told: each result in order, until told returns -1. */
void search_base_tell(void *state, const config_id *ids, const trial_result *r, int n);

/* The best told result so far (zero-initialise it: none yet). */
typedef struct search_best {
    int known;
    config_id id;
    double t;
} search_best;

/* Takes (id, t) when it is the first or strictly below the best: 1, else 0. */
int search_best_offer(search_best *b, config_id id, double t);

extern const searcher_vtable searcher_anneal_vtable;
extern const searcher_vtable searcher_greedy_ils_vtable;
extern const searcher_vtable searcher_genetic_vtable;

#endif
