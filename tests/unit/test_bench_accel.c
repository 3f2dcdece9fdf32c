/* Unit tests of `ktune bench --accel` and `--accel-predict` (bench/accel/bench_accel.h) at a tiny
 * setting (1 preset, 2 seeds, budget 60, a 16-16 surrogate on 8 problems): the whole command runs
 * in seconds and prints its tables; every strategy's best EDP / minimum is >= 1 (the minimum is a
 * lower bound) and does not grow with evaluations; every run spends its budget; the second run
 * reads the surrogate from the cache and gives the same iso-iteration figures; --from-json prints a
 * saved result; the parser and the run refuse what they must; the prediction report holds shares
 * in [0, 1]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/accel/bench_accel.h"
#include "bench/bench_main.h"

#define DEVICES KT_SOURCE_DIR "/accel/devices.json"

static char cache_dir[64];

static void tiny(bench_accel_options *o, const char *extra_flag, const char *extra_val)
{
    char *argv[32] = {"bench",
                      "--accel",
                      "--accel-devices",
                      DEVICES,
                      "--presets",
                      "resnet_conv3",
                      "--seeds",
                      "2",
                      "--budget",
                      "60",
                      "--problems",
                      "8",
                      "--samples",
                      "400",
                      "--epochs",
                      "2",
                      "--hidden",
                      "16,16",
                      "--surrogate-cache",
                      cache_dir,
                      "--eval-latency-ms",
                      "10"};
    int argc = 22;
    char msg[256];
    if (extra_flag) {
        argv[argc++] = (char *)extra_flag;
        argv[argc++] = (char *)extra_val;
    }
    int rc = bench_args_parse(&bench_accel_args, argc, argv, o, msg, sizeof msg, stdout);
    if (rc != 0)
        fail_msg("parse: %s", msg);
}

static int setup(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/kt_bench_accel_XXXXXX");
    return mkdtemp(cache_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const json_t *path2(const json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

static void check_run(const json_t *res, int want_cached)
{
    const json_t *strategies = json_object_get(res, "strategies"), *st;
    size_t i;
    assert_int_equal(json_array_size(strategies), 6);
    assert_int_equal(json_array_size(json_object_get(res, "checkpoints")), 2); /* @50, @60 */
    const json_t *sur = json_array_get(json_object_get(res, "surrogates"), 0);
    assert_string_equal(json_string_value(json_object_get(sur, "kernel")), "cnn_layer");
    assert_int_equal(json_is_true(json_object_get(sur, "cached")), want_cached);
    assert_true(json_number_value(json_object_get(sur, "samples")) >= 2);
    const json_t *pp = path2(json_object_get(res, "iso_iteration"), "per_preset", "resnet_conv3");
    json_array_foreach(strategies, i, st)
    {
        const char *s = json_string_value(st);
        const json_t *mean = path2(pp, s, "mean"), *found = path2(pp, s, "found");
        double m50 = json_number_value(json_array_get(mean, 0));
        double m60 = json_number_value(json_array_get(mean, 1));
        if (json_integer_value(json_array_get(found, 1)) != 2)
            fail_msg("%s: a seed found no valid mapping in 60 evaluations", s);
        assert_true(m60 >= 1.0);
        if (json_integer_value(json_array_get(found, 0)) == 2)
            assert_true(m60 <= m50);
        const json_t *c = path2(res, "costs", s);
        assert_int_equal((int)json_number_value(json_object_get(c, "evaluations")), 2 * 60);
        double vf = json_number_value(json_object_get(c, "valid_fraction"));
        assert_true(vf > 0 && vf <= 1);
        /* the modelled clock charges 10 ms per evaluation: its headline is past 0.5 s */
        assert_true(json_number_value(path2(res, "iso_time_modelled", "headline_s")) > 0.5);
    }
    const json_t *rm = path2(res, "iso_iteration", "reference_over_min");
    assert_true(json_number_value(json_object_get(rm, "mean")) >= 1.0);
    assert_string_equal(json_string_value(json_object_get(res, "reference")), "mindmap");
}

