/* bench/offline/bench_report — `ktune bench` offline output: the readable table and the Kernel
 * Tuner comparison row (see bench_report.h). */
#include "bench/offline/bench_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/offline/bench_ablation.h"
#include "bench/offline/bench_cv.h"
#include "bench/offline/bench_kt.h"
#include "bench/offline/bench_summary.h"
#include "bench/bench_paired.h"

static void bench_print_number(FILE *out, const json_t *v, const char *fmt, int width)
{
    if (json_is_number(v))
        fprintf(out, fmt, width, json_number_value(v));
    else
        fprintf(out, "%*s", width, "-");
}

/* The width of the strategy column: 14, or the longest row label (a named variant's). */
static int bench_name_width(const json_t *result)
{
    const char *name;
    json_t *v;
    int w = 14;
    json_object_foreach(json_object_get(result, "averages"), name, v) w =
        (int)strlen(name) > w ? (int)strlen(name) : w;
    return w;
}

static void bench_print_header(const json_t *result, FILE *out)
{
    size_t i;
    json_t *v;

    fprintf(out, "%-*s", bench_name_width(result), "strategy");
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", h);
    }
    fprintf(out, " | %8s %5s |", "ev->5%", "succ");
    json_array_foreach(json_object_get(result, "clock_budgets_s"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "%llds", (long long)json_integer_value(v));
        fprintf(out, " %6s", h);
    }
    fprintf(out, " | %8s %5s | %9s | %6s %9s\n", "s->5%", "succ", "ovh us", "score", "ovh@400");
}

/* A strategy's fractions (member frac of st) at each of the checkpoints points, width w each,
 * then the median and success rate of its member to5 (to within 5% of the optimum). */
static void bench_print_fractions(FILE *out, const json_t *st, const json_t *points,
                                  const char *frac, int w, const char *to5)
{
    size_t i;
    json_t *v;
    char key[24];

    json_array_foreach(points, i, v)
    {
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        fputc(' ', out);
        bench_print_number(out, json_object_get(json_object_get(st, frac), key), "%*.4f", w);
    }
    const json_t *e = json_object_get(st, to5);
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(e, "median"), "%*.1f", 8);
    fputc(' ', out);
    bench_print_number(out, json_object_get(e, "success_rate"), "%*.2f", 5);
}

static void bench_print_row(const json_t *result, const char *name, const json_t *st, FILE *out)
{
    int w = bench_name_width(result);
    fprintf(out, "%-*.*s", w, w, name);
    bench_print_fractions(out, st, json_object_get(result, "checkpoints"), "fraction", 7,
                          "evals_to_5pct");
    fprintf(out, " |");
    bench_print_fractions(out, st, json_object_get(result, "clock_budgets_s"), "clock_fraction", 6,
                          "clock_to_5pct_s");
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(st, "overhead_us"), "%*.2f", 9);
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(st, "score"), "%*.3f", 6);
    fputc(' ', out);
    bench_print_number(out, json_object_get(st, "overhead_at_400_us"), "%*.1f", 9);
    fputc('\n', out);
}

/* Two rows under a table: the best Kernel Tuner fraction per checkpoint (best: {"<cp>":
 * {"strategy","fraction"}}), and which strategy gave it. what: "best strategy per budget" etc. */
static void bench_print_kt_rows(const json_t *result, const json_t *best, const char *what,
                                FILE *out)
{
    const json_t *cps = json_object_get(result, "checkpoints");
    size_t i, n = 0;
    json_t *cp;
    char key[24];

    fprintf(out, "%-*s", bench_name_width(result), "KT best");
    json_array_foreach(cps, i, cp)
    {
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
        const json_t *b = json_object_get(best, key);
        fputc(' ', out);
        bench_print_number(out, json_object_get(b, "fraction"), "%*.4f", 7);
        n += b != NULL;
    }
    fprintf(out, "   (Kernel Tuner 1.4.0, %s)\n", n ? what : "no figures");
    if (!n)
        return;
    fprintf(out, "  KT strategy:");
    json_array_foreach(cps, i, cp)
    {
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
        const char *name =
            json_string_value(json_object_get(json_object_get(best, key), "strategy"));
        fprintf(out, "%s @%s %s", i ? "," : "", key, name ? name : "-");
    }
    fputc('\n', out);
}

