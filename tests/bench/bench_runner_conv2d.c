/* Bench of the CPU conv2d kernel (kernels/conv2d) through ktune-runner, the issue's section 3
 * figure: per ResNet layer shape (stride 1, padded 3×3 layers given as H+2, W+2; N = 1) on one
 * core,
 *   - the conv2d space (kernels/conv2d/spec.json, constants = problem + CPU limits read like the
 *     runner) tuned by `auto` for KT_BENCH_CONV_EVALS (default 50) evaluations, the spec's default
 *     configuration first (given to auto as its first proposal, so it learns from it);
 *   - 30 configurations of the random searcher (another seed), for the "best of 30 random" gain;
 *   - OpenBLAS-based im2col + cblas_sgemm (one thread), in this process, on the same core;
 * then the tuned best, the default, the best random one and im2col + sgemm re-measured in ROUNDS
 * alternating rounds (each its best round: a round is a median over repeats), and prints GFLOP/s
 * and the ratios tuned/(im2col+sgemm), default/(im2col+sgemm), tuned /default and tuned/(best of 30
 * random), with the one-core FMA peak for scale. The runner and this process are pinned to the same
 * core (1 when there are two); compiled kernels are cached in $TMPDIR/ktune-bench-runner-conv2d so
 * reruns are faster. Asserts nothing. */
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
#include "core/clock.h"
#include "runner/runner.h"
#include "search/searcher.h"
#include "space/space.h"

#define EVALS_DEFAULT  50
#define RANDOM_EVALS   30
#define SEARCH_SEED    20261123
#define RANDOM_SEED    777
#define BATCH          4
#define CALL_TIMEOUT_S 300
#define ROUNDS         7 /* alternating re-measure rounds of best, default and im2col + sgemm */

/* The layers: N C K H W R S (3×3 layers padded by one: H+2, W+2). */
static const long SHAPES[][7] = {
    {1, 64, 64, 58, 58, 3, 3}, {1, 128, 128, 30, 30, 3, 3}, {1, 256, 256, 16, 16, 3, 3},
    {1, 512, 512, 9, 9, 3, 3}, {1, 64, 256, 56, 56, 1, 1},  {1, 256, 64, 56, 56, 1, 1},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))
static const char *const PNAMES[7] = {"N", "C", "K", "H", "W", "R", "S"};

static double flops_of(const long *pr)
{
    double P = (double)(pr[3] - pr[5] + 1), Q = (double)(pr[4] - pr[6] + 1);
    return 2.0 * (double)pr[0] * (double)pr[2] * P * Q * (double)pr[1] * (double)(pr[5] * pr[6]);
}

/* ---- im2col + OpenBLAS sgemm ---- */

typedef struct baseline {
    float *in, *w, *col, *out;
} baseline;

static void baseline_free(baseline *b)
{
    free(b->in);
    free(b->w);
    free(b->col);
    free(b->out);
    memset(b, 0, sizeof *b);
}

static int baseline_new(baseline *b, const long *pr)
{
    long N = pr[0], C = pr[1], K = pr[2], H = pr[3], W = pr[4], R = pr[5], S = pr[6];
    long PQ = (H - R + 1) * (W - S + 1);
    unsigned st = 4242;
    b->in = brc_random_floats(N * C * H * W, &st);
    b->w = brc_random_floats(K * C * R * S, &st);
    b->col = brc_random_floats(C * R * S * PQ, &st);
    b->out = brc_random_floats(N * K * PQ, &st);
    if (b->in && b->w && b->col && b->out)
        return 0;
    baseline_free(b);
    return -1;
}

/* One convolution: per image, im2col (rows (c, r, s) of P*Q pixels), then out = w · col. */
static void baseline_run(const baseline *b, const long *pr)
{
    long N = pr[0], C = pr[1], K = pr[2], H = pr[3], W = pr[4], R = pr[5], S = pr[6];
    long P = H - R + 1, Q = W - S + 1, CRS = C * R * S;
    for (long n = 0; n < N; n++) {
        const float *in = b->in + n * C * H * W;
        for (long c = 0; c < C; c++)
            for (long r = 0; r < R; r++)
                for (long s = 0; s < S; s++) {
                    float *d = b->col + ((c * R + r) * S + s) * P * Q;
                    for (long y = 0; y < P; y++)
                        memcpy(d + y * Q, in + (c * H + y + r) * W + s, sizeof(float) * (size_t)Q);
                }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)K, (int)(P * Q), (int)CRS, 1.0f,
                    b->w, (int)CRS, b->col, (int)(P * Q), 0.0f, b->out + n * K * P * Q,
                    (int)(P * Q));
    }
}

