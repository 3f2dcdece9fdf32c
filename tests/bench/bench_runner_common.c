/* Shared by the runner benches (bench_runner_gemm.c, bench_runner_conv2d.c); see the header. */
#include "bench_runner_common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "search/searcher.h"

/* ---- the FMA peak: independent accumulators, one FMA each per iteration ---- */

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

#define ACC16(X)                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
/* AVX2 and SSE have 16 vector registers: 16 accumulators + m + d would spill every iteration (the
 * measured "peak" was then below OpenBLAS); 12 keep 2 FMA pipes of latency 4-5 busy. */
#define ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* iters iterations of one FMA per accumulator of ACC on vectors of type T (W floats); returns a
 * value that depends on all
 * accumulators so nothing is optimised away. m and d pass through an empty asm each iteration so
 * the compiler cannot fold the recurrence. */
#define DECL_ACC(i) __typeof__(m) a##i = d * (float)(i + 1);
#define STEP_ACC(i) a##i = a##i * m + d;
#define SUM_ACC(i)  s += a##i;
#define FMA_LOOP(T, W, ACC)                                                                        \
    T m = {0}, d = {0};                                                                            \
    m += 0.9999999f + seed;                                                                        \
    d += 1e-7f + seed;                                                                             \
    ACC(DECL_ACC)                                                                                  \
    for (long n = 0; n < iters; n++) {                                                             \
        ACC(STEP_ACC)                                                                              \
        __asm__ volatile("" : "+x"(m), "+x"(d));                                                   \
    }                                                                                              \
    T s = {0};                                                                                     \
    ACC(SUM_ACC)                                                                                   \
    float t = 0.0f;                                                                                \
    for (int i = 0; i < (W); i++)                                                                  \
        t += s[i];                                                                                 \
    return t

__attribute__((target("avx512f,fma"), optimize("fp-contract=fast"), noinline)) static float
fma_loop_512(long iters, float seed)
{
    FMA_LOOP(v16, 16, ACC16);
}

__attribute__((target("avx2,fma"), optimize("fp-contract=fast"), noinline)) static float
fma_loop_256(long iters, float seed)
{
    FMA_LOOP(v8, 8, ACC12);
}

/* Baseline x86-64 (SSE) or another architecture: multiply and add. */
__attribute__((noinline)) static float fma_loop_128(long iters, float seed)
{
    FMA_LOOP(v4, 4, ACC12);
}

/* GFLOP/s of the best of several ~0.3 s runs; *what names the path. */
double brc_fma_peak(const char **what)
{
    volatile float zero = 0.0f;
    float (*loop)(long, float) = fma_loop_128;
    int width = 4, accumulators = 12;
    *what = "128-bit mul+add, 12 xmm accumulators";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        loop = fma_loop_512;
        width = 16;
        accumulators = 16;
        *what = "AVX-512 FMA, 16 zmm accumulators";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        loop = fma_loop_256;
        width = 8;
        *what = "AVX2 FMA, 12 ymm accumulators";
    }
#endif
    long iters = 1000000;
    double t0 = kt_clock_s();
    float sink = loop(iters, zero);
    double t = kt_clock_s() - t0; /* calibrate: aim at 0.3 s per run */
    iters = (long)(iters * 0.3 / (t > 1e-6 ? t : 1e-6));
    double best = 0.0;
    for (int rep = 0; rep < 7; rep++) {
        t0 = kt_clock_s();
        sink += loop(iters, zero);
        t = kt_clock_s() - t0;
        double gf = (double)iters * accumulators * width * 2.0 / t / 1e9;
        if (gf > best)
            best = gf;
    }
    if (sink == 12345.0f) /* never true; keeps sink alive */
        printf(" ");
    return best;
}

int brc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

float *brc_random_floats(long n, unsigned *state)
{
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
    if (!p)
        return NULL;
    for (long i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        p[i] = (float)(*state >> 8) / 8388608.0f - 1.0f;
    }
    return p;
}

