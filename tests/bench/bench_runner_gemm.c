/* Bench of the CPU gemm kernel (kernels/gemm) through ktune-runner, the Done-when figure:
 * on one core, (a) the FMA peak (a register-only FMA loop at the widest vector width), (b) OpenBLAS
 * single-threaded sgemm, (c) the gemm space (kernels/gemm/spec.json loaded by the catalog with this
 * CPU's limits: the space of each problem and the default configuration for this ISA) tuned by
 * `auto` for KT_BENCH_EVALS (default 300) evaluations measured by the runner, the default
 * configuration first (told to auto like its own proposal), and (d) the best of RANDOM_EVALS random
 * configurations (the `random` searcher), for the tuning gain. Per size (1024³, 2048³) it prints
 * the tuned (the best of auto's top TOP re-measured), the default, the best random and OpenBLAS
 * GFLOP/s (re-measured in alternating rounds with more repeats: the best round, and the median of
 * rounds), the peak, and the ratios tuned/OpenBLAS, tuned/peak, tuned/default and tuned/random. The
 * runner and this process are pinned to core 1 (core 0 on a one-core machine); compiled kernels are
 * cached in $TMPDIR/ktune-bench-runner-gemm so reruns are faster. Asserts nothing. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>

#include "catalog/kernel_spec.h"
#include "core/clock.h"
#include "runner/runner.h"
#include "search/searcher.h"
#include "space/space.h"

#define EVALS_DEFAULT  300
#define SEARCH_SEED    20240611
#define BATCH          8
#define REPLY_MAX      (1 << 20)
#define CALL_TIMEOUT_S 300
#define ROUNDS         7  /* alternating re-measure rounds of tuned, default, random and OpenBLAS */
#define RANDOM_EVALS   30 /* evaluations of the random search the tuning gain is measured against */
#define TOP            3  /* auto's best configurations re-measured (the best of them is "tuned") */

/* ---- (a) FMA peak: 16 independent accumulators, one FMA each per iteration ---- */

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

#define ACC16(X)                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* iters iterations of 16 FMAs on vectors of type T (W floats); returns a value that depends on all
 * accumulators so nothing is optimised away. m and d pass through an empty asm each iteration so
 * the compiler cannot fold the recurrence. */
#define DECL_ACC(i) __typeof__(m) a##i = d * (float)(i + 1);
#define STEP_ACC(i) a##i = a##i * m + d;
#define SUM_ACC(i)  s += a##i;
#define FMA_LOOP(T, W)                                                                             \
    T m = {0}, d = {0};                                                                            \
    m += 0.9999999f + seed;                                                                        \
    d += 1e-7f + seed;                                                                             \
    ACC16(DECL_ACC)                                                                                \
    for (long n = 0; n < iters; n++) {                                                             \
        ACC16(STEP_ACC)                                                                            \
        __asm__ volatile("" : "+x"(m), "+x"(d));                                                   \
    }                                                                                              \
    T s = {0};                                                                                     \
    ACC16(SUM_ACC)                                                                                 \
    float t = 0.0f;                                                                                \
    for (int i = 0; i < (W); i++)                                                                  \
        t += s[i];                                                                                 \
    return t

__attribute__((target("avx512f,fma"), optimize("fp-contract=fast"), noinline)) static float
fma_loop_512(long iters, float seed)
{
    FMA_LOOP(v16, 16);
}

__attribute__((target("avx2,fma"), optimize("fp-contract=fast"), noinline)) static float
fma_loop_256(long iters, float seed)
{
    FMA_LOOP(v8, 8);
}

/* Baseline x86-64 (SSE) or another architecture: multiply and add. */
__attribute__((noinline)) static float fma_loop_128(long iters, float seed)
{
    FMA_LOOP(v4, 4);
}

/* GFLOP/s of the best of several ~0.3 s runs; *what names the path. */
static double fma_peak(const char **what)
{
    volatile float zero = 0.0f;
    float (*loop)(long, float) = fma_loop_128;
    int width = 4;
    *what = "128-bit mul+add";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        loop = fma_loop_512;
        width = 16;
        *what = "AVX-512 FMA, 16 zmm accumulators";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        loop = fma_loop_256;
        width = 8;
        *what = "AVX2 FMA, 16 ymm accumulators";
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
        double gf = (double)iters * 16.0 * width * 2.0 / t / 1e9;
        if (gf > best)
            best = gf;
    }
    if (sink == 12345.0f) /* never true; keeps sink alive */
        printf(" ");
    return best;
}

