/* bench/bench_run — `ktune bench` offline: the benchmark harness for searchers. Replays Kernel
 * Tuner cache files in process (no server, no database) with the tune_cache protocol of
 * kerneltuner-dev, so its fractions of the optimum compare with Kernel Tuner's reference curves.
 * bench_run does the work and returns the full result as JSON; bench_report.h formats it;
 * bench_main.h is the subcommand. */
#ifndef KT_BENCH_RUN_H
#define KT_BENCH_RUN_H

#include <jansson.h>

#include "core/error.h"
#include "bench/bench_args.h"

/* Runs every strategy on every space. Returns the result (new reference):
 * {"budget","seeds","include_failed","checkpoints":[25,...],"clock_budgets_s":[60,...],
 *  "spaces":[{"name","file","n_configs","n_valid","optimum_ms","strategies":{"<s>":{
 *    "fraction":{"25":f,...},"evals_to_5pct":{"median","success_rate"},
 *    "clock_fraction":{"60":f,...},"clock_to_5pct_s":{"median","success_rate"},"overhead_us",
 *    "runs":[{"seed","evaluations","best_so_far":[ms or null,...],"cum_cost_s":[...]}]}}}],
 *  "summary":{"<s>":{"25":f,...}}, "averages":{"<s>":{...same as per space, without runs}}}
 * NULL with err set on failure (unreadable space, unknown strategy, a repeated proposal). */
json_t *bench_run(const bench_options *opt, kt_error *err);

#endif
