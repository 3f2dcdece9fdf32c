/* runner/cuda_nvrtc — NVRTC opened with dlopen (libnvrtc.so.13, libnvrtc.so, then the toolkit's
 * copy), compilation of a kernel source with its configuration as -D defines into PTX or CUBIN, and
 * cuda_compile_ptx, the compile-only entry point that needs no driver and no device. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/file.h"

#include "runner/cuda_internal.h"

enum {
    CUDA_NVRTC_SUCCESS = 0,
    CUDA_NVRTC_ERROR_INVALID_OPTION = 5,
    CUDA_NVRTC_ERROR_COMPILATION = 6,
    CUDA_NVRTC_ERROR_CANCELLED = 16,
};

static const char *const cuda_nvrtc_candidates[] = {
    "libnvrtc.so.13",
    "libnvrtc.so",
    "/usr/local/cuda/lib64/libnvrtc.so",
};

static int cuda_nvrtc_sym(void *lib, const char *name, void *slot)
{
    void *p = dlsym(lib, name);
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p);
    return 0;
}

int cuda_nvrtc_load(cuda_nvrtc *n, char *reason, size_t reason_cap)
{
    int rc = -1;
    memset(n, 0, sizeof *n);
    for (size_t i = 0; i < sizeof cuda_nvrtc_candidates / sizeof cuda_nvrtc_candidates[0]; i++) {
        n->lib = dlopen(cuda_nvrtc_candidates[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (n->lib)
            break;
    }
    if (!n->lib) {
        snprintf(reason, reason_cap,
                 "NVRTC not available (none of libnvrtc.so.13, libnvrtc.so, "
                 "/usr/local/cuda/lib64/libnvrtc.so could be opened)");
        goto out;
    }
    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
        {"nvrtcGetErrorString", offsetof(cuda_nvrtc, get_error_string)},
        {"nvrtcVersion", offsetof(cuda_nvrtc, version)},
        {"nvrtcGetNumSupportedArchs", offsetof(cuda_nvrtc, get_num_supported_archs)},
        {"nvrtcGetSupportedArchs", offsetof(cuda_nvrtc, get_supported_archs)},
        {"nvrtcCreateProgram", offsetof(cuda_nvrtc, create_program)},
        {"nvrtcDestroyProgram", offsetof(cuda_nvrtc, destroy_program)},
        {"nvrtcCompileProgram", offsetof(cuda_nvrtc, compile_program)},
        {"nvrtcGetPTXSize", offsetof(cuda_nvrtc, get_ptx_size)},
        {"nvrtcGetPTX", offsetof(cuda_nvrtc, get_ptx)},
        {"nvrtcGetCUBINSize", offsetof(cuda_nvrtc, get_cubin_size)},
        {"nvrtcGetCUBIN", offsetof(cuda_nvrtc, get_cubin)},
        {"nvrtcGetProgramLogSize", offsetof(cuda_nvrtc, get_program_log_size)},
        {"nvrtcGetProgramLog", offsetof(cuda_nvrtc, get_program_log)},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (cuda_nvrtc_sym(n->lib, syms[i].name, (char *)n + syms[i].offset) != 0) {
            snprintf(reason, reason_cap, "NVRTC not usable (it lacks %s)", syms[i].name);
            goto out;
        }
    }
    /* Optional (NVRTC 12.8 and later): lets a compile be cancelled at its deadline. */
    if (cuda_nvrtc_sym(n->lib, "nvrtcSetFlowCallback", &n->set_flow_callback) != 0)
        n->set_flow_callback = NULL;
    if (n->version(&n->major, &n->minor) != CUDA_NVRTC_SUCCESS) {
        snprintf(reason, reason_cap, "NVRTC not usable (nvrtcVersion failed)");
        goto out;
    }
    int count = 0;
    if (n->get_num_supported_archs(&count) != CUDA_NVRTC_SUCCESS || count < 1 ||
        count > (int)(sizeof n->archs / sizeof n->archs[0]) ||
        n->get_supported_archs(n->archs) != CUDA_NVRTC_SUCCESS) {
        snprintf(reason, reason_cap, "NVRTC not usable (nvrtcGetSupportedArchs failed)");
        goto out;
    }
    n->n_archs = count;
    rc = 0;
