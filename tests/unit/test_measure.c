/* Unit tests of measure/'s replay backend over catalogs of datasets/ and hand-made caches: recorded
 * times and failures, every id of a space, virtual costs, replay speed, threads, plain caches
 * without restrictions, unrecorded configurations. The catalog itself is tested in
 * test_catalog.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "measure/backend.h"
#include "replay_test_util.h"

static config_id id_of(const space *sp, const char *config_json)
{
    json_t *o = json_loads(config_json, 0, NULL);
    config_id id = 0;
    kt_error err;
    assert_non_null(o);
    if (space_config_from_json(sp, o, &id, &err) != 0)
        fail_msg("config %s: %s", config_json, err.message);
    json_decref(o);
    return id;
}

static void measure_ok(backend *b, const target *t, config_id id, trial_result *r)
{
    kt_error err;
    if (backend_measure(b, t, id, r, &err) != 0)
        fail_msg("measure %llu: %s", (unsigned long long)id, err.message);
}

static void replay_returns_recorded_results(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target t, other;
    kt_error err;
    trial_result r;
    resolve_ok(c, "convolution", CONV, &t);
    resolve_ok(c, "pnpoly", PNPOLY, &other);
    backend *b = backend_open(c, CONV, &err);
    assert_non_null(b);

    /* "16,1,1,1,0,0,0,1,15,15" in the file: 5.900493 ms, compiled in 892.914007 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":16,\"block_size_y\":1,\"tile_size_x\":1,"
                           "\"tile_size_y\":1,\"read_only\":0,\"use_padding\":0,\"use_shmem\":0,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_OK);
    assert_true(fabs(r.time_ms - 5.900493) < 1e-9);
    assert_true(fabs(r.compile_ms - 892.914007) < 1e-9);
    assert_true(fabs(r.measure_ms - 190.53155) < 1e-9);
    assert_int_equal(r.repeats, 1);
    assert_true(json_is_true(json_object_get(r.extras, "replay")));
    assert_true(fabs(json_number_value(json_object_get(r.extras, "recorded_time")) - 5.900493) <
                1e-9);
    trial_result_release(&r);

    /* "80,8,3,4,0,1,1,1,15,15": CompilationFailedConfig after 7309.165561 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":80,\"block_size_y\":8,\"tile_size_x\":3,"
                           "\"tile_size_y\":4,\"read_only\":0,\"use_padding\":1,\"use_shmem\":1,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_COMPILE_ERROR);
    assert_true(fabs(r.compile_ms - 7309.165561) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(r.extras, "recorded_time")),
                        "CompilationFailedConfig");
    trial_result_release(&r);

    /* "32,16,3,4,1,0,0,1,15,15": RuntimeFailedConfig, benchmark_time 0.530805 ms. */
    measure_ok(b, &t,
               id_of(t.sp, "{\"block_size_x\":32,\"block_size_y\":16,\"tile_size_x\":3,"
                           "\"tile_size_y\":4,\"read_only\":1,\"use_padding\":0,\"use_shmem\":0,"
                           "\"use_cmem\":1,\"filter_height\":15,\"filter_width\":15}"),
               &r);
    assert_int_equal(r.status, TRIAL_RUNTIME_ERROR);
    assert_true(fabs(r.measure_ms - 0.530805) < 1e-9);
    trial_result_release(&r);

    assert_int_equal(backend_measure(b, &t, space_count(t.sp), &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    trial_result_release(&r);
    assert_int_equal(backend_measure(b, &other, 0, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    target_release(&other);
    catalog_free(c);
}

static void backend_open_errors(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    kt_error err;
    assert_null(backend_open(c, "replay:nope", &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.hint, CONV));
    assert_null(backend_open(c, "cuda:0", &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(err.message, "cuda backend is not implemented yet"));
    assert_null(backend_open(c, "cpu", &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    assert_null(backend_open(c, NULL, &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    catalog_free(c);
}

/* Measures every id; returns the number of ok trials and sums the charged seconds. */
static uint64_t measure_all(const catalog *c, const char *kernel, const char *device,
                            double *seconds)
{
    target t;
    trial_result r;
    uint64_t ok = 0;
    resolve_ok(c, kernel, device, &t);
    backend *b = backend_open(c, device, NULL);
    assert_non_null(b);
    *seconds = 0;
    for (config_id id = 0; id < space_count(t.sp); id++) {
        measure_ok(b, &t, id, &r);
        assert_true(trial_status_is_final(r.status));
        ok += r.status == TRIAL_OK;
        *seconds += (r.compile_ms + r.measure_ms) / 1000.0;
        trial_result_release(&r);
    }
    backend_close(b);
    target_release(&t);
    return ok;
}

static void replay_measures_every_id(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    double s;
    assert_int_equal(measure_all(c, "pnpoly", PNPOLY, &s), 3774);
    assert_true(fabs(s - 1071.584226) < 1e-3); /* the recorded compile+verify+benchmark seconds */
    assert_int_equal(measure_all(c, "convolution", CONV, &s), 4201);
    assert_int_equal(measure_all(c, "clblast_gemm", "replay:gemm_clblast-RTX_2080_Ti", &s), 17956);
    catalog_free(c);
}

typedef struct thread_arg {
    const catalog *c;
    uint64_t ok;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    double s;
    a->ok = measure_all(a->c, "convolution", CONV, &s);
    return NULL;
}

static void replay_backends_run_in_parallel(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){c, 0};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].ok, 4201);
    }
    catalog_free(c);
}

static void plain_cache_gives_explicit_space(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "tiny_plain.json", plain_cache, 0);
    write_file(dir, "zipped_plain.json.gz", plain_cache, 1);
    catalog *c = open_catalog(dir, 0);
    assert_int_equal(catalog_num_devices(c), 2);
    const char *devices[] = {"replay:tiny_plain", "replay:zipped_plain"};
    const char *kernels[] = {"tiny", "zipped"};
    for (int i = 0; i < 2; i++) {
        target t;
        kt_error err;
        trial_result r;
        resolve_ok(c, kernels[i], devices[i], &t);
        assert_int_equal(space_count(t.sp), 3);
        assert_string_equal(t.key.problem_key, "{}");
        json_t *p = json_pack("{s:i}", "problem_size", 1);
        target bad;
        assert_int_equal(catalog_resolve(c, kernels[i], devices[i], p, &bad, &err), -1);
        assert_string_equal(err.message, "unknown problem argument 'problem_size'; accepted: none");
        json_decref(p);
        backend *b = backend_open(c, devices[i], NULL);
        measure_ok(b, &t, id_of(t.sp, "{\"a\": 1, \"b\": \"x\"}"), &r);
        assert_int_equal(r.status, TRIAL_OK);
        assert_true(r.time_ms == 2.5 && r.compile_ms == 10 && r.measure_ms == 5);
        assert_int_equal(r.repeats, 2);
        assert_true(fabs(r.noise_cv - 0.2) < 1e-12);
        trial_result_release(&r);
        measure_ok(b, &t, id_of(t.sp, "{\"a\": 2, \"b\": \"y\"}"), &r);
        assert_int_equal(r.status, TRIAL_INVALID);
        assert_true(r.compile_ms == 0 && r.measure_ms == 0);
        trial_result_release(&r);
        backend_close(b);
        target_release(&t);
    }
    catalog_free(c);
    rm_dir(dir);
}

static void unrecorded_config_is_invalid(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "partial.json",
               "{\"space\": \"part_ial\", \"problem_size\": 7, \"tune_params_keys\": [\"a\"],"
               " \"tune_params\": {\"a\": [1, 2, 3]}, \"restrictions\": [\"a >= 1\"],"
               " \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}, \"2\": {\"a\": 2, \"time\": 2.0}}}",
               0);
    catalog *c = open_catalog(dir, 0);
    target t;
    trial_result r;
    resolve_ok(c, "part", "replay:part_ial", &t);
    assert_string_equal(t.key.problem_key, "{\"problem_size\":7}");
    assert_int_equal(space_count(t.sp), 3);
    backend *b = backend_open(c, "replay:part_ial", NULL);
    measure_ok(b, &t, id_of(t.sp, "{\"a\": 3}"), &r);
    assert_int_equal(r.status, TRIAL_INVALID);
    assert_string_equal(json_string_value(json_object_get(r.extras, "reason")), "not recorded");
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
    rm_dir(dir);
}

static void replay_speed_sleeps(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "slow_one.json",
               "{\"tune_params\": {\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0,"
               " \"compile_time\": 120, \"verification_time\": 30, \"benchmark_time\": 50}}}",
               0);
    catalog *c = open_catalog(dir, 0.5); /* 200 recorded ms -> 100 ms of sleep */
    target t;
    trial_result r;
    resolve_ok(c, "slow", "replay:slow_one", &t);
    backend *b = backend_open(c, "replay:slow_one", NULL);
    double t0 = kt_clock_s();
    measure_ok(b, &t, 0, &r);
    double dt = kt_clock_s() - t0;
    assert_int_equal(r.status, TRIAL_OK);
    assert_true(dt >= 0.095 && dt < 5.0);
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
    rm_dir(dir);
}

static int stop_now(void *arg)
{
    (*(int *)arg)++;
    return 1;
}

/* With a stop check that says stop, a replay sleep of seconds is cut short (within a 100 ms slice)
 * and nothing is returned. */
static void replay_sleep_stops_when_asked(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "slow_one.json",
               "{\"tune_params\": {\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0,"
               " \"compile_time\": 5000, \"verification_time\": 0, \"benchmark_time\": 0}}}",
               0);
    catalog *c = open_catalog(dir, 1.0); /* 5 s of sleep */
    target t;
    trial_result r;
    kt_error err;
    int asked = 0;
    resolve_ok(c, "slow", "replay:slow_one", &t);
    backend *b = backend_open(c, "replay:slow_one", NULL);
    backend_set_stop(b, stop_now, &asked);
    double t0 = kt_clock_s();
    assert_int_equal(backend_measure(b, &t, 0, &r, &err), BACKEND_STOPPED);
    double dt = kt_clock_s() - t0;
    assert_true(dt < 1.0);
    assert_int_equal(asked, 1);
    assert_int_equal(r.status, TRIAL_PENDING);
    assert_null(r.extras);
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
    rm_dir(dir);
}

int main(void)
{
    kt_log_init(KT_LOG_WARN); /* the skipped-file warnings stay visible */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_returns_recorded_results),
        cmocka_unit_test(backend_open_errors),
        cmocka_unit_test(replay_measures_every_id),
        cmocka_unit_test(replay_backends_run_in_parallel),
        cmocka_unit_test(plain_cache_gives_explicit_space),
        cmocka_unit_test(unrecorded_config_is_invalid),
        cmocka_unit_test(replay_speed_sleeps),
        cmocka_unit_test(replay_sleep_stops_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
