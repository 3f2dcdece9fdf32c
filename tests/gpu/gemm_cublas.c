/* gpu_gemm_cublas — cuBLAS sgemm timed the way ktune-runner times a CUDA kernel, for make
 * gpu-check's ratio time(ktune's tuned gemm) / time(cuBLAS) (tests/gpu/README.md).
 *
 *   gpu_gemm_cublas [--device N] [--sizes 1024,2048,4096] [--min-repeats 5] [--max-repeats 100]
 *                   [--min-seconds 0.2] [--max-seconds 3]
 *
 * For each size n: row-major fp32 C = A·B with M = N = K = n, inputs uniform in [-1, 1), one call
 * checked on 64 sampled elements against a double-precision dot product, a warm-up call, then calls
 * each bracketed by CUDA events on the default stream until min repeats and min seconds (or a
 * max), as runner/cuda_measure.c does. cuBLAS's default math mode (fp32 FMA, no TF32), like the
 * ktune kernel. One JSON object per line on stdout: the device and library first, then one per
 * size (time_ms is the median).
 *
 * libcublas and the driver are opened with dlopen (the driver through the runner's table), so this
 * builds and starts on machines without CUDA. Exit status: 0; 1 a CUDA or cuBLAS error or a wrong
 * result; 2 bad arguments; 3 no CUDA device (the reason on stderr); 4 no usable libcublas. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rng.h"
#include "runner/cuda_internal.h"

#define MAX_SIZES      8
#define CHECKED        64
#define CHECK_REL      1e-4 /* of sum |a_k b_k|: loose for fp32 sums, far below a layout error */
#define EXIT_FAILED    1
#define EXIT_USAGE     2
#define EXIT_NO_DEVICE 3
#define EXIT_NO_CUBLAS 4

/* cuBLAS's C ABI as cublas_api.h declares it (enums are ints, the handle an opaque pointer). */
typedef void *cublas_handle;
enum { CUBLAS_OK = 0, CUBLAS_OP_N = 0, CUBLAS_DEFAULT_MATH = 0 };

typedef struct cublas {
    void *lib;
    char path[64];
    int (*create)(cublas_handle *h);
    int (*destroy)(cublas_handle h);
    int (*get_version)(cublas_handle h, int *version);
    int (*set_math_mode)(cublas_handle h, int mode);
    int (*sgemm)(cublas_handle h, int transa, int transb, int m, int n, int k, const float *alpha,
                 const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                 int ldc);
} cublas;

typedef struct options {
    int device;
    long long sizes[MAX_SIZES];
    int n_sizes;
    int min_repeats, max_repeats;
    double min_seconds, max_seconds;
} options;

/* dlsym into a function pointer without the object/function pointer cast warning. */
static int sym(void *lib, const char *name, void *slot)
{
    void *p = dlsym(lib, name);
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p);
    return 0;
}

