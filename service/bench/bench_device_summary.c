/* bench/bench_device_summary — `ktune bench --device` results as data: the per-strategy summaries
 * over seeds (checkpoints, best configuration, cost relative to the reference strategy) and the
 * runs as JSON (see bench_device_summary.h). */
#include "bench/bench_device_summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *rep_ms(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int rep_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* mean, median, min, max of v[0..n) (sorted in place); mean is INFINITY when a seed found
 * nothing, so that a strategy that failed on some seed never looks better than it is. */
static void rep_stats(double *v, int n, double *mean, double *median, double *min, double *max)
{
    double sum = 0;
    qsort(v, (size_t)n, sizeof *v, rep_cmp);
    for (int i = 0; i < n; i++)
        sum += v[i];
    *mean = sum / n;
    *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    *min = v[0];
    *max = v[n - 1];
}

static json_t *rep_statuses(const int *counts)
{
    json_t *o = json_object();
    for (int s = TRIAL_OK; o && s < TRIAL__STATUS_COUNT; s++) {
        if (counts[s])
            json_object_set_new(o, trial_status_name((trial_status)s), json_integer(counts[s]));
    }
    return o;
}

static json_t *rep_run_json(const bench_device_ctx *ctx, const bench_device_run_state *r,
                            const int *cps, int n_cp)
{
    json_t *best = json_object(), *curve = json_array(), *trials = json_array();
    for (int k = 0; best && k < n_cp; k++) {
        char key[16];
        snprintf(key, sizeof key, "%d", cps[k]);
        json_object_set_new(best, key, rep_ms(r->best_so_far[cps[k] - 1]));
    }
    for (int k = 0; curve && k < ctx->budget; k++)
        json_array_append_new(curve, rep_ms(r->best_so_far[k]));
    for (int k = 0; trials && k < r->evals; k++)
        json_array_append_new(trials, json_pack("[I, s, o, b]", (json_int_t)r->trial_ids[k],
                                                trial_status_name(r->trial_status[k]),
                                                rep_ms(r->trial_ms[k]), r->trial_cached[k]));
    json_t *cfg = isfinite(r->best_ms) ? space_config_json(ctx->target->sp, r->best_id) : NULL;
    return json_pack("{s:i, s:i, s:b, s:o*, s:o, s:o, s:i, s:i, s:i, s:o*, s:f, s:f, s:f, s:o*, "
                     "s:o*}",
                     "seed", r->seed, "evaluations", r->evals, "stopped_early", r->stopped_early,
                     "best_ms", best, "best_time_ms", rep_ms(r->best_ms), "best_config",
                     cfg ? cfg : json_null(), "best_evaluation", r->best_eval, "measured",
                     r->measured, "cached", r->cached, "statuses", rep_statuses(r->statuses),
                     "wall_s", r->wall_s, "measure_wall_s", r->measure_wall_s, "overhead_ms",
                     r->proposals ? r->overhead_s * 1e3 / r->proposals : 0.0, "best_so_far", curve,
                     "trials", trials);
}

/* Mean best time of strategy s at checkpoint k over seeds (INFINITY when a seed found nothing). */
static double rep_mean_at(const bench_device_run_state *runs, int s, int seeds, int cp)
{
    double sum = 0;
    for (int k = 0; k < seeds; k++)
        sum += runs[s * seeds + k].best_so_far[cp - 1];
    return sum / seeds;
}

