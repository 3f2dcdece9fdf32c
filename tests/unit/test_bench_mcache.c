/* Unit tests for bench/bench_mcache (the measurement cache of `ktune bench --device`) on a small
 * explicit space, without a device: put / get round trip through the file, the first measurement
 * stays, a header of another identity is refused naming the field, a file that is not a cache is
 * refused, a torn last line is cut off, bad lines are skipped, one process per file (lock), and
 * the memory-only mode; issue 30's cut-offs per run (bench_cutoff.h): the verdict a run's own
 * limits give a completed measurement and a cut-off one, hand-computed, and a cut-off entry that a
 * run with a higher limit measures again replaced in memory and in the file read back. */
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

#include "bench/bench_mcache.h"

typedef struct fixture {
    char dir[64];
    char file[128];
    space *sp;
    json_t *identity, *measure;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kt_error err;
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/kt_mcache_XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->file, sizeof f->file, "%s/m.jsonl", f->dir);
    json_t *params = json_loads("[{\"name\": \"x\", \"values\": [1, 2, 4, 8]},"
                                " {\"name\": \"y\", \"values\": [1, 2]}]",
                                0, NULL);
    f->sp = space_new(params, NULL, NULL, NULL, &err);
    json_decref(params);
    f->identity = json_pack("{s:s, s:s, s:{s:i}}", "kernel", "k", "device_class", "cpu:X:512",
                            "problem", "M", 64);
    f->measure = json_pack("{s:i}", "min_repeats", 5);
    if (!f->sp || !f->identity || !f->measure)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlink(f->file);
    rmdir(f->dir);
    space_free(f->sp);
    json_decref(f->identity);
    json_decref(f->measure);
    free(f);
    return 0;
}

static void result(trial_result *r, trial_status st, double ms)
{
    trial_result_init(r);
    r->status = st;
    r->time_ms = ms;
    r->repeats = st == TRIAL_OK ? 7 : 0;
    r->compile_ms = 120.5;
    r->measure_ms = 33.25;
    r->noise_cv = 0.01;
    r->extras = json_pack("{s:s}", "note", "hello");
}

static long file_size(const char *path)
{
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fclose(in);
    return n;
}

static void append(const char *path, const char *text)
{
    FILE *out = fopen(path, "a");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    kt_error err;
    trial_result r, got;

    bench_mcache *m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    assert_int_equal(bench_mcache_get(m, 3, &got), 0);
    result(&r, TRIAL_OK, 1.25);
    assert_int_equal(bench_mcache_put(m, 3, &r, &err), 0);
    trial_result_release(&r);
    result(&r, TRIAL_COMPILE_ERROR, 0);
    assert_int_equal(bench_mcache_put(m, 5, &r, &err), 0);
    trial_result_release(&r);
    result(&r, TRIAL_OK, 9.0); /* a second measurement of 3 is not kept */
    assert_int_equal(bench_mcache_put(m, 3, &r, &err), 0);
    trial_result_release(&r);
    assert_int_equal(bench_mcache_get_stats(m).stored, 2);
    bench_mcache_free(m);

    m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    assert_int_equal(bench_mcache_get_stats(m).loaded, 2);
    assert_int_equal(bench_mcache_get(m, 3, &got), 1);
    assert_int_equal(got.status, TRIAL_OK);
    assert_true(got.time_ms == 1.25);
    assert_int_equal(got.repeats, 7);
    assert_true(got.compile_ms == 120.5 && got.measure_ms == 33.25 && got.noise_cv == 0.01);
    assert_string_equal(json_string_value(json_object_get(got.extras, "note")), "hello");
    trial_result_release(&got);
    assert_int_equal(bench_mcache_get(m, 5, &got), 1);
    assert_int_equal(got.status, TRIAL_COMPILE_ERROR);
    trial_result_release(&got);
    assert_int_equal(bench_mcache_get(m, 4, &got), 0);
    assert_int_equal(bench_mcache_get_stats(m).hits, 2);

    /* one process per file: a second open is refused while this one holds it */
    bench_mcache *m2 = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_null(m2);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "in use"));
    bench_mcache_free(m);

    /* another identity: refused, naming the field and both values */
    json_t *other = json_deep_copy(f->identity);
    json_object_set_new(other, "device_class", json_string("cpu:Y:256"));
    m = bench_mcache_open(f->file, f->sp, other, f->measure, &err);
    assert_null(m);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "device_class \"cpu:X:512\", not \"cpu:Y:256\""));
    json_decref(other);

    /* other measure options only warn */
    json_t *meas = json_pack("{s:i}", "min_repeats", 3);
    m = bench_mcache_open(f->file, f->sp, f->identity, meas, &err);
    assert_non_null(m);
    assert_int_equal(bench_mcache_get_stats(m).loaded, 2);
    bench_mcache_free(m);
    json_decref(meas);
}