/* Median GFLOP/s over at least min_s seconds (>= 5 calls, after one warm-up call). */
static double baseline_gflops(const baseline *b, const long *pr, double min_s)
{
    double times[1000];
    int k = 0;
    baseline_run(b, pr);
    double start = kt_clock_s();
    while (k < 1000 && (k < 5 || kt_clock_s() - start < min_s)) {
        double t0 = kt_clock_s();
        baseline_run(b, pr);
        times[k++] = kt_clock_s() - t0;
    }
    qsort(times, (size_t)k, sizeof *times, brc_cmp_double);
    return flops_of(pr) / times[k / 2] / 1e9;
}

/* What every measure request of one shape shares. */
typedef struct shape_ctx {
    runner_proc *p;
    const long *pr;
    char source[1024], reference[1024];
    json_t *tolerance; /* borrowed */
} shape_ctx;

/* Measures one configuration (defines: object); returns GFLOP/s, 0 when not ok (status in
 * *status). Restarts the runner when it died. */
static double measure(const shape_ctx *x, json_t *defines, const measure_opts *o, char *status,
                      size_t status_cap)
{
    static int next_id = 1;
    const long *pr = x->pr;
    long PQ = (pr[3] - pr[5] + 1) * (pr[4] - pr[6] + 1);
    json_t *problem = json_array(), *names = json_array();
    for (int i = 0; i < 7; i++) {
        json_array_append_new(problem, json_integer(pr[i]));
        json_array_append_new(names, json_string(PNAMES[i]));
    }
    json_t *buffers =
        json_pack("[{s:s,s:I,s:s},{s:s,s:I,s:s},{s:s,s:I,s:s}]", "name", "input", "elements",
                  (json_int_t)(pr[0] * pr[1] * pr[3] * pr[4]), "role", "input", "name", "weights",
                  "elements", (json_int_t)(pr[2] * pr[1] * pr[5] * pr[6]), "role", "input", "name",
                  "output", "elements", (json_int_t)(pr[0] * pr[2] * PQ), "role", "output");
    json_t *req = json_pack(
        "{s:i, s:s, s:s, s:s, s:O, s:o, s:o, s:o, s:{s:s, s:s}, s:O, s:f, s:i, s:i, s:f, s:f, "
        "s:f}",
        "id", next_id++, "op", "measure", "kernel", "conv2d", "source", x->source, "defines",
        defines, "problem", problem, "problem_names", names, "buffers", buffers, "reference",
        "kind", "c", "source", x->reference, "tolerance", x->tolerance, "flops", flops_of(pr),
        "min_repeats", o->min_repeats, "max_repeats", o->max_repeats, "min_seconds", o->min_seconds,
        "max_seconds", o->max_seconds, "compile_timeout_s", 120.0);
    return brc_measure_call(x->p, req, flops_of(pr), CALL_TIMEOUT_S, status, status_cap);
}

/* The conv2d space with constants = the problem and the CPU limits. */
static space *conv_space(const json_t *cpu_variant, const cpu_info *ci, const long *pr)
{
    json_t *constants =
        json_pack("{s:i, s:I, s:I, s:I, s:i}", "cores", ci->cores, "l1d_bytes",
                  (json_int_t)ci->l1d_bytes, "l2_bytes", (json_int_t)ci->l2_bytes, "l3_bytes",
                  (json_int_t)ci->l3_bytes, "vector_bits", ci->vector_bits);
    for (int i = 0; constants && i < 7; i++)
        json_object_set_new(constants, PNAMES[i], json_integer(pr[i]));
    kt_error err;
    space *sp = space_new(json_object_get(cpu_variant, "parameters"),
                          json_object_get(cpu_variant, "restrictions"), constants, NULL, &err);
    if (!sp)
        printf("  cannot build the conv2d space: %s\n", err.message);
    json_decref(constants);
    return sp;
}

/* Runs strategy for evals evaluations (first: a configuration to propose first, or NULL); returns
 * the best GFLOP/s (0 when none was ok) and its id in *best; counts ok and failed results. */
