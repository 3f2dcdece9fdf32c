/* Unit tests for bench/bench_device (`ktune bench --device`): argument errors (exit 2 with a
 * message), --problem parsing, and small real runs on the cpu device with the built ktune-runner:
 * gemm_tiled at 64^3, strategy random, budget 20, 2 seeds — distinct evaluations, the measure cache
 * file written, a second run replaying every measurement with identical results, and a cache of
 * another problem refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_run.h"
#include "bench/bench_device.h"
#include "bench/bench_device_args.h"
#include "bench/bench_main.h"

#define BUDGET 20
#define SEEDS  2

static int parse(int argc, const char **argv, bench_device_options *o, char *msg, size_t cap)
{
    FILE *devnull = fopen("/dev/null", "w");
    int rc = bench_device_parse_args(argc, (char **)argv, o, msg, cap, devnull);
    fclose(devnull);
    return rc;
}

static void test_args(void **state)
{
    (void)state;
    bench_device_options o;
    char msg[1024];
    const char *ok[] = {"bench",
                        "--kernel",
                        "gemm_tiled",
                        "--device",
                        "cpu",
                        "--problem",
                        "M=64,N=64,K=64",
                        "--strategies",
                        "random,anneal",
                        "--budget",
                        "20",
                        "--seeds",
                        "2",
                        "--batch",
                        "4",
                        "--measure-cache",
                        "/tmp/x.jsonl",
                        "--cpu-core",
                        "-1",
                        "--min-repeats",
                        "3",
                        "--run-timeout-s",
                        "10",
                        "--max-repeats",
                        "50",
                        "--max-timing-s",
                        "1.5"};
    assert_int_equal(parse(sizeof ok / sizeof ok[0], ok, &o, msg, sizeof msg), 0);
    assert_string_equal(o.kernel, "gemm_tiled");
    assert_string_equal(o.device, "cpu");
    assert_int_equal(o.n_strategies, 2);
    assert_int_equal(o.budget, 20);
    assert_int_equal(o.seeds, 2);
    assert_int_equal(o.batch, 4);
    assert_int_equal(o.cpu_core, -1);
    assert_int_equal(o.min_repeats, 3);
    assert_true(o.run_timeout_s == 10.0);
    assert_int_equal(o.max_repeats, 50);
    assert_true(o.max_timing_s == 1.5);
    assert_true(o.min_seconds < 0); /* not given: the default */

    struct {
        const char *argv[8];
        int argc;
        const char *want; /* in the message */
    } bad[] = {
        {{"bench", "--kernel", "gemm_tiled", "--device", "cpu"}, 5, "--strategies is required"},
        {{"bench", "--device", "cpu", "--strategies", "random"}, 5, "--kernel is required"},
        {{"bench", "--kernel", "k", "--strategies", "random"}, 5, "--device is required"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--strategies", "nosuch"},
         7,
         "unknown strategy 'nosuch'"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--strategies", "random", "--budget"},
         8,
         "--budget needs a value"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--budget", "0"}, 7, "--budget: '0'"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--batch", "1000"}, 7, "--batch: '1000'"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--spaces", "x"}, 7, "unknown argument"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--run-timeout-s", "0.1"},
         7,
         "--run-timeout-s: '0.1'"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--strategies", "random", "--relative-to"},
         8,
         "needs a value"},
        {{"bench", "--kernel", "k", "--device", "cpu", "--log-level", "loud"}, 7, "--log-level"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i].argc, bad[i].argv, &o, msg, sizeof msg), -1);
        if (!strstr(msg, bad[i].want))
            fail_msg("case %zu: message '%s' lacks '%s'", i, msg, bad[i].want);
    }
    const char *rel[] = {"bench",  "--kernel",      "k",     "--device", "cpu", "--strategies",
                         "random", "--relative-to", "anneal"};
    assert_int_equal(parse(9, rel, &o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--relative-to: 'anneal' is not one of --strategies"));

    /* through the subcommand: usage errors exit 2, --help exits 0 */
    const char *b1[] = {"bench", "--kernel", "gemm_tiled", "--device", "cpu", "--budget", "x"};
    assert_int_equal(bench_main(7, (char **)b1, NULL), 2);
    const char *b2[] = {"bench", "--device", "cpu", "--strategies", "random"};
    assert_int_equal(bench_main(5, (char **)b2, NULL), 2);
    assert_int_equal(bench_device_wanted(5, (char **)b2), 1);
    const char *b3[] = {"bench", "--spaces", "x", "--strategies", "random"};
    assert_int_equal(bench_device_wanted(5, (char **)b3), 0);
}

static void test_problem_text(void **state)
{
    (void)state;
    kt_error err;
    json_t *p = bench_device_problem_json("M=1024,N=512,K=64", &err);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "M")), 1024);
    assert_int_equal(json_integer_value(json_object_get(p, "N")), 512);
    assert_int_equal(json_integer_value(json_object_get(p, "K")), 64);
    json_decref(p);
    p = bench_device_problem_json("{\"M\": 32}", &err);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "M")), 32);
    json_decref(p);
    p = bench_device_problem_json(NULL, &err);
    assert_non_null(p);
    assert_int_equal(json_object_size(p), 0);
    json_decref(p);
    const char *bad[] = {"M", "M=", "=4", "M=4,", "M=x", "M=4,M=8", "[1]", "M=4;N=2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = bench_device_problem_json(bad[i], &err);
        if (p)
            fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    }
}

