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

#include "bench_runner_common.h"
#include "catalog/kernel_spec.h"
#include "core/clock.h"
#include "runner/runner.h"
#include "search/searcher.h"
#include "space/space.h"

#define EVALS_DEFAULT  300
#define SEARCH_SEED    20240611
#define BATCH          8
#define CALL_TIMEOUT_S 300
#define ROUNDS         7  /* alternating re-measure rounds of tuned, default, random and OpenBLAS */
#define RANDOM_EVALS   30 /* evaluations of the random search the tuning gain is measured against */
#define TOP            3  /* auto's best configurations re-measured (the best of them is "tuned") */

/* ---- (b) OpenBLAS ---- */

/* Median GFLOP/s of single-threaded cblas_sgemm at n³ over at least min_s seconds (>= 5 calls). */
static double openblas_gflops(long n, double min_s)
{
    unsigned st = 12345;
    float *a = brc_random_floats(n * n, &st), *b = brc_random_floats(n * n, &st);
    float *c = brc_random_floats(n * n, &st);
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
        qsort(times, (size_t)k, sizeof *times, brc_cmp_double);
        gf = 2.0 * (double)n * n * n / times[k / 2] / 1e9;
    }
    free(a);
    free(b);
    free(c);
    return gf;
}

/* ---- (c) the runner ---- */

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
    return brc_measure_call(p, req, 2.0 * (double)n * n * n, CALL_TIMEOUT_S, status, status_cap);
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
            if (first && ids[i] == *first)
                o->first_gf = gf;
            if (brc_trial_result(&res[i], gf, 2.0 * (double)n * n * n, status, cfg)) {
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
                o->failed++;
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
    qsort(v, (size_t)n, sizeof(double), brc_cmp_double);
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

/* 0 when the size was tuned and re-measured, -1 when nothing measured ok (or it could not run). */
static int tune_size(runner_proc *p, const kernel_spec *ks, const kspec_limits *lim, long n,
                     int evals, double *peak)
{
    int rc = -1;
    json_t *tol = json_pack("{s:f, s:f}", "rtol", ks->rtol, "atol", ks->atol);
    /* the runner takes absolute source paths only (issue 27: ktuned hands it the version's
     * content-addressed copy); here the repository's own file */
    char source[PATH_MAX];
    snprintf(source, sizeof source, "%s/kernels/gemm/%s", KT_SOURCE_DIR,
             ks->variants[KSPEC_CPU].source);
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
    double again =
        brc_fma_peak(&what); /* the peak again: a busy core at the start only lowers it */
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
    rc = 0;
out:
    json_decref(tol);
    json_decref(problem);
    json_decref(def_cfg);
    space_free(sp);
    return rc;
}

int main(void)
{
    int core = brc_pin_core();
    int evals = brc_env_evals("KT_BENCH_EVALS", EVALS_DEFAULT, INT_MAX, "a positive integer");
    cpu_info ci;
    cpu_info_read(&ci);
    brc_print_cpu(&ci, core);

    const char *what;
    brc_fma_peak(
        &what); /* warm-up: the core's clock ramps up over the first fraction of a second */
    double peak = brc_fma_peak(&what);
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
    runner_proc p;
    if (brc_runner_open(&p, core, "gemm") < 0) {
        kernel_spec_free(spec);
        return 0;
    }
    json_t *probe = json_pack("{s:i, s:s}", "id", 0, "op", "probe");
    json_t *r = brc_runner_call(&p, probe, 60);
    json_decref(probe);
    if (!r || !json_is_true(json_object_get(r, "ok"))) {
        printf("the runner did not answer the probe\n");
        json_decref(r);
        brc_runner_close(&p, 1);
        kernel_spec_free(spec);
        return 0;
    }
    json_decref(r);
    printf("auto: %d evaluations per size (the default first), random: %d, seed %d, runner on core "
           "%d, cache %s\n",
           evals, RANDOM_EVALS, SEARCH_SEED, core, p.cache);
    fflush(stdout);
    /* a size that measured nothing makes the exit status 1 */
    int failed = tune_size(&p, spec, &lim, 1024, evals, &peak) < 0;
    failed |= tune_size(&p, spec, &lim, 2048, evals, &peak) < 0;
    brc_runner_close(&p, 0);
    kernel_spec_free(spec);
    return failed;
#endif
}
