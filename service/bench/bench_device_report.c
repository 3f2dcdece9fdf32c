/* bench/bench_device_report — `ktune bench --device` output: the readable table of a
 * bench_device_run result (see bench_device_report.h). Formats only: runs nothing. */
#include "bench/bench_device_report.h"

#include <stdlib.h>
#include <string.h>

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