#ifdef KT_RUNNER_PATH
typedef struct fixture {
    char dir[64];
    char cache[128];
    char bin[128];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/kt_bench_dev_XXXXXX");
    /* Searchable by all: a root runner measures as --runner-user (nobody), in f->bin. */
    if (!mkdtemp(f->dir) || chmod(f->dir, 0755) != 0)
        return -1;
    snprintf(f->cache, sizeof f->cache, "%s/measure.jsonl", f->dir);
    snprintf(f->bin, sizeof f->bin, "%s/bin", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir); /* our own mkdtemp folder */
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

static void real_opts(bench_device_options *o, const fixture *f, const char *problem)
{
    memset(o, 0, sizeof *o);
    o->kernel = "gemm_tiled";
    o->device = "cpu";
    o->problem = problem;
    snprintf(o->strategies[0], sizeof o->strategies[0], "random");
    o->n_strategies = 1;
    o->budget = BUDGET;
    o->seeds = SEEDS;
    o->batch = 3; /* not a divisor of the budget: the last batch is cut to fit */
    o->measure_cache = f->cache;
    o->runner = KT_RUNNER_PATH;
    o->kernels = KT_SOURCE_DIR "/kernels";
    o->cache_dir = f->bin;
    o->cpu_core = -1;
    o->min_repeats = 1;
    o->min_seconds = 0.001; /* 64^3 is microseconds: keep the test short */
}

static long count_lines(const char *path)
{
    FILE *in = fopen(path, "r");
    long n = 0;
    int c;
    assert_non_null(in);
    while ((c = fgetc(in)) != EOF)
        n += c == '\n';
    fclose(in);
    return n;
}

static const json_t *runs_of(const json_t *res)
{
    return json_object_get(json_object_get(json_object_get(res, "strategies"), "random"), "runs");
}

static void test_real_runs_and_cache(void **state)
{
    fixture *f = *state;
    bench_device_options o;
    kt_error err;
    size_t i, j;
    const json_t *run;

    real_opts(&o, f, "M=64,N=64,K=64");
    json_t *first = bench_device_run(&o, NULL, NULL, &err);
    if (!first)
        fail_msg("first run: %s (%s)", err.message, err.hint);
    assert_int_equal(json_integer_value(json_object_get(first, "space_size")), 49392);
    assert_true(json_number_value(json_object_get(first, "flops")) == 2.0 * 64 * 64 * 64);
    const json_t *mc = json_object_get(first, "measure_cache");
    long long measured = json_integer_value(json_object_get(mc, "measured"));
    long long hits = json_integer_value(json_object_get(mc, "hits"));
    assert_int_equal(json_integer_value(json_object_get(mc, "loaded")), 0);
    assert_int_equal(measured + hits, BUDGET * SEEDS);
    assert_true(measured >= BUDGET); /* at least the first seed measured everything */
    /* the file: a header and one line per measurement */
    assert_int_equal(count_lines(f->cache), 1 + measured);

    assert_int_equal(json_array_size(runs_of(first)), SEEDS);
    json_array_foreach(runs_of(first), i, run)
    {
        const json_t *trials = json_object_get(run, "trials");
        assert_int_equal(json_integer_value(json_object_get(run, "evaluations")), BUDGET);
        assert_int_equal(json_array_size(trials), BUDGET);
        assert_int_equal(json_array_size(json_object_get(run, "best_so_far")), BUDGET);
        for (j = 0; j < BUDGET; j++) { /* distinct configurations within a run */
            json_int_t id = json_integer_value(json_array_get(json_array_get(trials, j), 0));
            for (size_t k = 0; k < j; k++)
                assert_true(id != json_integer_value(json_array_get(json_array_get(trials, k), 0)));
        }
        /* best-so-far never increases and ends at the run's best */
        double prev = 1e300;
        for (j = 0; j < BUDGET; j++) {
            const json_t *v = json_array_get(json_object_get(run, "best_so_far"), j);
            if (json_is_number(v)) {
                assert_true(json_number_value(v) <= prev);
                prev = json_number_value(v);
            }
        }
        assert_true(json_number_value(json_object_get(run, "best_time_ms")) == prev);
        assert_true(json_is_object(json_object_get(run, "best_config")));
    }
    const json_t *st = json_object_get(json_object_get(first, "strategies"), "random");
    const json_t *cp = json_object_get(json_object_get(st, "checkpoints"), "20");
    assert_true(json_number_value(json_object_get(cp, "relative")) == 1.0);
    assert_true(json_number_value(json_object_get(json_object_get(st, "best"), "gflops")) > 0);

    /* the second run takes every measurement from the file, with identical results */
    json_t *second = bench_device_run(&o, NULL, NULL, &err);
    if (!second)
        fail_msg("second run: %s (%s)", err.message, err.hint);
    mc = json_object_get(second, "measure_cache");
    assert_int_equal(json_integer_value(json_object_get(mc, "loaded")), measured);
    assert_int_equal(json_integer_value(json_object_get(mc, "measured")), 0);
    assert_int_equal(json_integer_value(json_object_get(mc, "hits")), BUDGET * SEEDS);
    assert_int_equal(count_lines(f->cache), 1 + measured);
    for (i = 0; i < SEEDS; i++) {
        const json_t *a = json_array_get(runs_of(first), i),
                     *b = json_array_get(runs_of(second), i);
        assert_true(
            json_equal(json_object_get(a, "best_so_far"), json_object_get(b, "best_so_far")));
        assert_true(
            json_equal(json_object_get(a, "best_config"), json_object_get(b, "best_config")));
        for (j = 0; j < BUDGET; j++) { /* same ids, statuses and times; now all cached */
            const json_t *ta = json_array_get(json_object_get(a, "trials"), j);
            const json_t *tb = json_array_get(json_object_get(b, "trials"), j);
            for (size_t k = 0; k < 3; k++)
                assert_true(json_equal(json_array_get(ta, k), json_array_get(tb, k)));
            assert_true(json_is_true(json_array_get(tb, 3)));
        }
    }
    json_decref(first);
    json_decref(second);

    /* the same file for another problem is refused, naming the problem */
    real_opts(&o, f, "M=32,N=32,K=32");
    json_t *other = bench_device_run(&o, NULL, NULL, &err);
    assert_null(other);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "problem"));
    assert_non_null(strstr(err.message, "\"M\":64"));
    assert_int_equal(count_lines(f->cache), 1 + measured); /* untouched */
    /* and through the subcommand it is a usage error (exit 2) */
    const char *argv[] = {"bench",
                          "--kernel",
                          "gemm_tiled",
                          "--device",
                          "cpu",
                          "--problem",
                          "M=32,N=32,K=32",
                          "--strategies",
                          "random",
                          "--budget",
                          "2",
                          "--measure-cache",
                          f->cache,
                          "--runner",
                          KT_RUNNER_PATH,
                          "--kernels",
                          KT_SOURCE_DIR "/kernels",
                          "--cache-dir",
                          f->bin,
                          "--log-level",
                          "error"};
    assert_int_equal(bench_main(sizeof argv / sizeof argv[0], (char **)argv, NULL), 2);
    /* a problem the kernel does not accept: exit 2 too */
    argv[6] = "M=48,N=32,K=32";
    assert_int_equal(bench_main(sizeof argv / sizeof argv[0], (char **)argv, NULL), 2);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_problem_text),
#ifdef KT_RUNNER_PATH
        cmocka_unit_test_setup_teardown(test_real_runs_and_cache, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
