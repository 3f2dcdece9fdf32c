/* Unit tests of the real (cpu / cuda) side of measure/: with a fake ktune-runner (a Python script
 * that speaks the protocol, kspec_test_util.h), devices are probed (device_discover) and handed to
 * the catalog, requests built, and crashes, hangs, wrong results and the one-measurement-per-cpu
 * rule handled by the real backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "catalog/catalog.h"
#include "kspec_test_util.h"
#include "measure/backend.h"
#include "measure/device.h"

/* --- catalog and backend with the fake runner ----------------------------------------------- */

static catalog *open_real_slow(const fixture *f, const char *runner, double slow_factor)
{
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = runner,
                                 .cache_dir = f->cache,
                                 .cpu_core = -1,
                                 .min_seconds = 0.01,
                                 .compile_timeout_s = 1,
                                 .run_timeout_s = 0.5,
                                 .slow_factor = slow_factor};
    kt_error err;
    catalog_device *devs = NULL;
    int n_devs = 0;
    if (device_discover(&real, &devs, &n_devs, &err) < 0)
        fail_msg("device_discover: %s", err.message);
    catalog *c = catalog_new_real(&opt, &real, devs, n_devs, &err);
    if (!c)
        fail_msg("catalog_new: %s", err.message);
    return c;
}

static catalog *open_real(const fixture *f, const char *runner)
{
    return open_real_slow(f, runner, 0);
}

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *v = json_string_value(json_object_get(json_array_get(arr, i), key));
        if (v && strcmp(v, value) == 0)
            return json_array_get(arr, i);
    }
    return NULL;
}