static void accel_tiny_runs_and_caches(void **state)
{
    (void)state;
    bench_accel_options o;
    kt_error err;
    char *text = NULL;
    size_t len = 0;
    tiny(&o, NULL, NULL);
    json_t *a = bench_accel_run(&o, NULL, NULL, &err);
    if (!a)
        fail_msg("bench_accel_run: %s (%s)", err.message, err.hint);
    check_run(a, 0);
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    bench_accel_print_table(a, mem);
    fclose(mem);
    fputs(text, stdout);
    assert_non_null(strstr(text, "iso-iteration"));
    assert_non_null(strstr(text, "iso-time, wall clock"));
    assert_non_null(strstr(text, "iso-time, modelled clock (wall + 10 ms per evaluation)"));
    assert_non_null(strstr(text, "1.40x (SA)"));
    assert_non_null(strstr(text, "resnet_conv3"));
    assert_non_null(strstr(text, "proposal sources"));
    free(text);
    /* where mindmap's proposals came from: the counts add up to its evaluations */
    const char *src;
    const json_t *n;
    json_int_t sum = 0;
    json_object_foreach((json_t *)json_object_get(path2(a, "sources", "mindmap"), "total"), src, n)
        sum += json_integer_value(n);
    assert_int_equal(sum, 2 * 60);
    assert_null(json_object_get(json_object_get(a, "sources"), "random")); /* no counters */

    char saved[128]; /* --from-json prints the tables of a saved result */
    snprintf(saved, sizeof saved, "%s/a.json", cache_dir);
    assert_int_equal(json_dump_file(a, saved, JSON_COMPACT), 0);
    char *re[] = {"bench", "--accel", "--from-json", saved};
    assert_int_equal(bench_main(4, re, NULL), 0);

    json_t *b = bench_accel_run(&o, NULL, NULL, &err); /* the surrogate from the cache */
    if (!b)
        fail_msg("bench_accel_run (cached): %s (%s)", err.message, err.hint);
    check_run(b, 1);
    const json_t *pa = path2(json_object_get(a, "iso_iteration"), "per_preset", "resnet_conv3");
    const json_t *pb = path2(json_object_get(b, "iso_iteration"), "per_preset", "resnet_conv3");
    assert_true(json_equal((json_t *)pa, (json_t *)pb)); /* deterministic, surrogate included */
    json_decref(a);
    json_decref(b);

    /* the gradient-off ablation as a named variant: no gradient step, tested against mindmap */
    tiny(&o, "--strategies", "mindmap,mindmap/gradient=false");
    json_t *c = bench_accel_run(&o, NULL, NULL, &err);
    if (!c)
        fail_msg("bench_accel_run (ablation): %s (%s)", err.message, err.hint);
    const json_t *off = json_object_get(path2(c, "sources", "mindmap/gradient=false"), "total");
    assert_int_equal(json_integer_value(json_object_get(off, "gradient")), 0);
    assert_int_equal(json_integer_value(json_object_get(off, "gradient_neighbour")), 0);
    const json_t *ab = json_object_get(c, "ablations");
    assert_int_equal(json_array_size(ab), 2); /* @50, @60 on the one preset */
    const json_t *t0 = json_array_get(ab, 0);
    assert_string_equal(json_string_value(json_object_get(t0, "base")), "mindmap");
    assert_string_equal(json_string_value(json_object_get(t0, "preset")), "resnet_conv3");
    assert_true(json_number_value(json_object_get(t0, "mean_variant")) >= 1.0);
    bench_accel_print_table(c, stdout);
    json_decref(c);
}

static void accel_main_exit_codes(void **state)
{
    (void)state;
    char *bad_preset[] = {"bench", "--accel", "--accel-devices", DEVICES, "--presets", "nope"};
    char *bad_budget[] = {"bench", "--accel", "--budget", "0"};
    char *bad_strategy[] = {"bench", "--accel", "--strategies", "anneal,nope"};
    char *bad_device[] = {"bench",          "--accel", "--accel-devices", DEVICES,
                          "--accel-device", "nope",    "--strategies",    "random"};
    char *help[] = {"bench", "--accel", "--help"};
    assert_int_equal(bench_main(6, bad_preset, NULL), 2);
    assert_int_equal(bench_main(4, bad_budget, NULL), 2);
    assert_int_equal(bench_main(4, bad_strategy, NULL), 2);
    assert_int_equal(bench_main(8, bad_device, NULL), 2);
    assert_int_equal(bench_main(3, help, NULL), 0);
}