/* The mean Kernel Tuner rows: from the result, or (a result made without a reference) from
 * kt_reference read here. */
static void bench_print_reference(const json_t *result, const char *kt_reference, FILE *out)
{
    const json_t *path = json_object_get(result, "kt_reference");
    json_t *ref = NULL, *best = NULL;
    const char *what = "best strategy per budget, mean over the spaces";

    if (path) {
        const json_t *e = json_object_get(result, "kt_error");
        if (e) {
            fprintf(out, "Kernel Tuner reference %s: cannot read (%s)\n", json_string_value(path),
                    json_string_value(e));
            goto out;
        }
        bench_print_kt_rows(result, json_object_get(result, "kt_best"), what, out);
        goto out;
    }
    if (!kt_reference)
        goto out;
    ref = bench_kt_read(kt_reference);
    if (!ref) {
        fprintf(out, "Kernel Tuner reference %s: cannot read (%s)\n", kt_reference,
                strerror(errno));
        goto out;
    }
    best = bench_kt_mean_best(ref, json_object_get(result, "spaces"),
                              json_object_get(result, "checkpoints"));
    bench_print_kt_rows(result, best, what, out);
out:
    json_decref(ref);
    json_decref(best);
}

/* The score's time range of a space, and how much of it the runs did not reach. */
static void bench_print_score_range(const json_t *sp, FILE *out)
{
    const json_t *sr = json_object_get(sp, "score_range");
    const char *name;
    json_t *st;
    double beyond = 0;

    fprintf(out,
            "  score over %.1f - %.1f s of recorded time (random search: %lld - %lld evaluations)",
            json_number_value(json_object_get(sr, "t_start_s")),
            json_number_value(json_object_get(sr, "t_end_s")),
            (long long)json_integer_value(json_object_get(sr, "fevals_start")),
            (long long)json_integer_value(json_object_get(sr, "fevals_end")));
    json_object_foreach(json_object_get(sp, "strategies"), name, st)
    {
        double b = json_number_value(json_object_get(st, "score_beyond"));
        beyond = b > beyond ? b : beyond;
    }
    if (beyond > 0.005)
        fprintf(out,
                "; up to %.0f%% of it after a run's last evaluation (its best carried: a "
                "larger --budget reaches further)",
                100.0 * beyond);
    fputc('\n', out);
}

/* --batch > 1: the fractions against rounds (one ask + tell each), one row per strategy. */
static void bench_print_rounds(const json_t *result, const json_t *strategies, FILE *out)
{
    const json_t *rcs = json_object_get(result, "round_checkpoints");
    const char *name;
    json_t *st, *v;
    size_t i;
    char key[24];

    if (json_integer_value(json_object_get(result, "batch")) <= 1)
        return;
    fprintf(out, "  against rounds of %lld:\n%-14s",
            (long long)json_integer_value(json_object_get(result, "batch")), "strategy");
    json_array_foreach(rcs, i, v)
    {
        snprintf(key, sizeof key, "@r%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", key);
    }
    fprintf(out, " | %8s %5s\n", "r->5%", "succ");
    json_object_foreach((json_t *)strategies, name, st)
    {
        fprintf(out, "%-14.14s", name);
        bench_print_fractions(out, st, rcs, "rounds_fraction", 7, "rounds_to_5pct");
        fputc('\n', out);
    }
}

/* One row of the per-space warm-start table: cold's or warm's fractions at each checkpoint, or
 * (cold and warm both given) warm - cold. */
