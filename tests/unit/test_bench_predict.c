/* Unit tests of `ktune bench --predict` (bench/predict/bench_predict.h) on the committed fixture
 * tests/fixtures/predict-gemm (5 small gemm problems, 24 measured configurations each, cut from
 * the cpu-shapes measurements): the report runs in seconds for every predictor, has the shape the
 * README documents, and every share is in [0, 1]; the argument parser refuses what it must; and
 * --measure refuses caches recorded on another CPU class, and on a copy of the fixture measures the
 * missing predictions of the held-out problem (small gemm runs), appends them, and replays them.
 *
 * Every case runs on any x86-64 (AVX2 or AVX-512, any cache sizes): the report is built on the
 * device the fixture was recorded on (tests/fixtures/predict-gemm/recorded-device.json, answered
 * by a stand-in runner that only probes), not on this CPU, whose spaces would refuse configurations
 * of another vector width or cache size; --measure runs on a copy whose headers name this CPU's
 * class, so it measures here whatever CPU this is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_main.h"
#include "bench/predict/bench_predict.h"
#include "catalog/catalog_device.h"
#include "measure/device.h"
#include "skip_test_util.h"

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
    assert_int_equal(bench_args_parse(&bench_predict_args, 9, argv, o, msg, sizeof msg, stdout), 0);
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

/* A stand-in ktune-runner that answers the cpu probe with the device the fixture was recorded on
 * (recorded-device.json) and refuses everything else (no CUDA; it never measures). Written into
 * dir; its path in path. */
static void recorded_runner(const char *fixture, const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/recorded-runner", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(
        f,
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "dev = sys.argv[sys.argv.index('--device') + 1]\n"
        "for line in sys.stdin:\n"
        "    req = json.loads(line)\n"
        "    if req.get('op') == 'probe' and dev == 'cpu':\n"
        "        with open('%s/recorded-device.json') as f:\n"
        "            rep = {'ok': True, 'device': json.load(f)}\n"
        "    else:\n"
        "        rep = {'ok': False, 'reason': 'the recorded device only answers the cpu probe'}\n"
        "    rep['id'] = req.get('id')\n"
        "    sys.stdout.write(json.dumps(rep) + '\\n')\n"
        "    sys.stdout.flush()\n",
        fixture);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

/* The device class the fixture's caches name ("cpu:<model>:<bits>" in their headers). */
static void fixture_class(const char *fixture, char *out, size_t cap)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/M64_N64_K64.jsonl", fixture);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    json_t *h = json_loads(line, 0, NULL);
    assert_non_null(h);
    snprintf(out, cap, "%s", json_string_value(json_object_get(h, "device_class")));
    json_decref(h);
    assert_true(strncmp(out, "cpu:", 4) == 0);
}

static void report_on(const char *fixture)
{
    bench_predict_options o;
    kt_error err;
    /* The fixture's configurations are valid in the spaces of the device it was recorded on (the
     * restrictions read vector_bits and the cache sizes): the report is built on that device,
     * whatever CPU runs the test, so every configuration counts and nothing is measured. */
    char dir[] = "/tmp/kt_bench_predict_XXXXXX", runner[128], cmd[256], klass[128];
    assert_non_null(mkdtemp(dir));
    recorded_runner(fixture, dir, runner, sizeof runner);
    fixture_class(fixture, klass, sizeof klass);
    printf("  %s, recorded on %s\n", fixture, klass);
    opts(&o, fixture);
    o.runner = runner;
    assert_int_equal(o.n_kinds, 6);
    json_t *res = bench_predict_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench_predict_run: %s (%s)", err.message, err.hint);
    bench_predict_print_table(res, stdout);
    /* the recorded device's class is the caches': no warning about another class or source */
    assert_string_equal(json_string_value(json_object_get(res, "device_class")), klass);
    assert_int_equal(json_array_size(json_object_get(res, "warnings")), 0);
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
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
    assert_int_equal(system(cmd), 0);
}

/* Both fixtures (512-bit and 256-bit vectors), each on the device it was recorded on. */
static void report_on_fixture(void **state)
{
    (void)state;
    report_on(FIXTURE);
    report_on(FIXTURE "-256");
}

