/* bench/predict/bench_predict — the run of `ktune bench --predict` (see bench_predict.h): the
 * split, and per predictor the training, the decoding grid of seed 001 and the users' time ratios
 * on the held-out problems. */
#include "bench/predict/bench_predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "model/predictor.h"
#include "bench/predict/bench_predict_impl.h"
#include "bench/bench_judge.h"
#include "bench/bench_paired.h"
#include "bench/bench_ratio.h"

#define BP_TOP 5 /* the users' "best of the top 5" */

/* The paired tests of the report (bench_paired.h): the learned predictors against the baselines
 * (issue 30: each learned part against its ablation). */
static const char *const bp_learned[] = {"seq2seq", "ensemble"};
static const char *const bp_baselines[] = {"nearest", "common"};

/* Accumulated over the held-out problems for one predictor: the grid and the ratios (INFINITY:
 * the top-1 failed) in j, and what only this report counts. */
typedef struct bp_acc {
    bench_judge j;
    int unmeasured1, unmeasured5, failed1;
    double predict_cpu_s; /* the top-5 predictions, summed */
} bp_acc;

static json_t *bp_ratio_json(double r)
{
    return isnan(r) ? json_null() : isfinite(r) ? json_real(r) : json_string("failed");
}

/* The time of row for problem di: 1 with *t, 0 failed, -1 unknown (not measured, no --measure),
 * -2 error. */
static int bp_time(bp_data *d, int di, const int *row, int measure, double *t, kt_error *err)
{
    const char *status = NULL;
    if (training_set_find_trial(d->all, di, row, t))
        return 1;
    if (training_set_find_trial(d->failed, di, row, NULL))
        return 0;
    if (!measure)
        return -1;
    int r = bp_measure(d, di, row, t, &status, err);
    return r < 0 ? -2 : r;
}

/* A candidate of the grid is valid when it is a configuration of the problem's space. */
static int bp_valid(void *sp, const int *row)
{
    config_id id;
    return space_encode(sp, row, &id) == 0;
}

/* Seed 001's decoding grid on held-out problem di (best: its best configuration) into a. */
static int bp_grid(predictor *p, bp_data *d, int di, const int *best, bp_acc *a, kt_error *err)
{
    const space *sp = d->probs[di].t.sp;
    const json_t *problem = training_set_problem(d->all, di);
    for (int m = 0; m < BENCH_JUDGE_MODES; m++) {
        for (int k = 0; k < BENCH_JUDGE_NK; k++) {
            if (m == 0 && bench_judge_ks[k] > 1)
                continue; /* greedy is one sequence */
            if (bench_judge_decode(&a->j, p, problem, sp, m, k, best, bp_valid, (void *)sp, err) <
                0)
                return -1;
        }
    }
    return 0;
}

/* CPU seconds of this thread (training is single-threaded: comparable on a busy machine). */
/* Trains predictor k of the options on train: *out, its training seconds (wall, cpu) and saved
 * size. */
static int bp_train(const bench_predict_options *opt, const training_set *train, int k,
                    const json_t *hyper_all, FILE *progress, predictor **out, double *train_s,
                    double *train_cpu_s, size_t *model_bytes, kt_error *err)
{
    strbuf bytes;
    double t0 = kt_clock_s(), c0 = kt_clock_thread_cpu_s();
    int rc = -1;
    const char *kind = opt->kinds[k];

    strbuf_init(&bytes, (size_t)1 << 31);
    if (progress)
        fprintf(progress, "ktune bench: training %s on %d problems\n", kind,
                training_set_num_problems(train));
    if (!(*out = predictor_train(kind, train, json_object_get(hyper_all, kind), opt->seed, err)))
        goto out;
    *train_s = kt_clock_s() - t0;
    *train_cpu_s = kt_clock_thread_cpu_s() - c0;
    if (predictor_save(*out, &bytes, err) < 0)
        goto out;
    *model_bytes = bytes.len;
    rc = 0;
out:
    strbuf_release(&bytes);
    return rc;
}

/* --measure: every predictor's top-5 of every held-out problem measured when the cache lacks it,
 * before any ratio is computed, so that all predictors are judged against the same best. */
static int bp_measure_pass(bp_data *d, const training_set *test, predictor **ps, int n_ps,
                           FILE *progress, kt_error *err)
{
    int np = training_set_num_params(d->all), rc = -1, n_measured = 0;
    int *rows = malloc((size_t)BP_TOP * (size_t)np * sizeof *rows);
    double score[BP_TOP], t;
    if (!rows)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; i < training_set_num_problems(test); i++) {
        kt_error perr;
        int di = training_set_add_problem(d->all, training_set_problem(test, i), &perr);
        if (di < 0)
            continue;
        for (int k = 0; k < n_ps; k++) {
            int n = predictor_decode(ps[k], training_set_problem(d->all, di), d->probs[di].t.sp,
                                     PREDICT_CONSTRAINED, 0, BP_TOP, rows, score, err);
            if (n < 0)
                goto out;
            for (int j = 0; j < n; j++) {
                const int *row = rows + (size_t)j * (size_t)np;
                int known = training_set_find_trial(d->all, di, row, NULL) ||
                            training_set_find_trial(d->failed, di, row, NULL);
                if (!known && bp_time(d, di, row, 1, &t, err) == -2)
                    goto out;
                n_measured += !known;
            }
        }
        if (progress && n_measured)
            fprintf(progress, "ktune bench: %d configurations measured so far (problem %s)\n",
                    n_measured, training_set_problem_key(d->all, di));
    }
    rc = 0;
