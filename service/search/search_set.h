/* search/search_set — internal to search/: what the result-driven strategies (anneal, greedy_ils,
 * genetic) share: a set of the config ids already proposed (and, for random, a map over it), a
 * random unvisited configuration, the score of a told result (failures count as very bad) and the
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

extern const searcher_vtable searcher_anneal_vtable;
extern const searcher_vtable searcher_greedy_ils_vtable;
extern const searcher_vtable searcher_genetic_vtable;

#endif
