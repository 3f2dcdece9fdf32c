/* Unit tests for `ktune bench --history` (bench/bench_history): which history spaces count for a
 * space (same kernel name and parameter names, never the space itself), the first configurations
 * (the related spaces' best, interleaved), the warm runs beside the cold ones and the warm-start
 * summary, the shuffled and inverted histories, and the arguments. Hand-made caches. */
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

#include "bench/offline/bench_history.h"
#include "bench/offline/bench_report.h"
#include "bench/offline/bench_run.h"

typedef struct fixture {
    char dir[64];
    char files[5][128];
} fixture;

/* tiny_a (the target), tiny_b (same kernel "tiny", other device: fastest x=2, then x=6), other_c
 * (kernel "other"), tiny_d (kernel "tiny", parameter z: other names), tiny_e (tiny, fastest x=4).
 */
static const char *const names[5] = {"tiny_a", "tiny_b", "other_c", "tiny_d", "tiny_e"};
static const char *const params[5] = {"x", "x", "x", "z", "x"};
static const double times[5][6] = {
    {4.0, 2.0, 5.0, 1.5, 1.0, 3.0}, {9.0, 1.0, 8.0, 7.0, 6.0, 2.0}, {1.0, 9.0, 9.0, 9.0, 9.0, 9.0},
    {1.0, 9.0, 9.0, 9.0, 9.0, 9.0}, {9.0, 8.0, 7.0, 1.0, 6.0, 5.0},
};

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/kt_benchh_XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char dir[sizeof f->dir]; /* a copy: gcc -O1 takes f->dir and f->files for overlapping */
    memcpy(dir, f->dir, sizeof dir);
    for (int s = 0; s < 5; s++) {
        snprintf(f->files[s], sizeof f->files[s], "%s/%s.json", dir, names[s]);
        FILE *out = fopen(f->files[s], "w");
        if (!out)
            return -1;
        fprintf(out,
                "{\"space\": \"%s\", \"tune_params_keys\": [\"%s\"], \"tune_params\": {\"%s\": "
                "[1, 2, 3, 4, 5, 6]}, \"cache\": {",
                names[s], params[s], params[s]);
        for (int x = 1; x <= 6; x++)
            fprintf(out, "%s\"%d\": {\"%s\": %d, \"time\": %g, \"compile_time\": 1000}",
                    x > 1 ? ", " : "", x, params[s], x, times[s][x - 1]);
        fprintf(out, "}}\n");
        fclose(out);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int s = 0; s < 5; s++)
        unlink(f->files[s]);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void opts(bench_options *o, const fixture *f, int n_history, int first)
{
    memset(o, 0, sizeof *o);
    o->spaces[0] = f->files[0];
    o->n_spaces = 1;
    snprintf(o->strategies[0], sizeof o->strategies[0], "exhaustive");
    snprintf(o->strategies[1], sizeof o->strategies[1], "auto");
    o->n_strategies = 2;
    o->budget = 6;
    o->seeds = 1;
    o->curves = 1;
    for (int s = 0; s < n_history; s++)
        o->history[o->n_history++] = f->files[s];
    o->history_first = first;
}

/* best_so_far of the (only) seed of strategy name on the first space. */
static const json_t *curve(const json_t *res, const char *name)
{
    const json_t *st = json_object_get(
        json_object_get(json_array_get(json_object_get(res, "spaces"), 0), "strategies"), name);
    return json_object_get(json_array_get(json_object_get(st, "runs"), 0), "best_so_far");
}

static double at(const json_t *c, int i)
{
    return json_real_value(json_array_get(c, (size_t)i));
}

static void related_spaces_seed_the_warm_runs(void **state)
{
    fixture *f = *state;
    bench_options o;
    kt_error err;
    opts(&o, f, 5, 2); /* the target itself is in --history too: never its own history */
    json_t *res = bench_run(&o, &err);
    assert_non_null(res);
    const json_t *sp = json_array_get(json_object_get(res, "spaces"), 0);
    const json_t *hist = json_object_get(sp, "history");
    assert_int_equal(json_array_size(hist), 2);
    assert_string_equal(json_string_value(json_array_get(hist, 0)), "tiny_b");
    assert_string_equal(json_string_value(json_array_get(hist, 1)), "tiny_e");
    assert_int_equal(json_integer_value(json_object_get(sp, "history_first")), 2);
    assert_int_equal(json_integer_value(json_object_get(sp, "history_prior")), 12);
    /* cold exhaustive: x = 1, 2, ... (times 4, 2, ...); warm: b's best x=2 (2 ms here), then e's
     * best x=4 (1.5 ms), then its own order from x=1 */
    const json_t *cold = curve(res, "exhaustive"), *warm = curve(res, "exhaustive+history");
    assert_true(at(cold, 0) == 4.0 && at(cold, 1) == 2.0);
    assert_true(at(warm, 0) == 2.0 && at(warm, 1) == 1.5 && at(warm, 2) == 1.5);
    assert_true(at(warm, 5) == 1.0); /* all six measured once each: the optimum */
    const json_t *ws = json_object_get(res, "warm_start");
    assert_int_equal(json_array_size(json_object_get(ws, "spaces")), 1);
    assert_string_equal(json_string_value(json_object_get(ws, "times")), "as recorded");
    const json_t *ex = json_object_get(json_object_get(ws, "strategies"), "exhaustive");
    assert_true(json_real_value(json_object_get(json_object_get(ex, "warm"), "6")) == 1.0);
    assert_non_null(json_object_get(json_object_get(ws, "strategies"), "auto"));
    json_decref(res);

    /* Only unrelated history: no warm runs, an empty warm-start summary. */
    o.history[0] = f->files[2];
    o.history[1] = f->files[3];
    o.n_history = 2;
    res = bench_run(&o, &err);
    assert_non_null(res);
    sp = json_array_get(json_object_get(res, "spaces"), 0);
    assert_int_equal(json_array_size(json_object_get(sp, "history")), 0);
    assert_null(json_object_get(json_object_get(sp, "strategies"), "exhaustive+history"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(res, "warm_start"), "spaces")),
                     0);
    json_decref(res);
}

