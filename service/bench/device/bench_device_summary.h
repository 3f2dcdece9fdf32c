/* bench/device/bench_device_summary — the results of a device bench as data: per row (a strategy
 * with its options) the figures over seeds at the evaluation and time checkpoints, box data, the
 * best configuration and the runs as JSON. Internal to bench/. */
#ifndef KT_BENCH_DEVICE_SUMMARY_H
#define KT_BENCH_DEVICE_SUMMARY_H

#include <jansson.h>

#include "bench/device/bench_device_impl.h"

/* The "strategies" member of the result (shape in bench_device.h): per row of ctx the checkpoint
 * figures over seeds (relative to the reference row), at the time checkpoints tcps (seconds of
 * the modelled clock) too, the best configuration and the runs. runs[r * ctx->seeds + k] is row
 * r, seed k. New reference, NULL when out of memory. */
json_t *bench_device_summary_json(const bench_device_ctx *ctx, const bench_device_run_state *runs,
                                  const int *checkpoints, int n_checkpoints, const double *tcps,
                                  int n_tcps, const char *reference);

#endif
