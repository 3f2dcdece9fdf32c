/* bench/offline/bench_score — the autotuning-methodology score of Willemsen et al. (FGCS 2024, "A
 * methodology for comparing optimization algorithms for auto-tuning"), our own implementation:
 * per space, the strategy's mean best time over a time range, standardised so that 0 is the
 * calculated random search without replacement and 1 the optimum. What is computed, and where it
 * differs from the paper's package (autotuning_methodology), is in service/bench/README.md.
 *
 * Lifecycle: bench_score_range_init (on a loaded bench_space) -> bench_score_* ->
 * bench_score_range_free. The range owns its sorted copy of the space's valid times. */
#ifndef KT_BENCH_SCORE_H
#define KT_BENCH_SCORE_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"
#include "bench/offline/bench_space.h"

/* The range starts where random search is expected to have come 1% of the way from the median
 * time to the optimum, and ends where it is expected to have come 95% of the way. */
#define BENCH_SCORE_CUTOFF_START 0.01
#define BENCH_SCORE_CUTOFF_END   0.95
#define BENCH_SCORE_POINTS       10000 /* time points, evenly spaced, both ends included */

/* The time range and the baseline of one space. */
typedef struct bench_score_range {
    double *sorted;         /* valid times, ms, ascending (owned) */
    size_t n_valid;         /* entries of sorted (>= 1) */
    double optimum_ms;      /* sorted[0] */
    double median_ms;       /* median valid time */
    double time_per_eval_s; /* baseline: recorded seconds per valid evaluation of random search */
    double eval_cost_s;     /* median recorded cost of an evaluation, per valid one */
    int fevals_start;       /* random-search evaluations to the start cutoff */
    int fevals_end;         /* ... to the end cutoff */
    double t_start_s;       /* fevals_start * eval_cost_s */
    double t_end_s;         /* fevals_end * eval_cost_s */
} bench_score_range;

/* The range and baseline of bs (valid times; with include_failed the failed configurations'
 * cost counts too). 0, or -1 with err (r freed). */
int bench_score_range_init(const bench_space *bs, bench_score_range *r, kt_error *err);
void bench_score_range_free(bench_score_range *r);
/* The calculated random search's best time (ms) after t_s recorded seconds. */
double bench_score_baseline_ms(const bench_score_range *r, double t_s);
/* {"cutoff_start","cutoff_end","points","fevals_start","fevals_end","t_start_s","t_end_s",
 *  "time_per_eval_s","eval_cost_s","median_ms"}: new reference, NULL without memory. */
json_t *bench_score_range_json(const bench_score_range *r);

/* The score of n runs: run i made evals[i] evaluations, best[i][k] the best time (ms, INFINITY or
 * NAN before the first valid one) after evaluation k and clock_s[i][k] the seconds at its end
 * (recorded cost plus searcher time). At each of the BENCH_SCORE_POINTS times t the runs' curve
 * is the valid time at their mean rank (0 = the optimum; before a run's first valid result its
 * rank is the worst), rounded; the score is the mean over t of (curve - baseline) / (optimum -
 * baseline), over the t whose baseline is above the optimum. *beyond (optional): the share of (run,
 * point) pairs later than the run's last evaluation (the run's last best carried forward). NAN when
 * no point has a baseline above the optimum (nothing to standardise) or n < 1. */
double bench_score_runs(const bench_score_range *r, int n, const double *const *best,
                        const double *const *clock_s, const int *evals, double *beyond);

#endif
