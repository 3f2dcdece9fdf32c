/* bench/offline/bench_summary — offline mode, internal to bench_run: the figures of every strategy
 * averaged over spaces, and the warm-against-cold summary of --history (data only). */
#ifndef KT_BENCH_SUMMARY_H
#define KT_BENCH_SUMMARY_H

#include <jansson.h>
#include <stddef.h>

#include "bench/offline/bench_args.h"

/* The result name of a strategy run warm: "<strategy>+history". */
void bench_warm_name(const char *strategy, char *buf, size_t cap);
/* "averages" (new reference): per strategy (and warm run) every per-space figure averaged over the
 * spaces that have it (checkpoints, clocks, round_checkpoints: the result's lists of integers);
 * *summary_out (new reference): per strategy the mean "fraction" only. */
json_t *bench_averages(const bench_options *opt, const json_t *spaces, const json_t *checkpoints,
                       const json_t *clocks, const json_t *round_checkpoints, json_t **summary_out);
/* Warm against cold over the spaces that have history (new reference):
 * {"spaces":[names],"first":n,"times":"as recorded"|"shuffled"|"inverted",
 *  "strategies":{"<s>":{"cold":{"10":f,...},"warm":{...}}}} */
json_t *bench_warm_summary(const bench_options *opt, const json_t *spaces,
                           const json_t *checkpoints);

#endif
