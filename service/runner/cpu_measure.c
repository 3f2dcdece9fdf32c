/* One CPU measure request end to end: build (or find) the kernel and reference binaries, prepare
 * the problem state and the kernel's scratch (cpu_scratch.c), restore the floating-point
 * environment the runner started with, run once with NaN outputs and verify every output element,
 * then time repeats with CLOCK_MONOTONIC around each call until min_repeats and min_seconds are
 * reached (max_repeats and max_seconds stop it earlier, and so does the request's early_stop once
 * the configuration is clearly slower than the job's best: core/early_stop.h) and report the
 * median, the coefficient of variation and the page faults taken while timing (none, when nothing
 * allocates: issue 32). The op "compile" (cpu_compile_only) builds the kernel only, off the
 * measuring core. */
#include "runner/runner.h"

#include <dlfcn.h>
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/early_stop.h"
#include "core/log.h"

static void set_real(json_t *obj, const char *key, double v)
{
    json_object_set_new(obj, key, runner_json_real(v));
}

static json_t *extras_of(json_t *reply)
{
    return json_object_get(reply, "extras");
}

/* compile_error or timeout, from a failed build of the kernel or the reference. */
static json_t *build_failure_reply(const cpu_binary *b, int reference, double compile_ms,
                                   double timeout_s)
{
    const char *status = b->status == CPU_BUILD_TIMEOUT ? "timeout" : "compile_error";
    json_t *reply = runner_status_reply(status, compile_ms);
    json_t *ex = extras_of(reply);
    json_object_set_new(ex, "log", runner_json_text(b->log, strlen(b->log)));
    json_object_set_new(ex, "cached_binary", json_false());
    if (reference)
        json_object_set_new(ex, "reference", json_true());
    if (b->status == CPU_BUILD_TIMEOUT) {
        char reason[128];
        snprintf(reason, sizeof reason, "the compiler ran longer than compile_timeout_s (%g s)",
                 timeout_s);
        json_object_set_new(ex, "reason", json_string(reason));
    }
    return reply;
}

