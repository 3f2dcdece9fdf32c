/* Unit tests for bench/bench_run (offline `ktune bench`): exact figures on a hand-made
 * six-configuration cache, include-failed, the JSON shape, argument errors, one random run on
 * the pnpoly dataset, and auto's cross-validated table (leave one kernel family out). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/combine/bench_combine.h"
#include "bench/bench_main.h"
#include "bench/offline/bench_cv.h"
#include "bench/offline/bench_report.h"
#include "bench/offline/bench_run.h"

typedef struct fixture {
    char dir[64];
    char file[128];
    char fast[128]; /* fast-first.json: the same times, the optimum first in id order */
    char csv[128];  /* a Kernel Tuner summary.csv for tiny-cache */
} fixture;

/* x = 1..6; x = 3 failed; times 4, 2, -, 1.5, 1, 3 ms; every configuration costs 20 s. */
static const char *cache_text =
    "{\"tune_params_keys\": [\"x\"], \"tune_params\": {\"x\": [1, 2, 3, 4, 5, 6]},\n"
    " \"cache\": {\n"
    "  \"1\": {\"x\": 1, \"time\": 4.0, \"compile_time\": 20000},\n"
    "  \"2\": {\"x\": 2, \"time\": 2.0, \"compile_time\": 15000, \"benchmark_time\": 5000},\n"
    "  \"3\": {\"x\": 3, \"time\": \"RuntimeFailedConfig\", \"compile_time\": 20000},\n"
    "  \"4\": {\"x\": 4, \"time\": 1.5, \"compile_time\": 20000},\n"
    "  \"5\": {\"x\": 5, \"time\": 1.0, \"compile_time\": 10000, \"verification_time\": 10000},\n"
    "  \"6\": {\"x\": 6, \"time\": 3.0, \"compile_time\": 20000}}}\n";

/* x = 1..5; times 1, 4, 2, 3, 1.5 ms (the optimum first); every configuration costs 20 s. */
static const char *fast_text =
    "{\"tune_params_keys\": [\"x\"], \"tune_params\": {\"x\": [1, 2, 3, 4, 5]},\n"
    " \"cache\": {\n"
    "  \"1\": {\"x\": 1, \"time\": 1.0, \"compile_time\": 20000},\n"
    "  \"2\": {\"x\": 2, \"time\": 4.0, \"compile_time\": 20000},\n"
    "  \"3\": {\"x\": 3, \"time\": 2.0, \"compile_time\": 20000},\n"
    "  \"4\": {\"x\": 4, \"time\": 3.0, \"compile_time\": 20000},\n"
    "  \"5\": {\"x\": 5, \"time\": 1.5, \"compile_time\": 20000}}}\n";

static const char *csv_text = "set,space,strategy,budget,mean_fraction\n"
                              "DEV,tiny-cache,alpha,25,0.5\n"
                              "DEV,tiny-cache,beta,25,0.75\n"
                              "DEV,tiny-cache,alpha,50,0.9\n"
                              "DEV,other,beta,50,1.0\n"
                              "a malformed line\n";