static int cublas_load(cublas *c, char *why, size_t cap)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                        "/usr/local/cuda/lib64/libcublas.so"};
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !c->lib; i++) {
        /* never unloaded: like the driver, cuBLAS does not survive dlclose */
        c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (c->lib)
            snprintf(c->path, sizeof c->path, "%s", names[i]);
    }
    if (!c->lib) {
        snprintf(why, cap,
                 "no cuBLAS (none of libcublas.so.13, libcublas.so.12, libcublas.so "
                 "could be opened)");
        return -1;
    }
    if (sym(c->lib, "cublasCreate_v2", &c->create) ||
        sym(c->lib, "cublasDestroy_v2", &c->destroy) ||
        sym(c->lib, "cublasGetVersion_v2", &c->get_version) ||
        sym(c->lib, "cublasSetMathMode", &c->set_math_mode) ||
        sym(c->lib, "cublasSgemm_v2", &c->sgemm)) {
        snprintf(why, cap, "%s lacks a cuBLAS v2 entry point (%s)", c->path, dlerror());
        return -1;
    }
    return 0;
}

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int parse_sizes(const char *s, options *o)
{
    char buf[256], *p = buf;
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf)
        return -1;
    o->n_sizes = 0;
    while (*p) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (o->n_sizes == MAX_SIZES || parse_long(p, 1, 16384, &o->sizes[o->n_sizes]) < 0)
            return -1;
        o->n_sizes++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return o->n_sizes > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.device = 0,
                   .sizes = {1024, 2048, 4096},
                   .n_sizes = 3,
                   .min_repeats = 5,
                   .max_repeats = 100,
                   .min_seconds = 0.2,
                   .max_seconds = 3.0};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        int bad = 0;
        if (!v)
            bad = 1;
        else if (strcmp(a, "--sizes") == 0)
            bad = parse_sizes(v, o) < 0;
        else if (strcmp(a, "--min-seconds") == 0)
            bad = parse_double(v, 0.0, 600.0, &o->min_seconds) < 0;
        else if (strcmp(a, "--max-seconds") == 0)
            bad = parse_double(v, 0.001, 600.0, &o->max_seconds) < 0;
        else if (strcmp(a, "--device") == 0 && parse_long(v, 0, 1023, &n) == 0)
            o->device = (int)n;
        else if (strcmp(a, "--min-repeats") == 0 && parse_long(v, 1, 100000, &n) == 0)
            o->min_repeats = (int)n;
        else if (strcmp(a, "--max-repeats") == 0 && parse_long(v, 1, 100000, &n) == 0)
            o->max_repeats = (int)n;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "gpu_gemm_cublas: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
            return -1;
        }
    }
    if (o->max_repeats < o->min_repeats) {
        fprintf(stderr, "gpu_gemm_cublas: --max-repeats is below --min-repeats\n");
        return -1;
    }
    return 0;
}

/* What one size needs on the device and the host. */
typedef struct bench {
    cuda_driver *drv;
    cublas *cb;
    cublas_handle h;
    long long n;
    float *a, *b, *c; /* host: inputs, and the checked output */
    cuda_cu_deviceptr da, db, dc;
} bench;

static int cu_failed(const bench *x, const char *what, cuda_cu_result r)
{
    char name[64];
    fprintf(stderr, "gpu_gemm_cublas: %s failed: %s\n", what,
            cuda_driver_error_name(x->drv, r, name, sizeof name));
    return -1;
}

/* Row-major C = A·B is column-major C^T = B^T·A^T: cuBLAS gets B first. */
static int sgemm(const bench *x)
{
    const float one = 1.0f, zero = 0.0f;
    int n = (int)x->n;
    int s =
        x->cb->sgemm(x->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)(uintptr_t)x->db,
                     n, (const float *)(uintptr_t)x->da, n, &zero, (float *)(uintptr_t)x->dc, n);
    if (s != CUBLAS_OK)
        fprintf(stderr, "gpu_gemm_cublas: cublasSgemm_v2 failed: status %d\n", s);
    return s == CUBLAS_OK ? 0 : -1;
}