/* ---- (b) OpenBLAS ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *random_matrix(long n, unsigned *state)
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

/* Median GFLOP/s of single-threaded cblas_sgemm at n³ over at least min_s seconds (>= 5 calls). */
static double openblas_gflops(long n, double min_s)
{
    unsigned st = 12345;
    float *a = random_matrix(n * n, &st), *b = random_matrix(n * n, &st);
    float *c = random_matrix(n * n, &st);
    double gf = 0.0;
    if (a && b && c) {
        openblas_set_num_threads(1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                    (int)n, b, (int)n, 0.0f, c, (int)n);
        double times[1000];
        int k = 0;
        double start = kt_clock_s();
        while (k < 1000 && (k < 5 || kt_clock_s() - start < min_s)) {
            double t0 = kt_clock_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
                        (int)n, b, (int)n, 0.0f, c, (int)n);
            times[k++] = kt_clock_s() - t0;
        }
        qsort(times, (size_t)k, sizeof *times, cmp_double);
        gf = 2.0 * (double)n * n * n / times[k / 2] / 1e9;
    }
    free(a);
    free(b);
    free(c);
    return gf;
}

/* ---- (c) the runner ---- */

typedef struct runner_proc {
    pid_t pid;
    int to, from;
    char *buf;
    size_t len;
    int core;
    char cache[512];
} runner_proc;

static int runner_start(runner_proc *p)
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

static void runner_stop(runner_proc *p, int force)
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
static json_t *runner_call(runner_proc *p, json_t *req, double timeout_s)
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
        if (left <= 0 || p->len >= REPLY_MAX)
            break;
        struct pollfd pfd = {.fd = p->from, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t got = read(p->from, p->buf + p->len, REPLY_MAX - p->len);
        if (got <= 0)
            break;
        p->len += (size_t)got;
    }
    runner_stop(p, 1);
    return NULL;
}

typedef struct measure_opts {
    int min_repeats, max_repeats;
    double min_seconds, max_seconds;
} measure_opts;

/* Measures one configuration (defines: object) at n³; returns GFLOP/s, 0 when not ok (status in
 * *status). Restarts the runner when it died. */
static double measure(runner_proc *p, const char *source, long n, json_t *defines,
                      json_t *tolerance, const measure_opts *o, char *status, size_t status_cap)
{
    static int next_id = 1;
    json_t *buffers = json_pack("[{s:s,s:I,s:s},{s:s,s:I,s:s},{s:s,s:I,s:s}]", "name", "A",
                                "elements", (json_int_t)(n * n), "role", "input", "name", "B",
                                "elements", (json_int_t)(n * n), "role", "input", "name", "C",
                                "elements", (json_int_t)(n * n), "role", "output");
    json_t *req = json_pack(
        "{s:i, s:s, s:s, s:s, s:O, s:[I,I,I], s:[s,s,s], s:o, s:{s:s}, s:O, s:f, s:i, s:i, s:f, "
        "s:f, s:f}",
        "id", next_id++, "op", "measure", "kernel", "gemm", "source", source, "defines", defines,
        "problem", (json_int_t)n, (json_int_t)n, (json_int_t)n, "problem_names", "M", "N", "K",
        "buffers", buffers, "reference", "kind", "openblas_sgemm", "tolerance", tolerance, "flops",
        2.0 * (double)n * n * n, "min_repeats", o->min_repeats, "max_repeats", o->max_repeats,
        "min_seconds", o->min_seconds, "max_seconds", o->max_seconds, "compile_timeout_s", 120.0);
    double gf = 0.0;
    snprintf(status, status_cap, "no reply");
    if (p->to < 0 && runner_start(p) < 0) {
        json_decref(req);
        return 0.0;
    }
    json_t *r = req ? runner_call(p, req, CALL_TIMEOUT_S) : NULL;
    json_decref(req);
    if (!r) {
        runner_start(p); /* the next call gets a fresh runner */
        return 0.0;
    }
    const char *st = json_string_value(json_object_get(r, "status"));
    if (!st)
        st = json_string_value(json_object_get(r, "error"));
    snprintf(status, status_cap, "%s", st ? st : "?");
    if (st && strcmp(st, "ok") == 0) {
        double ms = json_number_value(json_object_get(r, "time_ms"));
        if (ms > 0)
            gf = 2.0 * (double)n * n * n / (ms * 1e-3) / 1e9;
    }
    json_decref(r);
    return gf;
}