static void accel_predict_tiny(void **state)
{
    (void)state;
    char *argv[] = {
        "bench", "--accel-predict", "--accel-devices", DEVICES, "--shapes", "12", "--predict-evals",
        "100",   "--predictors",    "nearest,common"};
    bench_accel_options o;
    kt_error err;
    char msg[256];
    if (bench_args_parse(&bench_accel_args, 10, argv, &o, msg, sizeof msg, stdout) != 0)
        fail_msg("parse: %s", msg);
    assert_true(o.predict);
    json_t *res = bench_accel_predict_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench_accel_predict_run: %s (%s)", err.message, err.hint);
    bench_accel_predict_print_table(res, stdout);
    assert_int_equal(json_integer_value(json_object_get(res, "shapes")), 12);
    assert_int_equal(json_integer_value(json_object_get(res, "test_shapes")), 3);
    const json_t *p;
    const char *kind;
    json_object_foreach(json_object_get(res, "predictors"), kind, p)
    {
        const json_t *w = path2(p, "top1", "within_1_10");
        assert_true(json_is_null(w) || (json_number_value(w) >= 0 && json_number_value(w) <= 1));
        assert_int_equal(json_integer_value(path2(p, "top1", "n")), 3);
        const json_t *g = path2(json_object_get(p, "decoding"), "free", "1");
        assert_non_null(g);
        double acc = json_number_value(json_object_get(g, "param_accuracy"));
        assert_true(acc >= 0 && acc <= 1);
        /* a ratio (or a miss) per held-out shape, in one order: the paired tests' input */
        assert_int_equal(json_array_size(path2(p, "per_problem", "top1")), 3);
        assert_int_equal(json_array_size(path2(p, "per_problem", "top5")), 3);
    }
    /* no learned predictor: no paired rows */
    assert_int_equal(json_array_size(json_object_get(res, "paired")), 0);
    json_decref(res);
    /* the ensemble (of nearest, common and local: fast) against the baselines, without the grid:
     * 2 baselines x 2 metrics, Holm-adjusted p never below p */
    char *argv2[] = {"bench",           "--accel-predict",
                     "--accel-devices", DEVICES,
                     "--shapes",        "12",
                     "--predict-evals", "100",
                     "--predictors",    "nearest,common,ensemble",
                     "--hyper",         "{\"ensemble\":{\"w_seq2seq\":0,\"w_xgb\":0}}",
                     "--no-grid"};
    if (bench_args_parse(&bench_accel_args, 13, argv2, &o, msg, sizeof msg, stdout) != 0)
        fail_msg("parse: %s", msg);
    if (!(res = bench_accel_predict_run(&o, NULL, NULL, &err)))
        fail_msg("bench_accel_predict_run: %s (%s)", err.message, err.hint);
    bench_accel_predict_print_table(res, stdout);
    assert_true(json_is_true(json_object_get(res, "no_grid")));
    const json_t *rows = json_object_get(res, "paired"), *r;
    size_t i;
    assert_int_equal(json_array_size(rows), 4);
    json_array_foreach(rows, i, r)
    {
        assert_string_equal(json_string_value(json_object_get(r, "a")), "ensemble");
        double pv = json_number_value(json_object_get(r, "p")),
               ph = json_number_value(json_object_get(r, "p_holm"));
        assert_true(pv >= 0 && pv <= 1 && ph >= pv && ph <= 1);
        assert_true(json_integer_value(json_object_get(r, "n_pairs")) <= 3);
    }
    const json_t *dec =
        json_object_get(json_object_get(json_object_get(res, "predictors"), "nearest"), "decoding");
    assert_null(json_object_get(json_object_get(dec, "free"), "1")); /* no grid cell */
    json_decref(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accel_tiny_runs_and_caches),
        cmocka_unit_test(accel_main_exit_codes),
        cmocka_unit_test(accel_predict_tiny),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