static int write_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fputs(text, out);
    return fclose(out);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/kt_bench_XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->file, sizeof f->file, "%s/tiny-cache.json", f->dir);
    snprintf(f->fast, sizeof f->fast, "%s/fast/fast-first.json", f->dir);
    snprintf(f->csv, sizeof f->csv, "%s/summary.csv", f->dir);
    char sub[96];
    snprintf(sub, sizeof sub, "%s/fast", f->dir);
    if (write_file(f->file, cache_text) < 0 || mkdir(sub, 0700) != 0 ||
        write_file(f->fast, fast_text) < 0 || write_file(f->csv, csv_text) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char sub[96];
    snprintf(sub, sizeof sub, "%s/fast", f->dir);
    unlink(f->file);
    unlink(f->fast);
    unlink(f->csv);
    rmdir(sub);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void opts(bench_options *o, const char *space, const char *strategy, int budget, int seeds)
{
    memset(o, 0, sizeof *o);
    o->spaces[0] = space;
    o->n_spaces = 1;
    snprintf(o->strategies[0], sizeof o->strategies[0], "%s", strategy);
    o->n_strategies = 1;
    o->budget = budget;
    o->seeds = seeds;
    o->curves = 1;
}

static const json_t *strat(const json_t *res, const char *name)
{
    return json_object_get(
        json_object_get(json_array_get(json_object_get(res, "spaces"), 0), "strategies"), name);
}

static double num(const json_t *o, const char *group, const char *key)
{
    const json_t *v = json_object_get(group ? json_object_get(o, group) : o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_exhaustive_exact(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f->file, "exhaustive", 25, 2);
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *sp = json_array_get(json_object_get(res, "spaces"), 0);
    assert_int_equal(json_integer_value(json_object_get(sp, "n_configs")), 5);
    assert_int_equal(json_integer_value(json_object_get(sp, "n_valid")), 5);
    assert_float_equal(num(sp, NULL, "optimum_ms"), 1.0, 1e-12);
    const json_t *st = strat(res, "exhaustive");
    /* valid space in id order: x = 1, 2, 4, 5, 6 -> best 4, 2, 1.5, 1, 1 */
    const json_t *run = json_array_get(json_object_get(st, "runs"), 1);
    const json_t *curve = json_object_get(run, "best_so_far");
    const double want[] = {4, 2, 1.5, 1, 1};
    assert_int_equal(json_array_size(curve), 5);
    assert_int_equal(json_integer_value(json_object_get(run, "evaluations")), 5);
    for (size_t i = 0; i < 5; i++)
        assert_float_equal(json_number_value(json_array_get(curve, i)), want[i], 1e-12);
    assert_float_equal(num(st, "fraction", "25"), 1.0, 1e-12);
    assert_float_equal(num(st, "evals_to_5pct", "median"), 4.0, 1e-12);
    assert_float_equal(num(st, "evals_to_5pct", "success_rate"), 1.0, 1e-12);
    /* 20 s each: 60 s covers 3 evaluations (best 1.5), 300 s all */
    assert_float_equal(num(st, "clock_fraction", "60"), 1.0 / 1.5, 1e-12);
    assert_float_equal(num(st, "clock_fraction", "300"), 1.0, 1e-12);
    assert_float_equal(num(st, "clock_to_5pct_s", "median"), 80.0, 1e-9);
    assert_true(num(st, NULL, "overhead_us") >= 0);
    json_decref(res);

    /* budget 3: the budget itself is a checkpoint; the optimum is not reached */
    opts(&o, f->file, "exhaustive", 3, 1);
    res = bench_run(&o, &err);
    assert_non_null(res);
    st = strat(res, "exhaustive");
    assert_int_equal(json_array_size(json_object_get(res, "checkpoints")), 1);
    assert_float_equal(num(st, "fraction", "3"), 1.0 / 1.5, 1e-12);
    assert_true(json_is_null(json_object_get(json_object_get(st, "evals_to_5pct"), "median")));
    assert_float_equal(num(st, "evals_to_5pct", "success_rate"), 0.0, 1e-12);
    json_decref(res);
}

static void test_include_failed(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f->file, "exhaustive", 4, 1);
    o.include_failed = 1;
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *sp = json_array_get(json_object_get(res, "spaces"), 0);
    assert_int_equal(json_integer_value(json_object_get(sp, "n_configs")), 6);
    assert_int_equal(json_integer_value(json_object_get(sp, "n_valid")), 5);
    const json_t *st = strat(res, "exhaustive");
    /* x = 1, 2, 3 (failed), 4 -> best 4, 2, 2, 1.5 */
    assert_float_equal(num(st, "fraction", "4"), 1.0 / 1.5, 1e-12);
    assert_float_equal(num(st, "clock_fraction", "60"), 0.5, 1e-12);
    assert_float_equal(num(st, "evals_to_5pct", "success_rate"), 0.0, 1e-12);
    json_decref(res);

    o.budget = 6;
    res = bench_run(&o, &err);
    assert_non_null(res);
    st = strat(res, "exhaustive");
    assert_float_equal(num(st, "evals_to_5pct", "median"), 5.0, 1e-12);
    assert_float_equal(num(st, "clock_to_5pct_s", "median"), 100.0, 1e-9);
    json_decref(res);
}

static void test_summary_shape(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f->file, "exhaustive", 400, 1);
    snprintf(o.strategies[1], sizeof o.strategies[1], "random");
    o.n_strategies = 2;
    o.curves = 0;
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *summary = json_object_get(res, "summary");
    assert_true(json_is_object(summary));
    assert_int_equal(json_object_size(summary), 2);
    const char *keys[] = {"25", "50", "100", "200", "400"};
    for (int s = 0; s < 2; s++) {
        const json_t *row = json_object_get(summary, s ? "random" : "exhaustive");
        assert_int_equal(json_object_size(row), 5);
        for (int k = 0; k < 5; k++)
            assert_float_equal(num(row, NULL, keys[k]), 1.0, 1e-12); /* 5 configs < 25 */
    }
    assert_null(json_object_get(strat(res, "random"), "runs")); /* curves off */
    assert_non_null(json_object_get(json_object_get(res, "averages"), "random"));
    /* the folder form finds the same file */
    o.spaces[0] = f->dir;
    json_t *res2 = bench_run(&o, &err);
    assert_non_null(res2);
    assert_true(json_equal(json_object_get(res, "summary"), json_object_get(res2, "summary")));
    json_decref(res2);
    json_decref(res);
}