/* The configurations measured by one search: the best and the counts. */
typedef struct search_out {
    config_id best;
    double best_gf;     /* 0 when none was ok */
    double first_gf;    /* the first configuration's (search figure; 0 when not ok) */
    config_id top[TOP]; /* the n_top best, best first */
    double top_gf[TOP];
    int n_top;
    int done, ok, failed;
} search_out;

/* Measures evals configurations proposed by strategy (seed SEARCH_SEED) on sp at n³; first (or
 * NULL): a configuration proposed before the strategy's own and told to it (searcher history). */
static int search(runner_proc *p, const char *source, json_t *tol, const space *sp, long n,
                  const char *strategy, int evals, const config_id *first, search_out *o)
{
    kt_error err;
    searcher *s = searcher_new(strategy, sp, NULL, SEARCH_SEED, &err);
    if (!s) {
        printf("  cannot start the %s searcher: %s\n", strategy, err.message);
        return -1;
    }
    searcher_history h = {.first = first, .n_first = first ? 1 : 0};
    if (first && searcher_set_history(s, &h, &err) < 0) {
        printf("  cannot give %s the default first: %s\n", strategy, err.message);
        searcher_free(s);
        return -1;
    }
    measure_opts quick =
        n <= 1024 ? (measure_opts){3, 10, 0.1, 1.0} : (measure_opts){2, 5, 0.3, 1.5};
    memset(o, 0, sizeof *o);
    char status[64];
    while (o->done < evals) {
        config_id ids[BATCH];
        int want = evals - o->done < BATCH ? evals - o->done : BATCH;
        int got = searcher_ask(s, ids, want);
        if (got == 0)
            break;
        trial_result res[BATCH];
        for (int i = 0; i < got; i++) {
            json_t *cfg = space_config_json(sp, ids[i]);
            double gf = measure(p, source, n, cfg, tol, &quick, status, sizeof status);
            trial_result_init(&res[i]);
            if (first && ids[i] == *first)
                o->first_gf = gf;
            if (gf > 0) {
                res[i].status = TRIAL_OK;
                res[i].time_ms = 2.0 * (double)n * n * n / (gf * 1e9) * 1e3;
                o->ok++;
                if (gf > o->best_gf) {
                    o->best_gf = gf;
                    o->best = ids[i];
                }
                int at = o->n_top < TOP ? o->n_top++ : TOP - 1; /* insert into the top list */
                if (at < TOP - 1 || gf > o->top_gf[at]) {
                    for (; at > 0 && o->top_gf[at - 1] < gf; at--) {
                        o->top[at] = o->top[at - 1];
                        o->top_gf[at] = o->top_gf[at - 1];
                    }
                    o->top[at] = ids[i];
                    o->top_gf[at] = gf;
                }
            } else {
                trial_status ts;
                res[i].status = trial_status_parse(status, &ts) == 0 ? ts : TRIAL_RUNTIME_ERROR;
                o->failed++;
                char *txt = json_dumps(cfg, JSON_COMPACT);
                printf("  %s: %s\n", txt ? txt : "?", status);
                free(txt);
            }
            json_decref(cfg);
        }
        searcher_tell(s, ids, res, got);
        for (int i = 0; i < got; i++)
            trial_result_release(&res[i]);
        o->done += got;
    }
    searcher_free(s);
    return 0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static void print_config(const char *label, double again, double med, double search_gf,
                         const space *sp, config_id id)
{
    json_t *cfg = space_config_json(sp, id);
    char *txt = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    printf("  %-9s %7.2f GFLOP/s (median %.2f, search %.2f)  %s\n", label, again, med, search_gf,
           txt ? txt : "?");
    free(txt);
    json_decref(cfg);
}

static void tune_size(runner_proc *p, const kernel_spec *ks, const kspec_limits *lim, long n,
                      int evals, double *peak)
{
    json_t *tol = json_pack("{s:f, s:f}", "rtol", ks->rtol, "atol", ks->atol);
    const char *source = ks->variants[KSPEC_CPU].source;
    json_t *problem =
        json_pack("{s:I, s:I, s:I}", "M", (json_int_t)n, "N", (json_int_t)n, "K", (json_int_t)n);
    json_t *def_cfg = json_loads(kernel_spec_default(ks, KSPEC_CPU, lim), 0, NULL);
    kspec_problem prob;
    kt_error err;
    space *sp = NULL;
    config_id def_id;
    if (!tol || !problem || !def_cfg || kernel_spec_problem(ks, problem, &prob, &err) < 0 ||
        !(sp = kernel_spec_space(ks, KSPEC_CPU, &prob, lim, &err)) ||
        space_config_from_json(sp, def_cfg, &def_id, &err) < 0) {
        printf("  gemm %ld^3: no space or no valid default here: %s\n", n, err.message);
        goto out;
    }
    double t0 = kt_clock_s();
    search_out tuned, rnd;
    if (search(p, source, tol, sp, n, "auto", evals, &def_id, &tuned) < 0)
        goto out;
    double tune_s = kt_clock_s() - t0;
    t0 = kt_clock_s();
    if (search(p, source, tol, sp, n, "random", RANDOM_EVALS, NULL, &rnd) < 0)
        goto out;
    double random_s = kt_clock_s() - t0;
    if (tuned.ok == 0 || rnd.ok == 0) {
        printf("  gemm %ld^3: no configuration measured ok (auto %d, random %d)\n", n, tuned.ok,
               rnd.ok);
        goto out;
    }
    double def_gf = tuned.first_gf;

    /* Re-measure auto's top configurations, the default, the random best and OpenBLAS in
     * alternating rounds, so that a slow phase of the machine hits all alike. Each figure of a
     * round is the runner's median over its repeats; a candidate's figure is its best round (other
     * processes on the core only ever slow a round down), the median of rounds is printed too. */
    measure_opts careful = {5, 1000, 0.6, 5.0};
    config_id cand[TOP + 2];
    int n_cand = 0, def_at = -1, rnd_at = -1;
    for (int i = 0; i < tuned.n_top; i++)
        cand[n_cand++] = tuned.top[i];
    for (int pass = 0; pass < 2; pass++) {
        config_id want = pass == 0 ? def_id : rnd.best;
        int at = -1;
        for (int i = 0; i < n_cand && at < 0; i++)
            at = cand[i] == want ? i : -1;
        if (at < 0) {
            at = n_cand;
            cand[n_cand++] = want;
        }
        *(pass == 0 ? &def_at : &rnd_at) = at;
    }
    const char *what;
    double again = fma_peak(&what); /* the peak again: a busy core at the start only lowers it */
    if (again > *peak)
        *peak = again;
    double r[TOP + 2][ROUNDS], blas_r[ROUNDS];
    char status[64];
    for (int k = 0; k < ROUNDS; k++) {
        blas_r[k] = openblas_gflops(n, careful.min_seconds);
        for (int i = 0; i < n_cand; i++) {
            json_t *cfg = space_config_json(sp, cand[i]);
            r[i][k] = measure(p, source, n, cfg, tol, &careful, status, sizeof status);
            json_decref(cfg);
        }
    }
    double best_of[TOP + 2], med_of[TOP + 2];
    for (int i = 0; i < n_cand; i++) {
        med_of[i] = median(r[i], ROUNDS); /* sorts r[i] */
        best_of[i] = r[i][ROUNDS - 1];
    }
    double blas_med = median(blas_r, ROUNDS), blas = blas_r[ROUNDS - 1];
    int t = 0; /* tuned: the best of auto's top, re-measured */
    for (int i = 1; i < tuned.n_top; i++)
        t = best_of[i] > best_of[t] ? i : t;
    printf("gemm %ldx%ldx%ld (one core): auto %d evaluations (%d ok, %d failed) in %.0f s, the "
           "default first; random %d evaluations (%d ok) in %.0f s; space of %llu "
           "configurations\n",
           n, n, n, tuned.done, tuned.ok, tuned.failed, tune_s, rnd.done, rnd.ok, random_s,
           (unsigned long long)space_count(sp));
    print_config("tuned", best_of[t], med_of[t], tuned.top_gf[t], sp, cand[t]);
    print_config("default", best_of[def_at], med_of[def_at], def_gf, sp, def_id);
    print_config("random30", best_of[rnd_at], med_of[rnd_at], rnd.best_gf, sp, rnd.best);
    printf("  OpenBLAS  %7.2f GFLOP/s (median %.2f; cblas_sgemm, 1 thread)\n", blas, blas_med);
    printf("  (best of %d alternating rounds of >= %.1f s each, median of the rounds in brackets; "
           "tuned = the best of auto's top %d re-measured)\n",
           ROUNDS, careful.min_seconds, tuned.n_top);
    printf("  peak      %7.2f GFLOP/s (the best of the runs so far)\n", *peak);
    printf("  tuned/OpenBLAS %.3f   tuned/peak %.3f   tuned/default %.3f   tuned/random30 %.3f\n",
           blas > 0 ? best_of[t] / blas : 0.0, *peak > 0 ? best_of[t] / *peak : 0.0,
           best_of[def_at] > 0 ? best_of[t] / best_of[def_at] : 0.0,
           best_of[rnd_at] > 0 ? best_of[t] / best_of[rnd_at] : 0.0);
    printf(
        "  (medians of rounds: tuned/OpenBLAS %.3f   tuned/default %.3f   tuned/random30 %.3f)\n",
        blas_med > 0 ? med_of[t] / blas_med : 0.0,
        med_of[def_at] > 0 ? med_of[t] / med_of[def_at] : 0.0,
        med_of[rnd_at] > 0 ? med_of[t] / med_of[rnd_at] : 0.0);
    fflush(stdout);
out:
    json_decref(tol);
    json_decref(problem);
    json_decref(def_cfg);
    space_free(sp);
}

int main(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int core = ncpu > 1 ? 1 : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        printf("cannot pin to core %d: %s (measuring unpinned)\n", core, strerror(errno));
    int evals = EVALS_DEFAULT;
    const char *ev = getenv("KT_BENCH_EVALS");
    if (ev) {
        char *end = NULL;
        errno = 0;
        long v = strtol(ev, &end, 10);
        if (errno || end == ev || *end != '\0' || v < 1 || v > INT_MAX)
            printf("KT_BENCH_EVALS=%s is not a positive integer (using %d)\n", ev, evals);
        else
            evals = (int)v;
    }

    cpu_info ci;
    cpu_info_read(&ci);
    printf("CPU: %s, core %d, vector %d bits, L1d %lld KiB, L2 %lld KiB, L3 %lld KiB\n", ci.model,
           core, ci.vector_bits, ci.l1d_bytes >> 10, ci.l2_bytes >> 10, ci.l3_bytes >> 10);

    const char *what;
    fma_peak(&what); /* warm-up: the core's clock ramps up over the first fraction of a second */
    double peak = fma_peak(&what);
    printf("FMA peak: %.2f GFLOP/s (%s, best of 7 runs)\n", peak, what);
    double blas1 = openblas_gflops(1024, 2.0), blas2 = openblas_gflops(2048, 3.0);
    printf("OpenBLAS sgemm, 1 thread: %.2f GFLOP/s at 1024^3, %.2f GFLOP/s at 2048^3 (medians)\n",
           blas1, blas2);
    fflush(stdout);

    /* the catalog's view of the spec on this CPU: its limits choose the default (per ISA) */
    kspec_limits lim = {{ci.cores, ci.l1d_bytes, ci.l2_bytes, ci.l3_bytes, ci.vector_bits}};
    const kspec_limits *limits[KSPEC_N_KINDS] = {&lim, NULL};
    char dir[1024], why[1024];
    snprintf(dir, sizeof dir, "%s/kernels/gemm", KT_SOURCE_DIR);
    kernel_spec *spec = kernel_spec_load(dir, limits, why, sizeof why);
    if (!spec) {
        printf("cannot load %s: %s\n", dir, why);
        return 0;
    }
#ifndef KT_RUNNER_PATH
    printf("no ktune-runner target in this build: the tuning part is skipped\n");
    kernel_spec_free(spec);
    return 0;
#else
    runner_proc p = {.to = -1, .from = -1, .core = core};
    const char *tmp = getenv("TMPDIR");
    snprintf(p.cache, sizeof p.cache, "%s/ktune-bench-runner-gemm", tmp && *tmp ? tmp : "/tmp");
    mkdir(p.cache, 0700);
    p.buf = malloc(REPLY_MAX);
    if (!p.buf || runner_start(&p) < 0) {
        printf("cannot start %s\n", KT_RUNNER_PATH);
        free(p.buf);
        kernel_spec_free(spec);
        return 0;
    }
    json_t *probe = json_pack("{s:i, s:s}", "id", 0, "op", "probe");
    json_t *r = runner_call(&p, probe, 60);
    json_decref(probe);
    if (!r || !json_is_true(json_object_get(r, "ok"))) {
        printf("the runner did not answer the probe\n");
        json_decref(r);
        runner_stop(&p, 1);
        free(p.buf);
        kernel_spec_free(spec);
        return 0;
    }
    json_decref(r);
    printf("auto: %d evaluations per size (the default first), random: %d, seed %d, runner on core "
           "%d, cache %s\n",
           evals, RANDOM_EVALS, SEARCH_SEED, core, p.cache);
    fflush(stdout);
    tune_size(&p, spec, &lim, 1024, evals, &peak);
    tune_size(&p, spec, &lim, 2048, evals, &peak);
    runner_stop(&p, 0);
    free(p.buf);
    kernel_spec_free(spec);
    return 0;
#endif
}
