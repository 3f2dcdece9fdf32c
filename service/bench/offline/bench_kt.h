/* bench/offline/bench_kt — the Kernel Tuner reference of the offline harness: summary.csv of
 * shared/data/kerneltuner-dev (set,space,strategy,budget,mean_fraction; Kernel Tuner 1.4.0, 16
 * strategies) read, and the best Kernel Tuner strategy per budget, per space and over spaces. */
#ifndef KT_BENCH_KT_H
#define KT_BENCH_KT_H

#include <jansson.h>

/* Reads summary.csv into {strategy: {space: {budget: fraction}}} (new reference); the header and
 * malformed lines are skipped. NULL when the file cannot be read (errno set). */
json_t *bench_kt_read(const char *path);
/* The best strategy per checkpoint (an array of integers) on the space named space:
 * {"<budget>": {"strategy": name, "fraction": f}, ...}, budgets the reference lacks left out. New
 * reference, NULL without memory. */
json_t *bench_kt_space_best(const json_t *ref, const char *space, const json_t *checkpoints);
/* The same by mean over the result's spaces (an array of objects with "name"); a strategy counts
 * only when it has every space at that budget. */
json_t *bench_kt_mean_best(const json_t *ref, const json_t *spaces, const json_t *checkpoints);
/* The number of strategies in ref. */
size_t bench_kt_strategies(const json_t *ref);

#endif