out:
    free(rows);
    return rc;
}

/* One trained predictor judged on the held-out problems: its JSON (NULL with err). */
static json_t *bp_one(bp_data *d, const training_set *test, predictor *p, double train_s,
                      double train_cpu_s, size_t model_bytes, kt_error *err)
{
    int np = training_set_num_params(d->all), n_test = training_set_num_problems(test);
    bp_acc a = {0};
    bench_judge *j = &a.j;
    json_t *res = NULL, *per = json_array(), *grid = json_object(),
           *pp = json_pack("{s:[], s:[]}", "top1", "top5");
    const char *kind = predictor_kind(p);

    if (bench_judge_init(j, np, n_test, err) < 0)
        goto out;
    if (!per || !grid || !pp) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < n_test; i++) {
        kt_error perr;
        int di = training_set_add_problem(d->all, training_set_problem(test, i), &perr);
        double best_ms, t, r1 = NAN, r5 = INFINITY;
        const int *best = training_set_trial(d->all, di, 0, &best_ms);
        if (di < 0 || !best)
            continue;
        j->n++;
        if (bp_grid(p, d, di, best, &a, err) < 0)
            goto out;
        const json_t *problem = training_set_problem(d->all, di);
        double c0 = kt_clock_thread_cpu_s();
        int n = predictor_decode(p, problem, d->probs[di].t.sp, PREDICT_CONSTRAINED, 0, BP_TOP,
                                 j->rows, j->score, err);
        a.predict_cpu_s += kt_clock_thread_cpu_s() - c0;
        if (n < 0)
            goto out;
        int unknown5 = 0, known5 = 0;
        for (int c = 0; c < n; c++) {
            int s = bp_time(d, di, j->rows + (size_t)c * (size_t)np, 0, &t, err);
            if (s == -2)
                goto out;
            double r = s == 1 ? t / best_ms : s == 0 ? INFINITY : NAN;
            if (c == 0)
                r1 = r;
            unknown5 += s < 0;
            known5 += s >= 0;
            if (s >= 0 && r < r5)
                r5 = r;
        }
        if (n > 0 && isnan(r1))
            a.unmeasured1++;
        else if (n > 0)
            j->r1[j->n1++] = r1;
        a.failed1 += n > 0 && isinf(r1);
        a.unmeasured5 += unknown5 > 0;
        if (known5 > 0)
            j->r5[j->n5++] = r5;
        json_t *cfg = n > 0 ? training_set_config_json(d->all, j->rows) : json_null();
        json_t *o =
            json_pack("{s:O, s:f, s:o*, s:o, s:o, s:i}", "problem", problem, "best_ms", best_ms,
                      "top1", cfg, "top1_ratio", bp_ratio_json(n ? r1 : NAN), "top5_ratio",
                      bp_ratio_json(known5 ? r5 : NAN), "top5_unmeasured", unknown5);
        /* the paired tests' input (bench_paired.h): no candidate is a miss, not measured NAN */
        if (!o || json_array_append_new(per, o) != 0 ||
            json_array_append_new(json_object_get(pp, "top1"),
                                  bench_paired_ratio_json(n ? r1 : INFINITY)) != 0 ||
            json_array_append_new(json_object_get(pp, "top5"),
                                  bench_paired_ratio_json(unknown5 ? NAN : r5)) != 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    if (bench_judge_grid_json(j, 0, grid, err) < 0)
        goto out;
    res = json_pack("{s:s, s:f, s:f, s:f, s:I, s:o, s:O, s:{s:o, s:o, s:i, s:i, s:i}, "
                    "s:{s:o, s:o, s:i, s:i}, s:O, s:O}",
                    "predictor", kind, "train_s", train_s, "train_cpu_s", train_cpu_s,
                    "predict_cpu_ms", j->n ? 1e3 * a.predict_cpu_s / j->n : 0.0, "model_bytes",
                    (json_int_t)model_bytes, "hyper", predictor_hyper_json(p), "decoding", grid,
                    "top1", "median", bench_ratio_median(j->r1, j->n1, "inf"), "within_1_10",
                    bench_ratio_share(j->r1, j->n1, 1.10), "measured", j->n1, "unmeasured",
                    a.unmeasured1, "failed", a.failed1, "top5", "median",
                    bench_ratio_median(j->r5, j->n5, "inf"), "within_1_05",
                    bench_ratio_share(j->r5, j->n5, 1.05), "measured", j->n5, "incomplete",
                    a.unmeasured5, "heldout", per, "per_problem", pp);
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    bench_judge_free(j);
    json_decref(per);
    json_decref(pp);
    json_decref(grid);
    return res;
}

/* --pool: the saved reports of opt->dirs pooled per kernel (bench_paired_pool). */
static json_t *bp_pool(const bench_predict_options *opt, kt_error *err)
{
    json_t *runs[BENCH_PREDICT_MAX_DIRS] = {NULL}, *res = NULL;
    int n = 0;
    for (; n < opt->n_dirs; n++) {
        json_error_t je;
        if (!(runs[n] = json_load_file(opt->dirs[n], 0, &je)) ||
            !json_is_object(json_object_get(runs[n], "predictors"))) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "--pool %s: %s", opt->dirs[n],
                         runs[n] ? "not a --predict --json report" : je.text);
            goto out;
        }
    }
    if (!(res = bench_paired_pool(runs, n, bp_learned, 2, bp_baselines, 2)))
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    for (int i = 0; i < opt->n_dirs; i++)
        json_decref(runs[i]);
    return res;
}