out:
    if (rc != 0 && n->lib) {
        dlclose(n->lib);
        memset(n, 0, sizeof *n);
    }
    return rc;
}

void cuda_nvrtc_unload(cuda_nvrtc *n)
{
    if (n->lib)
        dlclose(n->lib);
    memset(n, 0, sizeof *n);
}

int cuda_nvrtc_pick_arch(const cuda_nvrtc *n, int cc, int *real)
{
    int best = -1;
    *real = 0;
    for (int i = 0; i < n->n_archs; i++) {
        if (n->archs[i] == cc) {
            *real = 1;
            return cc;
        }
        if (n->archs[i] < cc && n->archs[i] > best)
            best = n->archs[i];
    }
    return best;
}

void cuda_copy_tail(char *buf, size_t cap, const char *text, size_t len)
{
    static const char marker[] = "[...]\n";
    if (cap == 0)
        return;
    if (len < cap) {
        memcpy(buf, text, len);
        buf[len] = '\0';
        return;
    }
    if (cap <= sizeof marker) {
        memcpy(buf, text + len - (cap - 1), cap - 1);
        buf[cap - 1] = '\0';
        return;
    }
    size_t keep = cap - sizeof marker; /* bytes of text after the marker, leaving room for NUL */
    memcpy(buf, marker, sizeof marker - 1);
    memcpy(buf + sizeof marker - 1, text + len - keep, keep);
    buf[sizeof marker - 1 + keep] = '\0';
}

int cuda_read_file(const char *path, size_t max, char **out, size_t *len, char *reason,
                   size_t reason_cap)
{
    kt_error err;
    kt_error_clear(&err);
    *out = kt_file_read_all(path, max, len, &err);
    if (!*out) {
        snprintf(reason, reason_cap, "%s", err.message);
        return -1;
    }
    return 0;
}

static int cuda_is_identifier(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CUDA_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

/* A string value becomes a bare token: letters, digits and _ . + - only. */
static int cuda_is_token(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CUDA_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("_.+-", s[i])))
            return 0;
    return 1;
}

static int cuda_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cuda_defines_to_options(const json_t *defines, char **opts, int max, char *log, size_t log_cap)
{
    int n = 0, rc = -1;
    const char *name;
    json_t *value;
    char val[64];

    if (!defines || json_is_null(defines)) {
        rc = 0;
        goto out;
    }
    if (!json_is_object(defines)) {
        snprintf(log, log_cap, "defines must be an object of name -> value");
        goto out;
    }
    if ((int)json_object_size(defines) > max) {
        snprintf(log, log_cap, "more than %d defines", max);
        goto out;
    }
    json_object_foreach((json_t *)defines, name, value)
    {
        if (!cuda_is_identifier(name)) {
            snprintf(log, log_cap, "define name '%.64s' is not a C identifier", name);
            goto out;
        }
        if (json_is_integer(value)) {
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(value));
        } else if (json_is_real(value)) {
            snprintf(val, sizeof val, "%.17g", json_real_value(value));
        } else if (json_is_boolean(value)) {
            snprintf(val, sizeof val, "%d", json_is_true(value) ? 1 : 0);
        } else if (json_is_string(value) && cuda_is_token(json_string_value(value))) {
            snprintf(val, sizeof val, "%s", json_string_value(value));
        } else {
            snprintf(log, log_cap, "define %s has a value that is not a number or a plain token",
                     name);
            goto out;
        }
        size_t len = strlen(name) + strlen(val) + 4;
        opts[n] = malloc(len);
        if (!opts[n]) {
            snprintf(log, log_cap, "out of memory");
            goto out;
        }
        snprintf(opts[n], len, "-D%s=%s", name, val);
        n++;
    }
    /* Sorted, so that the options (and the cache key over them) do not depend on key order. */
    qsort(opts, (size_t)n, sizeof opts[0], cuda_str_cmp);
    rc = 0;
out:
    if (rc != 0) {
        cuda_free_options(opts, n);
        return -1;
    }
    return n;
}

void cuda_free_options(char **opts, int n)
{
    for (int i = 0; i < n; i++) {
        free(opts[i]);
        opts[i] = NULL;
    }
}

