/* cli/bench_device_report — `ktune bench --device` output: the per-strategy summaries over seeds
 * (checkpoints, best configuration, cost relative to the reference strategy), the runs as JSON,
 * the readable table and the subcommand's main (see bench_device.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/log.h"
#include "bench_device_impl.h"

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

json_t *bench_device_report_json(const bench_device_ctx *ctx, const bench_device_options *opt,
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

/* ---- the table ---- */

static void rep_print_ms(FILE *out, const json_t *v, int width)
{
    if (json_is_number(v))
        fprintf(out, " %*.5g", width, json_number_value(v));
    else
        fprintf(out, " %*s", width, "-");
}

static void rep_print_statuses(FILE *out, const json_t *statuses)
{
    const char *name;
    json_t *n;
    int first = 1;
    json_object_foreach((json_t *)statuses, name, n)
    {
        fprintf(out, "%s%s %lld", first ? "" : ", ", name, (long long)json_integer_value(n));
        first = 0;
    }
}

void bench_device_print_table(const json_t *res, FILE *out)
{
    const json_t *cps = json_object_get(res, "checkpoints");
    const json_t *strats = json_object_get(res, "strategies");
    const json_t *mc = json_object_get(res, "measure_cache");
    const char *ref = json_string_value(json_object_get(res, "reference_strategy"));
    json_int_t last = json_integer_value(json_array_get(cps, json_array_size(cps) - 1));
    char *problem = json_dumps(json_object_get(res, "problem"), JSON_COMPACT);
    const char *name;
    json_t *st, *cp;
    size_t i;

    fprintf(out,
            "ktune bench: %s on %s (%s), problem %s\n"
            "  %lld configurations, %.4g GFLOP per call; budget %lld distinct evaluations, seeds "
            "0-%lld, batch %lld\n"
            "  measurements: %lld taken, %lld replayed from the cache (%s; %lld loaded at start); "
            "%.0f s in all\n"
            "  best time in ms after N evaluations: mean over seeds (median); cost = mean @%lld / "
            "%s's\n\n",
            json_string_value(json_object_get(res, "kernel")),
            json_string_value(json_object_get(res, "device")),
            json_string_value(json_object_get(res, "device_class")), problem ? problem : "?",
            (long long)json_integer_value(json_object_get(res, "space_size")),
            json_number_value(json_object_get(res, "flops")) / 1e9,
            (long long)json_integer_value(json_object_get(res, "budget")),
            (long long)json_integer_value(json_object_get(res, "seeds")) - 1,
            (long long)json_integer_value(json_object_get(res, "batch")),
            (long long)json_integer_value(json_object_get(mc, "measured")),
            (long long)json_integer_value(json_object_get(mc, "hits")),
            json_is_string(json_object_get(mc, "file"))
                ? json_string_value(json_object_get(mc, "file"))
                : "memory only",
            (long long)json_integer_value(json_object_get(mc, "loaded")),
            json_number_value(json_object_get(res, "wall_s")), (long long)last, ref ? ref : "?");
    free(problem);
    fprintf(out, "%-12s", "strategy");
    json_array_foreach(cps, i, cp)
    {
        char h[32];
        snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(cp));
        fprintf(out, " %21s", h);
    }
    fprintf(out, " %10s %8s  %s\n", "best ms", "GFLOP/s", "cost");
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *c = json_object_get(st, "checkpoints"), *best = json_object_get(st, "best");
        char key[24];
        fprintf(out, "%-12.12s", name);
        json_array_foreach(cps, i, cp)
        {
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
            const json_t *k = json_object_get(c, key);
            rep_print_ms(out, json_object_get(k, "mean_ms"), 10);
            fputs(" (", out);
            if (json_is_number(json_object_get(k, "median_ms")))
                fprintf(out, "%8.5g)", json_number_value(json_object_get(k, "median_ms")));
            else
                fprintf(out, "%8s)", "-");
        }
        rep_print_ms(out, json_object_get(best, "time_ms"), 10);
        if (json_is_number(json_object_get(best, "gflops")))
            fprintf(out, " %8.1f", json_number_value(json_object_get(best, "gflops")));
        else
            fprintf(out, " %8s", "-");
        snprintf(key, sizeof key, "%lld", (long long)last);
        const json_t *k = json_object_get(c, key);
        if (ref && strcmp(name, ref) == 0)
            fprintf(out, "  1 (reference)");
        else if (json_is_number(json_object_get(k, "relative"))) {
            double r = json_number_value(json_object_get(k, "relative"));
            if (r >= 1) /* the paper's phrasing: the reference finds an X% lower cost */
                fprintf(out, "  %.3f (%s %.1f%% lower)", r, ref ? ref : "?", 100.0 * (1 - 1 / r));
            else
                fprintf(out, "  %.3f (%.1f%% lower than %s)", r, 100.0 * (1 - r), ref ? ref : "?");
        } else
            fprintf(out, "  -");
        fputc('\n', out);
    }
    fprintf(out, "\nper seed: best ms @N; evaluations (statuses); measured + cached; wall\n");
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *run;
        size_t j;
        json_array_foreach(json_object_get(st, "runs"), j, run)
        {
            fprintf(out, "  %-12.12s seed %-3lld", name,
                    (long long)json_integer_value(json_object_get(run, "seed")));
            json_array_foreach(cps, i, cp)
            {
                char key[24];
                snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
                fprintf(out, " @%s", key);
                rep_print_ms(out, json_object_get(json_object_get(run, "best_ms"), key), 8);
            }
            fprintf(out, "; %lld evaluations%s (",
                    (long long)json_integer_value(json_object_get(run, "evaluations")),
                    json_is_true(json_object_get(run, "stopped_early")) ? ", stopped early" : "");
            rep_print_statuses(out, json_object_get(run, "statuses"));
            fprintf(out, "); %lld + %lld; %.0f s\n",
                    (long long)json_integer_value(json_object_get(run, "measured")),
                    (long long)json_integer_value(json_object_get(run, "cached")),
                    json_number_value(json_object_get(run, "wall_s")));
        }
    }
    fprintf(out, "\nbest configuration per strategy:\n");
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *best = json_object_get(st, "best");
        const json_t *ew = json_object_get(st, "eval_wall_s");
        if (!json_is_object(best)) {
            fprintf(out, "  %-12s nothing ran correctly\n", name);
            continue;
        }
        char *cfg = json_dumps(json_object_get(best, "config"), JSON_COMPACT);
        fprintf(out, "  %-12s %.5g ms, seed %lld, evaluation %lld: %s\n", name,
                json_number_value(json_object_get(best, "time_ms")),
                (long long)json_integer_value(json_object_get(best, "seed")),
                (long long)json_integer_value(json_object_get(best, "evaluation")),
                cfg ? cfg : "?");
        free(cfg);
        if (json_is_number(json_object_get(ew, "mean")))
            fprintf(out, "  %-12s measurements taken: %.2f s each on average, %.2f s at most\n", "",
                    json_number_value(json_object_get(ew, "mean")),
                    json_number_value(json_object_get(ew, "max")));
    }
}

/* 4xx errors are about what was asked (exit 2); the others are failures (exit 1). */
static int rep_exit_code(const kt_error *err)
{
    int status = kt_error_http_status(err->code);
    return status >= 400 && status < 500 ? 2 : 1;
}

int bench_device_main(int argc, char **argv, const char *exe_dir)
{
    bench_device_options opt;
    kt_error err;
    kt_log_level level = KT_LOG_WARN;
    char msg[1024];
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = 1;

    int p = bench_device_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (p != 0) {
        rc = bench_args_exit(p, msg);
        goto out;
    }
    if (opt.log_level)
        kt_log_parse_level(opt.log_level, &level);
    kt_log_init(level);
    if (bench_json_open(opt.json_path, &jf) < 0) {
        rc = 2;
        goto out;
    }
    res = bench_device_run(&opt, exe_dir, stderr, &err);
    if (res)
        bench_device_print_table(res, stdout);
    rc = bench_finish(res, &err, &jf, opt.json_path);
    if (!res)
        rc = rep_exit_code(&err);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}
