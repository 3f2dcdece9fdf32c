/* Unit tests for bench/bench_device (`ktune bench --device`): argument errors (exit 2 with a
 * message; --variant, --time-budget, --time-checkpoints, --test-strategies too), --problem parsing,
 * and small real runs on the cpu device with the built ktune-runner: gemm_tiled at 64^3, strategy
 * random, budget 20, 2 seeds — distinct evaluations, per-trial wall and modelled clocks that never
 * go back, the measure cache file written, a second run replaying every measurement with identical
 * results and the same modelled clock (the measurement part exactly), --time-budget stopping a
 * replayed run where the first run's clock passed it, a --variant row with its options and Welch
 * tests, and a cache of another problem refused. Issue 30, with a fake runner whose calls take a
 * known time: the slow-factor cut-off of every run comes from that run's own best (the second run
 * in a process does not inherit the first's), and each run's trials are the same in either order
 * of the rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "bench/offline/bench_run.h"
#include "bench/device/bench_device.h"
#include "bench/device/bench_device_args.h"
#include "bench/device/bench_device_report.h"
#include "bench/bench_main.h"

#define BUDGET 20
#define SEEDS  2

static int parse(int argc, const char **argv, bench_device_options *o, char *msg, size_t cap)
{
    FILE *devnull = fopen("/dev/null", "w");
    int rc = bench_args_parse(&bench_device_args, argc, (char **)argv, o, msg, cap, devnull);
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
    /* --variant and the time flags */
    const char *var[] = {"bench",
                         "--kernel",
                         "k",
                         "--device",
                         "cpu",
                         "--variant",
                         "eps1=na2c:{\"epsilon\":1}",
                         "--strategies",
                         "random",
                         "--time-budget",
                         "750",
                         "--time-checkpoints",
                         "60,150.5,750",
                         "--test-strategies",
                         "eps1,random"};
    assert_int_equal(parse(15, var, &o, msg, sizeof msg), 0);
    assert_int_equal(o.n_strategies, 1);
    assert_int_equal(o.n_variants, 1);
    assert_int_equal(bench_device_n_rows(&o), 2);
    assert_string_equal(bench_device_row_label(&o, 1), "eps1");
    assert_string_equal(bench_device_row_strategy(&o, 1), "na2c");
    assert_string_equal(o.variants[0].options, "{\"epsilon\":1}");
    assert_true(o.time_budget_s == 750);
    assert_int_equal(o.n_time_checkpoints, 3);
    assert_true(o.time_checkpoints[1] == 150.5);
    assert_int_equal(o.n_test_rows, 2);
    struct {
        const char *flag, *val, *want;
    } vbad[] = {
        {"--variant", "eps1=na2c", "is not LABEL=STRATEGY:{options}"},
        {"--variant", "Eps1=na2c:{}", "label 'Eps1' must be"},
        {"--variant", "=na2c:{}", "label '' must be"},
        {"--variant", "e=nosuch:{}", "unknown strategy 'nosuch'"},
        {"--variant", "e=na2c:[1]", "not a JSON object"},
        {"--variant", "e=na2c:{\"epsilon\":", "not a JSON object"},
        {"--variant", "e=na2c:{\"nope\":1}", "has no option 'nope'"},
        {"--variant", "random=na2c:{}", "--variant random: the label is already a row"},
        {"--time-budget", "0", "--time-budget: '0'"},
        {"--time-checkpoints", "60,30", "above the one before"},
        {"--time-checkpoints", "60,", "trailing comma"},
        {"--time-checkpoints", "x", "--time-checkpoints: 'x'"},
        {"--test-strategies", "gbfs", "--test-strategies: 'gbfs' is not a row"},
        {"--relative-to", "e2", "--relative-to: 'e2' is not one of"},
    };
    for (size_t i = 0; i < sizeof vbad / sizeof vbad[0]; i++) {
        const char *av[] = {"bench",        "--kernel", "k",          "--device", "cpu",
                            "--strategies", "random",   vbad[i].flag, vbad[i].val};
        assert_int_equal(parse(9, av, &o, msg, sizeof msg), -1);
        if (!strstr(msg, vbad[i].want))
            fail_msg("variant case %zu: message '%s' lacks '%s'", i, msg, vbad[i].want);
        assert_int_equal(bench_main(9, (char **)av, NULL), 2); /* a usage error: exit 2 */
    }
    const char *dup[] = {"bench",     "--kernel",  "k",         "--device",   "cpu",
                         "--variant", "e=na2c:{}", "--variant", "e=random:{}"};
    assert_int_equal(parse(9, dup, &o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--variant e: the label is already a row"));
    const char *only[] = {"bench", "--kernel", "k", "--device", "cpu", "--variant", "e=na2c:{}"};
    assert_int_equal(parse(7, only, &o, msg, sizeof msg), 0); /* a --variant is a row */

    const char *rel[] = {"bench",  "--kernel",      "k",     "--device", "cpu", "--strategies",
                         "random", "--relative-to", "anneal"};
    assert_int_equal(parse(9, rel, &o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "--relative-to: 'anneal' is not one of --strategies"));

    /* through the subcommand: usage errors exit 2, --help exits 0 */
    const char *b1[] = {"bench", "--kernel", "gemm_tiled", "--device", "cpu", "--budget", "x"};
    assert_int_equal(bench_main(7, (char **)b1, NULL), 2);
    const char *b2[] = {"bench", "--device", "cpu", "--strategies", "random"};
    assert_int_equal(bench_main(5, (char **)b2, NULL), 2);
    assert_int_equal(bench_args_wanted(&bench_device_args, 5, (char **)b2), 1);
    const char *b3[] = {"bench", "--spaces", "x", "--strategies", "random"};
    assert_int_equal(bench_args_wanted(&bench_device_args, 5, (char **)b3), 0);
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

/* ---- issue 30: the slow-factor cut-off is each run's own ------------------------------------
 * A fake ktune-runner (Python, Debian's interpreter: no shim to start) for a kernel "slow" of one
 * parameter P = 1..48 whose kernel call takes 30 x P ms: it answers ok with that time, or, when the
 * request carries a call limit below it, ends itself by SIGALRM as the real runner's timer does
 * (the backend's timeout). So every verdict is known: with slow factor 2 a run whose best so far is
 * B ms cuts off P when 30 P > max(2 B, 100) ms. */
static const char CUT_SPEC[] =
    "{\"name\": \"slow\", \"summary\": \"a call of 30 x P ms\","
    " \"problem\": [{\"name\": \"n\", \"min\": 1, \"max\": 1024, \"default\": 64}],"
    " \"buffers\": [{\"name\": \"x\", \"elements\": \"n\", \"role\": \"input\"},"
    "               {\"name\": \"y\", \"elements\": \"n\", \"role\": \"output\"}],"
    " \"flops\": \"n\", \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-7},"
    " \"reference\": {\"kind\": \"c\", \"source\": \"reference.c\"},"
    " \"variants\": {\"cpu\": {\"source\": \"cpu.c\","
    "   \"parameters\": [{\"name\": \"P\", \"values\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,"
    "     14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,"
    "     36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48]}],"
    "   \"default\": {\"P\": 24}}},"
    " \"test_problem\": {\"n\": 64}}";

static const char CUT_RUNNER[] =
    "#!/usr/bin/python3 -S\n"
    "import json, os, signal, sys\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    if req['op'] == 'probe' and sys.argv[sys.argv.index('--device') + 1] != 'cpu':\n"
    "        rep = {'ok': False, 'reason': 'no CUDA driver'}\n"
    "    elif req['op'] == 'probe':\n"
    "        rep = {'ok': True, 'device': {'model': 'Fake CPU', 'cores': 2, 'isa': ['avx2'],\n"
    "               'vector_bits': 256, 'l1d_bytes': 32768, 'l2_bytes': 1048576,\n"
    "               'l3_bytes': 8388608, 'compiler': 'cc 12', 'toolchain': 'gcc 12'}}\n"
    "    else:\n"
    "        t = 30.0 * req['defines']['P']\n"
    "        limit = req.get('call_limit_s')\n"
    "        if limit and t / 1000.0 > limit:\n"
    "            os.kill(os.getpid(), signal.SIGALRM)\n"
    "        rep = {'ok': True, 'status': 'ok', 'time_ms': t, 'repeats': 3, 'noise_cv': 0.0,\n"
    "               'compile_ms': 5.0, 'measure_ms': 3 * t, 'extras': {}}\n"
    "    rep['id'] = req['id']\n"
    "    sys.stdout.write(json.dumps(rep) + '\\n')\n"
    "    sys.stdout.flush()\n";

#define CUT_BUDGET 10
#define CUT_SEEDS  2

typedef struct cut_fixture {
    char dir[64], kernels[96], runner[96], bin[96];
} cut_fixture;

static void cut_write(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *out = fopen(path, "w");
    if (!out)
        fail_msg("cannot write %s", path);
    fputs(text, out);
    fclose(out);
}

/* Runs the rows (a comma list) of the fake kernel with slow factor 2 and a cache in memory. */
static json_t *cut_run(const cut_fixture *f, const char *row_a, const char *row_b)
{
    bench_device_options o;
    kt_error err;
    memset(&o, 0, sizeof o);
    o.kernel = "slow";
    o.device = "cpu";
    snprintf(o.strategies[0], sizeof o.strategies[0], "%s", row_a);
    snprintf(o.strategies[1], sizeof o.strategies[1], "%s", row_b);
    o.n_strategies = 2;
    o.budget = CUT_BUDGET;
    o.seeds = CUT_SEEDS;
    o.batch = 1;
    o.runner = f->runner;
    o.kernels = f->kernels;
    o.cache_dir = f->bin;
    o.cpu_core = -1;
    o.min_repeats = 1;
    o.min_seconds = 0.001;
    o.slow_factor = 2;
    json_t *res = bench_device_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench %s,%s: %s (%s)", row_a, row_b, err.message, err.hint);
    return res;
}

/* Every verdict of a run is the one its own best so far gives (none at its start: the first
 * evaluation is never cut off), and every ok time is 30 P ms. Returns the run's timeouts. */
static int cut_check_run(const json_t *run)
{
    const json_t *t;
    size_t j;
    double best = 0;
    int cuts = 0;
    json_array_foreach(json_object_get(run, "trials"), j, t)
    {
        double ms = 30.0 * (double)(json_integer_value(json_array_get(t, 0)) + 1);
        double limit = best > 0 ? (2 * best > 100 ? 2 * best : 100) : INFINITY;
        const char *st = json_string_value(json_array_get(t, 1));
        const char *want = ms > limit ? "timeout" : "ok";
        if (strcmp(st, want) != 0)
            fail_msg("seed %lld, evaluation %zu: %s, but its own best %g ms makes a %g ms call %s",
                     json_integer_value(json_object_get(run, "seed")), j + 1, st, best, ms, want);
        if (strcmp(st, "ok") == 0) {
            assert_true(json_number_value(json_array_get(t, 2)) == ms);
            best = best > 0 && best < ms ? best : ms;
        }
        cuts += strcmp(st, "timeout") == 0;
    }
    return cuts;
}

/* Two rows in one bench, in both orders: each run's verdicts are its own (the second run in a
 * process does not see the first's threshold), and every run's trials are the same whichever row
 * ran first (ids, statuses, times: a run's result does not depend on the order of the runs). */
static void test_cutoff_per_run(void **state)
{
    (void)state;
    cut_fixture f;
    char dir[128];
    snprintf(f.dir, sizeof f.dir, "/tmp/kt_bench_cut_XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    snprintf(f.kernels, sizeof f.kernels, "%s/kernels", f.dir);
    snprintf(f.bin, sizeof f.bin, "%s/bin", f.dir);
    snprintf(f.runner, sizeof f.runner, "%s/runner.py", f.dir);
    snprintf(dir, sizeof dir, "%s/slow", f.kernels);
    assert_int_equal(mkdir(f.kernels, 0755), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    cut_write(dir, "spec.json", CUT_SPEC);
    cut_write(dir, "cpu.c",
              "int ktune_kernel(float *const *b, const long long *p) { return 0; }\n");
    cut_write(dir, "reference.c",
              "int ktune_reference(float *const *b, const long long *p) { return 0; }\n");
    cut_write(f.dir, "runner.py", CUT_RUNNER);
    assert_int_equal(chmod(f.runner, 0755), 0);

    json_t *ab = cut_run(&f, "gbfs", "random"), *ba = cut_run(&f, "random", "gbfs");
    const char *rows[] = {"gbfs", "random"};
    int cuts = 0;
    for (size_t r = 0; r < 2; r++) {
        const json_t *ra = json_object_get(
                         json_object_get(json_object_get(ab, "strategies"), rows[r]), "runs"),
                     *rb = json_object_get(
                         json_object_get(json_object_get(ba, "strategies"), rows[r]), "runs");
        assert_int_equal(json_array_size(ra), CUT_SEEDS);
        for (size_t k = 0; k < CUT_SEEDS; k++) {
            const json_t *x = json_array_get(ra, k), *y = json_array_get(rb, k);
            cuts += cut_check_run(x);
            cut_check_run(y);
            const json_t *tx = json_object_get(x, "trials"), *ty = json_object_get(y, "trials");
            assert_int_equal(json_array_size(tx), json_array_size(ty));
            for (size_t j = 0; j < json_array_size(tx); j++) {
                for (size_t c = 0; c < 3; c++) {
                    if (!json_equal(json_array_get(json_array_get(tx, j), c),
                                    json_array_get(json_array_get(ty, j), c)))
                        fail_msg("%s seed %zu, evaluation %zu differs with the rows' order",
                                 rows[r], k, j + 1);
                }
            }
        }
    }
    assert_true(cuts > 0); /* the cut-off was exercised */
    json_decref(ab);
    json_decref(ba);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f.dir); /* our own mkdtemp folder */
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f.dir);
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

/* [id, status, ms|null, cached, wall_s, clock_s, cost_s]: both clocks never go back, every
 * evaluation costs something, and the modelled clock is the costs so far plus searcher time. */
static void check_clocks(const json_t *run)
{
    const json_t *trials = json_object_get(run, "trials"), *t;
    double wall = 0, clock = 0, cost = 0;
    size_t j;
    json_array_foreach(trials, j, t)
    {
        assert_int_equal(json_array_size(t), 7);
        double w = json_number_value(json_array_get(t, 4)),
               c = json_number_value(json_array_get(t, 5));
        double k = json_number_value(json_array_get(t, 6));
        assert_true(w >= wall && c > clock && k > 0);
        cost += k;
        assert_true(c >= cost - 1e-9); /* the searcher's time comes on top */
        wall = w;
        clock = c;
    }
    assert_true(json_number_value(json_object_get(run, "clock_s")) >= clock);
    assert_true(fabs(json_number_value(json_object_get(run, "clock_measure_s")) - cost) < 1e-9);
    assert_true(json_number_value(json_object_get(run, "clock_s")) -
                    json_number_value(json_object_get(run, "clock_measure_s")) <
                1.0); /* searcher time: milliseconds here */
}

static double trial_at(const json_t *run, size_t j, size_t k)
{
    return json_number_value(json_array_get(json_array_get(json_object_get(run, "trials"), j), k));
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
        check_clocks(run);
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
            /* the modelled clock replays: the recorded costs exactly, the searcher's time anew */
            assert_true(trial_at(a, j, 6) == trial_at(b, j, 6));
            assert_true(fabs(trial_at(a, j, 5) - trial_at(b, j, 5)) < 0.5);
        }
        check_clocks(b);
        assert_true(json_number_value(json_object_get(a, "clock_measure_s")) ==
                    json_number_value(json_object_get(b, "clock_measure_s")));
        /* and it is not the wall clock: the replay took milliseconds */
        assert_true(trial_at(b, BUDGET - 1, 4) < trial_at(b, BUDGET - 1, 5) / 2);
    }

    /* --time-budget between seed 0's 10th and 11th results: the replay stops at the 11th, whose
     * clock passes it, and the last time checkpoint (the budget) holds the best of the first 10 */
    const json_t *a0 = json_array_get(runs_of(first), 0);
    double tb = (trial_at(a0, 9, 5) + trial_at(a0, 10, 5)) / 2;
    char tkey[32];
    o.time_budget_s = tb;
    json_t *timed = bench_device_run(&o, NULL, NULL, &err);
    if (!timed)
        fail_msg("timed run: %s (%s)", err.message, err.hint);
    const json_t *r0 = json_array_get(runs_of(timed), 0);
    assert_true(json_is_true(json_object_get(r0, "stopped_by_time")));
    assert_int_equal(json_integer_value(json_object_get(r0, "evaluations")), 11);
    assert_true(trial_at(r0, 10, 5) > tb && trial_at(r0, 9, 5) <= tb);
    for (j = 0; j < 11; j++)
        assert_true(trial_at(r0, j, 0) == trial_at(a0, j, 0));
    const json_t *tcps = json_object_get(timed, "time_checkpoints");
    assert_true(json_number_value(json_array_get(tcps, json_array_size(tcps) - 1)) == tb);
    snprintf(tkey, sizeof tkey, "%g", tb);
    const json_t *tc = json_object_get(
        json_object_get(json_object_get(json_object_get(timed, "strategies"), "random"),
                        "time_checkpoints"),
        tkey);
    assert_non_null(tc);
    assert_true(json_equal(json_array_get(json_object_get(tc, "per_seed"), 0),
                           json_array_get(json_object_get(a0, "best_so_far"), 9)));
    json_decref(timed);
    o.time_budget_s = 0;

    /* a --variant whose option value only the strategy can refuse: exit 2 before measuring */
    snprintf(o.variants[0].label, sizeof o.variants[0].label, "bad");
    snprintf(o.variants[0].strategy, sizeof o.variants[0].strategy, "na2c");
    o.variants[0].options = "{\"epsilon\":5}";
    o.n_variants = 1;
    json_t *bad = bench_device_run(&o, NULL, NULL, &err);
    assert_null(bad);
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "--variant bad"));

    /* a --variant row: its options recorded, its runs made, tested against random (the
     * reference: neither gbfs nor na2c runs) */
    snprintf(o.variants[0].label, sizeof o.variants[0].label, "eps1");
    o.variants[0].options = "{\"epsilon\":1}";
    o.budget = 6;
    o.time_checkpoints[0] = 0.5;
    o.time_checkpoints[1] = 1e6;
    o.n_time_checkpoints = 2;
    json_t *var = bench_device_run(&o, NULL, NULL, &err);
    if (!var)
        fail_msg("variant run: %s (%s)", err.message, err.hint);
    const json_t *rows = json_object_get(var, "strategies");
    const json_t *eps = json_object_get(rows, "eps1");
    assert_int_equal(json_object_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(eps, "strategy")), "na2c");
    assert_true(json_number_value(json_object_get(json_object_get(eps, "options"), "epsilon")) ==
                1.0);
    assert_int_equal(json_object_size(json_object_get(json_object_get(rows, "random"), "options")),
                     0);
    assert_int_equal(json_array_size(json_object_get(eps, "runs")), SEEDS);
    assert_int_equal(json_integer_value(json_object_get(eps, "evaluations")), 6 * SEEDS);
    const json_t *far = json_object_get(json_object_get(eps, "time_checkpoints"), "1e+06");
    assert_int_equal(json_integer_value(json_object_get(far, "reached")), 0);
    assert_true(json_equal(
        json_object_get(far, "min_ms"),
        json_object_get(json_object_get(json_object_get(eps, "checkpoints"), "6"), "min_ms")));
    const json_t *tests =
        json_object_get(json_object_get(json_object_get(var, "welch"), "evaluations"), "tests");
    assert_int_equal(json_array_size(tests), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tests, 0), "a")),
                        "random");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tests, 0), "b")), "eps1");
    /* a family of one test: Holm's adjusted p is the raw p (null when the test is undefined) */
    assert_true(json_equal(json_object_get(json_array_get(tests, 0), "p"),
                           json_object_get(json_array_get(tests, 0), "p_holm")));
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    bench_device_print_table(var, mem);
    fclose(mem);
    const char *blocks[] = {"rows with options:",
                            "eps1         na2c {\"epsilon\":1}",
                            "cost against time",
                            "@1e+06s",
                            "box data over seeds at @6",
                            "Welch's t-test on the best ms at @6 evaluations",
                            "Holm's step-down correction over the",
                            "random       vs eps1"};
    for (i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (!strstr(text, blocks[i]))
            fail_msg("the report lacks '%s':\n%s", blocks[i], text);
    }
    free(text);
    json_decref(var);
    o.n_variants = 0;
    o.n_time_checkpoints = 0;
    json_decref(first);
    json_decref(second);

    /* the same file for another problem is refused, naming the problem */
    measured = count_lines(f->cache) - 1; /* the variant's measurements added */
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
        cmocka_unit_test(test_cutoff_per_run),
#ifdef KT_RUNNER_PATH
        cmocka_unit_test_setup_teardown(test_real_runs_and_cache, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
