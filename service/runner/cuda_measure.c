/* runner/cuda_measure — one CUDA measure request (PROTOCOL.md): NVRTC compile into the binary
 * cache, module load, launch checks against the device and the function's limits, inputs and
 * reference from the CPU half (cpu_problem_prepare: same fill, same references), one checked run
 * with outputs set to NaN, then timing with CUDA events. Every driver failure becomes a trial
 * status; a sticky one (illegal address, ...) marks the context lost: this and every later measure
 * reply runtime_error with extras.context_lost, and the runner should be restarted. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/early_stop.h"

#include "core/hash.h"
#include "runner/cuda_args.h"
#include "runner/cuda_internal.h"
#include "runner/runner.h"

#define CUDA_DEFAULT_DYN_MAX (48 * 1024) /* dynamic shared memory allowed without opt-in */
#define CUDA_CACHE_TAG       "ktune-cuda-v1"

/* Device buffers mirroring the host problem (d->host->problem). */
struct cuda_problem {
    int n_buffers;
    cuda_cu_deviceptr dptr[RUNNER_MAX_BUFFERS];
    size_t bytes[RUNNER_MAX_BUFFERS];
};

/* The CUDA-only fields of a measure request. */
typedef struct cuda_launch {
    char entry[RUNNER_NAME_MAX];
    long long block[3], grid[3], shared_bytes;
} cuda_launch;

/* What one measure carries between its steps. */
typedef struct cuda_trial {
    cuda_device *d;
    const runner_measure_req *q;
    const cuda_launch *l;
    json_t *reply; /* the status reply being built */
    json_t *extras;
    char arch[32]; /* "sm_90" or "compute_90" */
    double compile_ms;
    cuda_cu_module mod;
    cuda_cu_function fn;
    int regs, static_shared;
} cuda_trial;

static int cuda_get_dims(const json_t *req, const char *key, long long out[3], kt_error *err)
{
    json_t *a = json_object_get(req, key);
    out[0] = out[1] = out[2] = 1;
    if (!a)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "CUDA measure request lacks field '%s'",
                            key);
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field '%s' must be an array of 1 to 3 integers", key);
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s[%zu] must be an integer", key, i);
        out[i] = json_integer_value(v);
    }
    return 0;
}

static int cuda_parse_launch(const json_t *req, cuda_launch *l, kt_error *err)
{
    memset(l, 0, sizeof *l);
    json_t *e = json_object_get(req, "entry");
    if (!e)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "CUDA measure request lacks field 'entry'");
    if (!json_is_string(e) || !runner_is_identifier(json_string_value(e)))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'entry' must be a C identifier");
    snprintf(l->entry, sizeof l->entry, "%s", json_string_value(e));
    if (cuda_get_dims(req, "block", l->block, err) < 0 ||
        cuda_get_dims(req, "grid", l->grid, err) < 0)
        return -1;
    json_t *s = json_object_get(req, "shared_bytes");
    if (s && !json_is_integer(s))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'shared_bytes' must be an integer");
    l->shared_bytes = s ? json_integer_value(s) : 0;
    return 0;
}

/* Sets status (and keeps the rest of the reply as built so far). */
static void cuda_set_status(cuda_trial *t, const char *status)
{
    json_object_set_new(t->reply, "status", json_string(status));
}

/* Records a driver failure: status runtime_error, or invalid for launch errors that mean "this
 * configuration cannot run here"; a sticky error marks the context lost. */
static void cuda_driver_failure(cuda_trial *t, const char *what, cuda_cu_result r, int launch)
{
    char ename[64], reason[CUDA_REASON_MAX];
    const char *text = NULL;
    cuda_driver_error_name(&t->d->drv, r, ename, sizeof ename);
    if (t->d->drv.get_error_string)
        t->d->drv.get_error_string(r, &text);
    snprintf(reason, sizeof reason, "%s failed: %s (%s)", what, ename, text ? text : "");
    json_object_set_new(t->extras, "cuda_error", json_string(ename));
    json_object_set_new(t->extras, "reason", json_string(reason));
    if (cuda_error_is_sticky(r)) {
        t->d->context_lost = 1;
        json_object_set_new(t->extras, "context_lost", json_true());
        cuda_set_status(t, "runtime_error");
    } else if (launch &&
               (r == CUDA_CU_ERROR_INVALID_VALUE || r == CUDA_CU_ERROR_LAUNCH_OUT_OF_RESOURCES)) {
        cuda_set_status(t, "invalid");
    } else {
        cuda_set_status(t, "runtime_error");
    }
}

