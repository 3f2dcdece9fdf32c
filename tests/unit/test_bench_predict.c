/* Unit tests of `ktune bench --predict` (bench/bench_predict.h) on the committed fixture
 * tests/fixtures/predict-gemm (5 small gemm problems, 24 measured configurations each, cut from
 * the cpu-shapes measurements): the report runs in seconds for every predictor, has the shape the
 * README documents, and every share is in [0, 1]; the argument parser refuses what it must; and
 * --measure refuses caches recorded on another CPU class, and on a copy of the fixture measures the
 * missing predictions of the held-out problem (small gemm runs), appends them, and replays them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_main.h"
#include "bench/bench_predict.h"

#define FIXTURE KT_SOURCE_DIR "/tests/fixtures/predict-gemm"

static void opts(bench_predict_options *o, const char *dir)
{
    static char *argv[] = {"bench",
                           "--predict",
                           NULL,
                           "--seed",
                           "3",
                           "--hyper",
                           "{\"seq2seq\":{\"epochs\":40,\"hidden\":16},\"xgb\":{\"rounds\":10}}",
                           "--cpu-core",
                           "-1"};
    char msg[256];
    argv[2] = (char *)dir;
    assert_int_equal(bench_predict_parse_args(9, argv, o, msg, sizeof msg, stdout), 0);
#ifdef KT_RUNNER_PATH
    o->runner = KT_RUNNER_PATH;
#endif
    o->kernels = KT_SOURCE_DIR "/kernels";
    o->cache_dir = "/tmp/kt_bench_predict_bin";
}

static void share(const json_t *v)
{
    if (json_is_null(v))
        return;
    assert_true(json_is_number(v));
    assert_true(json_number_value(v) >= 0 && json_number_value(v) <= 1);
}

/* Vector width the runner's probe gives this CPU (runner/cpu_probe.c: avx512f -> 512, avx2 -> 256,
 * else 128), read from /proc/cpuinfo's flags the same way. */
static int host_vector_bits(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int bits = 128;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        if (strstr(line, " avx512f"))
            bits = 512;
        else if (strstr(line, " avx2"))
            bits = 256;
        break;
    }
    if (f)
        fclose(f);
    return bits;
}

/* Vector width of the CPU class the fixture was measured on ("cpu:<model>:<bits>" in its header).
 */
static int fixture_vector_bits(void)
{
    FILE *f = fopen(FIXTURE "/M64_N64_K64.jsonl", "r");
    char line[4096];
    int bits = -1;
    if (f && fgets(line, sizeof line, f)) {
        const char *c = strstr(line, "\"device_class\":\"");
        const char *end = c ? strchr(c + 16, '"') : NULL;
        const char *colon = end ? end : NULL;
        while (colon && colon > c && *colon != ':')
            colon--;
        if (colon && colon > c)
            bits = (int)strtol(colon + 1, NULL, 10);
    }
    if (f)
        fclose(f);
    return bits;
}