static json_t *invalid_reply(const char *reason, double compile_ms, double measure_ms)
{
    json_t *reply = runner_status_reply("invalid", compile_ms);
    set_real(reply, "measure_ms", measure_ms);
    json_object_set_new(extras_of(reply), "reason", runner_json_text(reason, strlen(reason)));
    return reply;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct timing {
    double median_ms, mean_ms, min_ms, max_ms, cv;
    int repeats;
    int early_stopped; /* stopped by the request's early_stop: clearly slower than the best */
    int returned;      /* non-zero: the kernel returned this on a timed run */
    long page_faults;  /* minor + major faults of the process while timing */
} timing;

static long faults_now(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt + ru.ru_majflt : 0;
}

/* One kernel call under the request's call limit: a call longer than call_limit_s ends the runner
 * by SIGALRM's default action (no handler, on purpose: the kernel cannot be interrupted safely),
 * which the backend records as a timeout. Used to give up on configurations far slower than the
 * best one without waiting for them. */
static int call_kernel(cpu_kernel_fn fn, void *const *args, cpu_problem *p,
                       const runner_measure_req *q)
{
    struct itimerval limit = {0};
    if (q->call_limit_s > 0) {
        limit.it_value.tv_sec = (time_t)q->call_limit_s;
        limit.it_value.tv_usec =
            (suseconds_t)((q->call_limit_s - (double)limit.it_value.tv_sec) * 1e6);
        if (limit.it_value.tv_sec == 0 && limit.it_value.tv_usec == 0)
            limit.it_value.tv_usec = 1;
        setitimer(ITIMER_REAL, &limit, NULL);
    }
    int rc = fn((float *const *)args, p->problem);
    if (q->call_limit_s > 0) {
        struct itimerval off = {0};
        setitimer(ITIMER_REAL, &off, NULL);
    }
    return rc;
}

/* Timed repeats; the verification run before was the warm-up. times holds max_repeats entries. */
static void time_kernel(cpu_kernel_fn fn, void *const *args, cpu_problem *p,
                        const runner_measure_req *q, double *times, timing *t)
{
    memset(t, 0, sizeof *t);
    memset(times, 0, sizeof *times * (size_t)q->max_repeats); /* its pages faulted in now */
    kt_timing_limits lim = {q->min_repeats, q->max_repeats, q->min_seconds,
                            q->max_seconds, q->early_after, q->early_above_ms};
    long faults = faults_now();
    double start = kt_clock_ms(), fastest = INFINITY;
    int n = 0, next = KT_TIMING_GO_ON;
    while (next == KT_TIMING_GO_ON) {
        double t0 = kt_clock_ms();
        int rc = call_kernel(fn, args, p, q);
        double t1 = kt_clock_ms();
        if (rc != 0) {
            t->returned = rc;
            return;
        }
        times[n++] = t1 - t0;
        fastest = t1 - t0 < fastest ? t1 - t0 : fastest;
        next = kt_timing_next(&lim, n, (t1 - start) * 1e-3, fastest);
    }
    t->early_stopped = next == KT_TIMING_EARLY_STOP;
    t->page_faults = faults_now() - faults;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += times[i];
    t->mean_ms = sum / n;
    for (int i = 0; i < n; i++)
        sq += (times[i] - t->mean_ms) * (times[i] - t->mean_ms);
    double sd = n > 1 ? sqrt(sq / (n - 1)) : 0.0;
    t->cv = t->mean_ms > 0 ? sd / t->mean_ms : 0.0;
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    t->median_ms = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    t->min_ms = times[0];
    t->max_ms = times[n - 1];
    t->repeats = n;
}

static json_t *wrong_result_reply(const cpu_problem *p, const cpu_verify_result *v,
                                  double compile_ms, double measure_ms)
{
    json_t *reply = runner_status_reply("wrong_result", compile_ms);
    set_real(reply, "measure_ms", measure_ms);
    cpu_verify_extras(p, v, extras_of(reply));
    return reply;
}

/* Loads the kernel into *handle; a cached binary that does not load is rebuilt once. Returns 0, 1
 * when it does not load (b->log says why, b->status tells a failed rebuild), -1 with err. */
static int load_kernel(runner *r, const runner_measure_req *q, cpu_binary *b, void **handle,
                       void **fn, kt_error *err)
{
    *handle = cpu_load(b->path, "ktune_kernel", fn, b->log, sizeof b->log);
    if (*handle)
        return 0;
    if (!b->cached)
        return 1;
    log_warn("cached binary %s does not load (%s); rebuilding it", b->path, b->log);
    unlink(b->path);
    if (cpu_build_kernel(r, q, q->defines, q->n_defines, b, err) < 0)
        return -1;
    if (b->status != CPU_BUILD_OK)
        return 1;
    *handle = cpu_load(b->path, "ktune_kernel", fn, b->log, sizeof b->log);
    return *handle ? 0 : 1;
}

/* Verification and timing with the kernel loaded and the problem prepared. */
static json_t *run_measure(cpu_kernel_fn fn, void *const *args, cpu_problem *p,
                           const runner_measure_req *q, const cpu_binary *kb, double *times)
{
    char reason[256];
    double compile_ms = kb->cached ? 0.0 : kb->compile_ms;
    double start = kt_clock_ms();
    cpu_problem_poison_outputs(p);
    double v0 = kt_clock_ms();
    int rc = call_kernel(fn, args, p, q);
    double verify_ms = kt_clock_ms() - v0;
    if (rc != 0) {
        snprintf(reason, sizeof reason,
                 "the kernel returned %d (this configuration cannot run this problem)", rc);
        return invalid_reply(reason, compile_ms, kt_clock_ms() - start);
    }
    int bad_input = cpu_problem_check_inputs(p);
    if (bad_input >= 0) {
        snprintf(reason, sizeof reason,
                 "the kernel wrote to input buffer '%s' (inputs are read-only)",
                 p->buffers[bad_input].name);
        return invalid_reply(reason, compile_ms, kt_clock_ms() - start);
    }
    cpu_verify_result v;
    cpu_problem_verify(p, &v);
    if (v.bad > 0)
        return wrong_result_reply(p, &v, compile_ms, kt_clock_ms() - start);
    timing t;
    time_kernel(fn, args, p, q, times, &t);
    if (t.returned != 0) {
        snprintf(reason, sizeof reason, "the kernel returned %d on a timed run", t.returned);
        return invalid_reply(reason, compile_ms, kt_clock_ms() - start);
    }
    bad_input = cpu_problem_check_inputs(p);
    if (bad_input >= 0) {
        snprintf(reason, sizeof reason,
                 "the kernel wrote to input buffer '%s' on a timed run (inputs are read-only)",
                 p->buffers[bad_input].name);
        return invalid_reply(reason, compile_ms, kt_clock_ms() - start);
    }
    json_t *reply = runner_status_reply("ok", compile_ms);
    json_t *ex = extras_of(reply);
    set_real(reply, "time_ms", t.median_ms);
    json_object_set_new(reply, "repeats", json_integer(t.repeats));
    set_real(reply, "noise_cv", t.cv);
    set_real(reply, "measure_ms", kt_clock_ms() - start);
    if (q->flops > 0 && t.median_ms > 0)
        set_real(ex, "gflops", q->flops / (t.median_ms * 1e6));
    if (q->verify != RUNNER_VERIFY_NONE)
        set_real(ex, "max_abs_err", v.max_abs_err);
    set_real(ex, "min_ms", t.min_ms);
    set_real(ex, "mean_ms", t.mean_ms);
    set_real(ex, "max_ms", t.max_ms); /* the slowest timed call: what a call limit judges */
    set_real(ex, "verify_ms", verify_ms);
    json_object_set_new(ex, "timed_page_faults", json_integer(t.page_faults));
    if (q->early_above_ms > 0) {
        set_real(ex, "early_stop_above_ms", q->early_above_ms);
        json_object_set_new(ex, "early_stopped", json_boolean(t.early_stopped));
    }
    return reply;
}

static const char *verify_name(runner_verify_kind v)
{
    static const char *const names[] = {"reference", "default", "answer", "none"};
    return names[v];
}

/* An openmp kernel: its OpenMP runtime (libgomp, found through the kernel's handle) stays loaded
 * for the runner's life (RTLD_NODELETE), since its pooled threads outlive the kernel's dlclose and
 * would run unmapped code otherwise. "threads": that runtime runs that many threads in the
 * runner's thread, which calls the kernel. */
static void set_threads(void *handle, const runner_measure_req *q)
{
    Dl_info info;
    void *fn = NULL;
    if (!q->openmp || !handle)
        return;
    fn = dlsym(handle, "omp_set_num_threads");
    if (!fn) {
        log_warn("%s: openmp kernel without omp_set_num_threads; threads %d not set", q->kernel,
                 q->threads);
        return;
    }
    if (dladdr(fn, &info) && info.dli_fname &&
        !dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        log_warn("%s: cannot keep the OpenMP runtime %s loaded", q->kernel, info.dli_fname);
    if (q->threads > 0)
        ((void (*)(int))fn)(q->threads);
}

/* Pins a pinned runner to its core again: after a compile, and before every measure (a compile
 * with "core_shared" was given other cores by ktuned, which may move it once more before it hears
 * that the compile ended). */
static void pin_to_core(const runner *r)
{
    cpu_set_t set;
    if (r->cpu_core < 0)
        return;
    CPU_ZERO(&set);
    CPU_SET(r->cpu_core, &set);
    if (sched_setaffinity(0, sizeof set, &set) < 0)
        log_warn("cannot pin the runner to core %d", r->cpu_core);
}

/* An openmp request of a pinned runner runs on every core the runner was started with (its
 * threads would share its one core otherwise); on = 0 restores the pin. */
static void widen(const runner *r, const runner_measure_req *q, int on)
{
    if (!q->openmp || r->cpu_core < 0 || !r->have_wide)
        return;
    if (!on)
        pin_to_core(r);
    else if (sched_setaffinity(0, sizeof r->wide, &r->wide) < 0)
        log_warn("%s: cannot widen the runner's cores", q->kernel);
}

/* After a request that stored a binary: the cache within its bound, keeping what it used. */
static void bound_cache(const runner *r, const cpu_binary *kb, const cpu_binary *rb)
{
    int stored = (kb && kb->name[0] && !kb->cached) || (rb && rb->name[0] && !rb->cached);
    const char *keep[3] = {kb ? kb->name : NULL, rb ? rb->name : NULL,
                           kb && kb->prelude.name[0] ? kb->prelude.name : NULL};
    if (stored && r->cache_max_bytes > 0)
        cpu_cache_bound(r->cache_dir, r->cache_max_bytes, keep, 3);
}

/* What a kernel compile cost (not cached): the compiler's CPU time and its prelude's state. */
static void compile_extras(json_t *ex, const cpu_binary *kb)
{
    if (kb->cached)
        return;
    set_real(ex, "compile_cpu_ms", kb->compile_cpu_ms);
    json_object_set_new(ex, "prelude", json_string(cpu_prelude_state_name(kb->prelude.state)));
    if (kb->prelude.state == CPU_PRELUDE_MADE)
        set_real(ex, "prelude_cpu_ms", kb->prelude.cpu_ms);
}

/* 1 when q's verification computes the expected outputs with a binary of its own (the default
 * configuration's, or the C reference), else 0. */
static int needs_reference_binary(const runner_measure_req *q)
{
    return q->verify == RUNNER_VERIFY_DEFAULT ||
           (q->verify == RUNNER_VERIFY_REFERENCE && q->ref_kind == RUNNER_REF_C);
}

/* Builds q's kernel into kb and, where verification needs one, what computes the expected outputs
 * into rb (the default configuration's binary, or the C reference). 0 when both are built, 1 with
 * *reply the failed build's answer, -1 with err. */
static int build_kernel_and_reference(runner *r, const runner_measure_req *q, cpu_binary *kb,
                                      cpu_binary *rb, json_t **reply, kt_error *err)
{
    if (cpu_build_kernel(r, q, q->defines, q->n_defines, kb, err) < 0)
        return -1;
    if (kb->status != CPU_BUILD_OK) {
        *reply = build_failure_reply(kb, 0, kb->compile_ms, q->compile_timeout_s);
        return 1;
    }
    if (!needs_reference_binary(q))
        return 0;
    int built = q->verify == RUNNER_VERIFY_DEFAULT
                    ? cpu_build_kernel(r, q, q->verify_defines, q->n_verify_defines, rb, err)
                    : cpu_build(r, q->ref_source, NULL, 0, 1, q->compile_timeout_s, rb, err);
    if (built < 0)
        return -1;
    if (rb->status != CPU_BUILD_OK) {
        *reply = build_failure_reply(rb, 1, kb->cached ? 0 : kb->compile_ms, q->compile_timeout_s);
        return 1;
    }
    return 0;
}

json_t *cpu_measure(runner *r, const runner_measure_req *q, kt_error *err)
{
    json_t *reply = NULL;
    cpu_binary *kb = calloc(1, sizeof *kb), *rb = calloc(1, sizeof *rb);
    double *times = malloc(sizeof *times * (size_t)q->max_repeats);
    void *handle = NULL, *fn = NULL;
    void *args[RUNNER_MAX_BUFFERS + 1];
    cpu_scratch scratch;
    char reason[512];
    int reused = 0;
    memset(&scratch, 0, sizeof scratch);
    pin_to_core(r);
    if (!kb || !rb || !times) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the measure state");
        goto out;
    }
    if (build_kernel_and_reference(r, q, kb, rb, &reply, err) != 0)
        goto out;
    int ref_built = needs_reference_binary(q);
    /* every build of the request is done: its source texts leave the disk before its code runs */
    runner_sources_done(r->sources);
    int loaded = load_kernel(r, q, kb, &handle, &fn, err);
    if (loaded < 0)
        goto out;
    if (loaded > 0) {
        if (kb->status == CPU_BUILD_OK)
            kb->status = CPU_BUILD_FAILED; /* built, but not loadable: a compile_error too */
        reply = build_failure_reply(kb, 0, kb->cached ? 0 : kb->compile_ms, q->compile_timeout_s);
        goto out;
    }
    widen(r, q, 1);
    set_threads(handle, q);
    int prep =
        cpu_problem_prepare(r, q, ref_built ? rb->path : NULL, &reused, reason, sizeof reason, err);
    if (prep < 0)
        goto out;
    if (prep > 0 ||
        cpu_scratch_prepare(&scratch, handle, r->problem->problem, reason, sizeof reason) > 0) {
        reply = invalid_reply(reason, kb->cached ? 0 : kb->compile_ms, 0);
        goto out;
    }
    cpu_scratch_args(r->problem, &scratch, args);
    /* a kernel that changed the floating-point environment (flush to zero, rounding) leaves
     * nothing to the next one: each starts from the runner's own */
    if (r->have_fenv)
        fesetenv(&r->fenv);
    reply = run_measure((cpu_kernel_fn)fn, args, r->problem, q, kb, times);
    if (!reply) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot build the measure reply");
        goto out;
    }
    json_t *ex = extras_of(reply);
    json_object_set_new(ex, "cached_binary", json_boolean(kb->cached));
    json_object_set_new(ex, "binary", json_string(kb->name));
    compile_extras(ex, kb);
    json_object_set_new(ex, "problem_reused", json_boolean(reused));
    set_real(ex, "setup_ms", reused ? 0.0 : r->problem->setup_ms);
    if (ref_built && !rb->cached)
        set_real(ex, "reference_compile_ms", rb->compile_ms);
    json_object_set_new(ex, "verified", json_string(verify_name(q->verify)));
    if (q->threads > 0)
        json_object_set_new(ex, "threads", json_integer(q->threads));
    if (scratch.wanted)
        json_object_set_new(ex, "scratch_bytes", json_integer((json_int_t)scratch.bytes));
    log_debug("measure %s %s: %s", q->kernel, kb->name,
              json_string_value(json_object_get(reply, "status")));
out:
    bound_cache(r, kb, rb);
    widen(r, q, 0);
    cpu_scratch_release(&scratch);
    if (handle)
        dlclose(handle);
    free(times);
    free(rb);
    free(kb);
    return reply;
}