static void cuda_invalid(cuda_trial *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cuda_invalid(cuda_trial *t, const char *fmt, ...)
{
    char reason[CUDA_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_object_set_new(t->extras, "reason", json_string(reason));
    cuda_set_status(t, "invalid");
}

/* ---- compile, with the binary cache ---- */

/* Writes data into path through a temporary file renamed into place (runners may share a cache).
 * Failures are not errors: the binary is simply not cached. */
static void cuda_cache_store(const char *path, const char *data, size_t len)
{
    char tmp[RUNNER_PATH_MAX + 64];
    struct timespec ts = kt_clock_wall();
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)ts.tv_nsec);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/* Produces the module image (CUBIN, or PTX when NVRTC does not know the device's architecture).
 * Returns 0 with *image set; 1 when the trial ended (status set in t->reply); -1 with err. */
static int cuda_build(cuda_trial *t, const char *cache_dir, char **image, size_t *image_len,
                      kt_error *err)
{
    int rc = -1, real = 0, n_opts = 0;
    cuda_device *d = t->d;
    const runner_measure_req *q = t->q;
    char *source = NULL, reason[CUDA_REASON_MAX];
    size_t source_len = 0;
    char arch_opt[64], path[RUNNER_PATH_MAX];
    char defs[RUNNER_MAX_DEFINES][RUNNER_NAME_MAX + 32];
    const char *opts[RUNNER_MAX_DEFINES + 2];
    char *log = NULL;
    double t0 = kt_clock_ms();

    *image = NULL;
    *image_len = 0;
    path[0] = '\0';
    /* the request's text (sources.c), else the file */
    if (!(source = runner_sources_read(d->sources, q->source, RUNNER_MAX_SOURCE_BYTES, &source_len,
                                       err)))
        goto out;
    int arch = cuda_nvrtc_pick_arch(&d->nvrtc, d->cc, &real);
    if (arch < 0) {
        snprintf(reason, sizeof reason, "NVRTC %d.%d cannot compile for sm_%d (oldest: sm_%d)",
                 d->nvrtc.major, d->nvrtc.minor, d->cc, d->nvrtc.archs[0]);
        json_object_set_new(t->extras, "log", json_string(reason));
        cuda_set_status(t, "compile_error");
        rc = 1;
        goto out;
    }
    snprintf(t->arch, sizeof t->arch, "%s_%d", real ? "sm" : "compute", arch);
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", t->arch);
    opts[n_opts++] = arch_opt;
    opts[n_opts++] = "-std=c++17";
    for (int i = 0; i < q->n_defines; i++) {
        snprintf(defs[i], sizeof defs[i], "-D%s=%lld", q->defines[i].name, q->defines[i].value);
        opts[n_opts++] = defs[i];
    }

    /* The key: tag, NVRTC version, options (defines sorted by the parser), source bytes. */
    char ver[32];
    int vlen = snprintf(ver, sizeof ver, "nvrtc %d.%d", d->nvrtc.major, d->nvrtc.minor);
    uint64_t h1 = kt_fnv1a_field(KT_FNV1A_OFFSET, CUDA_CACHE_TAG, strlen(CUDA_CACHE_TAG));
    h1 = kt_fnv1a_field(h1, ver, (size_t)vlen);
    for (int i = 0; i < n_opts; i++)
        h1 = kt_fnv1a_field(h1, opts[i], strlen(opts[i]));
    /* a second, differently seeded pass makes the key 128 bits */
    uint64_t h2 = kt_fnv1a_field(h1 ^ 0x9e3779b97f4a7c15ULL, source, source_len);
    h1 = kt_fnv1a_field(h1, source, source_len);
    if (cache_dir && cache_dir[0]) {
        int n = snprintf(path, sizeof path, "%s/cuda-%016llx%016llx.%s", cache_dir,
                         (unsigned long long)h1, (unsigned long long)h2, real ? "cubin" : "ptx");
        if (n < 0 || (size_t)n >= sizeof path)
            path[0] = '\0';
    }
    if (path[0] && access(path, R_OK) == 0 &&
        cuda_read_file(path, 256u << 20, image, image_len, reason, sizeof reason) == 0 &&
        *image_len > 0) {
        json_object_set_new(t->extras, "cached_binary", json_true());
        t->compile_ms = kt_clock_ms() - t0;
        rc = 0;
        goto out;
    }
    free(*image);
    *image = NULL;
    json_object_set_new(t->extras, "cached_binary", json_false());

    log = malloc(CUDA_LOG_TAIL);
    if (!log) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for the compiler log");
        goto out;
    }
    const char *base = strrchr(q->source, '/');
    int r =
        cuda_nvrtc_compile(&d->nvrtc, source, source_len, base ? base + 1 : q->source, opts, n_opts,
                           real, q->compile_timeout_s, image, image_len, log, CUDA_LOG_TAIL);
    t->compile_ms = kt_clock_ms() - t0;
    if (r != 0) {
        json_object_set_new(t->extras, "log", runner_json_text(log, strlen(log)));
        cuda_set_status(t, r == -2 ? "timeout" : "compile_error");
        rc = 1;
        goto out;
    }
    if (path[0])
        cuda_cache_store(path, *image, *image_len);
    rc = 0;
out:
    free(log);
    free(source);
    if (rc != 0) {
        free(*image);
        *image = NULL;
        *image_len = 0;
    }
    return rc;
}

