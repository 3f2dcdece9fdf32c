/* bench/bench_device_summary — the results of a device bench as data: per strategy the figures
 * over seeds at the checkpoints, the best configuration and the runs as JSON. Internal to bench/.
 */
#ifndef KT_BENCH_DEVICE_SUMMARY_H
#define KT_BENCH_DEVICE_SUMMARY_H

#include <jansson.h>

#include "bench/bench_device_args.h"
#include "bench/bench_device_impl.h"

/* The "strategies" member of the result: per strategy the checkpoint figures over seeds (relative
 * to the reference strategy), the best configuration and the runs. runs[s * seeds + k] is strategy
 * s, seed k. New reference, NULL when out of memory. */
json_t *bench_device_summary_json(const bench_device_ctx *ctx, const bench_device_options *opt,
                                  const bench_device_run_state *runs, const int *checkpoints,
                                  int n_checkpoints, const char *reference);

#endif