static void parse_refusals(void **state)
{
    (void)state;
    bench_predict_options o;
    char msg[256];
    char *a1[] = {"bench", "--predict"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 2, a1, &o, msg, sizeof msg, stdout), -1);
    assert_non_null(strstr(msg, "folder"));
    char *a2[] = {"bench", "--predict", "x", "--predictors", "nearest,forest"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 5, a2, &o, msg, sizeof msg, stdout), -1);
    assert_non_null(strstr(msg, "forest"));
    /* the one predictor-list checker (bench_parse_predictors, --accel-predict's too) */
    char *a5[] = {"bench", "--predict", "x", "--predictors", "xgb,nearest,xgb"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 5, a5, &o, msg, sizeof msg, stdout), -1);
    assert_string_equal(msg, "--predictors: 'xgb' given twice");
    char *a6[] = {"bench", "--predict", "x", "--predictors", "xgb,"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 5, a6, &o, msg, sizeof msg, stdout), -1);
    assert_string_equal(msg, "--predictors: trailing comma");
    char *a3[] = {"bench", "--predict", "x", "--test-fraction", "1"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 5, a3, &o, msg, sizeof msg, stdout), -1);
    char *a4[] = {"bench", "--predict", "x", "y", "--predictors", "xgb", "--measure"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 7, a4, &o, msg, sizeof msg, stdout), 0);
    assert_int_equal(o.n_dirs, 2);
    assert_int_equal(o.n_kinds, 1);
    assert_int_equal(o.measure, 1);
    assert_true(bench_args_wanted(&bench_predict_args, 7, a4));
    /* --replay-as replays only */
    char *a7[] = {"bench", "--predict", "x", "--measure", "--replay-as", "d.json"};
    assert_int_equal(bench_args_parse(&bench_predict_args, 6, a7, &o, msg, sizeof msg, stdout), -1);
    assert_non_null(strstr(msg, "--replay-as"));
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

/* This CPU's device class as the runner's probe gives it (measure/device.c), into out. */
static void host_class(const char *runner, char *out, size_t cap)
{
    const char *kdirs[] = {KT_SOURCE_DIR "/kernels"};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = runner,
                                 .cache_dir = "/tmp/kt_bench_predict_bin",
                                 .cpu_core = -1};
    catalog_device *devs = NULL;
    int n = 0;
    kt_error err;
    if (device_discover(&real, &devs, &n, &err) < 0)
        fail_msg("device_discover: %s", err.message);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(devs[i].name, "cpu") == 0 && devs[i].available && devs[i].klass)
            snprintf(out, cap, "%s", devs[i].klass);
    }
    catalog_devices_free(devs, n);
    if (!out[0])
        fail_msg("the runner's probe gives no available cpu device");
}

/* --measure on a copy of the fixture of this CPU's vector width (predict-gemm: 512 bits,
 * predict-gemm-256: 256 bits; the spaces' restrictions read vector_bits, so only those
 * configurations are valid here), its headers naming this CPU's class: the missing predictions of
 * the held-out problem (its cache cut to one measurement) are measured (a few small gemm runs on
 * this CPU) and appended; a second run replays them and measures none. */
static void measure_appends_then_replays(void **state)
{
    (void)state;
#ifndef KT_RUNNER_PATH
    KT_SKIP("ktune-runner is not built: --measure needs it");
#else
    char dir[] = "/tmp/kt_bench_predict_XXXXXX", cmd[1024], klass[128], src[512];
    host_class(KT_RUNNER_PATH, klass, sizeof klass);
    const char *bits = strrchr(klass, ':') + 1;
    snprintf(src, sizeof src, "%s%s%s", FIXTURE, strcmp(bits, "512") == 0 ? "" : "-",
             strcmp(bits, "512") == 0 ? "" : bits);
    if (access(src, R_OK) != 0)
        KT_SKIP("no fixture of %s-bit vectors (this CPU: %s) to measure on: record one as "
                "tests/fixtures/README.md says",
                bits, klass);
    assert_non_null(mkdtemp(dir));
    assert_null(strchr(klass, '\'')); /* safe inside the sed program below */
    assert_null(strchr(klass, '/'));
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/*.jsonl; do sed '1s/\"device_class\":\"[^\"]*\"/\"device_class\":"
             "\"%s\"/' \"$f\" > '%s'/$(basename \"$f\"); done",
             src, klass, dir);
    assert_int_equal(system(cmd), 0);
    printf("  --measure on %s as if recorded on this CPU (%s)\n", src, klass);
    bench_predict_options o;
    kt_error err;
    opts(&o, dir);
    snprintf(o.kinds[0], sizeof o.kinds[0], "nearest");
    o.n_kinds = 1;
    /* The held-out problem's cache keeps one measurement, so that its predictions are missing
     * and --measure has something to measure on any CPU. */
    json_t *res = bench_predict_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench_predict_run: %s (%s)", err.message, err.hint);
    const json_t *held = json_array_get(json_object_get(res, "heldout"), 0);
    assert_non_null(held);
    snprintf(cmd, sizeof cmd, "sed -i '3,$d' '%s/M%lld_N%lld_K%lld.jsonl'", dir,
             (long long)json_integer_value(json_object_get(held, "M")),
             (long long)json_integer_value(json_object_get(held, "N")),
             (long long)json_integer_value(json_object_get(held, "K")));
    json_decref(res);
    assert_int_equal(system(cmd), 0);
    o.measure = 1;
    long before = count_lines(dir);
    res = bench_predict_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("--measure: %s (%s)", err.message, err.hint);
    const json_t *p = json_object_get(json_object_get(res, "predictors"), "nearest");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "top1"), "unmeasured")),
                     0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "top5"), "incomplete")),
                     0);
    long after = count_lines(dir);
    printf("  --measure appended %ld measurements\n", after - before);
    assert_true(after > before);
    json_decref(res);
    res = bench_predict_run(&o, NULL, NULL, &err); /* everything is in the caches now */
    assert_non_null(res);
    assert_int_equal(count_lines(dir), after);
    json_decref(res);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder */
    assert_int_equal(system(cmd), 0);
