/* bench/bench_stats — the reports' statistics: mean, variance, quantiles, box data, the
 * regularised incomplete beta function, Student's t p-values and Welch's t-test (see
 * bench_stats.h). */
#include "bench/bench_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STATS_BETA_MIN_ITER 300
#define STATS_BETA_MAX_ITER 2000000
#define STATS_BETA_EPS      1e-15
#define STATS_BETA_TINY     1e-300 /* keeps Lentz's denominators off zero */

double bench_stats_mean(const double *v, int n)
{
    double sum = 0;
    if (n < 1)
        return NAN;
    for (int i = 0; i < n; i++)
        sum += v[i];
    return sum / n;
}

double bench_stats_variance(const double *v, int n)
{
    double m, ss = 0;
    if (n < 2)
        return NAN;
    m = bench_stats_mean(v, n);
    for (int i = 0; i < n; i++)
        ss += (v[i] - m) * (v[i] - m);
    return ss / (n - 1);
}

double bench_stats_quantile(const double *sorted, int n, double p)
{
    double h;
    int lo;
    if (n < 1 || !(p >= 0 && p <= 1))
        return NAN;
    h = (n - 1) * p;
    lo = (int)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    /* equal neighbours (two INFINITY) must not give INFINITY * 0 */
    if (sorted[lo] == sorted[lo + 1] || h == lo)
        return sorted[lo];
    return sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]);
}

static int stats_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    int nx = !isfinite(x) || isnan(x), ny = !isfinite(y) || isnan(y);
    if (nx != ny) /* non-finite last */
        return nx - ny;
    if (nx)
        return 0;
    return x < y ? -1 : x > y;
}

bench_stats_box_data bench_stats_box(double *v, int n)
{
    bench_stats_box_data b = {0, NAN, NAN, NAN, NAN, NAN, NAN};
    if (n < 1)
        return b;
    qsort(v, (size_t)n, sizeof *v, stats_cmp);
    b.n = n;
    b.min = v[0];
    b.q1 = bench_stats_quantile(v, n, 0.25);
    b.median = bench_stats_quantile(v, n, 0.5);
    b.mean = bench_stats_mean(v, n);
    b.q3 = bench_stats_quantile(v, n, 0.75);
    b.max = v[n - 1];
    return b;
}

/* The continued fraction of I_x(a, b) (without its prefactor), by the modified Lentz method: the
 * even and odd terms d_{2m} = m(b-m)x / ((a+2m-1)(a+2m)), d_{2m+1} = -(a+m)(a+b+m)x /
 * ((a+2m)(a+2m+1)). Converges quickly for x < (a+1)/(a+b+2). */
static double stats_beta_cf(double a, double b, double x)
{
    double c = 1, d = 1 - (a + b) * x / (a + 1), f;
    /* it takes O(sqrt(max(a, b))) steps: a t-test at df 10^6 needs thousands */
    double lim = 20 * sqrt(a > b ? a : b);
    int iters = lim < STATS_BETA_MIN_ITER   ? STATS_BETA_MIN_ITER
                : lim > STATS_BETA_MAX_ITER ? STATS_BETA_MAX_ITER
                                            : (int)lim;
    if (fabs(d) < STATS_BETA_TINY)
        d = STATS_BETA_TINY;
    d = 1 / d;
    f = d;
    for (int m = 1; m <= iters; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            if (fabs(d) < STATS_BETA_TINY)
                d = STATS_BETA_TINY;
            c = 1 + num / c;
            if (fabs(c) < STATS_BETA_TINY)
                c = STATS_BETA_TINY;
            d = 1 / d;
            f *= c * d;
            if (odd && fabs(c * d - 1) < STATS_BETA_EPS)
                return f;
        }
    }
    return f; /* not converged: does not happen for the a, b a t-test gives */
}

/* ln Gamma(a + b) - ln Gamma(a). For large a the two lgamma values are huge and nearly equal, so
 * their difference loses its digits; there the asymptotic series b ln a + (B2(b) - B2) / (2a) -
 * (B3(b) - B3) / (6a^2) + (B4(b) - B4) / (12a^3) (Bernoulli polynomials and numbers) is exact to
 * double precision. */