/* Loads the image and finds the entry. Returns 0, or 1 when the trial ended (status set). */
static int cuda_load(cuda_trial *t, const char *image)
{
    int rc = 1;
    cuda_device *d = t->d;
    char elog[CUDA_LOG_TAIL];
    int opt[2] = {CUDA_CU_JIT_ERROR_LOG_BUFFER, CUDA_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2];
    double t0 = kt_clock_ms();

    elog[0] = '\0';
    val[0] = elog;
    val[1] = (void *)(uintptr_t)sizeof elog;
    cuda_cu_result r = d->drv.module_load_data_ex(&t->mod, image, 2, opt, val);
    t->compile_ms += kt_clock_ms() - t0;
    if (r != CUDA_CU_SUCCESS) {
        t->mod = NULL;
        elog[sizeof elog - 1] = '\0';
        cuda_driver_failure(t, "cuModuleLoadDataEx", r, 0);
        if (!d->context_lost) {
            cuda_set_status(t, "compile_error");
            json_object_set_new(t->extras, "log", runner_json_text(elog, strlen(elog)));
        }
        goto out;
    }
    r = d->drv.module_get_function(&t->fn, t->mod, t->l->entry);
    if (r != CUDA_CU_SUCCESS) {
        cuda_driver_failure(t, "cuModuleGetFunction", r, 0);
        if (!d->context_lost) {
            char msg[RUNNER_NAME_MAX + 128];
            snprintf(msg, sizeof msg,
                     "entry point '%s' not found: declare it extern \"C\" __global__", t->l->entry);
            cuda_set_status(t, "compile_error");
            json_object_set_new(t->extras, "log", json_string(msg));
        }
        goto out;
    }
    if (d->drv.func_get_attribute(&t->regs, CUDA_CU_FUNC_NUM_REGS, t->fn) != CUDA_CU_SUCCESS)
        t->regs = 0;
    if (d->drv.func_get_attribute(&t->static_shared, CUDA_CU_FUNC_SHARED_SIZE_BYTES, t->fn) !=
        CUDA_CU_SUCCESS)
        t->static_shared = 0;
    json_object_set_new(t->extras, "registers", json_integer(t->regs));
    json_object_set_new(t->extras, "static_shared_bytes", json_integer(t->static_shared));
    rc = 0;
out:
    return rc;
}