#endif
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
#else
    KT_SKIP("ktune-runner is not built: the subcommand needs it");
#endif
}

/* The checked-in cpu-shapes caches (tests/bench/results/cpu-shapes) replay on any machine:
 * --replay-as builds the spaces with the recorded AVX-512 device's limits (no probe, whatever CPU
 * runs the test) and the kernels of the commit they were measured with (cpu-shapes/kernels), so
 * every trial line maps into its problem's space. A part of them (six problems per kernel, the
 * two fast predictors) keeps the replay from breaking silently; the full report is the results
 * README's command. */
static void replay_checked_in_cpu_shapes(void **state)
{
    (void)state;
    static const char *const kernels[] = {"gemm", "conv2d"};
    for (int k = 0; k < 2; k++) {
        char dir[] = "/tmp/kt_bench_replay_XXXXXX", cmd[1024];
        assert_non_null(mkdtemp(dir));
        snprintf(cmd, sizeof cmd,
                 "ls '%s/tests/bench/results/cpu-shapes/%s'/*.jsonl | head -6 | "
                 "while read f; do ln -s \"$f\" '%s'/; done",
                 KT_SOURCE_DIR, kernels[k], dir);
        assert_int_equal(system(cmd), 0);
        bench_predict_options o;
        kt_error err;
        opts(&o, dir);
        o.replay_as = KT_SOURCE_DIR "/tests/bench/results/cpu-shapes/device.json";
        o.kernels = KT_SOURCE_DIR "/tests/bench/results/cpu-shapes/kernels";
        o.runner = "/nonexistent/ktune-runner"; /* nothing is probed or measured */
        snprintf(o.kinds[0], sizeof o.kinds[0], "nearest");
        snprintf(o.kinds[1], sizeof o.kinds[1], "common");
        o.n_kinds = 2;
        json_t *res = bench_predict_run(&o, NULL, NULL, &err);
        if (!res)
            fail_msg("%s: bench_predict_run: %s (%s)", kernels[k], err.message, err.hint);
        bench_predict_print_table(res, stdout);
        const json_t *sp = json_object_get(res, "spaces");
        assert_string_equal(json_string_value(json_object_get(sp, "device_class")),
                            "cpu:AMD_EPYC:512");
        assert_string_equal(json_string_value(json_object_get(sp, "limits_from")), o.replay_as);
        assert_int_equal(json_integer_value(json_object_get(res, "problems")), 6);
        assert_true(json_integer_value(json_object_get(res, "trial_lines")) > 6 * 50);
        assert_int_equal(json_integer_value(json_object_get(res, "trials_skipped")), 0);
        const json_t *t1 =
            json_object_get(json_object_get(json_object_get(res, "predictors"), "nearest"), "top1");
        assert_true(json_integer_value(json_object_get(t1, "measured")) >= 1);
        assert_int_equal(json_array_size(json_object_get(res, "paired")), 0); /* no learned one */
        json_decref(res);
        /* the same caches as this machine would build the spaces differ in class unless it is
         * the recorded one: --replay-as refuses a record of another class */
        snprintf(cmd, sizeof cmd, "sed 's/cpu:AMD_EPYC:512/cpu:Other:256/' '%s' > '%s/other.json'",
                 o.replay_as, dir);
        assert_int_equal(system(cmd), 0);
        char other[128];
        snprintf(other, sizeof other, "%s/other.json", dir);
        o.replay_as = other;
        assert_null(bench_predict_run(&o, NULL, NULL, &err));
        assert_int_equal(err.code, KT_ERR_CONFLICT);
        assert_non_null(strstr(err.message, "cpu:Other:256"));
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp folder (links only) */
        assert_int_equal(system(cmd), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_refusals),
        cmocka_unit_test(report_on_fixture),
        cmocka_unit_test(measure_refuses_another_cpu),
        cmocka_unit_test(subcommand_exit_codes_and_json),
        cmocka_unit_test(measure_appends_then_replays),
        cmocka_unit_test(replay_checked_in_cpu_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