static void catalog_lists_real_devices_and_kernels(void **state)
{
    fixture *f = *state;
    /* A second kernel folder with a broken spec is not offered (listed as invalid, issue 27);
     * the good one stays. */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/broken", f->kernels);
    mkdir(bad, 0755);
    write_file(bad, "spec.json", "{\"name\": \"broken\"}");
    catalog *c = open_real(f, f->runner);
    json_t *devs = catalog_devices_json(c);
    json_t *cpu = find_by(devs, "name", "cpu"), *cuda = find_by(devs, "name", "cuda");
    assert_non_null(cpu);
    assert_true(json_is_true(json_object_get(cpu, "available")));
    assert_string_equal(json_string_value(json_object_get(cpu, "class")),
                        "cpu:Fake_CPU_3.0GHz:256");
    assert_string_equal(json_string_value(json_object_get(cpu, "toolchain")), "gcc 12.9.1");
    json_t *desc = json_object_get(cpu, "description");
    assert_string_equal(json_string_value(json_object_get(desc, "model")), "Fake CPU @ 3.0GHz");
    assert_int_equal(json_integer_value(json_object_get(desc, "l1d_bytes")), 256);
    assert_string_equal(json_string_value(json_array_get(json_object_get(cpu, "kernels"), 0)),
                        "vadd");
    assert_non_null(cuda);
    assert_true(json_is_false(json_object_get(cuda, "available")));
    assert_non_null(strstr(json_string_value(json_object_get(cuda, "reason")), "libcuda"));
    json_decref(devs);

    json_t *ks = catalog_kernels_json(c);
    assert_int_equal(json_array_size(ks), 2);
    json_t *broken = find_by(ks, "name", "broken");
    assert_string_equal(json_string_value(json_object_get(broken, "status")), "invalid");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(broken, "error"), "code")),
        "kernel_invalid");
    json_t *vadd = find_by(ks, "name", "vadd");
    json_t *d = json_array_get(json_object_get(vadd, "devices"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "device")), "cpu");
    assert_int_equal(json_integer_value(json_object_get(d, "configurations")), 11);
    assert_int_equal(json_array_size(json_object_get(d, "parameters")), 2);
    assert_int_equal(json_array_size(json_object_get(d, "restrictions")), 3);
    json_t *arg = json_array_get(json_object_get(d, "problem_arguments"), 0);
    assert_int_equal(json_integer_value(json_object_get(arg, "max")), 1048576);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "problem"), "m")), 4);
    json_decref(ks);

    /* Resolve: the target owns a per-problem space; errors name what is wrong. */
    target t;
    kt_error err;
    json_t *pj = json_loads("{\"n\": 32}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", pj, &t, &err), 0);
    json_decref(pj);
    assert_true(t.owns_space);
    assert_int_equal(space_count(t.sp), 8);
    assert_string_equal(t.key.problem_key, "{\"m\":4,\"n\":32}");
    assert_string_equal(t.key.device_class, "cpu:Fake_CPU_3.0GHz:256");
    assert_string_equal(t.key.toolchain, "gcc 12.9.1"); /* the runner's probe says it */
    assert_int_equal(strlen(t.key.kernel_hash), KFILES_VERSION_LEN);
    /* The key alone (a lookup) is the same key, and no space is built for it. */
    target k;
    pj = json_loads("{\"n\": 32}", 0, NULL);
    assert_int_equal(catalog_resolve_key(c, "vadd", "cpu", pj, &k, &err), 0);
    json_decref(pj);
    assert_null(k.sp);
    assert_false(k.owns_space);
    assert_string_equal(k.key.problem_key, t.key.problem_key);
    assert_string_equal(k.key.device_class, t.key.device_class);
    assert_string_equal(k.key.kernel_hash, t.key.kernel_hash);
    assert_string_equal(k.key.toolchain, t.key.toolchain);
    target_release(&k);
    pj = json_loads("{\"n\": 0}", 0, NULL);
    assert_int_equal(catalog_resolve_key(c, "vadd", "cpu", pj, &k, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    json_decref(pj);
    target_release(&t);
    pj = json_loads("{\"n\": 0}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", pj, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    json_decref(pj);
    /* the broken folder: what is wrong with it, not "device cpu does not offer kernel" */
    assert_int_equal(catalog_resolve(c, "broken", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_string_equal(err.message, "kernel broken cannot be used: spec.json: problem: missing");
    assert_int_equal(catalog_resolve(c, "nosuch", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_non_null(strstr(err.hint, "vadd"));
    assert_int_equal(catalog_resolve(c, "vadd", "cuda", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "libcuda"));
    assert_int_equal(catalog_resolve(c, "vadd", "cuda:1", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "cuda:1 is not available: no CUDA driver"));
    assert_null(backend_open(c, "cuda:0", &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "libcuda"));
    assert_null(backend_open(c, "hip:0", &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    catalog_free(c);
    snprintf(bad, sizeof bad, "%s/broken/spec.json", f->kernels);
    unlink(bad);
    snprintf(bad, sizeof bad, "%s/broken", f->kernels);
    rmdir(bad);
}

static void missing_runner_leaves_devices_unavailable(void **state)
{
    fixture *f = *state;
    catalog *c = open_real(f, "/nonexistent/ktune-runner");
    json_t *devs = catalog_devices_json(c);
    json_t *cpu = find_by(devs, "name", "cpu");
    assert_true(json_is_false(json_object_get(cpu, "available")));
    assert_non_null(strstr(json_string_value(json_object_get(cpu, "reason")), "not found"));
    json_decref(devs);
    target t;
    kt_error err;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_null(backend_open(c, "cpu", &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    catalog_free(c);
}

static config_id config_of(const space *sp, int u, int b)
{
    json_t *o = json_pack("{s:i, s:i}", "U", u, "B", b);
    config_id id = 0;
    kt_error err;
    if (space_config_from_json(sp, o, &id, &err) != 0)
        fail_msg("config U=%d B=%d: %s", u, b, err.message);
    json_decref(o);
    return id;
}

static void measure(backend *b, const target *t, int u, int bsz, trial_result *r)
{
    kt_error err;
    if (backend_measure(b, t, config_of(t->sp, u, bsz), r, &err) != 0)
        fail_msg("measure U=%d: %s", u, err.message);
}

/* The last measure request the fake runner logged. */
static json_t *last_request(const fixture *f)
{
    char path[160], line[8192];
    json_t *last = NULL;
    snprintf(path, sizeof path, "%s/requests.log", f->cache);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    while (fgets(line, sizeof line, fp)) {
        json_t *v = json_loads(line, 0, NULL);
        if (v && json_object_get(v, "op") &&
            strcmp(json_string_value(json_object_get(v, "op")), "measure") == 0) {
            json_decref(last);
            last = v;
        } else {
            json_decref(v);
        }
    }
    fclose(fp);
    return last;
}

static void backend_maps_runner_outcomes(void **state)
{
    fixture *f = *state;
    catalog *c = open_real(f, f->runner);
    target hang_t, t;
    kt_error err;
    trial_result r;
    json_t *pj = json_loads("{\"n\": 2048, \"m\": 2}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", pj, &hang_t, &err), 0);
    json_decref(pj);
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    backend *b = backend_open(c, "cpu", &err);
    assert_non_null(b);

    /* A hang on a target without an ok result: compile 1 s + run 0.5 s + 2 s slack. */
    double t0 = kt_clock_s();
    measure(b, &hang_t, 4, 16, &r);
    double took = kt_clock_s() - t0;
    assert_int_equal(r.status, TRIAL_TIMEOUT);
    assert_true(took >= 3.4 && took < 8.0);
    assert_true(json_real_value(json_object_get(r.extras, "seconds")) >= 3.4);
    assert_true(r.measure_ms >= 3400);
    trial_result_release(&r);

    /* ok: every field mapped; the request carries everything the runner needs. */
    measure(b, &t, 1, 32, &r);
    assert_int_equal(r.status, TRIAL_OK);
    assert_true(r.time_ms == 48.0);
    assert_int_equal(r.repeats, 5);
    assert_true(r.compile_ms == 10.0 && r.measure_ms == 20.0 && r.noise_cv == 0.01);
    assert_true(json_real_value(json_object_get(r.extras, "gflops")) == 1.0);
    trial_result_release(&r);
    json_t *req = last_request(f);
    assert_non_null(req);
    assert_string_equal(json_string_value(json_object_get(req, "kernel")), "vadd");
    /* the runner compiles the version's content-addressed copy, not the folder's file */
    const char *src = json_string_value(json_object_get(req, "source"));
    assert_non_null(strstr(src, "-sources/"));
    assert_non_null(strstr(src, "/cpu.c"));
    assert_int_equal(access(src, R_OK), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(req, "defines"), "B")), 32);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(req, "problem"), 0)), 1024);
    assert_string_equal(json_string_value(json_array_get(json_object_get(req, "problem_names"), 1)),
                        "m");
    json_t *buf1 = json_array_get(json_object_get(req, "buffers"), 1);
    assert_int_equal(json_integer_value(json_object_get(buf1, "elements")), 4096);
    assert_string_equal(json_string_value(json_object_get(buf1, "role")), "output");
    json_t *ref = json_object_get(req, "reference");
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "c");
    assert_non_null(strstr(json_string_value(json_object_get(ref, "source")), "reference.c"));
    assert_int_equal(json_integer_value(json_object_get(req, "flops")), 8192);
    assert_int_equal(json_integer_value(json_object_get(req, "min_repeats")), 5);
    assert_true(json_real_value(json_object_get(req, "min_seconds")) == 0.01);
    assert_true(json_real_value(json_object_get(req, "compile_timeout_s")) == 1.0);
    assert_null(json_object_get(req, "block"));
    json_decref(req);

    /* A crash: runtime_error with the signal; the next measure starts a new runner. */
    measure(b, &t, 2, 16, &r);
    assert_int_equal(r.status, TRIAL_RUNTIME_ERROR);
    assert_int_equal(json_integer_value(json_object_get(r.extras, "signal")), 11);
    assert_string_equal(json_string_value(json_object_get(r.extras, "signal_name")), "SIGSEGV");
    trial_result_release(&r);
    measure(b, &t, 8, 16, &r);
    assert_int_equal(r.status, TRIAL_WRONG_RESULT);
    assert_int_equal(json_integer_value(json_object_get(r.extras, "first_bad_index")), 0);
    trial_result_release(&r);
    measure(b, &t, 1, 16, &r);
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);

    /* A configuration outside the space is the backend's error, not a trial status. */
    assert_int_equal(backend_measure(b, &t, space_count(t.sp), &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    target_release(&hang_t);
    catalog_free(c);
}

/* slow_factor: no call limit before the target has an ok result; then the request carries
 * max(slow_factor x best, 0.1 s), and a runner ended by its SIGALRM is a timeout, not a crash.
 * backend_set_best replaces the best the limits scale from; backend_limits reports them. */
static void slow_factor_gives_up_on_slow_calls(void **state)
{
    fixture *f = *state;
    catalog *c = open_real_slow(f, f->runner, 3.0);
    target t;
    kt_error err;
    trial_result r;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    backend *b = backend_open(c, "cpu", &err);
    assert_non_null(b);
    measure(b, &t, 1, 32, &r); /* ok, 48 ms: the best */
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    json_t *req = last_request(f);
    assert_null(json_object_get(req, "call_limit_s"));
    json_decref(req);
    measure(b, &t, 8, 16, &r);
    assert_int_equal(r.status, TRIAL_TIMEOUT);
    assert_true(json_real_value(json_object_get(r.extras, "call_limit_s")) > 0.143 &&
                json_real_value(json_object_get(r.extras, "call_limit_s")) < 0.145);
    trial_result_release(&r);
    req = last_request(f);
    assert_true(fabs(json_real_value(json_object_get(req, "call_limit_s")) - 0.144) < 1e-9);
    json_decref(req);
    measure(b, &t, 1, 16, &r); /* a new runner serves the next measure */
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    /* issue 30: the caller's best replaces the backend's (the bench gives each run its own): the
     * limits follow it, and with none the call is not limited (U = 8 then answers wrong_result) */
    double limit, deadline, deadline_48;
    assert_int_equal(backend_limits(b, &t, &limit, &deadline_48), 0);
    assert_true(fabs(limit - 0.1) < 1e-9); /* 3 x the 24 ms of the last ok, at least 0.1 s */
    backend_set_best(b, &t, 100);
    assert_int_equal(backend_limits(b, &t, &limit, &deadline), 0);
    assert_true(fabs(limit - 0.3) < 1e-9 && deadline >= deadline_48);
    backend_set_best(b, &t, 0);
    assert_int_equal(backend_limits(b, &t, &limit, &deadline), 0);
    assert_true(limit == 0 && deadline > 0);
    measure(b, &t, 8, 16, &r);
    assert_int_equal(r.status, TRIAL_WRONG_RESULT);
    trial_result_release(&r);
    req = last_request(f);
    assert_null(json_object_get(req, "call_limit_s"));
    json_decref(req);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
}

/* The pid the fake runner's hanging measure wrote, or 0. */
static int hang_child_pid(const fixture *f)
{
    char path[200], text[32] = "";
    snprintf(path, sizeof path, "%s/hang_child.pid", f->cache);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    if (!fgets(text, sizeof text, fp))
        text[0] = '\0';
    fclose(fp);
    return (int)strtol(text, NULL, 10);
}

/* Says stop once the fake runner hangs (its child's pid written; stop_always: at once), and
 * remembers when it first said so. */
typedef struct stop_when_hanging {
    const fixture *f;
    int always;
    int asked;
    double said_at; /* kt_clock_s of the first stop, 0 before */
} stop_when_hanging;

static int stop_hanging(void *arg)
{
    stop_when_hanging *s = arg;
    s->asked++;
    if (!s->always && hang_child_pid(s->f) <= 0)
        return 0;
    if (s->said_at == 0)
        s->said_at = kt_clock_s();
    return 1;
}

/* 1 while pid runs (exists and is not a zombie). */
static int process_runs(int pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    int runs = 1;
    if (fgets(line, sizeof line, fp)) {
        const char *close = strrchr(line, ')');
        runs = !(close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X'));
    }
    fclose(fp);
    return runs;
}

/* A stop check that says stop once the runner hangs ends the measurement within a second (the
 * deadline is 3.5 s): BACKEND_STOPPED, nothing in out, the runner's process group killed (its child
 * too); a check that says stop before the call sends nothing; the next measure starts a new runner.
 */
static void stop_check_gives_up_a_hanging_measurement(void **state)
{
    fixture *f = *state;
    catalog *c = open_real(f, f->runner);
    target t;
    kt_error err;
    trial_result r;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    backend *b = backend_open(c, "cpu", &err);
    assert_non_null(b);
    stop_when_hanging s = {.f = f};
    backend_set_stop(b, stop_hanging, &s);
    assert_int_equal(backend_measure(b, &t, config_of(t.sp, 4, 16), &r, &err), BACKEND_STOPPED);
    double after_stop = kt_clock_s() - s.said_at;
    assert_true(s.said_at > 0 && after_stop < 1.0);
    assert_true(s.asked >= 1);
    assert_int_equal(r.status, TRIAL_PENDING);
    assert_null(r.extras);
    int child = hang_child_pid(f);
    assert_true(child > 0);
    for (int i = 0; i < 200 && process_runs(child); i++)
        usleep(10000);
    assert_false(process_runs(child));

    /* Told to stop before it starts: nothing is sent. */
    json_t *before = last_request(f);
    stop_when_hanging now = {.f = f, .always = 1};
    backend_set_stop(b, stop_hanging, &now);
    assert_int_equal(backend_measure(b, &t, config_of(t.sp, 1, 32), &r, &err), BACKEND_STOPPED);
    assert_int_equal(now.asked, 1);
    json_t *after = last_request(f);
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);

    backend_set_stop(b, NULL, NULL);
    measure(b, &t, 1, 32, &r);
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
}

/* A runner killed with SIGKILL (from outside) is not blamed on the configuration at once: the
 * measure runs again on a new runner; a second SIGKILL is the trial's runtime_error. */
static void a_runner_killed_from_outside_is_measured_again(void **state)
{
    fixture *f = *state;
    catalog *c = open_real(f, f->runner);
    target t;
    kt_error err;
    trial_result r;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    backend *b = backend_open(c, "cpu", &err);
    assert_non_null(b);
    write_file(f->cache, "kill_next", "1");
    measure(b, &t, 1, 32, &r);
    assert_int_equal(r.status, TRIAL_OK);
    assert_string_equal(json_string_value(json_object_get(r.extras, "retried_after")), "SIGKILL");
    trial_result_release(&r);
    write_file(f->cache, "kill_next", "2");
    measure(b, &t, 1, 32, &r);
    assert_int_equal(r.status, TRIAL_RUNTIME_ERROR);
    assert_string_equal(json_string_value(json_object_get(r.extras, "signal_name")), "SIGKILL");
    trial_result_release(&r);
    measure(b, &t, 1, 32, &r);
    assert_int_equal(r.status, TRIAL_OK);
    assert_null(json_object_get(r.extras, "retried_after"));
    trial_result_release(&r);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
}

typedef struct par_arg {
    const catalog *c;
    const target *t;
    int failures;
} par_arg;

static void *measure_thrice(void *arg)
{
    par_arg *a = arg;
    kt_error err;
    backend *b = backend_open(a->c, "cpu", &err);
    for (int i = 0; b && i < 3; i++) {
        trial_result r;
        json_t *o = json_pack("{s:i, s:i}", "U", 1, "B", 16);
        config_id id = 0;
        space_config_from_json(a->t->sp, o, &id, &err);
        json_decref(o);
        if (backend_measure(b, a->t, id, &r, &err) != 0 || r.status != TRIAL_OK)
            a->failures++;
        trial_result_release(&r);
    }
    if (!b)
        a->failures++;
    backend_close(b);
    return NULL;
}

static void one_measurement_at_a_time_per_cpu(void **state)
{
    fixture *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/times.log", f->cache);
    unlink(path);
    catalog *c = open_real(f, f->runner);
    target t;
    kt_error err;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    pthread_t th[3];
    par_arg args[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (par_arg){c, &t, 0};
        pthread_create(&th[i], NULL, measure_thrice, &args[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    /* Nine work intervals of 0.1 s from three runners: none overlaps another. */
    double iv[16][2];
    int n = 0;
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    while (n < 16 && fscanf(fp, "%lf %lf", &iv[n][0], &iv[n][1]) == 2)
        n++;
    fclose(fp);
    assert_int_equal(n, 9);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            if (i != j && iv[i][0] < iv[j][1] && iv[j][0] < iv[i][1])
                fail_msg("measurements %d and %d overlap", i, j);
        }
    }
    target_release(&t);
    catalog_free(c);
}

static void fake_cuda_device_gets_launch_geometry(void **state)
{
    fixture *f = *state;
    write_file(f->dir, "cuda.json", CUDA_JSON);
    setenv("KT_FAKE_CUDA", "1", 1);
    catalog *c = open_real(f, f->runner);
    unsetenv("KT_FAKE_CUDA");
    json_t *devs = catalog_devices_json(c);
    json_t *gpu = find_by(devs, "name", "cuda:0");
    assert_non_null(gpu);
    assert_true(json_is_true(json_object_get(gpu, "available")));
    assert_string_equal(json_string_value(json_object_get(gpu, "class")),
                        "cuda:Fake_GPU_80GB:sm_90");
    assert_string_equal(json_string_value(json_array_get(json_object_get(gpu, "kernels"), 0)),
                        "vadd");
    assert_null(find_by(devs, "name", "cuda"));   /* only listed when no device is found */
    assert_null(find_by(devs, "name", "cuda:1")); /* probing stopped at the first refusal */
    json_decref(devs);
    json_t *ks = catalog_kernels_json(c);
    json_t *vdevs = json_object_get(find_by(ks, "name", "vadd"), "devices");
    assert_int_equal(json_array_size(vdevs), 2);
    assert_int_equal(
        json_integer_value(json_object_get(find_by(vdevs, "device", "cuda:0"), "configurations")),
        4);
    json_decref(ks);

    target t;
    kt_error err;
    assert_int_equal(catalog_resolve(c, "vadd", "cuda:0", NULL, &t, &err), 0);
    assert_string_equal(t.key.device_class, "cuda:Fake_GPU_80GB:sm_90");
    /* This fake GPU's probe names no toolchain: its results are keyed under "unknown". */
    assert_string_equal(t.key.toolchain, "unknown");
    backend *b = backend_open(c, "cuda:0", &err);
    assert_non_null(b);
    json_t *cfg = json_pack("{s:i}", "T", 64);
    config_id id;
    assert_int_equal(space_config_from_json(t.sp, cfg, &id, &err), 0);
    json_decref(cfg);
    trial_result r;
    assert_int_equal(backend_measure(b, &t, id, &r, &err), 0);
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    json_t *req = last_request(f);
    assert_string_equal(json_string_value(json_object_get(req, "entry")), "vadd_kernel");
    assert_non_null(strstr(json_string_value(json_object_get(req, "source")), "-sources/"));
    assert_non_null(strstr(json_string_value(json_object_get(req, "source")), "/cuda.cu"));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(req, "block"), 0)), 64);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(req, "block"), 2)), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(req, "grid"), 0)), 64);
    assert_int_equal(json_integer_value(json_object_get(req, "shared_bytes")), 256);
    json_decref(req);
    backend_close(b);
    target_release(&t);
    catalog_free(c);

    /* A probe that names the toolchain keys the GPU's results by it; one with control characters
     * is not usable and the results are keyed under "unknown". */
    setenv("KT_FAKE_CUDA", "cuda driver 12.4, nvrtc 12.4", 1);
    c = open_real(f, f->runner);
    assert_int_equal(catalog_resolve_key(c, "vadd", "cuda:0", NULL, &t, &err), 0);
    assert_string_equal(t.key.toolchain, "cuda driver 12.4, nvrtc 12.4");
    target_release(&t);
    catalog_free(c);
    setenv("KT_FAKE_CUDA", "cuda\tdriver", 1);
    c = open_real(f, f->runner);
    unsetenv("KT_FAKE_CUDA");
    assert_int_equal(catalog_resolve_key(c, "vadd", "cuda:0", NULL, &t, &err), 0);
    assert_string_equal(t.key.toolchain, "unknown");
    target_release(&t);
    catalog_free(c);
}

