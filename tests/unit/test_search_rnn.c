/* Unit tests of the `rnn` searcher beyond the shared contract suite (test_search_strategies.c):
 * on the GEMM tiling space of kernels/gemm_tiled/spec.json at M = N = K = 1024 (899,756
 * configurations) its masked decoding proposes valid configurations by construction, with few
 * random fallbacks (its cost per proposal is a speed figure: make bench measures it,
 * tests/bench/bench_search.c); the controller really learns (its late proposals beat its early
 * ones, and an untrained one's do not), on an unrestricted space and on the tiling space; bucketed
 * outputs for long value lists; and degenerate spaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/rnn_impl.h"
#include "search/searcher.h"

#include "search_test_util.h"

/* The cpu variant's tiling space of kernels/gemm_tiled/spec.json (parameters 1 .. 4096, the
 * product restrictions) at M = N = K = 1024. */
static space *spec_tiling_space(void)
{
    json_error_t jerr;
    kt_error err;
    json_t *spec = json_load_file(KT_SOURCE_DIR "/kernels/gemm_tiled/spec.json", 0, &jerr);
    if (!spec)
        fail_msg("spec.json: %s", jerr.text);
    json_t *cpu = json_object_get(json_object_get(spec, "variants"), "cpu");
    json_t *constants = json_pack("{s:i, s:i, s:i}", "M", 1024, "N", 1024, "K", 1024);
    space *sp = space_new(json_object_get(cpu, "parameters"), json_object_get(cpu, "restrictions"),
                          constants, NULL, &err);
    if (!sp)
        fail_msg("space_new: %s", err.message);
    json_decref(constants);
    json_decref(spec);
    assert_int_equal(space_count(sp), 899756);
    assert_int_equal(space_num_params(sp), 10);
    return sp;
}

/* Product of the values of parameters [from, to) of the configuration idx. */
static double value_product(const space *sp, const int *idx, int from, int to)
{
    double prod = 1;
    for (int p = from; p < to; p++)
        prod *= space_param_value_number(sp, p, idx[p]);
    return prod;
}

/* Runs an rnn state (searcher_rnn_vtable.create) for n proposals in batches of `batch`, told from
 * o's synthetic objective; results in r. Returns the proposals made. */
static int drive_state(void *st, const objective *o, config_id *ids, trial_result *r, int n,
                       int batch)
{
    int total = 0;
    while (total < n) {
        int k = n - total < batch ? n - total : batch;
        int got = searcher_rnn_vtable.ask(st, ids + total, k);
        assert_true(got >= 0 && got <= k);
        if (got == 0)
            break;
        evaluate(o, ids + total, r + total, got);
        searcher_rnn_vtable.tell(st, ids + total, r + total, got);
        total += got;
    }
    return total;
}

/* 900 proposals (0.1% of the space) for each of 3 seeds: every one valid (the products hold, and
 * no sampled tuple was rejected by the space), distinct, and at most 5% random fallbacks (the
 * controller's samples are proposals, not the fallback's); the same ids as searcher_new gives. */
static void valid_by_construction_on_tiling_space(void **state)
{
    (void)state;
    enum { N = 900 };
    space *sp = spec_tiling_space();
    objective o = {sp, NULL, 0};
    static config_id ids[N], ref[N];
    static trial_result r[N];
    long fallbacks = 0, samples = 0, repeats = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        kt_error err;
        void *st = searcher_rnn_vtable.create(sp, NULL, seed, &err);
        assert_non_null(st);
        assert_int_equal(drive_state(st, &o, ids, r, N, 4), N);
        searcher_rnn_stats stats;
        searcher_rnn_stats_get(st, &stats);
        searcher_rnn_vtable.destroy(st);
        assert_int_equal(stats.invalid, 0);
        assert_true(stats.samples >= N - stats.fallbacks);
        fallbacks += stats.fallbacks;
        samples += stats.samples;
        repeats += stats.repeats;
        assert_distinct_valid(ids, N, space_count(sp));
        for (int i = 0; i < N; i++) {
            int idx[10];
            assert_int_equal(space_decode(sp, ids[i], idx), 0);
            assert_true(value_product(sp, idx, 0, 4) == 1024);
            assert_true(value_product(sp, idx, 4, 6) == 1024);
            assert_true(value_product(sp, idx, 6, 10) == 1024);
        }
        /* The vtable driven directly is the searcher: same seed, same batches, same ids. */
        searcher *s = searcher_new("rnn", sp, NULL, seed, NULL);
        assert_non_null(s);
        assert_int_equal(drive(s, &o, ref, N, 4), N);
        assert_memory_equal(ids, ref, sizeof ids);
        searcher_free(s);
    }
    printf("rnn: %d proposals x 3 seeds on the %llu-config tiling space: %ld samples, %ld repeats, "
           "%ld fallbacks (%.2f%%), 0 invalid\n",
           N, (unsigned long long)space_count(sp), samples, repeats, fallbacks,
           100.0 * (double)fallbacks / (3.0 * N));
    assert_true(fallbacks < 3 * N / 20);
    space_free(sp);
}