static double stats_lgamma_ratio(double a, double b)
{
    if (a < 1e4 || b > 10)
        return lgamma(a + b) - lgamma(a);
    double b2 = b * b - b, b3 = b * b * b - 1.5 * b * b + 0.5 * b;
    double b4 = b * b * b * b - 2 * b * b * b + b * b;
    return b * log(a) + b2 / (2 * a) - b3 / (6 * a * a) + b4 / (12 * a * a * a);
}

/* I_x(a, b) with y = 1 - x given by the caller: for x near 1 (a t-test at large df), 1 - x
 * computed from x has lost most of its digits, while the caller can compute y directly. */
static double stats_betai_xy(double a, double b, double x, double y)
{
    double lead;
    if (x <= 0)
        return 0;
    if (y <= 0)
        return 1;
    /* the log of whichever of x, y is near 1 from the other one, which keeps its digits */
    double lx = x < 0.5 ? log(x) : log1p(-y), ly = y < 0.5 ? log(y) : log1p(-x);
    double lbeta =
        a >= b ? stats_lgamma_ratio(a, b) - lgamma(b) : stats_lgamma_ratio(b, a) - lgamma(a);
    lead = exp(lbeta + a * lx + b * ly);
    if (x < (a + 1) / (a + b + 2))
        return lead * stats_beta_cf(a, b, x) / a;
    return 1 - lead * stats_beta_cf(b, a, y) / b;
}

double bench_stats_betai(double a, double b, double x)
{
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1))
        return NAN;
    return stats_betai_xy(a, b, x, 1 - x);
}

double bench_stats_t_p_two_sided(double t, double df)
{
    if (isnan(t) || !(df > 0))
        return NAN;
    if (isinf(t))
        return 0;
    return stats_betai_xy(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t));
}

int bench_stats_welch(const double *a, int n_a, const double *b, int n_b,
                      bench_stats_welch_result *out)
{
    double sa, sb, se2;

    memset(out, 0, sizeof *out);
    out->n_a = n_a;
    out->n_b = n_b;
    out->t = out->df = out->p = out->lower_by = NAN;
    out->mean_a = out->mean_b = out->var_a = out->var_b = NAN;
    if (n_a < 2 || n_b < 2)
        return -1;
    for (int i = 0; i < n_a; i++) {
        if (!isfinite(a[i]))
            return -1;
    }
    for (int i = 0; i < n_b; i++) {
        if (!isfinite(b[i]))
            return -1;
    }
    out->mean_a = bench_stats_mean(a, n_a);
    out->mean_b = bench_stats_mean(b, n_b);
    out->var_a = bench_stats_variance(a, n_a);
    out->var_b = bench_stats_variance(b, n_b);
    out->lower_by = out->mean_b != 0 ? 1 - out->mean_a / out->mean_b : NAN;
    sa = out->var_a / n_a;
    sb = out->var_b / n_b;
    se2 = sa + sb;
    if (!(se2 > 0)) { /* no spread on either side */
        out->t = out->mean_a == out->mean_b ? 0 : out->mean_a < out->mean_b ? -INFINITY : INFINITY;
        out->p = out->mean_a == out->mean_b ? 1 : 0;
        return 0;
    }
    out->t = (out->mean_a - out->mean_b) / sqrt(se2);
    out->df = se2 * se2 / (sa * sa / (n_a - 1) + sb * sb / (n_b - 1));
    out->p = bench_stats_t_p_two_sided(out->t, out->df);
    return 0;
}

int bench_stats_holm(const double *p, int n, double *adj)
{
    int order[BENCH_STATS_HOLM_MAX], m = 0;

    if (n < 0 || n > BENCH_STATS_HOLM_MAX)
        return -1;
    for (int i = 0; i < n; i++) {
        adj[i] = NAN;
        if (isnan(p[i]))
            continue;
        /* insertion by p, ties in index order: a table holds tens of tests */
        int k = m++;
        while (k > 0 && p[order[k - 1]] > p[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    double run = 0; /* the running maximum keeps the adjusted values monotone */
    for (int j = 0; j < m; j++) {
        double v = (double)(m - j) * p[order[j]];
        v = v > 1 ? 1 : v;
        run = v > run ? v : run;
        adj[order[j]] = run;
    }
    return m;
}
