/* bench/offline/bench_history — warm starts in the offline harness (`ktune bench --history
 * PATH...`): the history spaces, and for one replay space the searcher_history its related spaces
 * give.
 *
 * A history space is related to a target space when their kernel names (the space name up to its
 * first '_', the catalog's rule for replay datasets) and their parameter name sets are equal, and
 * it is not the target itself (same file or same space name: leave-one-device-out). Configurations
 * are mapped by parameter values (space_config_from_json); those not valid in the target are
 * dropped.
 *
 * What the history holds (the design, see bench/README.md): first = the related spaces' best
 * configurations, interleaved by rank across sources (source 0's best, source 1's best, source
 * 0's second, ...), n_first in all; prior = every mapped valid configuration of every related
 * space with its time, source = the related space's index.
 *
 * Lifecycle: bench_history_load -> bench_history_for (per target, fills a bench_seed) ->
 * bench_seed_free -> bench_history_free. */
#ifndef KT_BENCH_HISTORY_H
#define KT_BENCH_HISTORY_H

#include <jansson.h>

#include "core/error.h"
#include "search/searcher.h"
#include "bench/offline/bench_space.h"

#define BENCH_HISTORY_DEFAULT_FIRST 8
#define BENCH_HISTORY_MAX_FIRST     SEARCHER_MAX_FIRST

typedef struct bench_history {
    bench_space *src; /* loaded history spaces */
    int n;
} bench_history;

/* What one target gets: owned arrays and the searcher_history view of them. */
typedef struct bench_seed {
    searcher_history h;
    config_id *first, *prior_id;
    double *prior_ms;
    int *prior_source;
    json_t *sources; /* names of the related spaces used, in source order (owned) */
} bench_seed;

/* What bench_history_load does to the recorded times, for the robustness checks. */
typedef enum {
    BENCH_HISTORY_AS_RECORDED = 0,
    BENCH_HISTORY_SHUFFLED, /* permuted among the valid configurations (seeded): no information */
    BENCH_HISTORY_INVERTED, /* t -> 1/t: every ranking backwards, a history that misleads */
} bench_history_transform;

/* Loads every path (files and folders, as --spaces), times transformed as asked. 0, or -1 with
 * err (h left empty). */
int bench_history_load(const char *const *paths, int n_paths, bench_history_transform tf,
                       bench_history *h, kt_error *err);
void bench_history_free(bench_history *h);

/* The history of target from h (see above). 0 with *seed filled (seed->h empty when nothing is
 * related), or -1 with err. */
int bench_history_for(const bench_history *h, const bench_space *target, int n_first,
                      bench_seed *seed, kt_error *err);
void bench_seed_free(bench_seed *seed);

#endif