/* The worst |c - r| / (sum |a_k b_k|) over CHECKED sampled elements (r in double), or -1. */
static double check(bench *x, kt_rng *rng)
{
    size_t bytes = (size_t)(x->n * x->n) * sizeof(float);
    cuda_cu_result r;
    if (sgemm(x) < 0)
        return -1;
    if ((r = x->drv->ctx_synchronize()) != CUDA_CU_SUCCESS)
        return cu_failed(x, "the checked sgemm", r);
    if ((r = x->drv->memcpy_dtoh(x->c, x->dc, bytes)) != CUDA_CU_SUCCESS)
        return cu_failed(x, "cuMemcpyDtoH", r);
    double worst = 0.0;
    for (int s = 0; s < CHECKED; s++) {
        long long i = (long long)kt_rng_below(rng, (uint64_t)x->n);
        long long j = (long long)kt_rng_below(rng, (uint64_t)x->n);
        double ref = 0.0, mag = 0.0;
        for (long long k = 0; k < x->n; k++) {
            double p = (double)x->a[i * x->n + k] * (double)x->b[k * x->n + j];
            ref += p;
            mag += fabs(p);
        }
        double err = fabs((double)x->c[i * x->n + j] - ref) / (mag > 0 ? mag : 1.0);
        if (!(err <= worst)) /* NaN propagates as the worst */
            worst = err;
    }
    return worst;
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

/* Times sgemm; prints the size's line. Returns 0, or -1 on an error. */
static int time_size(bench *x, const options *o, kt_rng *rng)
{
    int rc = -1, n = 0;
    cuda_cu_event start = NULL, stop = NULL;
    cuda_cu_result r;
    double *times = malloc((size_t)o->max_repeats * sizeof *times), total_s = 0.0;
    if (!times)
        goto out;
    double worst = check(x, rng);
    if (worst < 0)
        goto out;
    if (!(worst <= CHECK_REL)) {
        fprintf(stderr,
                "gpu_gemm_cublas: %lld^3: cuBLAS's result differs from the reference "
                "(relative error %g > %g)\n",
                x->n, worst, CHECK_REL);
        goto out;
    }
    if ((r = x->drv->event_create(&start, 0)) != CUDA_CU_SUCCESS ||
        (r = x->drv->event_create(&stop, 0)) != CUDA_CU_SUCCESS) {
        cu_failed(x, "cuEventCreate", r);
        goto out;
    }
    if (sgemm(x) < 0) /* warm-up */
        goto out;
    if ((r = x->drv->ctx_synchronize()) != CUDA_CU_SUCCESS) {
        cu_failed(x, "the warm-up sgemm", r);
        goto out;
    }
    double wall0 = kt_clock_ms();
    while (n < o->max_repeats) {
        float ms = 0.0f;
        if ((r = x->drv->event_record(start, NULL)) != CUDA_CU_SUCCESS) {
            cu_failed(x, "cuEventRecord", r);
            goto out;
        }
        if (sgemm(x) < 0)
            goto out;
        if ((r = x->drv->event_record(stop, NULL)) != CUDA_CU_SUCCESS ||
            (r = x->drv->event_synchronize(stop)) != CUDA_CU_SUCCESS ||
            (r = x->drv->event_elapsed_time(&ms, start, stop)) != CUDA_CU_SUCCESS) {
            cu_failed(x, "timing an sgemm", r);
            goto out;
        }
        times[n++] = ms;
        total_s += ms * 1e-3;
        double wall_s = (kt_clock_ms() - wall0) * 1e-3;
        if (n >= o->min_repeats && total_s >= o->min_seconds)
            break;
        if (total_s >= o->max_seconds || wall_s >= o->max_seconds)
            break;
    }
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    double flops = 2.0 * (double)x->n * (double)x->n * (double)x->n;
    printf("{\"M\": %lld, \"N\": %lld, \"K\": %lld, \"time_ms\": %.6f, \"min_ms\": %.6f, "
           "\"repeats\": %d, \"gflops\": %.1f, \"checked\": %d, \"max_rel_err\": %.3g}\n",
           x->n, x->n, x->n, median, times[0], n, flops / (median * 1e6), CHECKED, worst);
    fflush(stdout);
    rc = 0;
out:
    if (start)
        x->drv->event_destroy(start);
    if (stop)
        x->drv->event_destroy(stop);
    free(times);
    return rc;
}

static int run_size(bench *x, const options *o, long long n, kt_rng *rng)
{
    size_t elems = (size_t)(n * n), bytes = elems * sizeof(float);
    cuda_cu_result r;
    int rc = -1;
    x->n = n;
    x->a = malloc(bytes);
    x->b = malloc(bytes);
    x->c = malloc(bytes);
    x->da = x->db = x->dc = 0;
    if (!x->a || !x->b || !x->c) {
        fprintf(stderr, "gpu_gemm_cublas: out of host memory for %lld^3\n", n);
        goto out;
    }
    for (size_t i = 0; i < elems; i++) {
        x->a[i] = (float)(2.0 * kt_rng_uniform(rng) - 1.0);
        x->b[i] = (float)(2.0 * kt_rng_uniform(rng) - 1.0);
    }
    if ((r = x->drv->mem_alloc(&x->da, bytes)) != CUDA_CU_SUCCESS ||
        (r = x->drv->mem_alloc(&x->db, bytes)) != CUDA_CU_SUCCESS ||
        (r = x->drv->mem_alloc(&x->dc, bytes)) != CUDA_CU_SUCCESS) {
        cu_failed(x, "cuMemAlloc", r);
        goto out;
    }
    if ((r = x->drv->memcpy_htod(x->da, x->a, bytes)) != CUDA_CU_SUCCESS ||
        (r = x->drv->memcpy_htod(x->db, x->b, bytes)) != CUDA_CU_SUCCESS) {
        cu_failed(x, "cuMemcpyHtoD", r);
        goto out;
    }
    rc = time_size(x, o, rng);
out:
    if (x->da)
        x->drv->mem_free(x->da);
    if (x->db)
        x->drv->mem_free(x->db);
    if (x->dc)
        x->drv->mem_free(x->dc);
    free(x->a);
    free(x->b);
    free(x->c);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    cublas cb;
    cuda_driver drv;
    char why[CUDA_REASON_MAX], name[256] = "";
    cuda_cu_device dev = 0;
    cuda_cu_context ctx = NULL;
    cuda_cu_result r;
    int count = 0, rc = EXIT_FAILED;

    if (parse_args(argc, argv, &o) < 0)
        return EXIT_USAGE;
    /* cuBLAS first: a machine without it says so even without a device */
    if (cublas_load(&cb, why, sizeof why) < 0) {
        fprintf(stderr, "gpu_gemm_cublas: %s\n", why);
        return EXIT_NO_CUBLAS;
    }
    if (cuda_driver_load(&drv, why, sizeof why) != 0) {
        fprintf(stderr, "gpu_gemm_cublas: no CUDA device (%s)\n", why);
        return EXIT_NO_DEVICE;
    }
    bench x = {.drv = &drv, .cb = &cb};
    if ((r = drv.init(0)) != CUDA_CU_SUCCESS ||
        (r = drv.device_get_count(&count)) != CUDA_CU_SUCCESS || o.device >= count) {
        fprintf(stderr, "gpu_gemm_cublas: no CUDA device %d (%s, %d found)\n", o.device,
                r != CUDA_CU_SUCCESS ? cuda_driver_error_name(&drv, r, why, sizeof why) : "cuInit",
                count);
        return EXIT_NO_DEVICE;
    }
    /* the primary context, which cuBLAS (through the runtime) uses as well */
    if ((r = drv.device_get(&dev, o.device)) != CUDA_CU_SUCCESS ||
        (r = drv.primary_ctx_retain(&ctx, dev)) != CUDA_CU_SUCCESS) {
        cu_failed(&x, "opening the device", r);
        return EXIT_FAILED;
    }
    if ((r = drv.ctx_set_current(ctx)) != CUDA_CU_SUCCESS) {
        cu_failed(&x, "cuCtxSetCurrent", r);
        goto out;
    }
    if (drv.device_get_name(name, (int)sizeof name, dev) != CUDA_CU_SUCCESS)
        snprintf(name, sizeof name, "CUDA device %d", o.device);
    name[sizeof name - 1] = '\0';
    int s = cb.create(&x.h), version = 0;
    if (s != CUBLAS_OK) {
        fprintf(stderr, "gpu_gemm_cublas: cublasCreate_v2 failed: status %d\n", s);
        goto out;
    }
    if ((s = cb.set_math_mode(x.h, CUBLAS_DEFAULT_MATH)) != CUBLAS_OK ||
        (s = cb.get_version(x.h, &version)) != CUBLAS_OK) {
        fprintf(stderr, "gpu_gemm_cublas: cuBLAS set-up failed: status %d\n", s);
        goto out;
    }
    json_t *head =
        json_pack("{s:s, s:i, s:s, s:i, s:s}", "device", name, "ordinal", o.device, "library",
                  cb.path, "cublas_version", version, "math", "CUBLAS_DEFAULT_MATH");
    char *text = head ? json_dumps(head, JSON_COMPACT) : NULL;
    if (!text)
        goto out;
    printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(head);
    kt_rng rng;
    kt_rng_seed(&rng, 20250101u);
    rc = 0;
    for (int i = 0; i < o.n_sizes && rc == 0; i++)
        if (run_size(&x, &o, o.sizes[i], &rng) < 0)
            rc = EXIT_FAILED;
out:
    if (x.h)
        cb.destroy(x.h);
    drv.ctx_synchronize();
    drv.primary_ctx_release(dev);
    return rc;
}
