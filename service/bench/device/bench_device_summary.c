/* bench/device/bench_device_summary — `ktune bench --device` results as data: the per-row summaries
 * over seeds (evaluation and time checkpoints with box data, best configuration, cost relative to
 * the reference row) and the runs as JSON (see bench_device_summary.h). */
#include "bench/device/bench_device_summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/device/bench_device_time.h"
#include "bench/bench_stats.h"

static json_t *rep_ms(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
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

/* The best of a run at checkpoint k: evaluations (tcps NULL) or modelled seconds. */
static double rep_best(const bench_device_run_state *r, const int *cps, const double *tcps, int k,
                       int *reached)
{
    if (tcps)
        return bench_device_best_at_time(r, tcps[k], reached);
    if (reached)
        *reached = r->evals >= cps[k];
    return bench_device_best_at_eval(r, cps[k]);
}

static void rep_key(const int *cps, const double *tcps, int k, char *key, size_t cap)
{
    if (tcps)
        snprintf(key, cap, "%g", tcps[k]);
    else
        snprintf(key, cap, "%d", cps[k]);
}

static json_t *rep_run_json(const bench_device_ctx *ctx, const bench_device_run_state *r,
                            const int *cps, int n_cp, const double *tcps, int n_tcp)
{
    json_t *best = json_object(), *best_t = json_object(), *curve = json_array(),
           *trials = json_array();
    char key[32];
    for (int k = 0; best && k < n_cp; k++) {
        rep_key(cps, NULL, k, key, sizeof key);
        json_object_set_new(best, key, rep_ms(rep_best(r, cps, NULL, k, NULL)));
    }
    for (int k = 0; best_t && k < n_tcp; k++) {
        rep_key(NULL, tcps, k, key, sizeof key);
        json_object_set_new(best_t, key, rep_ms(rep_best(r, NULL, tcps, k, NULL)));
    }
    for (int k = 0; k < r->evals; k++) {
        const bench_device_trial *t = &r->trials[k];
        if (curve)
            json_array_append_new(curve, rep_ms(t->best_ms));
        if (trials)
            json_array_append_new(trials, json_pack("[I, s, o, b, f, f, f]", (json_int_t)t->id,
                                                    trial_status_name(t->status), rep_ms(t->ms),
                                                    t->cached, t->wall_s, t->clock_s, t->cost_s));
    }
    json_t *cfg = isfinite(r->best_ms) ? space_config_json(ctx->target->sp, r->best_id) : NULL;
    return json_pack("{s:i, s:i, s:b, s:b, s:o*, s:o*, s:o, s:o, s:i, s:i, s:i, s:o*, s:f, s:f, "
                     "s:f, s:f, s:f, s:o*, s:o*}",
                     "seed", r->seed, "evaluations", r->evals, "stopped_early", r->stopped_early,
                     "stopped_by_time", r->stopped_by_time, "best_ms", best, "best_at_time", best_t,
                     "best_time_ms", rep_ms(r->best_ms), "best_config", cfg ? cfg : json_null(),
                     "best_evaluation", r->best_eval, "measured", r->measured, "cached", r->cached,
                     "statuses", rep_statuses(r->statuses), "wall_s", r->wall_s, "clock_s",
                     r->clock_s, "clock_measure_s", r->clock_measure_s, "measure_wall_s",
                     r->measure_wall_s, "overhead_ms",
                     r->proposals ? r->overhead_s * 1e3 / r->proposals : 0.0, "best_so_far", curve,
                     "trials", trials);
}

/* Mean best of row r at checkpoint k over seeds (INFINITY when a seed found nothing). */
static double rep_mean_at(const bench_device_ctx *ctx, const bench_device_run_state *runs, int r,
                          const int *cps, const double *tcps, int k)
{
    double sum = 0;
    for (int j = 0; j < ctx->seeds; j++)
        sum += rep_best(&runs[r * ctx->seeds + j], cps, tcps, k, NULL);
    return sum / ctx->seeds;
}

/* {"<N>" or "<T>": {"mean_ms","median_ms","min_ms","q1_ms","q3_ms","max_ms","per_seed",
 * "reached","relative","reference_saves"}} of row r. The mean is null when a seed found nothing
 * (so a row that failed on some seed never looks better than it is); quantiles are type 7. */
static json_t *rep_checkpoints_json(const bench_device_ctx *ctx, const bench_device_run_state *runs,
                                    int r, const int *cps, const double *tcps, int n, int ref)
{
    double v[BENCH_MAX_SEEDS];
    json_t *o = json_object();
    for (int k = 0; o && k < n; k++) {
        json_t *per = json_array();
        int reached = 0;
        char key[32];
        for (int j = 0; j < ctx->seeds; j++) {
            int got;
            v[j] = rep_best(&runs[r * ctx->seeds + j], cps, tcps, k, &got);
            reached += got;
            json_array_append_new(per, rep_ms(v[j]));
        }
        bench_stats_box_data b = bench_stats_box(v, ctx->seeds);
        double rmean = rep_mean_at(ctx, runs, ref, cps, tcps, k);
        int both = isfinite(b.mean) && isfinite(rmean);
        rep_key(cps, tcps, k, key, sizeof key);
        json_object_set_new(
            o, key,
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o*, s:i, s:o, s:o}", "mean_ms",
                      rep_ms(b.mean), "median_ms", rep_ms(b.median), "min_ms", rep_ms(b.min),
                      "q1_ms", rep_ms(b.q1), "q3_ms", rep_ms(b.q3), "max_ms", rep_ms(b.max),
                      "per_seed", per, "reached", reached, "relative",
                      both ? json_real(b.mean / rmean) : json_null(), "reference_saves",
                      both ? json_real(1.0 - rmean / b.mean) : json_null()));
    }
    return o;
}

