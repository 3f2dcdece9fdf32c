/* Tests of the runner's CUDA half. Everywhere: without a driver, cuda_device_open returns NULL with
 * a reason naming libcuda.so.1, and the runner process answers a probe for cuda:0 with ok false and
 * that reason. Where a CUDA device exists: probe, then measure the scale test kernel and gemm at
 * small sizes end to end (verified against the C reference and OpenBLAS), a cached second build, a
 * launch beyond the device's limits (invalid), a kernel that leaves outputs unwritten
 * (wrong_result) and a configuration that does not compile (compile_error); otherwise those skip
 * with the reason (KT_SKIP). KTUNE_REQUIRE_CUDA (make gpu-check) turns a missing driver or device
 * into a failure, KTUNE_REQUIRE_CUDA or KTUNE_REQUIRE_NVRTC a missing NVRTC on a device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/cuda.h"
#include "cuda_typed_request.h"
#include "skip_test_util.h"

#define REASON_CAP 512

static int driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void open_without_a_device_says_why(void **state)
{
    (void)state;
    char reason[REASON_CAP] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (d) {
        printf("CUDA device 0 present: nothing to check here\n");
        cuda_device_close(d);
        return;
    }
    printf("no CUDA device (%s)\n", reason);
    assert_true(reason[0] != '\0');
    if (!driver_present())
        assert_non_null(strstr(reason, "libcuda.so.1"));
    /* the reason was checked; where a device is required, its absence still fails */
    if (kt_skip_required("KTUNE_REQUIRE_CUDA"))
        fail_msg("no CUDA device (%s) and KTUNE_REQUIRE_CUDA is set", reason);
}

static void open_bad_ordinal_fails(void **state)
{
    (void)state;
    char reason[REASON_CAP] = "";
    assert_null(cuda_device_open(4096, reason, sizeof reason));
    assert_true(reason[0] != '\0');
    if (driver_present() && !strstr(reason, "cuInit"))
        assert_non_null(strstr(reason, "no CUDA device 4096"));
}