/* The methodology score by hand. Both caches: valid times 1, 1.5, 2, 3, 4 ms (median 2), every
 * evaluation 20 s. Range: the 1% target 1 + 0.99 = 1.99 has 3 slower configurations, ceil(3 / (5 +
 * 1 - 3)) = 1 evaluation; the 95% target 1.05 has 4 slower, ceil(4 / 2) = 2: 20 - 40 s, 10,000
 * points t_j = 20 + 20 j / 9999. Baseline: m = round(t / 20) draws, rank round(6 / (m + 1)): m = 1
 * (j <= 4999) -> rank 3, 2 ms; m = 2 (j >= 5000) -> rank 2, 1.5 ms. The first evaluation ends at
 * 20 s plus the searcher's (non-zero) time, after t_0 and before t_1; the second after 40 s. */
static void test_score_exact(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;

    /* tiny-cache in id order: 4 ms first, the curve stays at 4 (the worst) over the whole range:
     * 5000 points of (4 - 2) / (1 - 2) = -2 and 5000 of (4 - 1.5) / (1 - 1.5) = -5 */
    opts(&o, f->file, "exhaustive", 25, 2);
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *sp = json_array_get(json_object_get(res, "spaces"), 0);
    const json_t *sr = json_object_get(sp, "score_range");
    assert_int_equal(json_integer_value(json_object_get(sr, "fevals_start")), 1);
    assert_int_equal(json_integer_value(json_object_get(sr, "fevals_end")), 2);
    assert_float_equal(num(sr, NULL, "t_start_s"), 20.0, 1e-9);
    assert_float_equal(num(sr, NULL, "t_end_s"), 40.0, 1e-9);
    assert_float_equal(num(sr, NULL, "time_per_eval_s"), 20.0, 1e-9);
    assert_float_equal(num(sr, NULL, "median_ms"), 2.0, 1e-12);
    const json_t *st = strat(res, "exhaustive");
    assert_true(num(st, NULL, "overhead_us") > 0);
    assert_float_equal(num(st, NULL, "score"), -3.5, 1e-12);
    assert_float_equal(num(st, NULL, "score_beyond"), 0.0, 1e-12);
    assert_float_equal(num(json_object_get(res, "averages"), "exhaustive", "score"), -3.5, 1e-12);
    json_decref(res);

    /* fast-first: the optimum at the first evaluation; only t_0 (nothing found: the worst, -2)
     * is not 1: (9999 - 2) / 10000 */
    opts(&o, f->fast, "exhaustive", 25, 3);
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_float_equal(num(strat(res, "exhaustive"), NULL, "score"), 0.9997, 1e-12);
    json_decref(res);

    /* include-failed: x = 3 (failed, 20 s) joins the space: 6 draws per 5 valid evaluations,
     * 120 / 5 = 24 s per valid evaluation; the range scales by 6 / 5: 24 - 48 s */
    opts(&o, f->file, "exhaustive", 25, 1);
    o.include_failed = 1;
    res = bench_run(&o, &err);
    assert_non_null(res);
    sr = json_object_get(json_array_get(json_object_get(res, "spaces"), 0), "score_range");
    assert_float_equal(num(sr, NULL, "time_per_eval_s"), 24.0, 1e-9);
    assert_float_equal(num(sr, NULL, "t_start_s"), 24.0, 1e-9);
    assert_float_equal(num(sr, NULL, "t_end_s"), 48.0, 1e-9);
    json_decref(res);
}