static json_t *rep_row_json(const bench_device_ctx *ctx, const bench_device_run_state *runs, int s,
                            const int *cps, int n_cp, const double *tcps, int n_tcp, int ref)
{
    int seeds = ctx->seeds, statuses[TRIAL__STATUS_COUNT] = {0};
    int evals = 0, measured = 0, cached = 0, proposals = 0, best_k = -1, by_time = 0;
    double mwall = 0, wmax = 0, overhead = 0, clock_sum = 0, clock_max = 0;
    json_t *o = json_object(), *rl = json_array();

    for (int j = 0; j < seeds; j++) {
        const bench_device_run_state *r = &runs[s * seeds + j];
        evals += r->evals;
        measured += r->measured;
        cached += r->cached;
        proposals += r->proposals;
        mwall += r->measure_wall_s;
        overhead += r->overhead_s;
        by_time += r->stopped_by_time;
        clock_sum += r->clock_s;
        clock_max = r->clock_s > clock_max ? r->clock_s : clock_max;
        wmax = r->eval_wall_max_s > wmax ? r->eval_wall_max_s : wmax;
        for (int st = 0; st < TRIAL__STATUS_COUNT; st++)
            statuses[st] += r->statuses[st];
        if (isfinite(r->best_ms) && (best_k < 0 || r->best_ms < runs[s * seeds + best_k].best_ms))
            best_k = j;
        if (rl)
            json_array_append_new(rl, rep_run_json(ctx, r, cps, n_cp, tcps, n_tcp));
    }
    json_t *best = json_null();
    if (best_k >= 0) {
        const bench_device_run_state *r = &runs[s * seeds + best_k];
        best = json_pack("{s:f, s:o, s:i, s:i, s:o*}", "time_ms", r->best_ms, "gflops",
                         ctx->flops > 0 ? json_real(ctx->flops / (r->best_ms * 1e6)) : json_null(),
                         "seed", r->seed, "evaluation", r->best_eval, "config",
                         space_config_json(ctx->target->sp, r->best_id));
    }
    const json_t *opts = ctx->rows[s].options;
    if (!o || json_object_set_new(o, "strategy", json_string(ctx->rows[s].strategy)) < 0 ||
        json_object_set_new(o, "options", opts ? json_deep_copy(opts) : json_object()) < 0 ||
        json_object_set_new(o, "checkpoints",
                            rep_checkpoints_json(ctx, runs, s, cps, NULL, n_cp, ref)) < 0 ||
        json_object_set_new(o, "time_checkpoints",
                            rep_checkpoints_json(ctx, runs, s, NULL, tcps, n_tcp, ref)) < 0 ||
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
        json_object_set_new(o, "clock_s",
                            json_pack("{s:f, s:f}", "mean", clock_sum / seeds, "max", clock_max)) <
            0 ||
        json_object_set_new(o, "stopped_by_time", json_integer(by_time)) < 0 ||
        json_object_set_new(o, "overhead_ms",
                            json_real(proposals ? overhead * 1e3 / proposals : 0)) < 0 ||
        json_object_set_new(o, "runs", rl) < 0) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

json_t *bench_device_summary_json(const bench_device_ctx *ctx, const bench_device_run_state *runs,
                                  const int *checkpoints, int n_checkpoints, const double *tcps,
                                  int n_tcps, const char *reference)
{
    json_t *res = json_object();
    int ref = 0;

    for (int r = 0; r < ctx->n_rows; r++) {
        if (strcmp(ctx->rows[r].label, reference) == 0)
            ref = r;
    }
    for (int r = 0; res && r < ctx->n_rows; r++) {
        json_t *st = rep_row_json(ctx, runs, r, checkpoints, n_checkpoints, tcps, n_tcps, ref);
        if (!st || json_object_set_new(res, ctx->rows[r].label, st) < 0) {
            json_decref(res);
            res = NULL;
        }
    }
    return res;
}
