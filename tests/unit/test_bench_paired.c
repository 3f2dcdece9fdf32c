/* Unit tests for bench/bench_paired: the Wilcoxon signed-rank test on hand-computed examples (the
 * exact null distribution, the normal approximation with tie and continuity corrections, misses as
 * infinite ratios, dropped pairs), Holm's step-down adjustment, and the report rows built from
 * per-problem ratio arrays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "bench/bench_paired.h"

#define near(x, want, tol)                                                                         \
    do {                                                                                           \
        double x_ = (x), w_ = (want);                                                              \
        if (!(fabs(x_ - w_) <= (tol)))                                                             \
            fail_msg("%s = %.12g, want %.12g (tol %g)", #x, x_, w_, (double)(tol));                \
    } while (0)

/* log a - log b = 1, -2, 3, 4, 5 (ratios e^d against 1): ranks 1..5, W+ = 1 + 3 + 4 + 5 = 13,
 * W- = 2. Exact: P(W- <= 2) = #{{}, {1}, {2}} / 2^5 = 3/32, two-sided 6/32 = 0.1875. The normal
 * statistic: mean 7.5, variance 5*6*11/24 = 13.75, z = (13 - 7.5 - 0.5) / sqrt(13.75). */
static void test_wilcoxon_exact(void **state)
{
    (void)state;
    double d[] = {1, -2, 3, 4, 5}, a[5], b[5];
    for (int i = 0; i < 5; i++) {
        a[i] = exp(d[i]);
        b[i] = 1;
    }
    bench_paired_result r;
    assert_int_equal(bench_paired_wilcoxon(a, b, 5, &r), 0);
    assert_int_equal(r.n_pairs, 5);
    assert_int_equal(r.n, 5);
    assert_int_equal(r.a_better, 1);
    assert_int_equal(r.b_better, 4);
    near(r.w_plus, 13, 1e-12);
    near(r.w_minus, 2, 1e-12);
    assert_int_equal(r.exact, 1);
    near(r.p, 0.1875, 1e-12);
    near(r.z, 5 / sqrt(13.75), 1e-12);
    /* swapped: the same p, the statistic's sign turned */
    assert_int_equal(bench_paired_wilcoxon(b, a, 5, &r), 0);
    near(r.p, 0.1875, 1e-12);
    near(r.w_plus, 2, 1e-12);
    assert_true(r.z < 0);
    /* all five one way: P = 2 / 32 */
    for (int i = 0; i < 5; i++)
        a[i] = exp(fabs(d[i]));
    assert_int_equal(bench_paired_wilcoxon(a, b, 5, &r), 0);
    near(r.p, 2.0 / 32, 1e-12);
}

/* Differences 1, 1, -2, 3, 3, 3 and a zero (dropped): |d| ranks 1.5, 1.5, 3, 5, 5, 5; W+ = 18,
 * W- = 3; mean 10.5; variance 6*7*13/24 - ((2^3-2) + (3^3-3))/48 = 22.75 - 0.625 = 22.125;
 * z = (18 - 10.5 - 0.5) / sqrt(22.125) = 1.48818; p = erfc(z / sqrt 2) = 0.136703. */
static void test_wilcoxon_ties_normal(void **state)
{
    (void)state;
    double d[] = {1, 1, -2, 3, 3, 3, 0}, a[7], b[7];
    for (int i = 0; i < 7; i++) {
        a[i] = 2 * exp(d[i]);
        b[i] = 2;
    }
    bench_paired_result r;
    assert_int_equal(bench_paired_wilcoxon(a, b, 7, &r), 0);
    assert_int_equal(r.n_pairs, 7);
    assert_int_equal(r.n, 6);
    near(r.w_plus, 18, 1e-12);
    near(r.w_minus, 3, 1e-12);
    assert_int_equal(r.exact, 0);
    near(r.z, 7 / sqrt(22.125), 1e-9);
    near(r.p, 0.13670258397144947, 1e-9);
}

/* Misses: a miss against a hit is the largest difference, two misses a tie (dropped); a NAN
 * ratio (not measured) drops the pair. a: 1.0, miss, miss, 1.2, NAN; b: 1.1, 1.0, miss, 1.0, 1.
 * Non-zero: log(1/1.1) < 0 (|0.0953|, rank 1), miss vs 1 (+inf, rank 3), log 1.2 > 0 (0.182,
 * rank 2): W+ = 5, W- = 1, n 3, exact p = 2 * P(W- <= 1) = 2 * 2/8 = 0.5. */