static double search(const shape_ctx *x, space *sp, const char *strategy, uint64_t seed,
                     const config_id *first, int evals, config_id *best, int *n_ok, int *n_failed)
{
    kt_error err;
    searcher *s = searcher_new(strategy, sp, NULL, seed, &err);
    double best_gf = 0.0;
    *n_ok = *n_failed = 0;
    if (!s) {
        printf("  cannot start %s: %s\n", strategy, err.message);
        return 0.0;
    }
    searcher_history h = {.first = first, .n_first = 1};
    if (first && searcher_set_history(s, &h, &err) < 0)
        printf("  %s: the default is not proposed first: %s\n", strategy, err.message);
    measure_opts quick = {3, 20, 0.1, 1.0};
    char status[64];
    int done = 0;
    while (done < evals) {
        config_id ids[BATCH];
        int want = evals - done < BATCH ? evals - done : BATCH;
        int got = searcher_ask(s, ids, want);
        if (got == 0)
            break;
        trial_result res[BATCH];
        for (int i = 0; i < got; i++) {
            json_t *cfg = space_config_json(sp, ids[i]);
            double gf = measure(x, cfg, &quick, status, sizeof status);
            if (brc_trial_result(&res[i], gf, flops_of(x->pr), status, cfg)) {
                ++*n_ok;
                if (gf > best_gf) {
                    best_gf = gf;
                    *best = ids[i];
                }
            } else {
                ++*n_failed;
            }
            json_decref(cfg);
        }
        searcher_tell(s, ids, res, got);
        for (int i = 0; i < got; i++)
            trial_result_release(&res[i]);
        done += got;
    }
    searcher_free(s);
    return best_gf;
}

typedef struct shape_result {
    double tuned, def, rnd, blas;
} shape_result;

static int tune_shape(runner_proc *p, const json_t *spec, const cpu_info *ci, const long *pr,
                      int evals, shape_result *out)
{
    const json_t *cpu = json_object_get(json_object_get(spec, "variants"), "cpu");
    shape_ctx x = {.p = p, .pr = pr, .tolerance = json_object_get(spec, "tolerance")};
    snprintf(x.source, sizeof x.source, "%s/kernels/conv2d/%s", KT_SOURCE_DIR,
             json_string_value(json_object_get(cpu, "source")));
    snprintf(x.reference, sizeof x.reference, "%s/kernels/conv2d/%s", KT_SOURCE_DIR,
             json_string_value(json_object_get(json_object_get(spec, "reference"), "source")));
    printf("conv2d N%ld C%ld K%ld H%ld W%ld R%ld S%ld (output %ldx%ld, %.2f GFLOP):\n", pr[0],
           pr[1], pr[2], pr[3], pr[4], pr[5], pr[6], pr[3] - pr[5] + 1, pr[4] - pr[6] + 1,
           flops_of(pr) / 1e9);
    fflush(stdout);
    space *sp = conv_space(cpu, ci, pr);
    baseline b;
    if (!sp || baseline_new(&b, pr) < 0) {
        printf("  skipped (no space or no memory)\n");
        space_free(sp);
        return -1;
    }
    kt_error err;
    config_id def_id, best_id, rnd_id;
    int rc = -1, ok, failed, rok, rfailed;
    json_t *def_cfg = NULL, *best_cfg = NULL, *rnd_cfg = NULL;
    if (space_config_from_json(sp, json_object_get(cpu, "default"), &def_id, &err) < 0) {
        printf("  the default configuration is not valid here: %s\n", err.message);
        goto out;
    }
    double t0 = kt_clock_s();
    double best_gf = search(&x, sp, "auto", SEARCH_SEED, &def_id, evals, &best_id, &ok, &failed);
    double t1 = kt_clock_s();
    double rnd_gf =
        search(&x, sp, "random", RANDOM_SEED, NULL, RANDOM_EVALS, &rnd_id, &rok, &rfailed);
    double t2 = kt_clock_s();
    if (best_gf <= 0) {
        printf("  no configuration ran\n");
        goto out;
    }
    /* re-measure the best, the default and im2col + sgemm in alternating rounds; each takes its
     * best round (a round is a median over repeats): another process on the core for a while (the
     * machine is shared) then slows some rounds, not the figure; the spread is printed */
    measure_opts careful = {5, 1000, 0.4, 3.0};
    char status[64];
    def_cfg = space_config_json(sp, def_id);
    best_cfg = space_config_json(sp, best_id);
    rnd_cfg = rnd_gf > 0 ? space_config_json(sp, rnd_id) : NULL;
    double blas_r[ROUNDS], best_r[ROUNDS], def_r[ROUNDS], rnd_r[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) {
        blas_r[k] = baseline_gflops(&b, pr, careful.min_seconds);
        best_r[k] = measure(&x, best_cfg, &careful, status, sizeof status);
        def_r[k] =
            best_id == def_id ? best_r[k] : measure(&x, def_cfg, &careful, status, sizeof status);
        rnd_r[k] = !rnd_cfg            ? 0.0
                   : rnd_id == best_id ? best_r[k]
                                       : measure(&x, rnd_cfg, &careful, status, sizeof status);
    }
    qsort(rnd_r, ROUNDS, sizeof(double), brc_cmp_double);
    qsort(blas_r, ROUNDS, sizeof(double), brc_cmp_double);
    qsort(best_r, ROUNDS, sizeof(double), brc_cmp_double);
    qsort(def_r, ROUNDS, sizeof(double), brc_cmp_double);
    out->blas = blas_r[ROUNDS - 1];
    out->def = def_r[ROUNDS - 1];
    out->tuned = best_r[ROUNDS - 1] > out->def ? best_r[ROUNDS - 1] : out->def;
    out->rnd = rnd_r[ROUNDS - 1];
    char *best_txt = json_dumps(best_cfg, JSON_COMPACT),
         *def_txt = json_dumps(def_cfg, JSON_COMPACT);
    printf("  auto: %d evaluations (%d ok, %d failed) in %.0f s; random: %d (%d ok) in %.0f s\n",
           ok + failed, ok, failed, t1 - t0, rok + rfailed, rok, t2 - t1);
    printf("  tuned        %7.2f GFLOP/s (search %.2f)  %s\n", best_r[ROUNDS - 1], best_gf,
           best_txt ? best_txt : "?");
    printf("  default      %7.2f GFLOP/s  %s\n", out->def, def_txt ? def_txt : "?");
    printf("  random30     %7.2f GFLOP/s (search %.2f; the best of %d random configurations)\n",
           out->rnd, rnd_gf, RANDOM_EVALS);
    printf("  im2col+sgemm %7.2f GFLOP/s (OpenBLAS, 1 thread)\n", out->blas);
    printf("  rounds: tuned %.1f-%.1f, default %.1f-%.1f, random30 %.1f-%.1f, im2col+sgemm "
           "%.1f-%.1f GFLOP/s\n",
           best_r[0], best_r[ROUNDS - 1], def_r[0], def_r[ROUNDS - 1], rnd_r[0], rnd_r[ROUNDS - 1],
           blas_r[0], blas_r[ROUNDS - 1]);
    printf("  tuned/im2col+sgemm %.3f  default/im2col+sgemm %.3f  tuned/default %.3f  "
           "tuned/random30 %.3f\n",
           out->tuned / out->blas, out->def / out->blas, out->tuned / out->def,
           out->rnd > 0 ? out->tuned / out->rnd : 0.0);
    fflush(stdout);
    free(best_txt);
    free(def_txt);
    rc = 0;
out:
    json_decref(best_cfg);
    json_decref(def_cfg);
    json_decref(rnd_cfg);
    baseline_free(&b);
    space_free(sp);
    return rc;
}