/* --batch: ask 3, evaluate, tell 3; the last ask cut to the budget. */
static void test_batch_rounds(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;

    /* budget 4, batch 3: round 1 = x 1, 2, 4 (best 1.5), round 2 = x 5 (1): 2 rounds */
    opts(&o, f->file, "exhaustive", 4, 2);
    o.batch = 3;
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    assert_int_equal(json_integer_value(json_object_get(res, "batch")), 3);
    const json_t *rcs = json_object_get(res, "round_checkpoints");
    assert_int_equal(json_array_size(rcs), 1);
    assert_int_equal(json_integer_value(json_array_get(rcs, 0)), 2);
    const json_t *st = strat(res, "exhaustive");
    const json_t *run = json_array_get(json_object_get(st, "runs"), 0);
    assert_int_equal(json_integer_value(json_object_get(run, "rounds")), 2);
    assert_int_equal(json_integer_value(json_object_get(run, "evaluations")), 4);
    const double want[] = {4, 2, 1.5, 1};
    for (size_t i = 0; i < 4; i++)
        assert_float_equal(
            json_number_value(json_array_get(json_object_get(run, "best_so_far"), i)), want[i],
            1e-12);
    assert_float_equal(num(st, "fraction", "4"), 1.0, 1e-12);
    assert_float_equal(num(st, "rounds_fraction", "2"), 1.0, 1e-12);
    assert_float_equal(num(st, "rounds_to_5pct", "median"), 2.0, 1e-12);
    assert_float_equal(num(st, "evals_to_5pct", "median"), 4.0, 1e-12);
    json_decref(res);

    /* budget 3, batch 2: round 1 = x 1, 2 (best 2), round 2 = x 4 (1.5) */
    opts(&o, f->file, "exhaustive", 3, 1);
    o.batch = 2;
    res = bench_run(&o, &err);
    assert_non_null(res);
    st = strat(res, "exhaustive");
    assert_float_equal(num(st, "rounds_fraction", "2"), 1.0 / 1.5, 1e-12);
    assert_float_equal(num(st, "rounds_to_5pct", "success_rate"), 0.0, 1e-12);
    assert_true(json_is_null(json_object_get(json_object_get(st, "rounds_to_5pct"), "median")));
    json_decref(res);

    /* budget 25, batch 1: rounds are evaluations; 5, 10, 25 rounds, the space has 5 */
    opts(&o, f->file, "exhaustive", 25, 1);
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_int_equal(json_array_size(json_object_get(res, "round_checkpoints")), 3);
    st = strat(res, "exhaustive");
    assert_float_equal(num(st, "rounds_fraction", "5"), 1.0, 1e-12);
    assert_float_equal(num(st, "rounds_to_5pct", "median"), 4.0, 1e-12);
    assert_true(json_is_null(json_object_get(st, "overhead_at_400_us"))); /* < 350 results */
    json_decref(res);
}

