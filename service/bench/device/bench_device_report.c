/* bench/device/bench_device_report — `ktune bench --device` output: the readable table of a
 * bench_device_run result (see bench_device_report.h). Formats only: runs nothing. */
#include "bench/device/bench_device_report.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench_stats.h"

/* " " and v in fmt (a width, then the number: "%*.3f") at width, or "-" at width. */
static void rep_print_num(FILE *out, const json_t *v, const char *fmt, int width)
{
    fputc(' ', out);
    if (json_is_number(v))
        fprintf(out, fmt, width, json_number_value(v));
    else
        fprintf(out, "%*s", width, "-");
}

static void rep_print_ms(FILE *out, const json_t *v, int width)
{
    rep_print_num(out, v, "%*.5g", width);
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

/* mean (median) at one checkpoint of a row, with a mark for the time checkpoints: ' ' every seed
 * got there, '~' some run ended before (its final best carried), '*' none did. */
static void rep_print_cell(FILE *out, const json_t *k, int seeds, int mark)
{
    rep_print_ms(out, json_object_get(k, "mean_ms"), 10);
    fputs(" (", out);
    if (json_is_number(json_object_get(k, "median_ms")))
        fprintf(out, "%8.5g)", json_number_value(json_object_get(k, "median_ms")));
    else
        fprintf(out, "%8s)", "-");
    if (mark) {
        json_int_t reached = json_integer_value(json_object_get(k, "reached"));
        fputc(!json_is_integer(json_object_get(k, "reached")) || reached >= seeds ? ' '
              : reached == 0                                                      ? '*'
                                                                                  : '~',
              out);
    }
}

/* The time checkpoints' table: best ms against the modelled clock. */
static void rep_print_time(FILE *out, const json_t *res)
{
    const json_t *tcps = json_object_get(res, "time_checkpoints");
    const json_t *strats = json_object_get(res, "strategies"), *st, *tc;
    const json_t *tb = json_object_get(res, "time_budget_s");
    int seeds = (int)json_integer_value(json_object_get(res, "seeds"));
    const char *name;
    size_t i;

    if (json_array_size(tcps) == 0)
        return;
    fprintf(out,
            "\ncost against time: best ms at T s of the modelled tuning clock (each evaluation's "
            "compile +\n  measurement time as recorded when it was measured, cached or not, plus "
            "the searcher's ask/tell\n  time), mean over seeds (median); ~ some seeds' runs ended "
            "before T (final best carried),\n  * none got to T; ");
    if (json_is_number(tb))
        fprintf(out, "a run stops once its clock passes %g s\n", json_number_value(tb));
    else
        fprintf(out, "no time budget\n");
    fprintf(out, "%-12s", "strategy");
    json_array_foreach(tcps, i, tc)
    {
        char h[32];
        snprintf(h, sizeof h, "@%gs", json_number_value(tc));
        fprintf(out, " %22s", h);
    }
    fprintf(out, " %10s %8s\n", "clock s", "max");
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *c = json_object_get(st, "time_checkpoints");
        fprintf(out, "%-12.12s", name);
        json_array_foreach(tcps, i, tc)
        {
            char key[32];
            snprintf(key, sizeof key, "%g", json_number_value(tc));
            rep_print_cell(out, json_object_get(c, key), seeds, 1);
        }
        fprintf(out, " %10.1f %8.1f\n",
                json_number_value(json_object_get(json_object_get(st, "clock_s"), "mean")),
                json_number_value(json_object_get(json_object_get(st, "clock_s"), "max")));
    }
}

/* Box-plot data of every row at one checkpoint (member "checkpoints" or "time_checkpoints"). */
static void rep_print_box(FILE *out, const json_t *strats, const char *member, const char *key,
                          const char *what)
{
    static const char *const cols[] = {"min_ms",  "q1_ms", "median_ms",
                                       "mean_ms", "q3_ms", "max_ms"};
    const json_t *st;
    const char *name;
    fprintf(out, "\nbox data over seeds at %s (ms; quartiles by linear interpolation, type 7):\n",
            what);
    fprintf(out, "%-12s %10s %10s %10s %10s %10s %10s\n", "strategy", "min", "q1", "median", "mean",
            "q3", "max");
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *k = json_object_get(json_object_get(st, member), key);
        fprintf(out, "%-12.12s", name);
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            rep_print_ms(out, json_object_get(k, cols[c]), 10);
        fputc('\n', out);
    }
}