static json_t *rep_strategy_json(const bench_device_ctx *ctx, const bench_device_options *opt,
                                 const bench_device_run_state *runs, int s, const int *cps,
                                 int n_cp, int ref)
{
    int seeds = opt->seeds, statuses[TRIAL__STATUS_COUNT] = {0};
    int evals = 0, measured = 0, cached = 0, proposals = 0, best_k = -1;
    double mwall = 0, wmax = 0, overhead = 0, v[BENCH_MAX_SEEDS];
    json_t *o = json_object(), *cpo = json_object(), *rl = json_array();

    for (int k = 0; k < n_cp && cpo; k++) {
        double mean, median, min, max;
        json_t *per = json_array();
        for (int j = 0; j < seeds; j++) {
            v[j] = runs[s * seeds + j].best_so_far[cps[k] - 1];
            json_array_append_new(per, rep_ms(v[j]));
        }
        rep_stats(v, seeds, &mean, &median, &min, &max);
        double rmean = rep_mean_at(runs, ref, seeds, cps[k]);
        int both = isfinite(mean) && isfinite(rmean);
        char key[16];
        snprintf(key, sizeof key, "%d", cps[k]);
        json_object_set_new(
            cpo, key,
            json_pack("{s:o, s:o, s:o, s:o, s:o*, s:o, s:o}", "mean_ms", rep_ms(mean), "median_ms",
                      rep_ms(median), "min_ms", rep_ms(min), "max_ms", rep_ms(max), "per_seed", per,
                      "relative", both ? json_real(mean / rmean) : json_null(), "reference_saves",
                      both ? json_real(1.0 - rmean / mean) : json_null()));
    }
    for (int j = 0; j < seeds; j++) {
        const bench_device_run_state *r = &runs[s * seeds + j];
        evals += r->evals;
        measured += r->measured;
        cached += r->cached;
        proposals += r->proposals;
        mwall += r->measure_wall_s;
        overhead += r->overhead_s;
        wmax = r->eval_wall_max_s > wmax ? r->eval_wall_max_s : wmax;
        for (int st = 0; st < TRIAL__STATUS_COUNT; st++)
            statuses[st] += r->statuses[st];
        if (isfinite(r->best_ms) && (best_k < 0 || r->best_ms < runs[s * seeds + best_k].best_ms))
            best_k = j;
        if (rl)
            json_array_append_new(rl, rep_run_json(ctx, r, cps, n_cp));
    }
    json_t *best = json_null();
    if (best_k >= 0) {
        const bench_device_run_state *r = &runs[s * seeds + best_k];
        best = json_pack("{s:f, s:o, s:i, s:i, s:o*}", "time_ms", r->best_ms, "gflops",
                         ctx->flops > 0 ? json_real(ctx->flops / (r->best_ms * 1e6)) : json_null(),
                         "seed", r->seed, "evaluation", r->best_eval, "config",
                         space_config_json(ctx->target->sp, r->best_id));
    }
    if (!o || json_object_set_new(o, "checkpoints", cpo) < 0 ||
        json_object_set_new(o, "best", best) < 0 ||
        json_object_set_new(o, "evaluations", json_integer(evals)) < 0 ||
        json_object_set_new(o, "measured", json_integer(measured)) < 0 ||
        json_object_set_new(o, "cached", json_integer(cached)) < 0 ||
        json_object_set_new(o, "statuses", rep_statuses(statuses)) < 0 ||
        json_object_set_new(o, "measure_wall_s", json_real(mwall)) < 0 ||
        json_object_set_new(o, "eval_wall_s",
                            json_pack("{s:o, s:f}", "mean",
                                      measured ? json_real(mwall / measured) : json_null(), "max",
                                      wmax)) < 0 ||
        json_object_set_new(o, "overhead_ms",
                            json_real(proposals ? overhead * 1e3 / proposals : 0)) < 0 ||
        json_object_set_new(o, "runs", rl) < 0) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

json_t *bench_device_summary_json(const bench_device_ctx *ctx, const bench_device_options *opt,
                                  const bench_device_run_state *runs, const int *checkpoints,
                                  int n_checkpoints, const char *reference)
{
    json_t *res = json_object();
    int ref = 0;

    for (int s = 0; s < opt->n_strategies; s++) {
        if (strcmp(opt->strategies[s], reference) == 0)
            ref = s;
    }
    for (int s = 0; res && s < opt->n_strategies; s++) {
        json_t *st = rep_strategy_json(ctx, opt, runs, s, checkpoints, n_checkpoints, ref);
        if (!st || json_object_set_new(res, opt->strategies[s], st) < 0) {
            json_decref(res);
            res = NULL;
        }
    }
    return res;
}
