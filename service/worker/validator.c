/* worker/validator — validates kernels submitted over HTTP (issue 27): a thread of each measuring
 * process claims a validating version (kernel_store_claim), compiles, runs and verifies its
 * default configuration on the kernel's test problem on a device of each variant's kind this
 * process has (a measurement through the device's backend, ktune-runner and all), and records
 * ready or invalid with the compiler or verification log (kernel_store_finish). A CUDA variant on
 * a process without a CUDA device is compile-checked by NVRTC (a runner's compile_check op: NVRTC
 * needs no device) with its default configuration: a compile error makes the version invalid with
 * NVRTC's log, a clean compile is recorded "compiled by NVRTC <version>, not run: no CUDA device".
 * A variant neither run nor compiled (no NVRTC) is recorded "not run" (its status says so); a
 * version whose every variant was not run stays ready only by that statement.
 *
 * Lifecycle: validator_main runs on its own thread from worker_system_start until stopping. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_name.h"
#include "core/log.h"
#include "core/strbuf.h"
#include "measure/backend.h"
#include "measure/runner_client.h"
#include "store/kernel_store.h"
#include "worker/validator.h"
#include "worker/worker_internal.h"

#define VALIDATOR_TICK_MS 300
#define VALIDATOR_LOG_MAX 8192

/* The first device of w of kind ("cpu" or "cuda"), or NULL. */
static const char *device_of_kind(const worker_system *w, kspec_kind kind)
{
    for (int i = 0; i < w->n_devices; i++)
        if (w->kinds[i] == (kind == KSPEC_CPU ? KT_DEVICE_CPU : KT_DEVICE_CUDA))
            return w->devices[i];
    return NULL;
}

/* Measures the default configuration of one variant on device: 1 ok, 0 not ok (why in log). */
static int validate_variant(const worker_system *w, const kernel_spec *k, const char *device,
                            strbuf *log)
{
    const catalog *cat = w->opt.cat;
    json_t *problem = k->test_problem_text ? json_loads(k->test_problem_text, 0, NULL) : NULL;
    json_t *def = NULL;
    backend *b = NULL;
    target t;
    trial_result r;
    config_id id;
    kt_error e;
    int resolved = 0, ok = 0;
    trial_result_init(&r);
    kt_error_clear(&e);
    if (catalog_resolve_any(cat, k->name, k->version, device, problem, &t, &e) < 0) {
        strbuf_appendf(log, "%s: %s\n", device, e.message);
        goto out;
    }
    resolved = 1;
    if (!(def = catalog_default_config(cat, &t)) ||
        space_config_from_json(t.sp, def, &id, &e) < 0) {
        strbuf_appendf(log, "%s: the default configuration is not in the space: %s\n", device,
                       def ? e.message : "none");
        goto out;
    }
    if (!(b = backend_open(cat, device, &e)) || backend_measure(b, &t, id, &r, &e) < 0) {
        strbuf_appendf(log, "%s: %s\n", device, e.message);
        goto out;
    }
    ok = r.status == TRIAL_OK;
    strbuf_appendf(log, "%s: default configuration: %s", device, trial_status_name(r.status));
    if (ok)
        strbuf_appendf(log, " (%.4g ms)", r.time_ms);
    const char *clog = json_string_value(json_object_get(r.extras, "log"));
    if (clog)
        strbuf_appendf(log, "\n%s", clog);
    else if (!ok && r.extras) {
        char *x = json_dumps(r.extras, JSON_COMPACT);
        if (x)
            strbuf_appendf(log, ": %s", x);
        free(x);
    }
    strbuf_puts(log, "\n");
out:
    if (b)
        backend_close(b);
    trial_result_release(&r);
    json_decref(problem);
    json_decref(def);
    if (resolved)
        target_release(&t);
    return ok;
}