/* Runs the runner with requests on stdin and returns its stdout (malloc'd). */
static char *run_runner(const char *requests)
{
#ifdef KT_RUNNER_PATH
    char in_path[] = "/tmp/ktune-cuda-test-in-XXXXXX";
    char cache[] = "/tmp/ktune-cuda-test-cache-XXXXXX";
    int out[2];
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, requests, strlen(requests)), (int)strlen(requests));
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    assert_non_null(mkdtemp(cache));
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        execl(KT_RUNNER_PATH, "ktune-runner", "--device", "cuda:0", "--cache-dir", cache,
              (char *)NULL);
        _exit(127);
    }
    close(fd);
    close(out[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    ssize_t n;
    while ((n = read(out[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    close(out[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    unlink(in_path);
    rmdir(cache);
    return buf;
#else
    (void)requests;
    return NULL;
#endif
}

static void runner_process_reports_cuda_state(void **state)
{
    (void)state;
    char *out = run_runner("{\"id\": 1, \"op\": \"probe\"}\n");
    if (!out) {
        if (kt_skip_required("KTUNE_REQUIRE_CUDA"))
            fail_msg("ktune-runner is not built and KTUNE_REQUIRE_CUDA is set");
        KT_SKIP("ktune-runner is not built");
    }
    json_error_t e;
    json_t *reply = json_loads(out, JSON_DISABLE_EOF_CHECK, &e);
    if (!reply)
        fail_msg("runner reply is not JSON: %s (%s)", out, e.text);
    assert_int_equal(json_integer_value(json_object_get(reply, "id")), 1);
    /* the runner must see what this process sees */
    char reason[REASON_CAP] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (d) {
        cuda_device_close(d);
        printf("runner probe with a device: %s", out);
        if (!json_is_true(json_object_get(reply, "ok")))
            fail_msg("CUDA device 0 opens here but the runner's probe fails: %s", out);
        json_t *dev = json_object_get(reply, "device");
        assert_non_null(json_string_value(json_object_get(dev, "name")));
        assert_true(json_integer_value(json_object_get(dev, "compute_capability")) > 0);
    } else {
        printf("runner probe without a device: %s", out);
        assert_true(json_is_false(json_object_get(reply, "ok")));
        const char *why = json_string_value(json_object_get(reply, "reason"));
        assert_non_null(why);
        if (!driver_present())
            assert_non_null(strstr(why, "libcuda.so.1"));
    }
    json_decref(reply);
    free(out);
}

/* ---- with a device ---- */

typedef struct gpu {
    cuda_device *d;
    char reason[REASON_CAP]; /* why d is NULL */
    char nvrtc[REASON_CAP];  /* why NVRTC is not available on d; empty when it is */
    char cache[64];
} gpu;

static int gpu_setup(void **state)
{
    gpu *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->d = cuda_device_open(0, g->reason, sizeof g->reason);
    if (g->d) {
        json_t *dev = cuda_device_probe(g->d);
        const char *why = json_string_value(json_object_get(dev, "nvrtc_error"));
        if (why)
            snprintf(g->nvrtc, sizeof g->nvrtc, "%s", why);
        json_decref(dev);
    }
    snprintf(g->cache, sizeof g->cache, "/tmp/ktune-cuda-cache-XXXXXX");
    if (!mkdtemp(g->cache)) {
        free(g);
        return -1;
    }
    *state = g;
    return 0;
}

static int gpu_teardown(void **state)
{
    gpu *g = *state;
    char cmd[128];
    if (g->d)
        cuda_device_close(g->d);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g->cache);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g->cache);
    free(g);
    return 0;
}

/* In a case (KT_SKIP names it): without a device, a failure under KTUNE_REQUIRE_CUDA (make
 * gpu-check), else a skip with the reason. */
#define NEED_GPU(g)                                                                                \
    do {                                                                                           \
        if (!(g)->d) {                                                                             \
            if (kt_skip_required("KTUNE_REQUIRE_CUDA"))                                            \
                fail_msg("no CUDA device (%s) and KTUNE_REQUIRE_CUDA is set", (g)->reason);        \
            KT_SKIP("no CUDA device (%s)", (g)->reason);                                           \
        }                                                                                          \
    } while (0)

/* A device and NVRTC (every measure compiles): a missing NVRTC fails under either requirement. */
#define NEED_NVRTC(g)                                                                              \
    do {                                                                                           \
        NEED_GPU(g);                                                                               \
        if ((g)->nvrtc[0]) {                                                                       \
            if (kt_skip_required("KTUNE_REQUIRE_NVRTC") || kt_skip_required("KTUNE_REQUIRE_CUDA")) \
                fail_msg("NVRTC is not available (%s) and KTUNE_REQUIRE_NVRTC or "                 \
                         "KTUNE_REQUIRE_CUDA is set",                                              \
                         (g)->nvrtc);                                                              \
            KT_SKIP("NVRTC is not available (%s)", (g)->nvrtc);                                    \
        }                                                                                          \
    } while (0)

static json_t *measure(gpu *g, json_t *req, const char *want_status)
{
    json_t *reply = cuda_device_measure(g->d, req, g->cache);
    assert_non_null(reply);
    char *text = json_dumps(reply, JSON_COMPACT);
    printf("%s\n", text);
    const char *status = json_string_value(json_object_get(reply, "status"));
    if (!status || strcmp(status, want_status) != 0)
        fail_msg("expected status %s, got %s", want_status, text);
    free(text);
    json_decref(req);
    return reply;
}

/* y = 2x over n elements with BLOCK threads and ITEMS per thread; grid_x 0 computes the right one.
 */
static json_t *scale_request(long long n, int block, int items, long long grid_x)
{
    long long per = (long long)block * items;
    return json_pack("{s:i, s:s, s:s, s:s, s:s, s:{s:i, s:i}, s:[I], s:[s], "
                     "s:[{s:s, s:I, s:s}, {s:s, s:I, s:s}], s:{s:s, s:s}, s:{s:f, s:f}, s:f, "
                     "s:[i, i, i], s:[I, i, i], s:i, s:i, s:i, s:f, s:f}",
                     "id", 1, "op", "measure", "kernel", "scale", "source",
                     KT_SOURCE_DIR "/tests/kernels/scale/cuda.cu", "entry", "scale_kernel",
                     "defines", "BLOCK", block, "ITEMS", items, "problem", (json_int_t)n,
                     "problem_names", "n", "buffers", "name", "x", "elements", (json_int_t)n,
                     "role", "input", "name", "y", "elements", (json_int_t)n, "role", "output",
                     "reference", "kind", "c", "source",
                     KT_SOURCE_DIR "/tests/kernels/scale/reference.c", "tolerance", "rtol", 1e-6,
                     "atol", 1e-7, "flops", (double)n, "block", block, 1, 1, "grid",
                     (json_int_t)(grid_x ? grid_x : (n + per - 1) / per), 1, 1, "shared_bytes", 0,
                     "min_repeats", 3, "max_repeats", 20, "min_seconds", 0.01, "max_seconds", 1.0);
}

static json_t *gemm_request(long long M, long long N, long long K, int bm, int bn, int bk, int tm,
                            int tn, int vec, int pad, int dbuf)
{
    long long shared = 4LL * (1 + dbuf) * bk * (bm + bn + 2 * pad);
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}, s:[I, I, I], "
        "s:[s, s, s], s:[{s:s, s:I, s:s}, {s:s, s:I, s:s}, {s:s, s:I, s:s}], s:{s:s}, "
        "s:{s:f, s:f}, s:f, s:[i, i, i], s:[I, I, i], s:I, s:i, s:i, s:f, s:f}",
        "op", "measure", "kernel", "gemm", "source", KT_SOURCE_DIR "/kernels/gemm/cuda.cu", "entry",
        "gemm_kernel", "defines", "BM", bm, "BN", bn, "BK", bk, "TM", tm, "TN", tn, "VEC", vec,
        "PAD", pad, "DBUF", dbuf, "problem", (json_int_t)M, (json_int_t)N, (json_int_t)K,
        "problem_names", "M", "N", "K", "buffers", "name", "A", "elements", (json_int_t)(M * K),
        "role", "input", "name", "B", "elements", (json_int_t)(K * N), "role", "input", "name", "C",
        "elements", (json_int_t)(M * N), "role", "output", "reference", "kind", "openblas_sgemm",
        "tolerance", "rtol", 1e-3, "atol", 1e-4, "flops", 2.0 * M * N * K, "block", bn / tn,
        bm / tm, 1, "grid", (json_int_t)((N + bn - 1) / bn), (json_int_t)((M + bm - 1) / bm), 1,
        "shared_bytes", (json_int_t)shared, "min_repeats", 3, "max_repeats", 20, "min_seconds",
        0.01, "max_seconds", 1.0);
}

static void probe_has_the_limits(void **state)
{
    gpu *g = *state;
    NEED_GPU(g);
    json_t *dev = cuda_device_probe(g->d);
    assert_non_null(dev);
    char *text = json_dumps(dev, JSON_COMPACT);
    printf("%s\n", text);
    free(text);
    static const char *const fields[] = {"compute_capability",
                                         "sms",
                                         "memory_bytes",
                                         "max_threads_per_block",
                                         "max_shared_memory_per_block",
                                         "max_registers_per_block",
                                         "warp_size",
                                         "driver_version"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        assert_true(json_integer_value(json_object_get(dev, fields[i])) > 0);
    assert_non_null(json_string_value(json_object_get(dev, "name")));
    /* The toolchain results are keyed by: this driver's and NVRTC's versions. */
    char want[96];
    cuda_toolchain_text((int)json_integer_value(json_object_get(dev, "driver_version")),
                        json_string_value(json_object_get(dev, "nvrtc_version")), want,
                        sizeof want);
    assert_string_equal(json_string_value(json_object_get(dev, "toolchain")), want);
    json_decref(dev);
}

/* The toolchain text of driver and NVRTC versions; no device needed. */
static void toolchain_names_driver_and_nvrtc(void **state)
{
    (void)state;
    char out[96];
    cuda_toolchain_text(13000, "13.0", out, sizeof out);
    assert_string_equal(out, "cuda driver 13.0, nvrtc 13.0");
    cuda_toolchain_text(12040, "12.4", out, sizeof out);
    assert_string_equal(out, "cuda driver 12.4, nvrtc 12.4");
    cuda_toolchain_text(12020, NULL, out, sizeof out);
    assert_string_equal(out, "cuda driver 12.2, no nvrtc");
    cuda_toolchain_text(0, "11.8", out, sizeof out);
    assert_string_equal(out, "cuda driver unknown, nvrtc 11.8");
    char tiny[12];
    cuda_toolchain_text(13000, "13.0", tiny, sizeof tiny);
    assert_string_equal(tiny, "cuda driver");
}

static void scale_is_ok_then_cached(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    json_t *r = measure(g, scale_request(4099, 256, 2, 0), "ok");
    assert_true(json_real_value(json_object_get(r, "time_ms")) > 0);
    assert_true(json_integer_value(json_object_get(r, "repeats")) >= 3);
    json_t *ex = json_object_get(r, "extras");
    assert_true(json_is_false(json_object_get(ex, "cached_binary")));
    assert_true(json_number_value(json_object_get(ex, "max_abs_err")) == 0.0);
    json_decref(r);
    r = measure(g, scale_request(4099, 256, 2, 0), "ok");
    assert_true(json_is_true(json_object_get(json_object_get(r, "extras"), "cached_binary")));
    json_decref(r);
    /* issue 32, early_stop: a threshold below every launch stops after "after" of them */
    json_t *q = scale_request(4099, 256, 2, 0);
    json_object_set_new(q, "early_stop", json_pack("{s:i, s:f}", "after", 3, "above_ms", 1e-9));
    r = measure(g, q, "ok");
    assert_int_equal(json_integer_value(json_object_get(r, "repeats")), 3);
    assert_true(json_is_true(json_object_get(json_object_get(r, "extras"), "early_stopped")));
    json_decref(r);
}

static void gemm_small_is_verified(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    /* edges on every side (scalar loads), then aligned sizes (float4 loads), both stagings */
    json_decref(measure(g, gemm_request(100, 70, 50, 64, 64, 16, 4, 4, 4, 1, 1), "ok"));
    json_decref(measure(g, gemm_request(128, 128, 128, 64, 64, 16, 4, 4, 4, 1, 1), "ok"));
    json_decref(measure(g, gemm_request(128, 128, 128, 32, 64, 8, 2, 4, 2, 0, 0), "ok"));
    json_decref(measure(g, gemm_request(33, 65, 17, 128, 128, 8, 8, 8, 4, 4, 1), "ok"));
}

/* tests/kernels/typed_cuda (issue 27): f64 and i32 buffers with their inits, a float problem
 * argument, f32 and i32 scalars (runner/cuda_args.h) verified against the C reference; the same
 * problem again with another a (a new reference), and an n that is not a multiple of BLOCK. */
static void typed_kernel_is_verified(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    json_t *r = measure(g, typed_cuda_request(4096, 1.5, 128), "ok");
    json_t *ex = json_object_get(r, "extras");
    assert_true(json_number_value(json_object_get(ex, "max_abs_err")) <= 1e-12 * 64);
    json_decref(r);
    json_decref(measure(g, typed_cuda_request(4096, -2.25, 64), "ok"));
    json_decref(measure(g, typed_cuda_request(1001, 0.75, 256), "ok"));
}

static void impossible_launch_is_invalid(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    json_t *req = scale_request(4096, 256, 1, 0);
    json_array_set_new(json_object_get(req, "block"), 0, json_integer(4096));
    json_decref(measure(g, req, "invalid"));
    req = scale_request(4096, 256, 1, 0);
    json_object_set_new(req, "shared_bytes", json_integer(1LL << 30));
    json_decref(measure(g, req, "invalid"));
}

static void unwritten_outputs_are_wrong(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    json_t *r = measure(g, scale_request(4096, 256, 1, 1),
                        "wrong_result"); /* one block: y[256..] stays NaN */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "extras"), "first_bad_index")), 256);
    json_decref(r);
}