static void test_damaged_files(void **state)
{
    fixture *f = *state;
    kt_error err;
    trial_result r, got;

    /* not a cache */
    append(f->file, "{\"hello\": 1}\n");
    bench_mcache *m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_null(m);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "not a ktune measure cache"));
    unlink(f->file);

    m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    result(&r, TRIAL_OK, 2.5);
    assert_int_equal(bench_mcache_put(m, 0, &r, &err), 0);
    trial_result_release(&r);
    bench_mcache_free(m);
    long good = file_size(f->file);

    /* a bad line in the middle is skipped; a torn last line is cut off */
    append(f->file, "not json\n");
    append(f->file, "{\"config\": {\"x\": 3, \"y\": 1}, \"status\": \"ok\", \"time_ms\": 1}\n");
    append(f->file, "{\"config\": {\"x\": 2, \"y\": 1}, \"status\": \"ok\", \"time_ms\": 1}\n");
    long before_tear = file_size(f->file);
    append(f->file, "{\"config\": {\"x\": 4, \"y\"");
    m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    assert_int_equal(bench_mcache_get_stats(m).loaded, 2);  /* id 0 (x=1,y=1) and x=2,y=1 */
    assert_int_equal(bench_mcache_get_stats(m).skipped, 2); /* not json; x=3 is not a value */
    assert_int_equal(file_size(f->file), before_tear);
    config_id id;
    json_t *cfg = json_pack("{s:i, s:i}", "x", 2, "y", 1);
    assert_int_equal(space_config_from_json(f->sp, cfg, &id, NULL), 0);
    json_decref(cfg);
    assert_int_equal(bench_mcache_get(m, id, &got), 1);
    trial_result_release(&got);
    /* appending after the cut gives whole lines again */
    result(&r, TRIAL_TIMEOUT, 0);
    assert_int_equal(bench_mcache_put(m, 6, &r, &err), 0);
    trial_result_release(&r);
    bench_mcache_free(m);
    m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    assert_int_equal(bench_mcache_get_stats(m).loaded, 3);
    assert_int_equal(bench_mcache_get(m, 6, &got), 1);
    assert_int_equal(got.status, TRIAL_TIMEOUT);
    trial_result_release(&got);
    bench_mcache_free(m);
    assert_true(file_size(f->file) > good);
}

static void test_memory_only(void **state)
{
    fixture *f = *state;
    kt_error err;
    trial_result r, got;
    bench_mcache *m = bench_mcache_open(NULL, f->sp, NULL, NULL, &err);
    assert_non_null(m);
    result(&r, TRIAL_WRONG_RESULT, 0);
    assert_int_equal(bench_mcache_put(m, 7, &r, &err), 0);
    trial_result_release(&r);
    assert_int_equal(bench_mcache_get(m, 7, &got), 1);
    assert_int_equal(got.status, TRIAL_WRONG_RESULT);
    trial_result_release(&got);
    bench_mcache_free(m);
    assert_int_equal(access(f->file, F_OK), -1);
}

static void cut_off(trial_result *r, const char *kind, double at_s, double measure_ms)
{
    trial_result_init(r);
    r->status = TRIAL_TIMEOUT;
    r->measure_ms = measure_ms;
    r->extras = json_pack("{s:f, s:s}", kind, at_s, "reason", "test");
}