/* Checks the launch geometry against the device and the function. Returns 0, or 1 (invalid). */
static int cuda_check_launch(cuda_trial *t)
{
    cuda_device *d = t->d;
    const cuda_launch *l = t->l;
    static const char axis[3] = {'x', 'y', 'z'};
    int fn_max_threads = d->max_threads_per_block;

    for (int i = 0; i < 3; i++) {
        if (l->block[i] < 1 || l->block[i] > d->max_block[i]) {
            cuda_invalid(t, "block.%c = %lld is outside [1, %d]", axis[i], l->block[i],
                         d->max_block[i]);
            return 1;
        }
        if (l->grid[i] < 1 || l->grid[i] > d->max_grid[i]) {
            cuda_invalid(t, "grid.%c = %lld is outside [1, %d]", axis[i], l->grid[i],
                         d->max_grid[i]);
            return 1;
        }
    }
    long long threads = l->block[0] * l->block[1] * l->block[2];
    if (d->drv.func_get_attribute(&fn_max_threads, CUDA_CU_FUNC_MAX_THREADS_PER_BLOCK, t->fn) !=
            CUDA_CU_SUCCESS ||
        fn_max_threads <= 0)
        fn_max_threads = d->max_threads_per_block;
    if (threads > d->max_threads_per_block || threads > fn_max_threads) {
        cuda_invalid(t,
                     "%lld threads per block exceed the limit (device %d, this kernel with %d "
                     "registers per thread %d)",
                     threads, d->max_threads_per_block, t->regs, fn_max_threads);
        return 1;
    }
    if (l->shared_bytes < 0 || l->shared_bytes + t->static_shared > d->max_shared_optin) {
        cuda_invalid(t, "shared memory %lld dynamic + %d static bytes exceeds %d per block",
                     l->shared_bytes, t->static_shared, d->max_shared_optin);
        return 1;
    }
    /* above 48 KiB in all, a kernel must opt in to its dynamic shared memory */
    if (l->shared_bytes + t->static_shared > CUDA_DEFAULT_DYN_MAX) {
        cuda_cu_result r = d->drv.func_set_attribute(
            t->fn, CUDA_CU_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)l->shared_bytes);
        if (r != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuFuncSetAttribute(max dynamic shared memory)", r, 1);
            return 1;
        }
    }
    return 0;
}

/* ---- problem data ---- */

static void cuda_problem_release(cuda_device *d)
{
    cuda_problem *p = d->problem;
    if (!p)
        return;
    for (int i = 0; i < p->n_buffers; i++)
        if (p->dptr[i])
            d->drv.mem_free(p->dptr[i]);
    free(p);
    d->problem = NULL;
}

void cuda_measure_release(cuda_device *d)
{
    cuda_problem_release(d);
    if (d->host) {
        cpu_problem_release_all(d->host);
        free(d->host);
        d->host = NULL;
    }
}

/* Host inputs and reference (the CPU half's), device buffers, inputs uploaded. Returns 0, 1 when
 * the trial ended (status set), -1 with err. */