/* On the tiling space the controller learns too: with the synthetic objective (index distance
 * from 3 per parameter) the mean of proposals 800-899 over 3 seeds is well below that of 0-49,
 * and with a learning rate too small to move the weights it is not. */
static void learns_on_tiling_space(void **state)
{
    (void)state;
    enum { N = 900 };
    space *sp = spec_tiling_space();
    objective o = {sp, NULL, 0};
    static config_id ids[N];
    static trial_result r[N];
    const char *opts[2] = {NULL, "{\"learning_rate\": 0.00001}"};
    double early[2] = {0, 0}, late[2] = {0, 0};
    for (int f = 0; f < 2; f++) {
        json_t *j = opts[f] ? json_loads(opts[f], 0, NULL) : NULL;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            kt_error err;
            void *st = searcher_rnn_vtable.create(sp, j, seed, &err);
            assert_non_null(st);
            assert_int_equal(drive_state(st, &o, ids, r, N, 1), N);
            searcher_rnn_vtable.destroy(st);
            for (int i = 0; i < 50; i++)
                early[f] += r[i].time_ms / (3 * 50);
            for (int i = N - 100; i < N; i++)
                late[f] += r[i].time_ms / (3 * 100);
        }
        json_decref(j);
    }
    printf("rnn on the tiling space: mean time of proposals 0-49 %.1f, 800-899 %.1f (untrained: "
           "%.1f, %.1f)\n",
           early[0], late[0], early[1], late[1]);
    assert_true(late[0] < 0.7 * early[0]);
    assert_true(late[1] > 0.85 * early[1]);
    space_free(sp);
}

/* Mean synthetic time of proposals [from, to) over 5 seeds on the 10k space, 300 evaluations. */
static double mean_time(const char *options, int from, int to)
{
    space *sp = space_10k();
    json_t *opts = options ? json_loads(options, 0, NULL) : NULL;
    double sum = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        trial_result r[300];
        drive_seeded("rnn", sp, opts, seed, r, 300);
        for (int i = from; i < to; i++)
            sum += r[i].time_ms;
    }
    json_decref(opts);
    space_free(sp);
    return sum / (5.0 * (to - from));
}

/* The trained controller's last 100 proposals must be far better than its first 50; with a learning
 * rate too small to move the weights, the late proposals are no better than the early ones, so the
 * gain comes from the REINFORCE updates and not from the resampling around repeats. */
static void controller_learns(void **state)
{
    (void)state;
    double early = mean_time(NULL, 0, 50), late = mean_time(NULL, 200, 300);
    double frozen_early = mean_time("{\"learning_rate\": 0.00001}", 0, 50);
    double frozen_late = mean_time("{\"learning_rate\": 0.00001}", 200, 300);
    printf("rnn: mean time of proposals 0-49 %.1f, 200-299 %.1f (untrained: %.1f, %.1f)\n", early,
           late, frozen_early, frozen_late);
    assert_true(late < 0.6 * early);
    assert_true(frozen_late > 0.85 * frozen_early);
}