static void bench_print_warm_row(const json_t *result, const char *space, const char *kind,
                                 const json_t *cold, const json_t *warm, FILE *out)
{
    size_t i;
    json_t *v;

    fprintf(out, "%-26.26s %-9s", space, kind);
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        const json_t *c = json_object_get(json_object_get(cold, "fraction"), key);
        const json_t *w = json_object_get(json_object_get(warm, "fraction"), key);
        if (cold && warm && json_is_number(c) && json_is_number(w))
            fprintf(out, " %+7.4f", json_number_value(w) - json_number_value(c));
        else
            bench_print_number(out, cold ? c : w, " %*.4f", 7);
    }
    fputc('\n', out);
}

/* The paired row of the per-space warm-start table: at each checkpoint, Wilcoxon's signed-rank
 * test of warm's fraction against cold's over the seeds (the same seed numbers: pairs), two-sided
 * p; "-" where the per-seed fractions are missing (a JSON written before them). */
static void bench_print_warm_p(const json_t *result, const json_t *cold, const json_t *warm,
                               FILE *out)
{
    size_t i;
    json_t *v;

    fprintf(out, "%-26s %-9s", "", "p paired");
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        const json_t *c = json_object_get(json_object_get(cold, "fraction_seeds"), key);
        const json_t *w = json_object_get(json_object_get(warm, "fraction_seeds"), key);
        size_t n = json_array_size(c);
        double *a = n && n == json_array_size(w) ? malloc(2 * n * sizeof *a) : NULL;
        bench_paired_result r = {.p = NAN};
        if (a) {
            for (size_t k = 0; k < n; k++) {
                a[k] = json_number_value(json_array_get(w, k));
                a[n + k] = json_number_value(json_array_get(c, k));
            }
            bench_paired_wilcoxon(a, a + n, (int)n, &r);
        }
        free(a);
        if (isnan(r.p))
            fprintf(out, " %7s", "-");
        else
            fprintf(out, " %7.4f", r.p);
    }
    fputc('\n', out);
}

/* --history, per space and strategy: cold, warm and warm - cold at each checkpoint, and whether
 * the difference is more than the seeds' noise (a history must never make a space worse than cold
 * for long: search/README.md, warm starts). */
static void bench_print_warm_spaces(const json_t *result, FILE *out)
{
    const json_t *ws = json_object_get(result, "warm_start");
    const char *name;
    json_t *st, *sp, *v;
    size_t i;

    json_object_foreach(json_object_get(ws, "strategies"), name, st)
    {
        char warm[80];
        bench_warm_name(name, warm, sizeof warm);
        fprintf(out,
                "\n%s per space (warm - cold: the history's gain, negative where it hurts; p "
                "paired: Wilcoxon signed-rank over the seeds, two-sided)\n%-36s",
                name, "space");
        json_array_foreach(json_object_get(result, "checkpoints"), i, v)
        {
            char h[24];
            snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(v));
            fprintf(out, " %7s", h);
        }
        fputc('\n', out);
        json_array_foreach(json_object_get(result, "spaces"), i, sp)
        {
            const json_t *sts = json_object_get(sp, "strategies");
            const json_t *c = json_object_get(sts, name), *w = json_object_get(sts, warm);
            const char *sname = json_string_value(json_object_get(sp, "name"));
            if (!c || !w)
                continue; /* no history for this space */
            bench_print_warm_row(result, sname, "cold", c, NULL, out);
            bench_print_warm_row(result, "", "warm", NULL, w, out);
            bench_print_warm_row(result, "", "warm-cold", c, w, out);
            bench_print_warm_p(result, c, w, out);
        }
    }
}