static int cuda_prepare(cuda_trial *t, const char *cache_dir, kt_error *err)
{
    int rc = -1, reused = 0;
    cuda_device *d = t->d;
    const runner_measure_req *q = t->q;
    char reason[CUDA_REASON_MAX];
    const char *ref_binary = NULL;
    cpu_binary *ref = NULL;

    if (!d->host) {
        d->host = calloc(1, sizeof *d->host);
        if (!d->host) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto out;
        }
        d->host->cuda_ordinal = d->ordinal;
        d->host->cpu_core = -1;
        cpu_info_read(&d->host->cpu); /* part of the reference binary's cache key */
    }
    d->host->sources = d->sources;
    snprintf(d->host->cache_dir, sizeof d->host->cache_dir, "%s", cache_dir ? cache_dir : ".");
    if (q->ref_kind == RUNNER_REF_C) {
        ref = calloc(1, sizeof *ref);
        if (!ref) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto out;
        }
        if (cpu_build(d->host, q->ref_source, NULL, 0, 1, q->compile_timeout_s, ref, err) < 0)
            goto out;
        if (ref->status != CPU_BUILD_OK) {
            /* as the CPU half reports it: the trial cannot be checked */
            cuda_set_status(t, ref->status == CPU_BUILD_TIMEOUT ? "timeout" : "compile_error");
            json_object_set_new(t->extras, "log", runner_json_text(ref->log, strlen(ref->log)));
            json_object_set_new(t->extras, "reference", json_true());
            rc = 1;
            goto out;
        }
        ref_binary = ref->path;
    }
    reason[0] = '\0';
    int r = cpu_problem_prepare(d->host, q, ref_binary, &reused, reason, sizeof reason, err);
    if (r < 0) {
        cuda_problem_release(d);
        goto out;
    }
    if (r == 1) {
        cuda_problem_release(d);
        cuda_invalid(t, "%s", reason);
        rc = 1;
        goto out;
    }
    json_object_set_new(t->extras, "problem_reused", json_boolean(reused));
    if (!reused)
        json_object_set_new(t->extras, "setup_ms", json_real(d->host->problem->setup_ms));
    if (!reused || !d->problem) {
        double t0 = kt_clock_ms();
        cuda_problem_release(d);
        d->problem = calloc(1, sizeof *d->problem);
        if (!d->problem) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto out;
        }
        for (int i = 0; i < q->n_buffers; i++) {
            size_t bytes = (size_t)q->buffers[i].elements * kt_dtype_size(q->buffers[i].dtype);
            cuda_cu_result cr = d->drv.mem_alloc(&d->problem->dptr[i], bytes);
            if (cr != CUDA_CU_SUCCESS) {
                d->problem->dptr[i] = 0;
                cuda_driver_failure(t, "cuMemAlloc", cr, 0);
                if (cr == CUDA_CU_ERROR_OUT_OF_MEMORY) /* the problem cannot run here */
                    cuda_set_status(t, "invalid");
                cuda_problem_release(d);
                rc = 1;
                goto out;
            }
            d->problem->bytes[i] = bytes;
            d->problem->n_buffers = i + 1;
        }
        json_object_set_new(t->extras, "device_setup_ms", json_real(kt_clock_ms() - t0));
    }
    /* Inputs are uploaded for every trial: an earlier kernel may have written into them. */
    for (int i = 0; i < q->n_buffers; i++) {
        if (q->buffers[i].output)
            continue;
        cuda_cu_result cr = d->drv.memcpy_htod(d->problem->dptr[i], d->host->problem->data[i],
                                               d->problem->bytes[i]);
        if (cr != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuMemcpyHtoD", cr, 0);
            rc = 1;
            goto out;
        }
    }
    rc = 0;
out:
    free(ref);
    return rc;
}

/* ---- run, verify, time ---- */

static cuda_cu_result cuda_launch_once(cuda_trial *t, void **args)
{
    const cuda_launch *l = t->l;
    return t->d->drv.launch_kernel(t->fn, (unsigned)l->grid[0], (unsigned)l->grid[1],
                                   (unsigned)l->grid[2], (unsigned)l->block[0],
                                   (unsigned)l->block[1], (unsigned)l->block[2],
                                   (unsigned)l->shared_bytes, NULL, args, NULL);
}

/* The checked run: outputs poisoned (NaN; integer dtypes a byte pattern), one launch, outputs
 * downloaded into the host state and compared with the reference there, as the CPU half compares
 * (cpu_verify.c: per dtype and tolerance). Returns 0 when they match, 1 when the trial ended
 * (status set), -1 with err. */
static int cuda_verify(cuda_trial *t, void **args, kt_error *err)
{
    int rc = 1;
    cuda_device *d = t->d;
    const runner_measure_req *q = t->q;
    cpu_problem *hp = d->host->problem;
    cpu_verify_result v;
    cuda_cu_result r;

    (void)err;
    cpu_problem_poison_outputs(hp);
    for (int i = 0; i < q->n_buffers; i++) {
        if (!q->buffers[i].output)
            continue;
        r = d->drv.memcpy_htod(d->problem->dptr[i], hp->data[i], d->problem->bytes[i]);
        if (r != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuMemcpyHtoD", r, 0);
            goto out;
        }
    }
    r = cuda_launch_once(t, args);
    if (r != CUDA_CU_SUCCESS) {
        cuda_driver_failure(t, "cuLaunchKernel", r, 1);
        goto out;
    }
    r = d->drv.ctx_synchronize();
    if (r != CUDA_CU_SUCCESS) {
        cuda_driver_failure(t, "the kernel", r, 0);
        goto out;
    }
    for (int i = 0; i < q->n_buffers; i++) {
        if (!q->buffers[i].output)
            continue;
        r = d->drv.memcpy_dtoh(hp->data[i], d->problem->dptr[i], d->problem->bytes[i]);
        if (r != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuMemcpyDtoH", r, 0);
            goto out;
        }
    }
    cpu_problem_verify(hp, &v);
    cpu_verify_extras(hp, &v, t->extras);
    if (v.bad > 0) {
        cuda_set_status(t, "wrong_result");
        goto out;
    }
    rc = 0;
out:
    return rc;
}