/* 3 parameters of 400 values: more than the controller's outputs, so values are bucketed. */
static void long_value_lists_are_bucketed(void **state)
{
    (void)state;
    char params[16384];
    size_t len = (size_t)snprintf(params, sizeof params, "[");
    for (int p = 0; p < 3; p++) {
        len += (size_t)snprintf(params + len, sizeof params - len,
                                "%s{\"name\":\"%c\",\"values\":[", p ? "," : "", 'a' + p);
        for (int v = 0; v < 400; v++)
            len += (size_t)snprintf(params + len, sizeof params - len, "%s%d", v ? "," : "", v);
        len += (size_t)snprintf(params + len, sizeof params - len, "]}");
    }
    snprintf(params + len, sizeof params - len, "]");
    space *sp = make_space(params, "[\"a + b + c <= 600\"]");
    objective o = {sp, NULL, 11};
    config_id x[400], y[400];
    searcher *a = searcher_new("rnn", sp, NULL, 5, NULL);
    searcher *b = searcher_new("rnn", sp, NULL, 5, NULL);
    assert_int_equal(drive(a, &o, x, 400, 3), 400);
    assert_int_equal(drive(b, &o, y, 400, 3), 400);
    assert_memory_equal(x, y, sizeof x);
    assert_distinct_valid(x, 400, space_count(sp));
    searcher_free(a);
    searcher_free(b);
    /* The masking holds across buckets: no sampled tuple rejected, few fallbacks. */
    static trial_result r[400];
    kt_error err;
    void *st = searcher_rnn_vtable.create(sp, NULL, 5, &err);
    assert_non_null(st);
    assert_int_equal(drive_state(st, &o, y, r, 400, 3), 400);
    searcher_rnn_stats stats;
    searcher_rnn_stats_get(st, &stats);
    searcher_rnn_vtable.destroy(st);
    printf("rnn, bucketed: 400 proposals, %ld samples, %ld fallbacks, %ld invalid\n", stats.samples,
           stats.fallbacks, stats.invalid);
    assert_int_equal(stats.invalid, 0);
    assert_true(stats.fallbacks < 20);
    space_free(sp);
}

/* rnn asked for `want` proposals in batches on sp (freed here), every result a failure: each
 * configuration exactly once, then nothing. */
static void all_failing_once(space *sp, uint64_t seed, int want, int batch)
{
    int count = (int)space_count(sp);
    config_id *ids = malloc((size_t)want * sizeof *ids);
    assert_non_null(ids);
    objective o = {sp, NULL, 1};
    searcher *s = searcher_new("rnn", sp, NULL, seed, NULL);
    assert_non_null(s);
    assert_int_equal(drive(s, &o, ids, want, batch), count);
    assert_distinct_valid(ids, (size_t)count, (uint64_t)count);
    searcher_free(s);
    free(ids);
    space_free(sp);
}

static void degenerate_spaces(void **state)
{
    (void)state;
    config_id ids[4];
    /* One configuration (every parameter has one value): proposed once, then nothing. */
    space *one =
        make_space("[{\"name\":\"a\",\"values\":[4]},{\"name\":\"b\",\"values\":[\"x\"]}]", NULL);
    searcher *s = searcher_new("rnn", one, NULL, 1, NULL);
    assert_non_null(s);
    assert_int_equal(searcher_ask(s, ids, 4), 1);
    assert_int_equal(ids[0], 0);
    assert_int_equal(searcher_ask(s, ids, 4), 0);
    searcher_free(s);
    space_free(one);
    /* No valid configuration. */
    space *none = make_space("[{\"name\":\"a\",\"values\":[1,2,3]}]", "[\"a > 5\"]");
    s = searcher_new("rnn", none, NULL, 1, NULL);
    assert_non_null(s);
    assert_int_equal(searcher_ask(s, ids, 4), 0);
    searcher_free(s);
    space_free(none);
    /* Two values, all failing: both proposed, then nothing. */
    all_failing_once(
        make_space("[{\"name\":\"a\",\"values\":[1,2]},{\"name\":\"b\",\"values\":[7]}]", NULL), 1,
        4, 1);
    /* Every result a failure, on a restricted space: still each configuration once. */
    all_failing_once(space_small(), 3, 130, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_by_construction_on_tiling_space),
        cmocka_unit_test(learns_on_tiling_space),
        cmocka_unit_test(controller_learns),
        cmocka_unit_test(long_value_lists_are_bucketed),
        cmocka_unit_test(degenerate_spaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