/* NVRTC's flow callback: 1 (cancel) once the monotonic clock passes the deadline; the clock never
 * goes back, so the answer stays 1 once given, as NVRTC requires. Thread-safe: reads only. */
static int cuda_nvrtc_deadline_cb(void *payload, void *reserved)
{
    (void)reserved;
    const double *deadline = payload;
    return kt_clock_s() > *deadline ? 1 : 0;
}

int cuda_nvrtc_compile(const cuda_nvrtc *n, const char *source, size_t len, const char *name,
                       const char *const *opts, int n_opts, int want_cubin, double timeout_s,
                       char **out, size_t *out_len, char *log, size_t log_cap)
{
    int rc = -3;
    cuda_nvrtc_program prog = NULL;
    cuda_nvrtc_result r;
    char *text = NULL, *bin = NULL;
    size_t size = 0;
    double start = kt_clock_s(), deadline = start + timeout_s;

    (void)len; /* the source is NUL-terminated; len bounds it for the caller */
    *out = NULL;
    *out_len = 0;
    if (log_cap)
        log[0] = '\0';
    r = n->create_program(&prog, source, name, 0, NULL, NULL);
    if (r != CUDA_NVRTC_SUCCESS) {
        prog = NULL;
        snprintf(log, log_cap, "nvrtcCreateProgram failed: %s", n->get_error_string(r));
        goto out;
    }
    if (timeout_s > 0 && n->set_flow_callback)
        n->set_flow_callback(prog, cuda_nvrtc_deadline_cb, &deadline);
    r = n->compile_program(prog, n_opts, opts);
    if (r == CUDA_NVRTC_ERROR_CANCELLED) {
        snprintf(log, log_cap, "compilation exceeded %g s and was cancelled", timeout_s);
        rc = -2;
        goto out;
    }
    if (r == CUDA_NVRTC_ERROR_COMPILATION || r == CUDA_NVRTC_ERROR_INVALID_OPTION) {
        if (n->get_program_log_size(prog, &size) == CUDA_NVRTC_SUCCESS && size > 0) {
            text = malloc(size + 1);
            if (text && n->get_program_log(prog, text) == CUDA_NVRTC_SUCCESS) {
                text[size] = '\0';
                cuda_copy_tail(log, log_cap, text, strlen(text));
            }
        }
        if (!log_cap || !log[0])
            snprintf(log, log_cap, "%s", n->get_error_string(r));
        rc = -1;
        goto out;
    }
    if (r != CUDA_NVRTC_SUCCESS) {
        snprintf(log, log_cap, "nvrtcCompileProgram failed: %s", n->get_error_string(r));
        goto out;
    }
    if (timeout_s > 0 && kt_clock_s() - start > timeout_s) {
        snprintf(log, log_cap, "compilation took longer than %g s", timeout_s);
        rc = -2;
        goto out;
    }
    r = want_cubin ? n->get_cubin_size(prog, &size) : n->get_ptx_size(prog, &size);
    if (r != CUDA_NVRTC_SUCCESS || size == 0) {
        snprintf(log, log_cap, "%s failed: %s",
                 want_cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize",
                 r != CUDA_NVRTC_SUCCESS ? n->get_error_string(r) : "empty result");
        goto out;
    }
    bin = malloc(size + 1);
    if (!bin) {
        snprintf(log, log_cap, "out of memory for the compiled kernel (%zu bytes)", size);
        goto out;
    }
    r = want_cubin ? n->get_cubin(prog, bin) : n->get_ptx(prog, bin);
    if (r != CUDA_NVRTC_SUCCESS) {
        snprintf(log, log_cap, "%s failed: %s", want_cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX",
                 n->get_error_string(r));
        goto out;
    }
    bin[size] = '\0';
    *out = bin;
    *out_len = size;
    bin = NULL;
    rc = 0;
out:
    free(text);
    free(bin);
    if (prog)
        n->destroy_program(&prog);
    return rc;
}

/* Compiles text (len bytes, NUL-terminated), named name, with defines for sm_<arch> (0: the newest
 * architecture nv supports) into PTX, nv loaded. Returns cuda_nvrtc_compile's codes (0, -1
 * compile error, -2 timeout, -3 NVRTC failure), with -1 also for bad defines; *arch_used the
 * architecture. */