int runner_compile_cores(const runner *r, cpu_set_t *set)
{
    if (r->cpu_core < 0 || !r->have_wide)
        return 0;
    *set = r->wide;
    CPU_CLR(r->cpu_core, set);
    return CPU_COUNT(set) > 0;
}

json_t *cpu_compile_only(runner *r, const runner_measure_req *q, kt_error *err)
{
    json_t *reply = NULL;
    cpu_binary *kb = calloc(1, sizeof *kb), *rb = calloc(1, sizeof *rb);
    cpu_set_t set;
    /* off the measuring core: the runner itself (hashing, writing the sources) and the compiler,
     * which inherits the mask; unless ktuned keeps it off while measuring ("core_shared") */
    int shared = q->core_shared && r->cpu_core >= 0;
    int moved =
        !shared && runner_compile_cores(r, &set) && sched_setaffinity(0, sizeof set, &set) == 0;
    if (!kb || !rb) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot allocate the compile state");
        goto out;
    }
    /* what computes the expected outputs too (once per kernel): the measure finds both */
    if (build_kernel_and_reference(r, q, kb, rb, &reply, err) != 0)
        goto out;
    double ref_ms = needs_reference_binary(q) && !rb->cached ? rb->compile_ms : 0;
    reply = runner_status_reply("ok", kb->cached ? 0.0 : kb->compile_ms);
    json_t *ex = extras_of(reply);
    json_object_set_new(ex, "cached_binary", json_boolean(kb->cached));
    json_object_set_new(ex, "binary", json_string(kb->name));
    compile_extras(ex, kb);
    json_object_set_new(ex, "off_core", json_boolean(moved));
    if (shared)
        json_object_set_new(ex, "core_shared", json_true());
    if (ref_ms > 0)
        set_real(ex, "reference_compile_ms", ref_ms);
out:
    bound_cache(r, kb, rb);
    if (moved || shared)
        pin_to_core(r);
    free(rb);
    free(kb);
    return reply;
}