/* A kernel with neural parameters: the runner gets a configuration's values after the problem's
 * arguments, with the buffer sizes and FLOPs they give; the plain space sends the identity. */
static void neural_values_follow_the_problem(void **state)
{
    fixture *f = *state;
    write_file(f->dir, "spec.json", NEURAL_SPEC);
    catalog *c = open_real(f, f->runner);
    target t;
    kt_error err;
    trial_result r;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    assert_int_equal(space_count(t.sp), 3); /* U only: G and Z at the identity */
    backend *b = backend_open(c, "cpu", &err);
    assert_non_null(b);
    assert_int_equal(backend_measure(b, &t, 0, &r, &err), 0);
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    json_t *req = last_request(f);
    json_t *want = json_loads("[64, 4, 1, 0]", 0, NULL);
    assert_true(json_equal(json_object_get(req, "problem"), want));
    json_decref(want);
    assert_string_equal(json_string_value(json_array_get(json_object_get(req, "problem_names"), 3)),
                        "Z");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(req, "buffers"), 1), "elements")),
                     256);
    json_decref(req);

    /* the space of every transformation: G 8, Z 1 */
    const kernel_spec *k = catalog_find_kernel(c, "vadd");
    assert_non_null(k);
    kspec_problem p;
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    space *all = kernel_spec_space_neural(k, KSPEC_CPU, &p, NULL, 7u, &err);
    assert_non_null(all);
    if (t.owns_space)
        space_free((space *)t.sp);
    t.sp = all;
    t.owns_space = 1;
    json_t *cfg = json_pack("{s:i, s:i, s:i}", "U", 1, "G", 8, "Z", 1);
    config_id id;
    assert_int_equal(space_config_from_json(t.sp, cfg, &id, &err), 0);
    json_decref(cfg);
    assert_int_equal(backend_measure(b, &t, id, &r, &err), 0);
    assert_int_equal(r.status, TRIAL_OK);
    trial_result_release(&r);
    req = last_request(f);
    want = json_loads("[64, 4, 8, 1]", 0, NULL);
    assert_true(json_equal(json_object_get(req, "problem"), want));
    json_decref(want);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(req, "buffers"), 1), "elements")),
                     32);
    assert_int_equal(json_integer_value(json_object_get(req, "flops")), 65);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(req, "defines"), "G")), 8);
    json_decref(req);
    backend_close(b);
    target_release(&t);
    catalog_free(c);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(catalog_lists_real_devices_and_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_runner_leaves_devices_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(backend_maps_runner_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_factor_gives_up_on_slow_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(stop_check_gives_up_a_hanging_measurement, setup, teardown),
        cmocka_unit_test_setup_teardown(a_runner_killed_from_outside_is_measured_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(one_measurement_at_a_time_per_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(fake_cuda_device_gets_launch_geometry, setup, teardown),
        cmocka_unit_test_setup_teardown(neural_values_follow_the_problem, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