json_t *bench_predict_run(const bench_predict_options *opt, const char *exe_dir, FILE *progress,
                          kt_error *err)
{
    bp_data d;
    training_set *train = NULL, *test = NULL;
    json_t *hyper = NULL, *preds = json_object(), *res = NULL, *heldout = json_array();
    double t0 = kt_clock_s(), train_s[BENCH_PREDICT_MAX_KINDS], cpu_s[BENCH_PREDICT_MAX_KINDS];
    predictor *ps[BENCH_PREDICT_MAX_KINDS] = {NULL};
    size_t bytes[BENCH_PREDICT_MAX_KINDS];

    memset(&d, 0, sizeof d);
    kt_error_clear(err);
    if (opt->pool) {
        json_decref(preds);
        json_decref(heldout);
        return bp_pool(opt, err);
    }
    if (opt->hyper)
        hyper = json_loads(opt->hyper, 0, NULL); /* not inside json_is_object: a macro */
    if (opt->hyper && !json_is_object(hyper)) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "--hyper: not a JSON object of predictor -> object");
        goto out;
    }
    if (!preds || !heldout) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (bench_predict_load(opt, exe_dir, &d, progress, err) < 0 ||
        training_set_split(d.all, opt->test_fraction, opt->seed, &train, &test, err) < 0)
        goto out;
    if (training_set_num_problems(test) == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%d problem%s: nothing to hold out", d.n,
                     d.n == 1 ? "" : "s");
        kt_error_hint(err, "the report needs at least two problems");
        goto out;
    }
    for (int i = 0; i < training_set_num_problems(test); i++)
        json_array_append(heldout, (json_t *)training_set_problem(test, i));
    for (int k = 0; k < opt->n_kinds; k++) {
        if (bp_train(opt, train, k, hyper, progress, &ps[k], &train_s[k], &cpu_s[k], &bytes[k],
                     err) < 0) {
            kt_error_prefix(err, "%s", opt->kinds[k]);
            goto out;
        }
    }
    if (opt->measure && bp_measure_pass(&d, test, ps, opt->n_kinds, progress, err) < 0)
        goto out;
    for (int k = 0; k < opt->n_kinds; k++) {
        json_t *one = bp_one(&d, test, ps[k], train_s[k], cpu_s[k], bytes[k], err);
        if (!one) {
            kt_error_prefix(err, "%s", opt->kinds[k]);
            goto out;
        }
        json_object_set_new(preds, opt->kinds[k], one);
    }
    long long trials = 0;
    for (int i = 0; i < d.n; i++)
        trials += training_set_num_trials(d.all, i);
    res = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:f, s:I, s:b, s:O, s:O, "
                    "s:{s:f, s:f}, s:O, s:f, s:O*, s:I, s:I}",
                    "kernel", json_string_value(json_object_get(d.header, "kernel")), "device",
                    json_string_value(json_object_get(d.header, "device")), "device_class",
                    json_string_value(json_object_get(d.header, "device_class")), "kernel_hash",
                    json_string_value(json_object_get(d.header, "kernel_hash")), "problems", d.n,
                    "train_problems", training_set_num_problems(train), "test_problems",
                    training_set_num_problems(test), "ok_trials", (json_int_t)trials,
                    "test_fraction", opt->test_fraction, "seed", (json_int_t)opt->seed, "measure",
                    opt->measure, "heldout", heldout, "predictors", preds, "targets",
                    "top1_within_1_10", 0.80, "top5_within_1_05", 0.90, "warnings", d.warnings,
                    "wall_s", kt_clock_s() - t0, "spaces", d.spaces, "trial_lines",
                    (json_int_t)d.lines, "trials_skipped", (json_int_t)d.skipped);
    json_t *paired = res ? bench_paired_report(preds, bp_learned, 2, bp_baselines, 2) : NULL;
    if (!paired || json_object_set_new(res, "paired", paired) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        json_decref(res);
        res = NULL;
    }
out:
    for (int k = 0; k < BENCH_PREDICT_MAX_KINDS; k++)
        predictor_free(ps[k]);
    training_set_free(train);
    training_set_free(test);
    bp_data_free(&d);
    json_decref(hyper);
    json_decref(preds);
    json_decref(heldout);
    return res;
}
