/* bench/bench_ratio — summaries of prediction ratios (a prediction's time or EDP over the best
 * found) shared by the prediction reports (`--predict`, `--accel-predict`): the median and the
 * share within a limit, as the JSON the reports print. */
#ifndef KT_BENCH_BENCH_RATIO_H
#define KT_BENCH_BENCH_RATIO_H

#include <jansson.h>

/* Median of v[0..n) (v is sorted in place): null when n is 0, the string nonfinite when the median
 * is not finite (a failed or invalid prediction), else a real. New reference. */
json_t *bench_ratio_median(double *v, int n, const char *nonfinite);
/* Share of v[0..n) at most limit, in [0, 1]; null when n is 0. New reference. */
json_t *bench_ratio_share(const double *v, int n, double limit);

#endif