/* The Kernel Tuner reference: the best strategy per budget per space and over the spaces. */
static void test_kt_reference(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f->file, "exhaustive", 50, 1);
    o.kt_reference = f->csv;
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    assert_int_equal(json_integer_value(json_object_get(res, "kt_strategies")), 2);
    const json_t *sp = json_array_get(json_object_get(res, "spaces"), 0);
    const json_t *best = json_object_get(sp, "kt_best");
    assert_string_equal(json_string_value(json_object_get(json_object_get(best, "25"), "strategy")),
                        "beta");
    assert_float_equal(num(best, "25", "fraction"), 0.75, 1e-12);
    assert_string_equal(json_string_value(json_object_get(json_object_get(best, "50"), "strategy")),
                        "alpha");
    assert_float_equal(num(best, "50", "fraction"), 0.9, 1e-12);
    assert_true(json_equal(best, json_object_get(res, "kt_best"))); /* one space: the same */
    json_decref(res);

    /* two spaces: fast-first is in no strategy's rows, so no mean; per space only tiny-cache */
    o.spaces[1] = f->fast;
    o.n_spaces = 2;
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_int_equal(json_object_size(json_object_get(res, "kt_best")), 0);
    sp = json_array_get(json_object_get(res, "spaces"), 1);
    assert_int_equal(json_object_size(json_object_get(sp, "kt_best")), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    bench_print_table(res, NULL, mem);
    fclose(mem);
    assert_non_null(strstr(text, "KT strategy: @25 beta, @50 alpha"));
    assert_non_null(strstr(text, "score over 20.0 - 40.0 s"));
    free(text);
    json_decref(res);

    /* an unreadable reference is reported, not fatal */
    o.kt_reference = "/nonexistent/summary.csv";
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_true(json_is_string(json_object_get(res, "kt_error")));
    json_decref(res);
}

static int parse(const char *line, bench_options *o)
{
    char buf[512], *argv[32], msg[256], *save = NULL;
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok_r(buf, " ", &save); t && argc < 32; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    FILE *devnull = fopen("/dev/null", "w");
    int rc = bench_args_parse(&bench_offline_args, argc, argv, o, msg, sizeof msg, devnull);
    fclose(devnull);
    if (rc < 0)
        assert_true(strlen(msg) > 0);
    return rc;
}