int brc_runner_start(runner_proc *p)
{
#ifdef KT_RUNNER_PATH
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    char core[16];
    snprintf(core, sizeof core, "%d", p->core);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execl(KT_RUNNER_PATH, "ktune-runner", "--device", "cpu", "--cache-dir", p->cache,
              "--cpu-core", core, "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (p->pid < 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    p->to = in[1];
    p->from = out[0];
    p->len = 0;
    return 0;
#else
    (void)p;
    return -1;
#endif
}

void brc_runner_stop(runner_proc *p, int force)
{
    if (p->to < 0)
        return;
    if (force)
        kill(p->pid, SIGKILL);
    close(p->to);
    close(p->from);
    waitpid(p->pid, NULL, 0);
    p->to = p->from = -1;
}

/* Sends req (one line) and returns the reply object, or NULL when the runner died or did not answer
 * within timeout_s (it is then killed; the caller restarts it). */
json_t *brc_runner_call(runner_proc *p, json_t *req, double timeout_s)
{
    char *line = json_dumps(req, JSON_COMPACT);
    if (!line)
        return NULL;
    size_t n = strlen(line);
    line[n] = '\n'; /* replaces the NUL; n + 1 bytes go out */
    size_t off = 0;
    int ok = 1;
    while (off < n + 1) {
        ssize_t w = write(p->to, line + off, n + 1 - off);
        if (w <= 0) {
            ok = 0;
            break;
        }
        off += (size_t)w;
    }
    free(line);
    double deadline = kt_clock_s() + timeout_s;
    while (ok) {
        char *nl = memchr(p->buf, '\n', p->len);
        if (nl) {
            json_t *reply = json_loadb(p->buf, (size_t)(nl - p->buf), 0, NULL);
            size_t used = (size_t)(nl - p->buf) + 1;
            memmove(p->buf, p->buf + used, p->len - used);
            p->len -= used;
            return reply;
        }
        double left = deadline - kt_clock_s();
        if (left <= 0 || p->len >= BRC_REPLY_MAX)
            break;
        struct pollfd pfd = {.fd = p->from, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t got = read(p->from, p->buf + p->len, BRC_REPLY_MAX - p->len);
        if (got <= 0)
            break;
        p->len += (size_t)got;
    }
    brc_runner_stop(p, 1);
    return NULL;
}

int brc_pin_core(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int core = ncpu > 1 ? 1 : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        printf("cannot pin to core %d: %s (measuring unpinned)\n", core, strerror(errno));
    return core;
}

int brc_env_evals(const char *name, int def, long max, const char *what)
{
    const char *ev = getenv(name);
    if (!ev)
        return def;
    char *end = NULL;
    errno = 0;
    long v = strtol(ev, &end, 10);
    if (errno || end == ev || *end != '\0' || v < 1 || v > max) {
        printf("%s=%s is not %s (using %d)\n", name, ev, what, def);
        return def;
    }
    return (int)v;
}

void brc_print_cpu(const cpu_info *ci, int core)
{
    printf("CPU: %s, core %d, vector %d bits, L1d %lld KiB, L2 %lld KiB, L3 %lld KiB\n", ci->model,
           core, ci->vector_bits, ci->l1d_bytes >> 10, ci->l2_bytes >> 10, ci->l3_bytes >> 10);
}

int brc_runner_open(runner_proc *p, int core, const char *kernel)
{
    memset(p, 0, sizeof *p);
    p->to = p->from = -1;
    p->core = core;
    const char *tmp = getenv("TMPDIR");
    snprintf(p->cache, sizeof p->cache, "%s/ktune-bench-runner-%s", tmp && *tmp ? tmp : "/tmp",
             kernel);
    mkdir(p->cache, 0700);
    p->buf = malloc(BRC_REPLY_MAX);
    if (p->buf && brc_runner_start(p) == 0)
        return 0;
#ifdef KT_RUNNER_PATH
    printf("cannot start %s\n", KT_RUNNER_PATH);
#else
    printf("cannot start ktune-runner (not in this build)\n");
#endif
    free(p->buf);
    p->buf = NULL;
    return -1;
}

void brc_runner_close(runner_proc *p, int force)
{
    brc_runner_stop(p, force);
    free(p->buf);
    p->buf = NULL;
}

double brc_measure_call(runner_proc *p, json_t *req, double flops, double timeout_s, char *status,
                        size_t status_cap)
{
    double gf = 0.0;
    snprintf(status, status_cap, "no reply");
    if (!req || (p->to < 0 && brc_runner_start(p) < 0)) {
        json_decref(req);
        return 0.0;
    }
    json_t *r = brc_runner_call(p, req, timeout_s);
    json_decref(req);
    if (!r) {
        brc_runner_start(p); /* the next call gets a fresh runner */
        return 0.0;
    }
    const char *st = json_string_value(json_object_get(r, "status"));
    if (!st)
        st = json_string_value(json_object_get(r, "error"));
    snprintf(status, status_cap, "%s", st ? st : "?");
    if (st && strcmp(st, "ok") == 0) {
        double ms = json_number_value(json_object_get(r, "time_ms"));
        if (ms > 0)
            gf = flops / (ms * 1e-3) / 1e9;
    }
    json_decref(r);
    return gf;
}

int brc_trial_result(trial_result *res, double gf, double flops, const char *status,
                     const json_t *cfg)
{
    trial_result_init(res);
    if (gf > 0) {
        res->status = TRIAL_OK;
        res->time_ms = flops / (gf * 1e9) * 1e3;
        return 1;
    }
    trial_status ts;
    res->status = trial_status_parse(status, &ts) == 0 ? ts : TRIAL_RUNTIME_ERROR;
    char *txt = json_dumps(cfg, JSON_COMPACT);
    printf("  %s: %s\n", txt ? txt : "?", status);
    free(txt);
    return 0;
}