/* The NVRTC compile check of k's CUDA variant with its default configuration, in a runner started
 * for it (the CPU device's: a compile reads untrusted source, so it never runs in ktuned). Returns
 * 1 compiled, 0 not compiled (NVRTC's log in log), -1 not checked (why in log: no NVRTC, no runner
 * configured); outcome gets the variant's one-line outcome. */
static int nvrtc_check_variant(const worker_system *w, const kernel_spec *k, strbuf *log,
                               char *outcome, size_t cap)
{
    const catalog *cat = w->opt.cat;
    const kspec_variant *v = &k->variants[KSPEC_CUDA];
    const catalog_real_options *o = catalog_measure_options(cat);
    char dir[PATH_MAX], src[PATH_MAX + KFILES_MAX_NAME + 2];
    json_t *defines = NULL, *req = NULL, *reply = NULL;
    runner_client *rc = NULL;
    runner_end end;
    kt_error e;
    int result = -1;
    kt_error_clear(&e);
    snprintf(outcome, cap, "not run: no device of this kind");
    if (!o || !o->runner || !o->cache_dir) {
        strbuf_appendf(log, "cuda: not run and not compiled: no runner configured\n");
        goto out;
    }
    if (catalog_kernel_sources(cat, k, dir, sizeof dir, &e) < 0) {
        strbuf_appendf(log, "cuda: %s\n", e.message);
        goto out;
    }
    snprintf(src, sizeof src, "%s/%s", dir, v->source);
    /* the spec's default (of a list: its last entry, as no device's limits are known here) */
    defines = v->default_text ? json_loads(v->default_text, 0, NULL) : json_object();
    /* the texts go with the request: the sources cache is unreadable to the runner's user */
    req = json_pack("{s:s, s:s, s:O, s:o, s:f}", "op", "compile_check", "source", src, "defines",
                    defines ? defines : json_null(), "files",
                    kernel_files_json(k->files, k->compiled, k->n_compiled), "compile_timeout_s",
                    o->compile_timeout_s);
    runner_spawn sp = {
        .path = o->runner, .device = "cpu", .cache_dir = o->cache_dir, .cpu_core = -1};
    if (!defines || !req || !(rc = runner_client_new(&sp, &e))) {
        strbuf_appendf(log, "cuda: not compiled: %s\n", e.message[0] ? e.message : "out of memory");
        goto out;
    }
    if (!k->dir) /* a submitted kernel's text: compiled as its version's own uid */
        runner_client_set_version_uid(rc, k->version);
    int got = runner_client_call(rc, req, o->compile_timeout_s + 30, &reply, &end, &e);
    if (got != RUNNER_REPLY) {
        strbuf_appendf(log, "cuda: not compiled: the runner %s\n",
                       got < 0 ? e.message : "died or overran its deadline");
        goto out;
    }
    const char *status = json_string_value(json_object_get(reply, "status"));
    const char *version = json_string_value(json_object_get(reply, "nvrtc_version"));
    const char *clog = json_string_value(json_object_get(json_object_get(reply, "extras"), "log"));
    if (!json_is_true(json_object_get(reply, "ok")) || !status) {
        const char *why = json_string_value(json_object_get(reply, "reason"));
        if (!why)
            why = json_string_value(json_object_get(reply, "error"));
        snprintf(outcome, cap, "not run: no CUDA device; not compiled: %s",
                 why ? why : "no reason given");
        strbuf_appendf(log, "cuda: %s\n", outcome);
        goto out;
    }
    long long arch = json_integer_value(json_object_get(reply, "arch"));
    if (strcmp(status, "ok") == 0) {
        snprintf(outcome, cap, "compiled by NVRTC %s, not run: no CUDA device",
                 version ? version : "?");
        strbuf_appendf(log,
                       "cuda: default configuration compiled by NVRTC %s for sm_%lld; not "
                       "run: this worker has no CUDA device\n",
                       version ? version : "?", arch);
        result = 1;
    } else {
        snprintf(outcome, cap, "failed");
        strbuf_appendf(log, "cuda: default configuration: %s (NVRTC %s, sm_%lld)\n%s\n", status,
                       version ? version : "?", arch, clog ? clog : "");
        result = 0;
    }
out:
    if (rc) {
        runner_client_stop(rc, 2.0);
        runner_client_free(rc);
    }
    json_decref(reply);
    json_decref(req);
    json_decref(defines);
    return result;
}