/* --history: warm against cold per strategy, over the spaces that have history. */
static void bench_print_warm(const json_t *result, FILE *out)
{
    const json_t *ws = json_object_get(result, "warm_start");
    const json_t *names = json_object_get(ws, "spaces");
    const char *name;
    json_t *st, *v;
    size_t i;

    if (!ws)
        return;
    fprintf(out,
            "\nwarm start (--history, times %s, %lld configurations first) against cold, mean "
            "over the %zu spaces with history:",
            json_string_value(json_object_get(ws, "times")),
            (long long)json_integer_value(json_object_get(ws, "first")), json_array_size(names));
    json_array_foreach(names, i, v) fprintf(out, "%s%s", i ? ", " : " ", json_string_value(v));
    fprintf(out, "\n%-14s %-5s", "strategy", "");
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", h);
    }
    fputc('\n', out);
    json_object_foreach(json_object_get(ws, "strategies"), name, st)
    {
        static const char *const kinds[2] = {"cold", "warm"};
        for (int k = 0; k < 2; k++) {
            fprintf(out, "%-14.14s %-5s", name, kinds[k]);
            json_array_foreach(json_object_get(result, "checkpoints"), i, v)
            {
                char key[24];
                snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
                fputc(' ', out);
                bench_print_number(out, json_object_get(json_object_get(st, kinds[k]), key),
                                   "%*.4f", 7);
            }
            fputc('\n', out);
        }
    }
    bench_print_warm_spaces(result, out);
}

void bench_print_table(const json_t *result, const char *kt_reference, FILE *out)
{
    const json_t *spaces = json_object_get(result, "spaces");
    size_t i;
    json_t *sp;
    const char *name;
    json_t *st;

    fprintf(out,
            "ktune bench: budget %lld distinct evaluations, %lld seeds, %s\n"
            "  @N: mean fraction of optimum after N evaluations; ev->5%%: median evaluations to "
            "within 5%% (succ: share of seeds)\n"
            "  Ns: mean fraction at N s of recorded compile+benchmark time; s->5%%: median "
            "seconds to within 5%%; ovh us: searcher time per proposal\n"
            "  score: autotuning-methodology score over time (0 = calculated random search, 1 = "
            "optimum); ovh@400: ovh us over the asks made at 350-399 results\n",
            (long long)json_integer_value(json_object_get(result, "budget")),
            (long long)json_integer_value(json_object_get(result, "seeds")),
            json_is_true(json_object_get(result, "include_failed"))
                ? "failed configurations included"
                : "valid configurations only");
    long long batch = (long long)json_integer_value(json_object_get(result, "batch"));
    if (batch > 1)
        fprintf(out,
                "  batch %lld: each round asks for up to %lld configurations, evaluates them and "
                "tells them; @rN: mean fraction after N rounds, r->5%%: median rounds to within "
                "5%%\n",
                batch, batch);
    fputc('\n', out);
    json_array_foreach(spaces, i, sp)
    {
        fprintf(out, "%s: %lld configurations (%lld valid), optimum %.4f ms\n",
                json_string_value(json_object_get(sp, "name")),
                (long long)json_integer_value(json_object_get(sp, "n_configs")),
                (long long)json_integer_value(json_object_get(sp, "n_valid")),
                json_number_value(json_object_get(sp, "optimum_ms")));
        bench_print_header(result, out);
        json_object_foreach(json_object_get(sp, "strategies"), name, st)
            bench_print_row(result, name, st, out);
        if (json_object_get(sp, "kt_best"))
            bench_print_kt_rows(result, json_object_get(sp, "kt_best"),
                                "best strategy per budget on this space", out);
        bench_print_score_range(sp, out);
        bench_print_rounds(result, json_object_get(sp, "strategies"), out);
        fputc('\n', out);
    }
    fprintf(out, "mean over %zu spaces\n", json_array_size(spaces));
    bench_print_header(result, out);
    json_object_foreach(json_object_get(result, "averages"), name, st)
        bench_print_row(result, name, st, out);
    bench_print_reference(result, kt_reference, out);
    bench_print_rounds(result, json_object_get(result, "averages"), out);
    bench_print_warm(result, out);
    bench_print_ablations(result, out);
    bench_cv_print(result, out);
}