/* The per-space warm-start table pairs warm with cold over the seeds (Wilcoxon signed-rank, exact
 * for few pairs): warm ahead in all six seeds at @5 gives p = 2/2^6; equal everywhere at @6, p 1;
 * a result without per-seed fractions (written before them) prints "-". */
static void the_warm_table_tests_warm_against_cold(void **state)
{
    (void)state;
    json_t *res = json_loads(
        "{\"checkpoints\": [5, 6], \"spaces\": [{\"name\": \"s\", \"strategies\": {"
        "\"auto\": {\"fraction\": {\"5\": 0.5, \"6\": 1},"
        " \"fraction_seeds\": {\"5\": [0.5, 0.4, 0.6, 0.5, 0.5, 0.5], \"6\": [1, 1, 1, 1, 1, 1]}},"
        "\"auto+history\": {\"fraction\": {\"5\": 0.9, \"6\": 1},"
        " \"fraction_seeds\": {\"5\": [0.9, 0.8, 0.95, 0.85, 0.7, 0.75], \"6\": [1, 1, 1, 1, 1, "
        "1]}}}},"
        "{\"name\": \"old\", \"strategies\": {\"auto\": {\"fraction\": {\"5\": 0.5}},"
        "\"auto+history\": {\"fraction\": {\"5\": 0.6}}}}],"
        "\"warm_start\": {\"spaces\": [\"s\", \"old\"], \"strategies\": {\"auto\": {}}}}",
        0, NULL);
    assert_non_null(res);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    bench_print_table(res, NULL, mem);
    fclose(mem);
    const char *row = strstr(text, "auto per space");
    assert_non_null(row);
    row = strstr(row, "p paired");
    assert_non_null(row);
    if (!strstr(row, "p paired   0.0312  1.0000\n"))
        fail_msg("%s", row);
    row = strstr(row + 1, "p paired");
    assert_non_null(row);
    if (!strstr(row, "p paired        -       -\n"))
        fail_msg("%s", row);
    free(text);
    json_decref(res);
}

static void transformed_histories(void **state)
{
    fixture *f = *state;
    bench_history h;
    bench_seed seed;
    kt_error err;
    bench_space target;
    const char *paths[1] = {f->files[1]};
    assert_int_equal(bench_space_load(f->files[0], 0, &target, &err), 0);
    /* inverted: b's slowest (x=1, 9 ms) is now its best */
    assert_int_equal(bench_history_load(paths, 1, BENCH_HISTORY_INVERTED, &h, &err), 0);
    assert_int_equal(bench_history_for(&h, &target, 1, &seed, &err), 0);
    assert_int_equal(seed.h.n_first, 1);
    json_t *c = space_config_json(target.sp, seed.h.first[0]);
    assert_int_equal(json_integer_value(json_object_get(c, "x")), 1);
    json_decref(c);
    bench_seed_free(&seed);
    bench_history_free(&h);
    /* shuffled: the same times, in another order (seeded: the same every time) */
    assert_int_equal(bench_history_load(paths, 1, BENCH_HISTORY_SHUFFLED, &h, &err), 0);
    double sum = 0, moved = 0;
    for (config_id id = 0; id < h.src[0].n; id++) {
        sum += h.src[0].time[id];
        moved += h.src[0].time[id] != times[1][id];
    }
    assert_true(sum == 33.0);
    assert_true(moved > 0);
    bench_history_free(&h);
    bench_space_free(&target);
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

static void history_arguments(void **state)
{
    (void)state;
    bench_options o;
    assert_int_equal(parse("bench --spaces a --history b c --strategies auto", &o), 0);
    assert_int_equal(o.n_history, 2);
    assert_int_equal(o.history_first, BENCH_HISTORY_DEFAULT_FIRST);
    assert_int_equal(parse("bench --spaces a --history b --history-first 0 --history-invert "
                           "--strategies auto",
                           &o),
                     0);
    assert_int_equal(o.history_first, 0);
    assert_int_equal(o.history_invert, 1);
    assert_int_equal(parse("bench --spaces a --history --strategies auto", &o), -1);
    assert_int_equal(parse("bench --spaces a --history-shuffle --strategies auto", &o), -1);
    assert_int_equal(parse("bench --spaces a --history b --history-shuffle --history-invert "
                           "--strategies auto",
                           &o),
                     -1);
    assert_int_equal(
        parse("bench --spaces a --history b --history-first 257 --strategies auto", &o), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_warm_table_tests_warm_against_cold),
        cmocka_unit_test_setup_teardown(related_spaces_seed_the_warm_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(transformed_histories, setup, teardown),
        cmocka_unit_test(history_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