static void bad_configuration_is_a_compile_error(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    /* TM = 3 does not divide BM: the kernel's static_assert fires */
    json_t *r = measure(g, gemm_request(64, 64, 64, 64, 64, 16, 3, 4, 4, 1, 1), "compile_error");
    const char *log = json_string_value(json_object_get(json_object_get(r, "extras"), "log"));
    assert_non_null(log);
    assert_non_null(strstr(log, "multiple"));
    json_decref(r);
}

static void slow_compile_is_a_timeout(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    /* a configuration no other test builds (so not cached), with a 1 ms compile budget */
    json_t *req = gemm_request(64, 64, 64, 32, 32, 8, 2, 2, 1, 4, 0);
    json_object_set_new(req, "compile_timeout_s", json_real(0.001));
    json_decref(measure(g, req, "timeout"));
}

/* Last: a kernel that stores through a wild pointer poisons the context for good. */
static void illegal_address_loses_the_context(void **state)
{
    gpu *g = *state;
    NEED_NVRTC(g);
    static const char *const src =
        "extern \"C\" __global__ void crash_kernel(float *x, float *y, long long n)\n"
        "{\n"
        "    float *wild = reinterpret_cast<float *>(16);\n"
        "    wild[threadIdx.x] = x[0] + (float)n;\n"
        "    y[0] = 0.0f;\n"
        "}\n";
    char path[] = "/tmp/ktune-cuda-crash-XXXXXX.cu";
    int fd = mkstemps(path, 3);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, src, strlen(src)), (int)strlen(src));
    close(fd);
    json_t *req = scale_request(4096, 256, 1, 0);
    json_object_set_new(req, "source", json_string(path));
    json_object_set_new(req, "entry", json_string("crash_kernel"));
    json_t *r = measure(g, req, "runtime_error");
    json_t *ex = json_object_get(r, "extras");
    assert_true(json_is_true(json_object_get(ex, "context_lost")));
    assert_string_equal(json_string_value(json_object_get(ex, "cuda_error")),
                        "CUDA_ERROR_ILLEGAL_ADDRESS");
    json_decref(r);
    /* every later measure says so, without touching the device */
    r = measure(g, scale_request(4096, 256, 1, 0), "runtime_error");
    assert_true(json_is_true(json_object_get(json_object_get(r, "extras"), "context_lost")));
    json_decref(r);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_without_a_device_says_why),
        cmocka_unit_test(open_bad_ordinal_fails),
        cmocka_unit_test(runner_process_reports_cuda_state),
        cmocka_unit_test(probe_has_the_limits),
        cmocka_unit_test(toolchain_names_driver_and_nvrtc),
        cmocka_unit_test(scale_is_ok_then_cached),
        cmocka_unit_test(gemm_small_is_verified),
        cmocka_unit_test(typed_kernel_is_verified),
        cmocka_unit_test(impossible_launch_is_invalid),
        cmocka_unit_test(unwritten_outputs_are_wrong),
        cmocka_unit_test(bad_configuration_is_a_compile_error),
        cmocka_unit_test(slow_compile_is_a_timeout),
        cmocka_unit_test(illegal_address_loses_the_context),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