static void report_on_fixture(void **state)
{
    (void)state;
    bench_predict_options o;
    kt_error err;
    /* The fixture's configurations are valid in the space of the CPU class it was measured on; the
     * spaces are built for this CPU (restrictions read vector_bits), so on a CPU of another vector
     * width most of them are invalid and the report cannot be compared: skipped, said why. */
    int here = host_vector_bits(), there = fixture_vector_bits();
    assert_true(there > 0);
    if (here != there) {
        print_message("skipped: the fixture was measured with %d-bit vectors, this CPU has %d\n",
                      there, here);
        skip();
    }
    opts(&o, FIXTURE);
    assert_int_equal(o.n_kinds, 6);
    json_t *res = bench_predict_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench_predict_run: %s (%s)", err.message, err.hint);
    bench_predict_print_table(res, stdout);
    assert_string_equal(json_string_value(json_object_get(res, "kernel")), "gemm");
    assert_int_equal(json_integer_value(json_object_get(res, "problems")), 5);
    assert_int_equal(json_integer_value(json_object_get(res, "test_problems")), 1);
    assert_int_equal(json_integer_value(json_object_get(res, "train_problems")), 4);
    assert_int_equal(json_integer_value(json_object_get(res, "ok_trials")), 5 * 24);
    const json_t *preds = json_object_get(res, "predictors"), *p;
    const char *kind;
    assert_int_equal(json_object_size(preds), 6);
    json_object_foreach((json_t *)preds, kind, p)
    {
        assert_true(json_integer_value(json_object_get(p, "model_bytes")) > 0);
        assert_true(json_number_value(json_object_get(p, "train_s")) >= 0);
        const json_t *t1 = json_object_get(p, "top1"), *t5 = json_object_get(p, "top5");
        share(json_object_get(t1, "within_1_10"));
        share(json_object_get(t5, "within_1_05"));
        assert_int_equal(json_integer_value(json_object_get(t1, "measured")) +
                             json_integer_value(json_object_get(t1, "unmeasured")),
                         1);
        static const char *const modes[] = {"greedy", "free", "constrained"};
        for (int m = 0; m < 3; m++) {
            const json_t *mk = json_object_get(json_object_get(p, "decoding"), modes[m]);
            assert_int_equal(json_object_size(mk), m == 0 ? 1 : 3);
            const char *k;
            const json_t *c;
            json_object_foreach((json_t *)mk, k, c)
            {
                share(json_object_get(c, "param_accuracy"));
                share(json_object_get(c, "perfect"));
                share(json_object_get(c, "valid"));
                if (m == 2) /* constrained: every emitted configuration valid */
                    assert_true(json_number_value(json_object_get(c, "valid")) == 1.0);
            }
        }
        assert_int_equal(json_array_size(json_object_get(p, "heldout")), 1);
    }
    json_decref(res);
}

static void parse_refusals(void **state)
{
    (void)state;
    bench_predict_options o;
    char msg[256];
    char *a1[] = {"bench", "--predict"};
    assert_int_equal(bench_predict_parse_args(2, a1, &o, msg, sizeof msg, stdout), -1);
    assert_non_null(strstr(msg, "folder"));
    char *a2[] = {"bench", "--predict", "x", "--predictors", "nearest,forest"};
    assert_int_equal(bench_predict_parse_args(5, a2, &o, msg, sizeof msg, stdout), -1);
    assert_non_null(strstr(msg, "forest"));
    char *a3[] = {"bench", "--predict", "x", "--test-fraction", "1"};
    assert_int_equal(bench_predict_parse_args(5, a3, &o, msg, sizeof msg, stdout), -1);
    char *a4[] = {"bench", "--predict", "x", "y", "--predictors", "xgb", "--measure"};
    assert_int_equal(bench_predict_parse_args(7, a4, &o, msg, sizeof msg, stdout), 0);
    assert_int_equal(o.n_dirs, 2);
    assert_int_equal(o.n_kinds, 1);
    assert_int_equal(o.measure, 1);
    assert_true(bench_predict_wanted(7, a4));
}

static void measure_refuses_another_cpu(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_bench_predict_XXXXXX", cmd[512];
    assert_non_null(mkdtemp(dir));
    /* the fixture with another CPU class in every header */
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/*.jsonl; do sed '1s/\"device_class\":\"[^\"]*\"/\"device_class\":"
             "\"cpu:Other:256\"/' \"$f\" > '%s'/$(basename \"$f\"); done",
             FIXTURE, dir);
    assert_int_equal(system(cmd), 0);
    bench_predict_options o;
    kt_error err;
    opts(&o, dir);
    o.measure = 1;
    json_t *res = bench_predict_run(&o, NULL, NULL, &err);
    assert_null(res);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "cpu:Other:256"));
    /* a cache of another kernel among them is refused, naming it */
    snprintf(cmd, sizeof cmd,
             "sed '1s/\"kernel\":\"gemm\"/\"kernel\":\"conv2d\"/' '%s'/M96_N96_K96.jsonl > "
             "'%s'/zz_other.jsonl",
             FIXTURE, dir);
    assert_int_equal(system(cmd), 0);
    o.measure = 0;
    assert_null(bench_predict_run(&o, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "zz_other.jsonl"));
    snprintf(cmd, sizeof cmd, "rm '%s'/zz_other.jsonl", dir);
    assert_int_equal(system(cmd), 0);
    /* without --measure: a warning, and the report */
    o.measure = 0;
    snprintf(o.kinds[0], sizeof o.kinds[0], "nearest");
    o.n_kinds = 1;
    res = bench_predict_run(&o, NULL, NULL, &err);
    assert_non_null(res);
    assert_true(json_array_size(json_object_get(res, "warnings")) >= 1);
    json_decref(res);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
    assert_int_equal(system(cmd), 0);
}

