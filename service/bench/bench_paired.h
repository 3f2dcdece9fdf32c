/* bench/bench_paired — paired comparisons over problems for the prediction reports (`--predict`,
 * `--accel-predict`): two predictors judged on the same held-out problems, each problem's ratio
 * (prediction / best found; INFINITY: a miss) compared, with the Wilcoxon signed-rank test on the
 * log ratios and Holm's step-down correction over the comparisons of one report.
 *
 * Why Wilcoxon and not a paired t: a miss has an infinite ratio; ranks take it (it is the largest
 * difference, or a tie with another miss), a mean could not. Exact p-values for up to
 * BENCH_PAIRED_EXACT_N non-zero differences without ties (the null distribution counted), the
 * normal approximation with tie and continuity corrections otherwise.
 *
 * Call order: bench_paired_wilcoxon per pair of ratio arrays (pure, no allocation beyond a scratch
 * array it frees); bench_paired_holm over the p-values of a report; bench_paired_report builds a
 * report's "paired" JSON array from its predictors' per-problem ratios (new reference, the caller
 * decrefs); bench_paired_print prints it. bench_paired_pool pools saved reports (several splits)
 * into one paired table per kernel. */
#ifndef KT_BENCH_PAIRED_H
#define KT_BENCH_PAIRED_H

#include <stdio.h>

#include <jansson.h>

#define BENCH_PAIRED_EXACT_N 25

typedef struct bench_paired_result {
    int n_pairs;    /* pairs with both ratios known (a NAN ratio: not measured, pair dropped) */
    int n;          /* of them, with a non-zero difference */
    int a_better;   /* a's ratio lower */
    int b_better;   /* b's ratio lower */
    double w_plus;  /* sum of the ranks of the pairs where a is worse (log a - log b > 0) */
    double w_minus; /* where a is better */
    double z;       /* normal approximation's statistic (NAN when n == 0); negative: a better */
    double p;       /* two-sided p-value; 1 when n == 0 */
    int exact;      /* 1: p from the exact null distribution */
} bench_paired_result;

/* Wilcoxon signed-rank test of a[i] against b[i], i < n, on log a - log b (both infinite: a tie).
 * Returns 0 with out filled, or -1 when n < 0 or out of memory (out zeroed, p NAN). */
int bench_paired_wilcoxon(const double *a, const double *b, int n, bench_paired_result *out);

/* Holm's step-down adjustment of p[0..n) into adj[0..n) (adj may be p): the i-th smallest p times
 * (n - i), made monotone, capped at 1. NAN entries are left out of the family and stay NAN. */
void bench_paired_holm(const double *p, double *adj, int n);

/* The report's "paired" array: for each learned predictor of learned[] and each baseline of
 * baselines[] present in preds (an object of predictor -> {"per_problem": {"top1": [...],
 * "top5": [...]}}, each array a ratio per held-out problem in one order, "miss" for an infinite
 * ratio, null for one not measured), one row per metric (top1, top5): {a, b, metric, n_pairs, n,
 * a_better, b_better, w_plus, w_minus, z, p, exact, p_holm} with Holm's correction over all rows.
 * NULL when out of memory. */
json_t *bench_paired_report(const json_t *preds, const char *const *learned, int n_learned,
                            const char *const *baselines, int n_baselines);

/* Pools n `--predict --json` results (each a report of one kernel and split): per kernel, the
 * held-out problems of every run that has all of learned[] and baselines[], concatenated (a run's
 * "per_problem" arrays, or for reports written before them its "heldout" rows: "failed" a miss, a
 * top-5 with an unmeasured member left out), and bench_paired_report over them. The result:
 * {"mode": "predict-pool", "runs": n, "kernels": {"<kernel>": {"runs", "problems", "paired"}}};
 * NULL when out of memory. */
json_t *bench_paired_pool(json_t *const *results, int n, const char *const *learned, int n_learned,
                          const char *const *baselines, int n_baselines);
/* Prints a bench_paired_pool result. */
void bench_paired_pool_print(const json_t *pool, FILE *out);

/* Prints the "paired" array of a report (nothing when it has none). */
void bench_paired_print(const json_t *paired, FILE *out);

/* A ratio as the per-problem arrays hold it: a number, "miss" for INFINITY, null for NAN. */
json_t *bench_paired_ratio_json(double r);

#endif