/* Validates one claimed version and records the outcome. */
static void validate(worker_system *w, const char *name, const char *version)
{
    const kernel_spec *k = NULL;
    /* The catalog may have fetched the name just before this version was stored: it fetches again
     * on a miss after CATALOG_KERNEL_MISS_MS. */
    for (int i = 0; i < 40 && !k && !worker_stopping(w); i++) {
        if (i)
            worker_wait(w, &(unsigned long){0}, 0, CATALOG_KERNEL_MISS_MS);
        k = catalog_find_kernel_version(w->opt.cat, name, version);
    }
    json_t *outcome = json_object();
    strbuf log;
    int all_ok = 1;
    kt_error e;
    strbuf_init(&log, VALIDATOR_LOG_MAX);
    if (!k) {
        strbuf_appendf(&log, "the stored spec and files do not load on this worker");
        all_ok = 0;
    }
    for (int kind = 0; k && kind < KSPEC_N_KINDS; kind++) {
        if (!k->variants[kind].present)
            continue;
        const char *kname = kernel_spec_kind_name((kspec_kind)kind);
        const char *device = device_of_kind(w, (kspec_kind)kind);
        if (!device && kind == KSPEC_CUDA) {
            char what[512];
            int ok = nvrtc_check_variant(w, k, &log, what, sizeof what);
            json_object_set_new(outcome, kname, json_string(what));
            all_ok &= ok != 0;
            continue;
        }
        if (!device) {
            /* No device of the kind here: nothing compiled or run. */
            json_object_set_new(outcome, kname, json_string("not run: no device of this kind"));
            strbuf_appendf(&log, "%s: not run: this worker has no %s device\n", kname, kname);
            continue;
        }
        int ok = validate_variant(w, k, device, &log);
        json_object_set_new(outcome, kname, json_string(ok ? "ok" : "failed"));
        all_ok &= ok;
    }
    const char *status = all_ok ? "ready" : "invalid";
    PGconn *c = db_acquire(w->opt.db, 5000, &e);
    if (!c || kernel_store_finish(c, name, version, status, strbuf_str(&log), outcome, &e) < 0)
        log_warn("kernel %s version %s: the validation cannot be recorded: %s", name, version,
                 e.message);
    else
        log_info("kernel %s version %s: %s", name, version, status);
    if (c)
        db_release(w->opt.db, c);
    json_decref(outcome);
    strbuf_release(&log);
}

void *validator_main(void *arg)
{
    worker_system *w = arg;
    unsigned long never = 0;
    while (!worker_stopping(w)) {
        kt_error e;
        kt_error_clear(&e);
        json_t *claim = NULL;
        PGconn *c = db_acquire(w->opt.db, 2000, &e);
        if (c) {
            claim = kernel_store_claim(c, w->id, &e);
            db_release(w->opt.db, c);
        }
        if (!claim && e.code != KT_ERR_NOT_FOUND)
            log_warn("validator: %s", e.message);
        if (claim) {
            char name[KSPEC_MAX_NAME + 1], version[KFILES_VERSION_LEN + 1];
            snprintf(name, sizeof name, "%s", json_string_value(json_object_get(claim, "name")));
            snprintf(version, sizeof version, "%s",
                     json_string_value(json_object_get(claim, "version")));
            json_decref(claim);
            validate(w, name, version);
            continue; /* another may wait */
        }
        worker_wait(w, &never, 0, VALIDATOR_TICK_MS);
    }
    return NULL;
}