/* The verdicts, hand-computed: an ok of 150 ms is ok for a run without a call limit or with one of
 * 0.2 s, a timeout for a run limited to 0.1 s (cost: its 120.5 ms compile + the 100 ms limit);
 * an entry cut at 0.3 s (after 450 ms) is a timeout for runs limited to 0.3 or 0.2 s (costing 450
 * - 100 = 350 ms: the run gives up 0.1 s sooner) and is measured again by a run limited to 0.5 s
 * or not at all; a deadline timeout likewise against the run's deadline; other statuses as kept. */
static void test_cutoff_verdict(void **state)
{
    (void)state;
    trial_result ok, cut, dl, wrong, out;
    bench_cutoff none = {0, 0}, l01 = {0.1, 20}, l02 = {0.2, 20}, l03 = {0.3, 20}, l05 = {0.5, 20},
                 d30 = {0.2, 30};
    double at;

    result(&ok, TRIAL_OK, 150);
    assert_int_equal(bench_cutoff_kind(&ok, &at), BENCH_CUT_NONE);
    assert_int_equal(bench_cutoff_verdict(&ok, &none, &out), 1);
    assert_int_equal(out.status, TRIAL_OK);
    assert_true(out.time_ms == 150 && out.compile_ms == 120.5 && out.measure_ms == 33.25);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&ok, &l02, &out), 1);
    assert_int_equal(out.status, TRIAL_OK);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&ok, &l01, &out), 1);
    assert_int_equal(out.status, TRIAL_TIMEOUT);
    assert_true(out.compile_ms == 120.5 && out.measure_ms == 100);
    assert_true(json_real_value(json_object_get(out.extras, "call_limit_s")) == 0.1);
    assert_true(json_real_value(json_object_get(out.extras, "cut_from_time_ms")) == 150);
    assert_int_equal(bench_cutoff_kind(&out, &at), BENCH_CUT_CALL);
    trial_result_release(&out);

    cut_off(&cut, "call_limit_s", 0.3, 450);
    assert_int_equal(bench_cutoff_kind(&cut, &at), BENCH_CUT_CALL);
    assert_true(at == 0.3);
    assert_int_equal(bench_cutoff_verdict(&cut, &l03, &out), 1);
    assert_int_equal(out.status, TRIAL_TIMEOUT);
    assert_true(out.measure_ms == 450);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&cut, &l02, &out), 1);
    assert_true(fabs(out.measure_ms - 350) < 1e-9);
    assert_true(json_real_value(json_object_get(out.extras, "call_limit_s")) == 0.2);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&cut, &l05, &out), 0);
    assert_int_equal(bench_cutoff_verdict(&cut, &none, &out), 0);

    cut_off(&dl, "deadline_s", 25, 25000);
    assert_int_equal(bench_cutoff_kind(&dl, &at), BENCH_CUT_DEADLINE);
    assert_int_equal(bench_cutoff_verdict(&dl, &l02, &out), 1); /* deadline 20 <= 25 */
    assert_int_equal(out.status, TRIAL_TIMEOUT);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&dl, &d30, &out), 0);
    assert_int_equal(bench_cutoff_verdict(&dl, &none, &out), 0);

    /* a completed entry whose slowest call passed the limit (median 60 ms, one call 150 ms): the
     * runner would have given up on that call, and so does the verdict; without max_ms (an older
     * runner's entry) the median is judged */
    trial_result noisy;
    result(&noisy, TRIAL_OK, 60);
    json_object_set_new(noisy.extras, "max_ms", json_real(150));
    assert_int_equal(bench_cutoff_verdict(&noisy, &l01, &out), 1);
    assert_int_equal(out.status, TRIAL_TIMEOUT);
    assert_true(json_real_value(json_object_get(out.extras, "cut_from_time_ms")) == 150);
    trial_result_release(&out);
    assert_int_equal(bench_cutoff_verdict(&noisy, &l02, &out), 1);
    assert_int_equal(out.status, TRIAL_OK);
    assert_true(out.time_ms == 60);
    trial_result_release(&out);
    json_object_del(noisy.extras, "max_ms");
    assert_int_equal(bench_cutoff_verdict(&noisy, &l01, &out), 1);
    assert_int_equal(out.status, TRIAL_OK);
    trial_result_release(&out);
    trial_result_release(&noisy);

    result(&wrong, TRIAL_WRONG_RESULT, 0);
    assert_int_equal(bench_cutoff_verdict(&wrong, &l01, &out), 1);
    assert_int_equal(out.status, TRIAL_WRONG_RESULT);
    trial_result_release(&out);

    /* what replaces what: a completed measurement or a later cut-off of the same kind */
    trial_result cut5;
    cut_off(&cut5, "call_limit_s", 0.5, 600);
    assert_true(bench_cutoff_supersedes(&cut, &ok));
    assert_true(bench_cutoff_supersedes(&cut, &cut5));
    assert_false(bench_cutoff_supersedes(&cut5, &cut));
    assert_false(bench_cutoff_supersedes(&ok, &cut5));
    assert_false(bench_cutoff_supersedes(&cut, &dl));
    assert_true(bench_cutoff_supersedes(&dl, &wrong));
    trial_result_release(&ok);
    trial_result_release(&cut);
    trial_result_release(&cut5);
    trial_result_release(&dl);
    trial_result_release(&wrong);
}