static void test_wilcoxon_misses(void **state)
{
    (void)state;
    double a[] = {1.0, INFINITY, INFINITY, 1.2, NAN}, b[] = {1.1, 1.0, INFINITY, 1.0, 1.0};
    bench_paired_result r;
    assert_int_equal(bench_paired_wilcoxon(a, b, 5, &r), 0);
    assert_int_equal(r.n_pairs, 4);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.a_better, 1);
    assert_int_equal(r.b_better, 2);
    near(r.w_plus, 5, 1e-12);
    near(r.w_minus, 1, 1e-12);
    near(r.p, 0.5, 1e-12);
    /* nothing differs: p 1 */
    assert_int_equal(bench_paired_wilcoxon(b, b, 5, &r), 0);
    assert_int_equal(r.n, 0);
    near(r.p, 1, 0);
    assert_int_equal(bench_paired_wilcoxon(a, b, -1, &r), -1);
}

/* Large n without ties uses the normal approximation: d_i = i (i = 1..30), all a worse: W+ = 465,
 * mean 232.5, variance 30*31*61/24 = 2363.75, z = (465 - 232.5 - 0.5) / sqrt(2363.75). */
static void test_wilcoxon_large(void **state)
{
    (void)state;
    double a[30], b[30];
    for (int i = 0; i < 30; i++) {
        a[i] = exp((i + 1) * 0.01);
        b[i] = 1;
    }
    bench_paired_result r;
    assert_int_equal(bench_paired_wilcoxon(a, b, 30, &r), 0);
    assert_int_equal(r.exact, 0);
    near(r.z, 232 / sqrt(2363.75), 1e-9);
    near(r.p, erfc(232 / sqrt(2363.75) / sqrt(2.0)), 1e-15);
}

/* Holm: p = 0.01, 0.04, 0.03, 0.20, NAN -> sorted 0.01 (x4 = 0.04), 0.03 (x3 = 0.09), 0.04
 * (x2 = 0.08 -> monotone 0.09), 0.20 (x1 = 0.20); NAN stays out of the family. */
static void test_holm(void **state)
{
    (void)state;
    double p[] = {0.01, 0.04, 0.03, 0.20, NAN}, adj[5];
    bench_paired_holm(p, adj, 5);
    near(adj[0], 0.04, 1e-15);
    near(adj[1], 0.09, 1e-15);
    near(adj[2], 0.09, 1e-15);
    near(adj[3], 0.20, 1e-15);
    assert_true(isnan(adj[4]));
    double q[] = {0.5, 0.6};
    bench_paired_holm(q, q, 2); /* in place, capped at 1 */
    near(q[0], 1, 0);
    near(q[1], 1, 0);
}

/* The report's rows from per-problem arrays: learned x baselines x {top1, top5}, Holm over all. */
static void test_report(void **state)
{
    (void)state;
    json_t *preds = json_pack(
        "{s:{s:{s:[f, f, s, f, f], s:[f, f, f, f, f]}}, s:{s:{s:[f, f, f, f, f], s:[f, f, f, f, "
        "f]}}, s:{s:{s:[f, f]}}}",
        "seq2seq", "per_problem", "top1", 1.0, 1.0, "miss", 1.0, 1.0, "top5", 1.0, 1.0, 1.0, 1.0,
        1.0, "nearest", "per_problem", "top1", 1.5, 1.6, 1.7, 1.8, 1.9, "top5", 1.0, 1.0, 1.0, 1.0,
        1.0, "common", "per_problem", "top1", 1.0, 1.0);
    assert_non_null(preds);
    static const char *const learned[] = {"seq2seq", "absent"};
    static const char *const base[] = {"nearest", "common"};
    json_t *rows = bench_paired_report(preds, learned, 2, base, 2);
    assert_non_null(rows);
    /* seq2seq vs nearest top1 and top5; vs common: lengths differ, no row */
    assert_int_equal(json_array_size(rows), 2);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(r0, "metric")), "top1");
    assert_int_equal(json_integer_value(json_object_get(r0, "a_better")), 4);
    assert_int_equal(json_integer_value(json_object_get(r0, "b_better")), 1);
    /* |d|: log1.5..log1.9 for four, the miss largest: W+ = 5, W- = 10, exact n 5 */
    near(json_number_value(json_object_get(r0, "w_plus")), 5, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(r1, "n")), 0);
    near(json_number_value(json_object_get(r1, "p")), 1, 0);
    near(json_number_value(json_object_get(r1, "p_holm")), 1, 0);
    /* Holm over two rows: the smaller p doubled */
    double p0 = json_number_value(json_object_get(r0, "p"));
    near(json_number_value(json_object_get(r0, "p_holm")), fmin(1, 2 * p0), 1e-15);
    json_decref(rows);
    json_decref(preds);
}