static void test_arguments(void **state)
{
    fixture *f = *state;
    bench_options o;
    char line[256];
    assert_int_equal(parse("bench --spaces a b --strategies random,exhaustive --budget 50 "
                           "--seeds 3 --include-failed --json x.json",
                           &o),
                     0);
    assert_int_equal(o.n_spaces, 2);
    assert_int_equal(o.n_strategies, 2);
    assert_int_equal(o.budget, 50);
    assert_int_equal(o.seeds, 3);
    assert_int_equal(o.include_failed, 1);
    assert_int_equal(o.curves, 1);
    assert_int_equal(parse("bench --spaces a --strategies random", &o), 0);
    assert_int_equal(o.budget, 400);
    assert_int_equal(o.seeds, 20);
    assert_int_equal(o.batch, 1);
    assert_int_equal(parse("bench --spaces a --strategies random --batch 16", &o), 0);
    assert_int_equal(o.batch, 16);
    assert_int_equal(parse("bench --spaces a --strategies random --batch 256", &o), 0);
    assert_int_equal(parse("bench --spaces a --strategies random --batch 0", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --batch 257", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --batch", &o), -1);
    assert_int_equal(parse("bench --help", &o), 1);
    assert_int_equal(parse("bench --strategies random", &o), -1);
    assert_int_equal(parse("bench --spaces a", &o), -1);
    assert_int_equal(parse("bench --spaces --strategies random", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies nosuch", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random,", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random,random", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --budget 0", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --budget 100001", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --budget 12x", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --seeds 1001", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --seeds", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --frobnicate", &o), -1);

    /* bench_main: usage errors 2, failures 1 */
    char *a1[] = {"bench", "--spaces", "/nonexistent/x.json", "--strategies", "random"};
    assert_int_equal(bench_main(5, a1, NULL), 1);
    char *a2[] = {"bench", "--budget", "-5"};
    assert_int_equal(bench_main(3, a2, NULL), 2);
    snprintf(line, sizeof line, "%s", f->file);
    char *a3[] = {"bench",          "--spaces",        line, "--strategies", "exhaustive",
                  "--kt-reference", "/nonexistent.csv"};
    assert_int_equal(bench_main(7, a3, NULL), 2);
    char *a4[] = {"bench",
                  "--spaces",
                  line,
                  "--strategies",
                  "exhaustive",
                  "--json",
                  "/nonexistent/dir/out.json"};
    assert_int_equal(bench_main(7, a4, NULL), 1);

    /* a space with no valid configuration is a failure */
    bench_options o2;
    kt_error err;
    char bad[160];
    snprintf(bad, sizeof bad, "%s/bad.json", f->dir);
    FILE *out = fopen(bad, "w");
    assert_non_null(out);
    fputs("{\"tune_params\": {\"x\": [1]}, \"cache\": {\"1\": {\"x\": 1, \"time\": "
          "\"InvalidConfig\"}}}",
          out);
    fclose(out);
    opts(&o2, bad, "random", 10, 1);
    assert_null(bench_run(&o2, &err));
    assert_true(strstr(err.message, "no configuration with a valid time") != NULL);
    unlink(bad);
}

/* A searcher maker as `ktune bench --remote` hands one in (cli/cli_bench_remote.c), here forwarding
 * to an in-process searcher through searcher_new_ops: the runs and figures are the in-process ones;
 * the maker sees every run's strategy, seed, budget and batch; a failure it reports fails the run.
 */
typedef struct maker_ctx {
    int makes, opens, last_budget, last_batch, fail_at;
    char last_space[64];
} maker_ctx;

static int fwd_ask(void *st, config_id *out, int max)
{
    return searcher_ask(st, out, max);
}

static void fwd_tell(void *st, const config_id *ids, const trial_result *r, int n)
{
    searcher_tell(st, ids, r, n);
}

static void fwd_destroy(void *st)
{
    searcher_free(st);
}

static int maker_open(void *ctx, const bench_options *opt)
{
    ((maker_ctx *)ctx)->opens++;
    return opt->server && strcmp(opt->server, "unreachable") == 0 ? 3 : 0;
}

static searcher *maker_make(void *ctx, const space *sp, const char *space_name,
                            const char *strategy, uint64_t seed, int budget, int batch,
                            kt_error *err)
{
    maker_ctx *m = ctx;
    static const searcher_ops ops = {"forwarded", fwd_ask, fwd_tell, fwd_destroy};
    searcher *inner = searcher_new(strategy, sp, NULL, seed, err), *s;
    m->makes++;
    m->last_budget = budget;
    m->last_batch = batch;
    snprintf(m->last_space, sizeof m->last_space, "%s", space_name);
    if (!inner)
        return NULL;
    s = searcher_new_ops(&ops, inner, sp, err);
    if (!s)
        searcher_free(inner);
    assert_string_equal(searcher_name(s), "forwarded");
    return s;
}

static int maker_failed(void *ctx, kt_error *err)
{
    maker_ctx *m = ctx;
    return m->makes == m->fail_at ? kt_error_set(err, KT_ERR_UNAVAILABLE, "the connection broke")
                                  : 0;
}

static void test_searcher_maker(void **state)
{
    fixture *f = *state;
    maker_ctx m = {0};
    bench_searcher_maker maker = {maker_open, maker_make, maker_failed, &m};
    bench_options o;
    kt_error err;

    opts(&o, f->file, "random", 25, 3);
    o.batch = 2;
    json_t *local = bench_run(&o, &err);
    assert_non_null(local);
    o.maker = &maker;
    json_t *made = bench_run(&o, &err);
    assert_non_null(made);
    assert_int_equal(m.makes, 3);
    assert_int_equal(m.last_budget, 5); /* min(budget, the space's 5 valid configurations) */
    assert_int_equal(m.last_batch, 2);
    assert_string_equal(m.last_space, "tiny-cache");
    const json_t *a = json_object_get(strat(local, "random"), "runs");
    const json_t *b = json_object_get(strat(made, "random"), "runs");
    assert_int_equal(json_array_size(a), 3);
    for (size_t i = 0; i < json_array_size(a); i++)
        assert_true(json_equal(json_object_get(json_array_get(a, i), "best_so_far"),
                               json_object_get(json_array_get(b, i), "best_so_far")));
    assert_true(json_equal(json_object_get(strat(local, "random"), "fraction"),
                           json_object_get(strat(made, "random"), "fraction")));
    json_decref(local);
    json_decref(made);

    /* a failure the maker reports after a run fails the bench, naming the run */
    m.makes = 0;
    m.fail_at = 2;
    assert_null(bench_run(&o, &err));
    assert_string_equal(err.message, "strategy random on tiny-cache, seed 1: the connection broke");

    /* the options: --server implies --remote; --token alone, --remote with --history refused */
    assert_int_equal(parse("bench --spaces a --strategies random --server http://h:1", &o), 0);
    assert_true(o.remote && o.server); /* (the strings point into parse's own buffer, gone) */
    assert_int_equal(parse("bench --spaces a --strategies random --remote --timeout 5", &o), 0);
    assert_true(o.remote && !o.server && o.timeout && !o.token);
    assert_int_equal(parse("bench --spaces a --strategies random --token t", &o), -1);
    assert_int_equal(parse("bench --spaces a --strategies random --remote --history b", &o), -1);

    /* bench_main: --remote without a maker is a usage error; the maker's open decides the rest */
    char line[256];
    snprintf(line, sizeof line, "%s", f->file);
    char *a1[] = {"bench", "--spaces", line, "--strategies", "random", "--remote"};
    assert_int_equal(bench_main(6, a1, NULL), 2);
    char *a2[] = {"bench", "--spaces", line, "--strategies", "random", "--server", "unreachable"};
    m.opens = m.makes = 0;
    assert_int_equal(bench_main_with(7, a2, NULL, &maker), 3);
    assert_int_equal(m.opens + m.makes, 1);
}

static void test_random_pnpoly(void **state)
{
    (void)state;
    bench_options o;
    kt_error err;
    opts(&o, KT_SOURCE_DIR "/datasets/pnpoly_kt-RTX_3090.json.gz", "random", 50, 3);
    json_t *res = bench_run(&o, &err);
    if (!res)
        fail_msg("%s", err.message);
    const json_t *row = json_object_get(json_object_get(res, "summary"), "random");
    double f25 = num(row, NULL, "25"), f50 = num(row, NULL, "50");
    assert_true(f25 > 0 && f25 <= 1.0);
    assert_true(f50 > 0 && f50 <= 1.0);
    assert_true(f25 <= f50);
    size_t i;
    json_t *run;
    json_array_foreach(json_object_get(strat(res, "random"), "runs"), i, run)
    {
        const json_t *c = json_object_get(run, "best_so_far");
        assert_int_equal(json_array_size(c), 50);
        for (size_t k = 1; k < json_array_size(c); k++)
            assert_true(json_number_value(json_array_get(c, k)) <=
                        json_number_value(json_array_get(c, k - 1)));
    }
    json_decref(res);
}

/* random on pnpoly, budget 400, 20 seeds: the searcher time at 350-399 results is measured, and
 * random search scores about 0 against the calculated random search (seeded: deterministic). */
static void test_random_score_pnpoly(void **state)
{
    (void)state;
    bench_options o;
    kt_error err;
    opts(&o, KT_SOURCE_DIR "/datasets/pnpoly_kt-RTX_3090.json.gz", "random", 400, 20);
    o.curves = 0;
    json_t *res = bench_run(&o, &err);
    if (!res)
        fail_msg("%s", err.message);
    const json_t *st = strat(res, "random");
    assert_true(num(st, NULL, "overhead_at_400_us") >= 0);
    double score = num(st, NULL, "score");
    assert_true(score > -0.1 && score < 0.1);
    json_decref(res);
}

/* ktune bench --combine (bench_combine.c; ctests bench_combine_512/1024 diff its whole report):
 * the rows and the tested pairs of one part, and the refusals with their exit codes. */
static void test_combine(void **state)
{
    (void)state;
    const char *part = KT_SOURCE_DIR "/tests/bench/results/gemm_tiled-512-cpu-gbfs-na2c.json";
    bench_combine_options o;
    char msg[256];
    char *args[] = {"bench", "--combine", (char *)part, "--test", "na2c,nosuch"};
    assert_int_equal(bench_args_parse(&bench_combine_args, 5, args, &o, msg, sizeof msg, stdout),
                     0);
    kt_error err;
    json_t *res = bench_combine_run(&o, &err);
    assert_non_null(res);
    assert_int_equal(json_object_size(json_object_get(res, "rows")), 3); /* gbfs, na2c, na2c-eps1 */
    assert_int_equal(json_array_size(json_object_get(res, "test")), 1);  /* nosuch is no row */
    json_decref(res);
    char *twice[] = {"bench", "--combine", (char *)part, (char *)part};
    assert_int_equal(bench_main(4, twice, NULL), 1); /* a row given twice */
    char *missing[] = {"bench", "--combine", "/nonexistent.json"};
    assert_int_equal(bench_main(3, missing, NULL), 1);
    char *none[] = {"bench", "--combine"};
    assert_int_equal(bench_main(2, none, NULL), 2);
}

/* The cross-validated table of auto (bench_cv.h): the tiny cache (family "tiny-cache") and the
 * pnpoly dataset (family "pnpoly"), budget 25, one seed. Each family's constants are chosen on the
 * other alone: on the tiny cache every candidate finds the optimum (all tie: the first is chosen
 * for pnpoly), on pnpoly the best candidate's score decides for the tiny cache and for every
 * family together; pnpoly's held-out figure is then the first candidate's score there (same seed,
 * same runs). Without auto, or with --cv-seeds 0, there is no table. */
static void test_cross_validation(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f->file, "auto", 25, 1);
    o.spaces[1] = KT_SOURCE_DIR "/datasets/pnpoly_kt-RTX_3090.json.gz";
    o.n_spaces = 2;
    o.curves = 0;
    o.cv_seeds = 1;
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *cv = json_object_get(res, "cross_validation");
    assert_non_null(cv);
    int n_grid;
    bench_cv_grid(&n_grid);
    const json_t *cands = json_object_get(cv, "candidates");
    assert_int_equal(json_array_size(cands), n_grid);
    int best = 0;
    double best_s = -1;
    for (int g = 0; g < n_grid; g++) {
        const json_t *sc = json_object_get(json_array_get(cands, g), "score");
        assert_float_equal(num(sc, NULL, "tiny-cache"), 1.0, 1e-12);
        double s = num(sc, NULL, "pnpoly_kt-RTX_3090");
        assert_true(s > 0 && s <= 1);
        if (s > best_s) {
            best_s = s;
            best = g;
        }
    }
    const json_t *fams = json_object_get(cv, "families");
    assert_int_equal(json_array_size(fams), 2);
    const json_t *tiny = json_array_get(fams, 0), *pn = json_array_get(fams, 1);
    assert_string_equal(json_string_value(json_object_get(tiny, "family")), "tiny-cache");
    assert_string_equal(json_string_value(json_object_get(pn, "family")), "pnpoly");
    assert_int_equal(json_integer_value(json_object_get(tiny, "chosen_index")), best);
    assert_float_equal(num(tiny, NULL, "train_score"), best_s, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(pn, "chosen_index")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(cv, "all"), "chosen_index")), best);
    assert_float_equal(num(tiny, "fraction", "25"), 1.0, 1e-12);
    assert_float_equal(
        num(pn, "fraction", "25"),
        num(json_object_get(json_array_get(cands, 0), "score"), NULL, "pnpoly_kt-RTX_3090"), 1e-12);
    assert_non_null(json_object_get(pn, "plain")); /* auto's plain figures beside */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    bench_print_table(res, NULL, mem);
    fclose(mem);
    assert_non_null(strstr(text, "cross-validated auto: leave one kernel family out (2 families)"));
    assert_non_null(strstr(text, "pnpoly (1 spaces): chosen on the others"));
    free(text);
    json_decref(res);

    o.cv_seeds = 0;
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_null(json_object_get(res, "cross_validation"));
    json_decref(res);
    o.cv_seeds = 1;
    snprintf(o.strategies[0], sizeof o.strategies[0], "random");
    res = bench_run(&o, &err);
    assert_non_null(res);
    assert_null(json_object_get(res, "cross_validation"));
    json_decref(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exhaustive_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_score_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kt_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_searcher_maker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cross_validation, setup, teardown),
        cmocka_unit_test(test_random_pnpoly),
        cmocka_unit_test(test_combine),
        cmocka_unit_test(test_random_score_pnpoly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