static int nvrtc_compile_text(const cuda_nvrtc *nv, const char *name, const char *text, size_t len,
                              const json_t *defines, int arch, double timeout_s, int *arch_used,
                              char **ptx, char *log, size_t log_cap)
{
    int rc = -1, n_defs = 0;
    size_t ptx_len = 0;
    char *opts[CUDA_MAX_DEFINES + 2] = {0};
    char arch_opt[64];

    *ptx = NULL;
    if (arch == 0) {
        for (int i = 0; i < nv->n_archs; i++)
            arch = nv->archs[i] > arch ? nv->archs[i] : arch;
    }
    *arch_used = arch;
    if (arch < 10 || arch > 1000) {
        snprintf(log, log_cap, "architecture %d is not valid", arch);
        goto out;
    }
    n_defs = cuda_defines_to_options(defines, opts, CUDA_MAX_DEFINES, log, log_cap);
    if (n_defs < 0) {
        n_defs = 0;
        goto out;
    }
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=sm_%d", arch);
    const char *all[CUDA_MAX_DEFINES + 2];
    all[0] = arch_opt;
    all[1] = "-std=c++17";
    for (int i = 0; i < n_defs; i++)
        all[2 + i] = opts[i];
    rc = cuda_nvrtc_compile(nv, text, len, name, all, 2 + n_defs, 0, timeout_s, ptx, &ptx_len, log,
                            log_cap);
out:
    cuda_free_options(opts, n_defs);
    return rc;
}

int cuda_compile_ptx(const char *source_path, const json_t *defines, int arch, char **ptx,
                     char *log, size_t log_cap)
{
    int rc = -2, used = 0;
    cuda_nvrtc nv;

    *ptx = NULL;
    if (log_cap)
        log[0] = '\0';
    if (arch == 0) {
        snprintf(log, log_cap, "architecture 0 is not valid");
        return -1;
    }
    if (cuda_nvrtc_load(&nv, log, log_cap) != 0)
        return rc;
    char *source = NULL;
    size_t len = 0;
    const char *base = strrchr(source_path, '/');
    rc = -1;
    if (cuda_read_file(source_path, CUDA_MAX_SOURCE, &source, &len, log, log_cap) == 0 &&
        nvrtc_compile_text(&nv, base ? base + 1 : source_path, source, len, defines, arch, 0, &used,
                           ptx, log, log_cap) == 0)
        rc = 0;
    free(source);
    cuda_nvrtc_unload(&nv);
    return rc;
}

json_t *cuda_compile_check(const char *name, const char *text, size_t len, const json_t *defines,
                           double timeout_s)
{
    cuda_nvrtc nv;
    char log[CUDA_LOG_TAIL], version[32];
    char *ptx = NULL;
    int arch = 0;
    json_t *reply = NULL;

    if (cuda_nvrtc_load(&nv, log, sizeof log) != 0)
        return json_pack("{s:b, s:s}", "ok", 0, "reason", log);
    snprintf(version, sizeof version, "%d.%d", nv.major, nv.minor);
    double start = kt_clock_s();
    int rc = nvrtc_compile_text(&nv, name, text, len, defines, 0, timeout_s, &arch, &ptx, log,
                                sizeof log);
    double ms = (kt_clock_s() - start) * 1000.0;
    const char *status = rc == 0 ? "ok" : rc == -1 ? "compile_error" : rc == -2 ? "timeout" : NULL;
    if (!status)
        reply = json_pack("{s:b, s:s, s:s}", "ok", 0, "reason", log, "nvrtc_version", version);
    else
        reply = json_pack("{s:b, s:s, s:s, s:i, s:f, s:{s:i}}", "ok", 1, "status", status,
                          "nvrtc_version", version, "arch", arch, "compile_ms", ms, "extras",
                          "ptx_bytes", ptx ? (int)strlen(ptx) : 0);
    if (reply && status && rc != 0)
        json_object_set_new(json_object_get(reply, "extras"), "log", json_string(log));
    free(ptx);
    cuda_nvrtc_unload(&nv);
    return reply;
}
