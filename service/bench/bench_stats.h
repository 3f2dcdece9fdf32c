/* bench/bench_stats — the statistics of the benchmark reports, as pure functions on arrays of
 * doubles: mean and sample variance, quantiles, box-plot data, the regularised incomplete beta
 * function, Student's t distribution, Welch's unequal-variance t-test and Holm's step-down
 * correction of a family of p-values. No allocation, no state:
 * every function reads its arguments and writes only its outputs (bench_stats_box sorts its input
 * in place, as it says).
 *
 * Why here and not a library: the bench needs a handful of them and the p-value must be exact
 * enough to print (three digits); the incomplete beta is evaluated with its continued fraction
 * (modified Lentz), which converges fast for every x once the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
 * puts x on the side where it does. */
#ifndef KT_BENCH_STATS_H
#define KT_BENCH_STATS_H

/* Box-plot data of n values. Quantiles are R's type 7 (numpy's default): linear interpolation
 * between the order statistics, q(p) = v[(n-1)p]. A non-finite value sorts last (INFINITY: a seed
 * that found nothing), so it can make max, q3, ... and the mean infinite, never the min smaller. */
typedef struct bench_stats_box_data {
    int n;
    double min, q1, median, mean, q3, max;
} bench_stats_box_data;

/* Mean of v[0..n); NAN when n < 1. */
double bench_stats_mean(const double *v, int n);
/* Sample variance (divisor n - 1) of v[0..n); NAN when n < 2. */
double bench_stats_variance(const double *v, int n);
/* Type-7 quantile p in [0, 1] of sorted[0..n) (ascending); NAN when n < 1. */
double bench_stats_quantile(const double *sorted, int n, double p);
/* Box data of v[0..n), which is sorted in place (ascending). n < 1: everything NAN, n 0. */
bench_stats_box_data bench_stats_box(double *v, int n);

/* The regularised incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1]; NAN outside. */
double bench_stats_betai(double a, double b, double x);
/* Two-sided p-value of Student's t with df > 0 degrees of freedom: P(|T| >= |t|) =
 * I_{df/(df+t^2)}(df/2, 1/2). 0 for an infinite t; NAN for a NAN t or df <= 0. */
double bench_stats_t_p_two_sided(double t, double df);

/* Welch's t-test of the means of a and b (unequal variances): t = (mean_a - mean_b) / se with
 * se^2 = var_a/n_a + var_b/n_b, the Welch-Satterthwaite degrees of freedom
 * df = se^4 / ((var_a/n_a)^2/(n_a-1) + (var_b/n_b)^2/(n_b-1)), and the two-sided p-value.
 * lower_by = 1 - mean_a / mean_b: how much lower a's mean is than b's (negative: higher).
 * With no variance at all (se = 0) the test is degenerate: t 0 and p 1 when the means are equal,
 * else t = +-INFINITY and p 0; df is then NAN. */
typedef struct bench_stats_welch_result {
    int n_a, n_b;
    double mean_a, mean_b, var_a, var_b;
    double t, df, p;
    double lower_by;
} bench_stats_welch_result;

/* Returns 0 with out filled, or -1 (out zeroed, t/df/p NAN) when a side has fewer than 2 values or
 * a value is not finite (a seed that found nothing: its mean is not a number to test). */
int bench_stats_welch(const double *a, int n_a, const double *b, int n_b,
                      bench_stats_welch_result *out);

/* The level the reports mark a test significant at, by its Holm-adjusted p. */
#define BENCH_STATS_ALPHA 0.05

/* The most p-values one call of bench_stats_holm adjusts (a report's table of tests). */
#define BENCH_STATS_HOLM_MAX 4096

/* Holm's step-down correction (Holm 1979) of the family p[0..n): the m finite p-values, sorted
 * ascending p(1) <= ... <= p(m), get adjusted(i) = max over j <= i of min(1, (m - j + 1) p(j)),
 * written to adj[] at their own index; a test is significant at level a when its adjusted p < a
 * (which rejects exactly what Holm's procedure rejects). A NAN p (a test not made) is no member of
 * the family: its adj is NAN. Returns m, or -1 (adj untouched) when n is outside
 * 0..BENCH_STATS_HOLM_MAX. Controls the family-wise error rate under any dependence between the
 * tests (the tests of one row against every other share that row's seeds). */
int bench_stats_holm(const double *p, int n, double *adj);

#endif
