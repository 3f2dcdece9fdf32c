/* bench/offline/bench_score — the autotuning-methodology score (see bench_score.h and the README).
 */
#include "bench/offline/bench_score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int bench_score_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Random-search evaluations to the cutoff p: the target time opt + (median - opt)(1 - p); with i
 * the valid configurations slower than the target, the expected number of draws without
 * replacement until one of the V - i others is drawn, ceil(i / (V + 1 - i)); at least 1. */
static int bench_score_fevals(const bench_score_range *r, double p)
{
    double target = r->optimum_ms + (r->median_ms - r->optimum_ms) * (1.0 - p);
    size_t slower = 0;
    while (slower < r->n_valid && r->sorted[r->n_valid - 1 - slower] > target)
        slower++;
    double f = ceil((double)slower / ((double)r->n_valid + 1.0 - (double)slower));
    return f < 1 ? 1 : (int)f;
}

void bench_score_range_free(bench_score_range *r)
{
    free(r->sorted);
    memset(r, 0, sizeof *r);
}

int bench_score_range_init(const bench_space *bs, bench_score_range *r, kt_error *err)
{
    double *cost = NULL, sum_cost = 0;
    int rc = -1;

    memset(r, 0, sizeof *r);
    r->sorted = malloc((bs->valid ? bs->valid : 1) * sizeof *r->sorted);
    cost = malloc((bs->n ? bs->n : 1) * sizeof *cost);
    if (!r->sorted || !cost) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (uint64_t id = 0; id < bs->n; id++) {
        if (!isnan(bs->time[id]) && r->n_valid < bs->valid)
            r->sorted[r->n_valid++] = bs->time[id];
        cost[id] = bs->cost_s[id];
        sum_cost += bs->cost_s[id];
    }
    if (r->n_valid == 0) {
        kt_error_set(err, KT_ERR_BAD_SPACE, "space %s: no valid time for the score", bs->name);
        goto out;
    }
    qsort(r->sorted, r->n_valid, sizeof *r->sorted, bench_score_cmp);
    qsort(cost, bs->n, sizeof *cost, bench_score_cmp);
    size_t v = r->n_valid, n = bs->n;
    r->optimum_ms = r->sorted[0];
    r->median_ms = v % 2 ? r->sorted[v / 2] : (r->sorted[v / 2 - 1] + r->sorted[v / 2]) / 2.0;
    /* Random search over the space draws failed configurations too (--include-failed): per valid
     * evaluation it spends n / V draws. */
    r->time_per_eval_s = sum_cost / (double)v;
    double median_cost = n % 2 ? cost[n / 2] : (cost[n / 2 - 1] + cost[n / 2]) / 2.0;
    r->eval_cost_s = median_cost * (double)n / (double)v;
    r->fevals_start = bench_score_fevals(r, BENCH_SCORE_CUTOFF_START);
    r->fevals_end = bench_score_fevals(r, BENCH_SCORE_CUTOFF_END);
    r->t_start_s = r->fevals_start * r->eval_cost_s;
    r->t_end_s = r->fevals_end * r->eval_cost_s;
    rc = 0;
out:
    free(cost);
    if (rc < 0)
        bench_score_range_free(r);
    return rc;
}

double bench_score_baseline_ms(const bench_score_range *r, double t_s)
{
    double m = r->time_per_eval_s > 0 ? floor(t_s / r->time_per_eval_s + 0.5) : 1.0;
    if (m < 1)
        m = 1;
    /* The best of m draws without replacement from V has expected rank (V + 1) / (m + 1) (1 = the
     * optimum); the baseline is the time at that rank, rounded. */
    double rank = floor(((double)r->n_valid + 1.0) / (m + 1.0) + 0.5);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    if (i >= r->n_valid)
        i = r->n_valid - 1;
    return r->sorted[i];
}

json_t *bench_score_range_json(const bench_score_range *r)
{
    return json_pack("{s:f, s:f, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "cutoff_start",
                     BENCH_SCORE_CUTOFF_START, "cutoff_end", BENCH_SCORE_CUTOFF_END, "points",
                     BENCH_SCORE_POINTS, "fevals_start", r->fevals_start, "fevals_end",
                     r->fevals_end, "t_start_s", r->t_start_s, "t_end_s", r->t_end_s,
                     "time_per_eval_s", r->time_per_eval_s, "eval_cost_s", r->eval_cost_s,
                     "median_ms", r->median_ms);
}

/* The rank (0 = the optimum) of time t among the valid times: the first index holding a time >= t
 * (ties take the best rank); V - 1 for INFINITY / NAN (nothing found yet). */
static double bench_score_rank(const bench_score_range *r, double t)
{
    size_t lo = 0, hi = r->n_valid - 1;
    if (!isfinite(t))
        return (double)(r->n_valid - 1);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sorted[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (double)lo;
}

double bench_score_runs(const bench_score_range *r, int n, const double *const *best,
                        const double *const *clock_s, const int *evals, double *beyond)
{
    int *at = NULL;
    double *rank = NULL, sum = 0, res = NAN;
    long used = 0, late = 0;

    if (beyond)
        *beyond = NAN;
    if (n < 1 || !(r->t_end_s > 0))
        goto out;
    at = calloc((size_t)n, sizeof *at);
    rank = malloc((size_t)n * sizeof *rank);
    if (!at || !rank)
        goto out;
    for (int i = 0; i < n; i++)
        rank[i] = (double)(r->n_valid - 1);
    for (int j = 0; j < BENCH_SCORE_POINTS; j++) {
        double t = r->t_start_s +
                   (r->t_end_s - r->t_start_s) * (double)j / (double)(BENCH_SCORE_POINTS - 1);
        double mean_rank = 0;
        for (int i = 0; i < n; i++) {
            int moved = 0;
            while (at[i] < evals[i] && clock_s[i][at[i]] <= t) {
                at[i]++;
                moved = 1;
            }
            if (moved)
                rank[i] = bench_score_rank(r, best[i][at[i] - 1]);
            mean_rank += rank[i];
            late += at[i] == evals[i];
        }
        /* The runs' curve at t: the time at their mean rank, rounded (as the baseline is the time
         * at random search's expected rank). */
        size_t k = (size_t)floor(mean_rank / n + 0.5);
        double curve = r->sorted[k < r->n_valid ? k : r->n_valid - 1];
        double base = bench_score_baseline_ms(r, t);
        if (base > r->optimum_ms) {
            sum += (curve - base) / (r->optimum_ms - base);
            used++;
        }
    }
    if (beyond)
        *beyond = (double)late / ((double)n * BENCH_SCORE_POINTS);
    if (used > 0)
        res = sum / (double)used;
out:
    free(at);
    free(rank);
    return res;
}