int main(void)
{
    int core = brc_pin_core();
    openblas_set_num_threads(1);
    int evals =
        brc_env_evals("KT_BENCH_CONV_EVALS", EVALS_DEFAULT, 100000, "an integer in 1..100000");
    cpu_info ci;
    cpu_info_read(&ci);
    brc_print_cpu(&ci, core);
    const char *what;
    brc_fma_peak(&what); /* warm-up: the clock ramps up */
    printf("FMA peak: %.2f GFLOP/s (one core, widest vectors)\n", brc_fma_peak(&what));
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels/conv2d/spec.json", KT_SOURCE_DIR);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    if (!spec) {
        printf("cannot read %s: %s\n", path, jerr.text);
        return 0;
    }
#ifndef KT_RUNNER_PATH
    printf("no ktune-runner target in this build: nothing to tune\n");
    json_decref(spec);
    return 0;
#else
    runner_proc p;
    if (brc_runner_open(&p, core, "conv2d") < 0) {
        json_decref(spec);
        return 0;
    }
    printf("auto: %d evaluations per shape (KT_BENCH_CONV_EVALS), seed %d, default first; random: "
           "%d, seed %d; runner on core %d, cache %s\n",
           evals, SEARCH_SEED, RANDOM_EVALS, RANDOM_SEED, core, p.cache);
    fflush(stdout);
    shape_result res[N_SHAPES];
    int n = 0, wins = 0;
    double gain_def = 0.0, gain_rnd = 0.0;
    for (int i = 0; i < N_SHAPES; i++) {
        if (tune_shape(&p, spec, &ci, SHAPES[i], evals, &res[n]) < 0)
            continue;
        wins += res[n].tuned >= 1.2 * res[n].blas;
        gain_def += log(res[n].tuned / res[n].def);
        gain_rnd += res[n].rnd > 0 ? log(res[n].tuned / res[n].rnd) : 0.0;
        n++;
    }
    if (n > 0)
        printf("summary: tuned >= 1.2x im2col+sgemm at %d of %d shapes; geometric means: "
               "tuned/default %.3f, tuned/random30 %.3f\n",
               wins, n, exp(gain_def / n), exp(gain_rnd / n));
    brc_runner_close(&p, 0);
    json_decref(spec);
    return 0;
#endif
}
