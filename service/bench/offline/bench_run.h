/* bench/offline/bench_run — `ktune bench` offline: the benchmark harness for searchers. Replays
 * Kernel Tuner cache files in process (no server, no database) with the tune_cache protocol of
 * kerneltuner-dev, so its fractions of the optimum compare with Kernel Tuner's reference curves.
 * bench_run does the work and returns the full result as JSON; bench_report.h formats it;
 * bench_main.h is the subcommand. */
#ifndef KT_BENCH_RUN_H
#define KT_BENCH_RUN_H

#include <jansson.h>

#include "core/error.h"
#include "bench/offline/bench_args.h"

/* Runs every strategy on every space (opt->batch 0 counts as 1). Returns the result (new
 * reference):
 * {"budget","seeds","batch","include_failed","checkpoints":[25,...],"round_checkpoints":[5,...],
 *  "clock_budgets_s":[60,...],
 *  "spaces":[{"name","file","n_configs","n_valid","optimum_ms",
 *    "score_range":{...bench_score_range_json},"kt_best":{"25":{"strategy","fraction"},...},
 *    "strategies":{"<s>":{
 *    "fraction":{"25":f,...},"fraction_seeds":{"25":[f per
 * seed],...},"evals_to_5pct":{"median","success_rate"},
 *    "clock_fraction":{"60":f,...},"clock_to_5pct_s":{"median","success_rate"},"overhead_us",
 *    "overhead_at_400_us" (null below 350 results),"rounds_fraction":{"5":f,...},
 *    "rounds_to_5pct":{"median","success_rate"},"score","score_beyond",
 *    "runs":[{"seed","evaluations","rounds","best_so_far":[ms or
 * null,...],"cum_cost_s":[...]}]}}}], "summary":{"<s>":{"25":f,...}}, "averages":{"<s>":{...same as
 * per space, without runs}}, "ablations":[bench_ablation.h's tests of named variants], with
 * opt->kt_reference: "kt_reference" (the file), "kt_strategies" (how many), "kt_best" (the best
 * Kernel Tuner strategy per checkpoint by mean over the spaces), or "kt_error"}, with opt->maker
 * "remote": true. kt_best per space is there only with a readable reference. The score is
 * bench_score.h's. NULL with err set on failure (unreadable space, unknown strategy, a repeated
 * proposal). */
json_t *bench_run(const bench_options *opt, kt_error *err);

#endif
