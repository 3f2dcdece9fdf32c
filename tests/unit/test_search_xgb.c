/* Unit tests of the xgb strategy's own behaviour: the XGBoost model actually guides (the batch
 * the model picks after the first training beats the random first batch), a space whose trials
 * all fail never trains and goes on at random, and the per-proposal overhead (training included)
 * on the 899,756-config GEMM tiling space, printed, asked one at a time like `ktune bench`. (The
 * shared contract — valid, no repeats, determinism, replay — is in test_search_strategies.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "search/searcher.h"

#include "search_test_util.h"

static searcher *xgb_new(const space *sp, const char *options, uint64_t seed)
{
    json_t *o = options ? json_loads(options, 0, NULL) : NULL;
    kt_error err;
    searcher *s = searcher_new("xgb", sp, o, seed, &err);
    if (!s)
        fail_msg("searcher_new: %s", err.message);
    json_decref(o);
    return s;
}

static double mean_time(const objective *o, const config_id *ids, int n)
{
    trial_result r[64];
    assert_true(n <= 64);
    evaluate(o, ids, r, n);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += r[i].time_ms;
    return sum / n;
}

/* Batch 32, no exploration: proposals 0-31 are random, 32-63 the model's plan. On the smooth
 * objective the plan's mean time must be far better, for every seed. */
static void model_batch_beats_random_batch(void **state)
{
    (void)state;
    space *sp = space_10k();
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int opt[4] = {(int)(seed * 3 % 10), (int)(seed * 7 % 10), (int)(seed + 4) % 10, 2};
        objective o = {sp, opt, 0};
        searcher *s = xgb_new(sp, "{\"batch\": 32, \"exploration\": 0}", seed);
        config_id ids[64];
        assert_int_equal(drive(s, &o, ids, 64, 1), 64);
        double random_mean = mean_time(&o, ids, 32), model_mean = mean_time(&o, ids + 32, 32);
        printf("seed %llu: mean time of the random batch %.1f, of the model's batch %.1f\n",
               (unsigned long long)seed, random_mean, model_mean);
        assert_true(model_mean < 0.7 * random_mean);
        assert_distinct_valid(ids, 64, space_count(sp));
        searcher_free(s);
    }
    space_free(sp);
}

/* Every trial fails: no label to rank by, so no training; proposals go on, distinct, at random. */
static void all_failures_go_on_at_random(void **state)
{
    (void)state;
    space *sp = space_small();
    objective o = {sp, NULL, 1}; /* every id is divisible by 1: all fail */
    searcher *s = xgb_new(sp, "{\"batch\": 4}", 2);
    config_id ids[130];
    assert_int_equal(drive(s, &o, ids, 130, 3), 120);
    assert_distinct_valid(ids, 120, 120);
    searcher_free(s);
    space_free(sp);
}

/* CPU seconds of the process (core/clock reads wall clocks only). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 400 proposals asked and told one at a time with the default options (24 trainings and
 * annealing runs): all distinct and valid; the mean cost per proposal, training included, is
 * printed (make bench measures it: tests/bench/bench_search.c). */
static void overhead_on_tiling_space(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    objective o = {sp, NULL, 13};
    enum { N = 400 };
    config_id ids[N];
    searcher *s = xgb_new(sp, NULL, 2024);
    double t0 = kt_clock_s(), c0 = cpu_s();
    assert_int_equal(drive(s, &o, ids, N, 1), N);
    double dt = kt_clock_s() - t0, dc = cpu_s() - c0;
    printf("xgb: %d proposals (one at a time) on the %llu-config tiling space: %.0f us each "
           "(%.0f us of CPU), training and annealing included\n",
           N, (unsigned long long)space_count(sp), dt * 1e6 / N, dc * 1e6 / N);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_free(s);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_batch_beats_random_batch),
        cmocka_unit_test(all_failures_go_on_at_random),
        cmocka_unit_test(overhead_on_tiling_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