static int cuda_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up, then timed launches until min_repeats and min_seconds (or a max, or the request's
 * early_stop: clearly slower than the best). Returns 0 with the
 * timing fields set, 1 when the trial ended (status set), -1 with err. */
static int cuda_time(cuda_trial *t, void **args, kt_error *err)
{
    int rc = 1, n = 0, early = 0;
    cuda_device *d = t->d;
    const runner_measure_req *q = t->q;
    cuda_cu_event start = NULL, stop = NULL;
    double *times = NULL, total_s = 0.0, fastest = INFINITY;
    cuda_cu_result r;
    int cap = q->max_repeats < CUDA_MAX_REPEATS ? q->max_repeats : CUDA_MAX_REPEATS;

    times = malloc((size_t)cap * sizeof *times);
    if (!times) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory for %d timings", cap);
        rc = -1;
        goto out;
    }
    if ((r = d->drv.event_create(&start, 0)) != CUDA_CU_SUCCESS) {
        start = NULL;
        cuda_driver_failure(t, "cuEventCreate", r, 0);
        goto out;
    }
    if ((r = d->drv.event_create(&stop, 0)) != CUDA_CU_SUCCESS) {
        stop = NULL;
        cuda_driver_failure(t, "cuEventCreate", r, 0);
        goto out;
    }
    /* warm-up (the checked run before it warmed the caches and the module already) */
    if ((r = cuda_launch_once(t, args)) != CUDA_CU_SUCCESS) {
        cuda_driver_failure(t, "cuLaunchKernel", r, 1);
        goto out;
    }
    if ((r = d->drv.ctx_synchronize()) != CUDA_CU_SUCCESS) {
        cuda_driver_failure(t, "the kernel", r, 0);
        goto out;
    }
    double wall0 = kt_clock_ms();
    while (n < cap) {
        float ms = 0.0f;
        if ((r = d->drv.event_record(start, NULL)) != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuEventRecord", r, 0);
            goto out;
        }
        if ((r = cuda_launch_once(t, args)) != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuLaunchKernel", r, 1);
            goto out;
        }
        if ((r = d->drv.event_record(stop, NULL)) != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuEventRecord", r, 0);
            goto out;
        }
        if ((r = d->drv.event_synchronize(stop)) != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "the kernel", r, 0);
            goto out;
        }
        if ((r = d->drv.event_elapsed_time(&ms, start, stop)) != CUDA_CU_SUCCESS) {
            cuda_driver_failure(t, "cuEventElapsedTime", r, 0);
            goto out;
        }
        times[n++] = ms;
        total_s += ms * 1e-3;
        double wall_s = (kt_clock_ms() - wall0) * 1e-3;
        if (n >= q->min_repeats && total_s >= q->min_seconds)
            break;
        if (total_s >= q->max_seconds || wall_s >= q->max_seconds)
            break;
        fastest = ms < fastest ? ms : fastest;
        /* clearly slower than the job's best (issue 32, core/early_stop.h) */
        if ((early = kt_early_stop_now(fastest, n, q->early_after, q->early_above_ms)))
            break;
    }
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < n; i++)
        mean += times[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (times[i] - mean) * (times[i] - mean);
    var = n > 1 ? var / (n - 1) : 0.0;
    qsort(times, (size_t)n, sizeof *times, cuda_cmp_double);
    double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    json_object_set_new(t->reply, "time_ms", json_real(median));
    json_object_set_new(t->reply, "repeats", json_integer(n));
    json_object_set_new(t->reply, "noise_cv", json_real(mean > 0 ? sqrt(var) / mean : 0.0));
    if (q->flops > 0 && median > 0)
        json_object_set_new(t->extras, "gflops", json_real(q->flops / (median * 1e6)));
    if (q->early_above_ms > 0) {
        json_object_set_new(t->extras, "early_stop_above_ms", json_real(q->early_above_ms));
        json_object_set_new(t->extras, "early_stopped", json_boolean(early));
    }
    cuda_set_status(t, "ok");
    rc = 0;
out:
    if (start)
        d->drv.event_destroy(start);
    if (stop)
        d->drv.event_destroy(stop);
    free(times);
    return rc;
}