static void rep_print_welch(FILE *out, const json_t *w, const char *what)
{
    const json_t *e;
    size_t i;
    if (json_array_size(json_object_get(w, "tests")) == 0)
        return;
    int family = 0;
    json_array_foreach(json_object_get(w, "tests"), i, e) family +=
        json_is_number(json_object_get(e, "p_holm"));
    fprintf(out,
            "\nWelch's t-test on the best ms at %s (two-sided, unequal variances; costs in "
            "ms, not log):\n"
            "(Holm: p adjusted by Holm's step-down correction over the %d tests of this table; "
            "* Holm < %g)\n",
            what, family, BENCH_STATS_ALPHA);
    json_array_foreach(json_object_get(w, "tests"), i, e)
    {
        const char *a = json_string_value(json_object_get(e, "a"));
        const char *b = json_string_value(json_object_get(e, "b"));
        const json_t *lb = json_object_get(e, "lower_by");
        fprintf(out, "  %-12.12s vs %-12.12s means", a ? a : "?", b ? b : "?");
        rep_print_ms(out, json_object_get(e, "mean_a"), 8);
        fputs(" vs", out);
        rep_print_ms(out, json_object_get(e, "mean_b"), 8);
        fputs(", t", out);
        rep_print_num(out, json_object_get(e, "t"), "%*.3f", 6);
        fputs(", df", out);
        rep_print_num(out, json_object_get(e, "df"), "%*.1f", 5);
        fputs(", p", out);
        if (json_is_number(json_object_get(e, "p")))
            fprintf(out, " %.4f", json_number_value(json_object_get(e, "p")));
        else
            fprintf(out, " %6s", "-");
        const json_t *ph = json_object_get(e, "p_holm");
        if (json_is_number(ph))
            fprintf(out, ", Holm %.4f %c", json_number_value(ph),
                    json_number_value(ph) < BENCH_STATS_ALPHA ? '*' : ' ');
        if (json_is_number(lb)) {
            double l = json_number_value(lb), ma = json_number_value(json_object_get(e, "mean_a"));
            double mb = json_number_value(json_object_get(e, "mean_b"));
            if (l >= 0) /* the paper's phrasing: "a X% lower" */
                fprintf(out, "; %s %.1f%% lower", a ? a : "?", 100.0 * l);
            else
                fprintf(out, "; %s %.1f%% lower", b ? b : "?", 100.0 * (1 - mb / ma));
        }
        if (!json_is_number(json_object_get(e, "p")))
            fprintf(out, " (no test: fewer than 2 seeds or a seed found nothing)");
        fputc('\n', out);
    }
}

/* The rows run with options (--variant), and what they were. */
static void rep_print_options(FILE *out, const json_t *strats)
{
    const json_t *st;
    const char *name;
    int first = 1;
    json_object_foreach((json_t *)strats, name, st)
    {
        const json_t *o = json_object_get(st, "options");
        const char *s = json_string_value(json_object_get(st, "strategy"));
        if (json_object_size(o) == 0 && (!s || strcmp(s, name) == 0))
            continue;
        char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        if (first)
            fprintf(out, "\nrows with options:\n");
        first = 0;
        fprintf(out, "  %-12s %s %s\n", name, s ? s : "?", text ? text : "{}");
        free(text);
    }
}

/* The blocks after the main table: options, cost against time, box data and Welch tests at the
 * final evaluation checkpoint and the last time checkpoint. */
static void rep_print_blocks(FILE *out, const json_t *res, json_int_t last)
{
    const json_t *strats = json_object_get(res, "strategies");
    const json_t *tcps = json_object_get(res, "time_checkpoints");
    const json_t *welch = json_object_get(res, "welch");
    char key[32], what[64];

    rep_print_options(out, strats);
    rep_print_time(out, res);
    snprintf(key, sizeof key, "%lld", (long long)last);
    snprintf(what, sizeof what, "@%lld evaluations", (long long)last);
    rep_print_box(out, strats, "checkpoints", key, what);
    if (json_array_size(tcps) > 0) {
        double t = json_number_value(json_array_get(tcps, json_array_size(tcps) - 1));
        snprintf(key, sizeof key, "%g", t);
        snprintf(what, sizeof what, "T = %g s of the modelled clock", t);
        rep_print_box(out, strats, "time_checkpoints", key, what);
    }
    snprintf(what, sizeof what, "@%lld evaluations", (long long)last);
    rep_print_welch(out, json_object_get(welch, "evaluations"), what);
    if (json_object_get(welch, "time")) {
        snprintf(what, sizeof what, "T = %g s of the modelled clock",
                 json_number_value(json_object_get(json_object_get(welch, "time"), "at")));
        rep_print_welch(out, json_object_get(welch, "time"), what);
    }
}

/* The per-seed lines: best ms at each checkpoint, evaluations and statuses, measured + cached,
 * wall and modelled clock. */
static void rep_print_seeds(FILE *out, const json_t *cps, const json_t *strats)
{
    const char *name;
    json_t *st, *cp;
    size_t i;
    fprintf(out,
            "\nper seed: best ms @N; evaluations (statuses); measured + cached; wall; modelled "
            "clock\n");
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
                    json_is_true(json_object_get(run, "stopped_early"))     ? ", stopped early"
                    : json_is_true(json_object_get(run, "stopped_by_time")) ? ", time budget"
                                                                            : "");
            rep_print_statuses(out, json_object_get(run, "statuses"));
            fprintf(out, "); %lld + %lld; %.0f s",
                    (long long)json_integer_value(json_object_get(run, "measured")),
                    (long long)json_integer_value(json_object_get(run, "cached")),
                    json_number_value(json_object_get(run, "wall_s")));
            if (json_is_number(json_object_get(run, "clock_s")))
                fprintf(out, "; clock %.0f s", json_number_value(json_object_get(run, "clock_s")));
            fputc('\n', out);
        }
    }
}

/* Each strategy's best configuration and what its measurements took. */
static void rep_print_best(FILE *out, const json_t *strats)
{
    const char *name;
    json_t *st;
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
            rep_print_cell(out, json_object_get(c, key), 0, 0);
        }
        rep_print_ms(out, json_object_get(best, "time_ms"), 10);
        rep_print_num(out, json_object_get(best, "gflops"), "%*.1f", 8);
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
    rep_print_blocks(out, res, last);
    rep_print_seeds(out, cps, strats);
    rep_print_best(out, strats);
}
