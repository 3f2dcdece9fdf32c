/* bench/offline/bench_ablation — offline mode, internal to bench_run and bench_report: each named
 * variant (bench_strategy.h: "na2c/epsilon=1") against the strategy it varies, when both ran:
 * Welch's t-test over seeds of the fraction of the optimum at every checkpoint, on each space and
 * on the mean over the spaces (a seed's figure: its mean over the spaces). The p-values are
 * two-sided and not corrected for the number of tests.
 *
 * Call order: bench_run collects each strategy's per-seed fractions ("fraction_seeds"), then
 * bench_ablations makes the result's "ablations"; bench_print_ablations prints them. */
#ifndef KT_BENCH_ABLATION_H
#define KT_BENCH_ABLATION_H

#include <jansson.h>
#include <stdio.h>

#include "bench/offline/bench_args.h"

/* [{"variant","base","space" (a space's name, or "mean" over the spaces),"checkpoint" (int),
 *   "mean_variant","mean_base","t","df","p" (null when undefined: under 2 seeds)}] (new
 * reference), in the order of opt's strategies, each space, then the mean; [] when no variant's
 * strategy ran too. spaces: the result's "spaces" (each strategy's "fraction_seeds"). */
json_t *bench_ablations(const bench_options *opt, const json_t *spaces, const json_t *checkpoints);
/* The table of result's "ablations", nothing when it has none (formats only). */
void bench_print_ablations(const json_t *result, FILE *out);

#endif
