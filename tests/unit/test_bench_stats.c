/* Unit tests for bench/bench_stats: mean, variance, type-7 quantiles and box data (infinite values
 * last), the regularised incomplete beta function and Student's t two-sided p-values against
 * values computed independently (mpmath's betainc at 30 digits, and a numerical integration of
 * the t density), the normal limit at large df, and Welch's t-test: t, Welch-Satterthwaite df and
 * p on a worked example, the degenerate cases and the refusals; Holm's correction on a
 * hand-computed family and on the 512^3 report's 11 tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "bench/bench_stats.h"

#define near(x, want, tol)                                                                         \
    do {                                                                                           \
        double x_ = (x), w_ = (want);                                                              \
        if (!(fabs(x_ - w_) <= (tol)))                                                             \
            fail_msg("%s = %.12g, want %.12g (tol %g)", #x, x_, w_, (double)(tol));                \
    } while (0)

static void test_moments_and_box(void **state)
{
    (void)state;
    double v[] = {4, 1, 3, 2};
    near(bench_stats_mean(v, 4), 2.5, 1e-15);
    near(bench_stats_variance(v, 4), 5.0 / 3.0, 1e-15);
    assert_true(isnan(bench_stats_variance(v, 1)));
    assert_true(isnan(bench_stats_mean(v, 0)));
    bench_stats_box_data b = bench_stats_box(v, 4); /* sorted: 1 2 3 4 */
    assert_int_equal(b.n, 4);
    near(b.min, 1, 0);
    near(b.q1, 1.75, 1e-15); /* h = 0.75 */
    near(b.median, 2.5, 1e-15);
    near(b.mean, 2.5, 1e-15);
    near(b.q3, 3.25, 1e-15);
    near(b.max, 4, 0);
    near(v[0], 1, 0); /* sorted in place */
    near(v[3], 4, 0);

    double five[] = {10, 20, 30, 40, 50};
    b = bench_stats_box(five, 5);
    near(b.q1, 20, 0);
    near(b.median, 30, 0);
    near(b.q3, 40, 0);
    near(bench_stats_quantile(five, 5, 0.1), 14, 1e-12);
    near(bench_stats_quantile(five, 5, 1), 50, 0);

    /* a seed that found nothing (INFINITY) sorts last: min and q1 stay finite, mean does not */
    double inf[] = {INFINITY, 3, 1, INFINITY};
    b = bench_stats_box(inf, 4);
    near(b.min, 1, 0);
    near(b.q1, 2.5, 1e-15);
    assert_true(isinf(b.median) && isinf(b.q3) && isinf(b.max) && isinf(b.mean));

    double one[] = {7};
    b = bench_stats_box(one, 1);
    near(b.q1, 7, 0);
    near(b.q3, 7, 0);
    b = bench_stats_box(one, 0);
    assert_int_equal(b.n, 0);
    assert_true(isnan(b.median));
}

static void test_betai_and_t(void **state)
{
    (void)state;
    /* I_0.4(2,3) = sum_{j=2..4} C(4,j) 0.4^j 0.6^(4-j) = 0.5248 exactly */
    near(bench_stats_betai(2, 3, 0.4), 0.5248, 1e-13);
    near(bench_stats_betai(0.5, 0.5, 0.9), 0.795167235300866571910, 1e-12);
    near(bench_stats_betai(50, 0.5, 0.999), 0.752369019965376681393, 1e-11);
    near(bench_stats_betai(2, 3, 0), 0, 0);
    near(bench_stats_betai(2, 3, 1), 1, 0);
    /* the symmetry I_x(a,b) = 1 - I_{1-x}(b,a), across the switch of sides */
    for (double x = 0.05; x < 1; x += 0.1)
        near(bench_stats_betai(3.5, 1.25, x), 1 - bench_stats_betai(1.25, 3.5, 1 - x), 1e-13);
    assert_true(isnan(bench_stats_betai(0, 1, 0.5)));
    assert_true(isnan(bench_stats_betai(1, 1, 1.5)));

    near(bench_stats_t_p_two_sided(2.0, 10), 0.0733880347707404, 1e-12);
    near(bench_stats_t_p_two_sided(-2.0, 10), 0.0733880347707404, 1e-12);
    near(bench_stats_t_p_two_sided(1.0, 5), 0.3632174676491227, 1e-12);
    near(bench_stats_t_p_two_sided(0.0, 5), 1.0, 1e-15);
    /* large df: the normal distribution, P(|Z| >= 1.95996) = 0.05 */
    near(bench_stats_t_p_two_sided(1.959963984540054, 1e6), 0.0500002772952217, 1e-10);
    near(bench_stats_t_p_two_sided(1.959963984540054, 1e8), 0.0500000027729512, 1e-9);
    near(bench_stats_t_p_two_sided(INFINITY, 3), 0, 0);
    assert_true(isnan(bench_stats_t_p_two_sided(1, 0)));
    /* one degree of freedom is the Cauchy distribution: p = 1 - 2 atan(t) / pi */
    near(bench_stats_t_p_two_sided(3, 1), 1 - 2 * atan(3.0) / acos(-1.0), 1e-13);
}