/* A cut-off entry: a run with a higher limit gets 0 (measure again); its new result replaces the
 * entry (counted as renewed), also when the file is read back; a cut-off at a lower limit does
 * not. Verdicts through get_for count hits and runs' own cut-offs. */
static void test_cutoff_renewed(void **state)
{
    fixture *f = *state;
    kt_error err;
    trial_result r, got;
    bench_cutoff l01 = {0.1, 20}, l05 = {0.5, 20};

    bench_mcache *m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    cut_off(&r, "call_limit_s", 0.3, 450);
    assert_int_equal(bench_mcache_put(m, 2, &r, &err), 0);
    trial_result_release(&r);
    assert_int_equal(bench_mcache_get_for(m, 2, &l05, &got), 0);
    assert_int_equal(bench_mcache_get_for(m, 2, &l01, &got), 1);
    assert_int_equal(got.status, TRIAL_TIMEOUT);
    trial_result_release(&got);
    cut_off(&r, "call_limit_s", 0.2, 300); /* lower: the entry stays */
    assert_int_equal(bench_mcache_put(m, 2, &r, &err), 0);
    trial_result_release(&r);
    result(&r, TRIAL_OK, 150); /* the run limited to 0.5 s measured it completely */
    assert_int_equal(bench_mcache_put(m, 2, &r, &err), 0);
    trial_result_release(&r);
    assert_int_equal(bench_mcache_get_for(m, 2, &l05, &got), 1);
    assert_int_equal(got.status, TRIAL_OK);
    trial_result_release(&got);
    assert_int_equal(bench_mcache_get_for(m, 2, &l01, &got), 1); /* judged, not frozen */
    assert_int_equal(got.status, TRIAL_TIMEOUT);
    trial_result_release(&got);
    bench_mcache_stats st = bench_mcache_get_stats(m);
    assert_int_equal(st.stored, 2);
    assert_int_equal(st.renewed, 1);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.cut_by_run, 1);
    bench_mcache_free(m);

    m = bench_mcache_open(f->file, f->sp, f->identity, f->measure, &err);
    assert_non_null(m);
    st = bench_mcache_get_stats(m);
    assert_int_equal(st.loaded, 1);
    assert_int_equal(st.renewed, 1);
    assert_int_equal(bench_mcache_get(m, 2, &got), 1);
    assert_int_equal(got.status, TRIAL_OK);
    assert_true(got.time_ms == 150);
    trial_result_release(&got);
    bench_mcache_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_only, setup, teardown),
        cmocka_unit_test(test_cutoff_verdict),
        cmocka_unit_test_setup_teardown(test_cutoff_renewed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