static long count_lines(const char *dir)
{
    char cmd[256];
    long n = -1;
    snprintf(cmd, sizeof cmd, "cat '%s'/*.jsonl | wc -l", dir);
    FILE *f = popen(cmd, "r");
    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* --measure on a copy of the fixture: the missing predictions of the held-out problem are measured
 * (a few small gemm runs on this CPU) and appended; a second run replays them and measures none. */
static void measure_appends_then_replays(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_bench_predict_XXXXXX", cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cp '%s'/*.jsonl '%s'/", FIXTURE, dir);
    assert_int_equal(system(cmd), 0);
    bench_predict_options o;
    kt_error err;
    opts(&o, dir);
    snprintf(o.kinds[0], sizeof o.kinds[0], "nearest");
    o.n_kinds = 1;
    o.measure = 1;
    long before = count_lines(dir);
    json_t *res = bench_predict_run(&o, NULL, NULL, &err);
    if (!res && err.code == KT_ERR_CONFLICT) { /* the fixture was recorded on another CPU */
        printf("  skipped: %s\n", err.message);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
        assert_int_equal(system(cmd), 0);
        return;
    }
    if (!res)
        fail_msg("--measure: %s (%s)", err.message, err.hint);
    const json_t *p = json_object_get(json_object_get(res, "predictors"), "nearest");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "top1"), "unmeasured")),
                     0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "top5"), "incomplete")),
                     0);
    long after = count_lines(dir);
    printf("  --measure appended %ld measurements\n", after - before);
    assert_true(after >= before);
    json_decref(res);
    res = bench_predict_run(&o, NULL, NULL, &err); /* everything is in the caches now */
    assert_non_null(res);
    assert_int_equal(count_lines(dir), after);
    json_decref(res);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
    assert_int_equal(system(cmd), 0);
}

/* The whole subcommand as `ktune bench --predict ... --json FILE` runs it: exit codes and the file.
 */
static void subcommand_exit_codes_and_json(void **state)
{
    (void)state;
#ifdef KT_RUNNER_PATH
    char dir[] = "/tmp/kt_bench_predict_XXXXXX", json_path[128], cmd[256];
    assert_non_null(mkdtemp(dir));
    snprintf(json_path, sizeof json_path, "%s/out.json", dir);
    char *argv[] = {"bench",
                    "--predict",
                    FIXTURE,
                    "--predictors",
                    "nearest,common",
                    "--json",
                    json_path,
                    "--runner",
                    KT_RUNNER_PATH,
                    "--kernels",
                    KT_SOURCE_DIR "/kernels",
                    "--cache-dir",
                    "/tmp/kt_bench_predict_bin",
                    "--cpu-core",
                    "-1"};
    assert_int_equal(bench_main(15, argv, NULL), 0);
    json_error_t jerr;
    json_t *res = json_load_file(json_path, 0, &jerr);
    assert_non_null(res);
    assert_int_equal(json_object_size(json_object_get(res, "predictors")), 2);
    assert_int_equal(json_integer_value(json_object_get(res, "problems")), 5);
    json_decref(res);
    char *bad[] = {"bench", "--predict", FIXTURE, "--predictors", "forest"};
    assert_int_equal(bench_main(5, bad, NULL), 2);
    char *missing[] = {"bench",        "--predict", "/nonexistent-folder",   "--runner",
                       KT_RUNNER_PATH, "--kernels", KT_SOURCE_DIR "/kernels"};
    assert_int_equal(bench_main(7, missing, NULL), 2);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
    assert_int_equal(system(cmd), 0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_refusals),
        cmocka_unit_test(report_on_fixture),
        cmocka_unit_test(measure_refuses_another_cpu),
        cmocka_unit_test(subcommand_exit_codes_and_json),
        cmocka_unit_test(measure_appends_then_replays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