/* What the CUDA half carries (PROTOCOL.md): buffers of any dtype and init but uploaded data,
 * integer and float problem words, scalars (cuda_args.h), verification against a reference;
 * anything else (uploaded data, a generated call, openmp: a cpu variant's; verify other than
 * reference) is refused by name. */
static int cuda_check_interface(const runner_measure_req *q, kt_error *err)
{
    for (int i = 0; i < q->n_buffers; i++)
        if (q->buffers[i].init == RUNNER_INIT_DATA)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "buffers[%d].init: the CUDA device takes no uploaded data", i);
    if (q->verify != RUNNER_VERIFY_REFERENCE || q->n_call_args >= 0 || q->openmp)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "the CUDA device takes no call or openmp, and verifies against a "
                            "reference only");
    return 0;
}

json_t *cuda_device_measure(cuda_device *d, const json_t *request, const char *cache_dir)
{
    json_t *reply = NULL;
    runner_measure_req *q = NULL;
    cuda_launch l;
    cuda_trial t;
    kt_error err;
    char *image = NULL;
    size_t image_len = 0;
    cuda_args *args = NULL;
    int r;

    memset(&t, 0, sizeof t);
    kt_error_clear(&err);
    q = calloc(1, sizeof *q);
    if (!q) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory for the request");
        goto fail;
    }
    if (runner_parse_measure(request, q, &err) < 0 || cuda_parse_launch(request, &l, &err) < 0 ||
        cuda_check_interface(q, &err) < 0)
        goto fail;
    t.d = d;
    t.q = q;
    t.l = &l;
    t.reply = runner_status_reply("runtime_error", 0.0);
    if (!t.reply) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory for the reply");
        goto fail;
    }
    t.extras = json_object_get(t.reply, "extras");
    if (d->context_lost) {
        json_object_set_new(t.extras, "reason",
                            json_string("the CUDA context was lost by an earlier trial; restart "
                                        "the runner"));
        json_object_set_new(t.extras, "context_lost", json_true());
        goto done;
    }
    if (!d->nvrtc_ok) {
        kt_error_set(&err, KT_ERR_UNAVAILABLE, "%s", d->nvrtc_reason);
        goto fail;
    }
    r = cuda_build(&t, cache_dir, &image, &image_len, &err);
    if (r < 0)
        goto fail;
    if (r > 0)
        goto done;
    if (cuda_load(&t, image) != 0 || cuda_check_launch(&t) != 0)
        goto done;
    double m0 = kt_clock_ms();
    r = cuda_prepare(&t, cache_dir, &err);
    if (r < 0)
        goto fail;
    if (r > 0)
        goto done;
    if (!(args = malloc(sizeof *args))) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory for the arguments");
        goto fail;
    }
    if (cuda_args_pack(q, d->problem->dptr, args, &err) < 0)
        goto fail;
    r = cuda_verify(&t, args->params, &err);
    if (r == 0)
        r = cuda_time(&t, args->params, &err);
    json_object_set_new(t.reply, "measure_ms", json_real(kt_clock_ms() - m0));
    if (r < 0)
        goto fail;
done:
    if (t.arch[0])
        json_object_set_new(t.extras, "arch", json_string(t.arch));
    json_object_set_new(t.reply, "compile_ms", json_real(t.compile_ms));
    reply = t.reply;
    t.reply = NULL;
    goto out;
fail:
    reply = runner_error_reply(&err);
out:
    if (t.mod && !d->context_lost)
        d->drv.module_unload(t.mod);
    json_decref(t.reply);
    free(image);
    free(args);
    free(q);
    return reply;
}