/* Pooling saved reports: a report with per-problem arrays and an older one with "heldout" rows
 * only ("failed" a miss, a top-5 with an unmeasured member left out) concatenate per kernel; a
 * report lacking a predictor is left out; another kernel pools apart. */
static void test_pool(void **state)
{
    (void)state;
    json_t *r[4];
    r[0] = json_pack("{s:s, s:{s:{s:{s:[f, f], s:[f, f]}}, s:{s:{s:[f, f], s:[f, f]}}}}", "kernel",
                     "gemm", "predictors", "seq2seq", "per_problem", "top1", 1.0, 1.2, "top5", 1.0,
                     1.0, "nearest", "per_problem", "top1", 1.1, 1.1, "top5", 1.0, 1.0);
    r[1] = json_pack("{s:s, s:{s:{s:[{s:f, s:f, s:i}, {s:s, s:f, s:i}]}, "
                     "s:{s:[{s:f, s:f, s:i}, {s:f, s:f, s:i}]}}}",
                     "kernel", "gemm", "predictors", "seq2seq", "heldout", "top1_ratio", 1.0,
                     "top5_ratio", 1.0, "top5_unmeasured", 0, "top1_ratio", "failed", "top5_ratio",
                     1.0, "top5_unmeasured", 2, "nearest", "heldout", "top1_ratio", 1.3,
                     "top5_ratio", 1.0, "top5_unmeasured", 0, "top1_ratio", 1.0, "top5_ratio", 1.0,
                     "top5_unmeasured", 0);
    r[2] = json_pack("{s:s, s:{s:{s:{s:[f], s:[f]}}}}", "kernel", "gemm", "predictors", "seq2seq",
                     "per_problem", "top1", 9.0, "top5", 9.0); /* no nearest: left out */
    r[3] = json_pack("{s:s, s:{s:{s:{s:[f], s:[f]}}, s:{s:{s:[f], s:[f]}}}}", "kernel", "conv2d",
                     "predictors", "seq2seq", "per_problem", "top1", 1.0, "top5", 1.0, "nearest",
                     "per_problem", "top1", 2.0, "top5", 1.0);
    for (int i = 0; i < 4; i++)
        assert_non_null(r[i]);
    static const char *const learned[] = {"seq2seq"};
    static const char *const base[] = {"nearest"};
    json_t *pool = bench_paired_pool(r, 4, learned, 1, base, 1);
    assert_non_null(pool);
    const json_t *g = json_object_get(json_object_get(pool, "kernels"), "gemm"),
                 *c = json_object_get(json_object_get(pool, "kernels"), "conv2d");
    assert_int_equal(json_integer_value(json_object_get(g, "runs")), 2);
    assert_int_equal(json_integer_value(json_object_get(g, "problems")), 4);
    assert_int_equal(json_integer_value(json_object_get(c, "runs")), 1);
    const json_t *top1 = json_array_get(json_object_get(g, "paired"), 0),
                 *top5 = json_array_get(json_object_get(g, "paired"), 1);
    /* top1: (1.0, 1.1) a better, (1.2, 1.1) a worse, (1.0, 1.3) a better, (miss, 1.0) a worse */
    assert_int_equal(json_integer_value(json_object_get(top1, "n_pairs")), 4);
    assert_int_equal(json_integer_value(json_object_get(top1, "a_better")), 2);
    assert_int_equal(json_integer_value(json_object_get(top1, "b_better")), 2);
    /* top5: the unmeasured one dropped, the rest equal */
    assert_int_equal(json_integer_value(json_object_get(top5, "n_pairs")), 3);
    assert_int_equal(json_integer_value(json_object_get(top5, "n")), 0);
    json_decref(pool);
    for (int i = 0; i < 4; i++)
        json_decref(r[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wilcoxon_exact),
        cmocka_unit_test(test_wilcoxon_ties_normal),
        cmocka_unit_test(test_wilcoxon_misses),
        cmocka_unit_test(test_wilcoxon_large),
        cmocka_unit_test(test_holm),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