static void test_welch(void **state)
{
    (void)state;
    bench_stats_welch_result w;
    /* the best times at 900 evaluations of gbfs and na2c, seeds 0-2, in
     * tests/bench/results/gemm_tiled-1024-cpu.txt */
    double a[] = {19.487, 18.95, 18.95}, b[] = {21.078, 19.514, 18.95};
    assert_int_equal(bench_stats_welch(a, 3, b, 3, &w), 0);
    near(w.mean_a, 19.129, 1e-12);
    near(w.mean_b, 19.847333333333333, 1e-12);
    near(w.t, -1.0864102012632704, 1e-12);
    near(w.df, 2.3143762598135114, 1e-12);
    near(w.p, 0.3773788609381579, 1e-10);
    near(w.lower_by, 1 - 19.129 / 19.847333333333333, 1e-14);
    /* swapped: same p, opposite t, lower_by negative */
    assert_int_equal(bench_stats_welch(b, 3, a, 3, &w), 0);
    near(w.t, 1.0864102012632704, 1e-12);
    near(w.p, 0.3773788609381579, 1e-10);
    assert_true(w.lower_by < 0);

    /* equal variances and sizes: Welch's df is 2(n-1) */
    double c[] = {1, 2, 3, 4}, d[] = {3, 4, 5, 6};
    assert_int_equal(bench_stats_welch(c, 4, d, 4, &w), 0);
    near(w.df, 6, 1e-12);
    near(w.t, -2 / sqrt(2 * (5.0 / 3.0) / 4), 1e-12);

    /* no spread: degenerate, not an error */
    double e[] = {5, 5}, f[] = {5, 5, 5}, g[] = {6, 6};
    assert_int_equal(bench_stats_welch(e, 2, f, 3, &w), 0);
    near(w.t, 0, 0);
    near(w.p, 1, 0);
    assert_int_equal(bench_stats_welch(e, 2, g, 2, &w), 0);
    assert_true(isinf(w.t) && w.t < 0);
    near(w.p, 0, 0);
    assert_true(isnan(w.df));

    /* refused: too few values, or a seed that found nothing */
    assert_int_equal(bench_stats_welch(a, 1, b, 3, &w), -1);
    assert_true(isnan(w.p));
    double h[] = {1, INFINITY};
    assert_int_equal(bench_stats_welch(a, 3, h, 2, &w), -1);
    assert_true(isnan(w.t));
}

/* Holm's step-down correction, hand-computed: p = .01, .04, .03, .005 and a test not made (NAN).
 * Sorted .005, .01, .03, .04 times 4, 3, 2, 1 = .02, .03, .06, .04; the running maximum makes the
 * last .06. Holm's procedure itself: .005 <= .05/4 and .01 <= .05/3 are rejected, .03 > .05/2
 * stops it: the same two adjusted p-values < .05. */
static void test_holm(void **state)
{
    (void)state;
    double p[] = {0.01, 0.04, 0.03, 0.005, NAN}, adj[5];
    assert_int_equal(bench_stats_holm(p, 5, adj), 4);
    near(adj[0], 0.03, 1e-15);
    near(adj[1], 0.06, 1e-15);
    near(adj[2], 0.06, 1e-15);
    near(adj[3], 0.02, 1e-15);
    assert_true(isnan(adj[4]));

    /* issue 30's figure: the 11 tests of gemm_tiled-512-cpu.txt at @484 evaluations (p as
     * printed). Only na2c vs rnn (p .0032 x 11 = .0352) stays below .05; the next, gbfs vs rnn,
     * becomes .0062 x 10 = .062; products above 1 are 1. */
    double q[] = {0.6639, 0.4126, 0.0801, 0.0062, 0.0403, 0.1152,
                  0.2337, 0.2246, 0.0032, 0.0215, 0.3175};
    double qa[11];
    int below = 0;
    assert_int_equal(bench_stats_holm(q, 11, qa), 11);
    for (int i = 0; i < 11; i++)
        below += qa[i] < 0.05;
    assert_int_equal(below, 1);
    near(qa[8], 0.0352, 1e-12);
    near(qa[3], 0.062, 1e-12);
    near(qa[9], 0.1935, 1e-12);
    near(qa[1], 1, 0);
    near(qa[0], 1, 0);

    /* ties keep equal adjusted values; one test is its own p; none, or too many, refused */
    double t[] = {0.02, 0.02}, ta[2];
    assert_int_equal(bench_stats_holm(t, 2, ta), 2);
    near(ta[0], 0.04, 1e-15);
    near(ta[1], 0.04, 1e-15);
    assert_int_equal(bench_stats_holm(t, 1, ta), 1);
    near(ta[0], 0.02, 0);
    assert_int_equal(bench_stats_holm(t, 0, ta), 0);
    assert_int_equal(bench_stats_holm(t, -1, ta), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moments_and_box),
        cmocka_unit_test(test_betai_and_t),
        cmocka_unit_test(test_welch),
        cmocka_unit_test(test_holm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
