/* bench/accel/bench_accel_report — the tables of `ktune bench --accel` (formats only; the figures
 * are bench_accel_summary.c's): phase 1's surrogates, iso-iteration per preset and as ratios to the
 * reference with the paper's figures, iso-time on the wall and the modelled clock, costs. */
#include <math.h>
#include <string.h>

#include "bench/accel/bench_accel.h"

static const json_t *jget(const json_t *o, const char *k)
{
    return json_object_get(o, k);
}

static double jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A cell: the number (fmt) or "-"; "*" after it when fewer than all seeds found something. */
static void cell(FILE *out, const json_t *v, int width, const char *fmt, int partial)
{
    char buf[48];
    if (json_is_number(v))
        snprintf(buf, sizeof buf, fmt, json_number_value(v));
    else
        snprintf(buf, sizeof buf, "-");
    if (partial)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "*");
    fprintf(out, " %*s", width, buf);
}

static void surrogates(const json_t *res, FILE *out)
{
    const json_t *s;
    size_t i;
    if (json_array_size(jget(res, "surrogates")) == 0) {
        fprintf(out, "phase 1: no strategy needs a surrogate\n");
        return;
    }
    fprintf(out, "phase 1: surrogates (random valid mappings of sampled problems; Huber loss)\n");
    fprintf(out, "%-10s %8s %8s %6s %6s %9s %9s %9s %9s %8s %s\n", "kernel", "problems", "samples",
            "valid", "epochs", "test hub", "obj rmse", "spearman", "sample s", "train s", "cached");
    json_array_foreach(jget(res, "surrogates"), i, s)
    {
        const json_t *m = jget(s, "metrics");
        fprintf(out, "%-10s %8.0f %8.0f %6.3f %6.0f %9.4f %9.4f %9.4f %9.2f %8.2f %s\n",
                json_string_value(jget(s, "kernel")), jnum(s, "problems"), jnum(s, "samples"),
                jnum(s, "valid_fraction"), jnum(m, "epochs"), jnum(m, "test_huber"),
                jnum(m, "test_objective_rmse"), jnum(m, "test_objective_spearman"),
                jnum(s, "sample_s"), jnum(s, "train_s"),
                json_is_true(jget(s, "cached")) ? "yes" : "no");
    }
    fprintf(out, "(obj rmse: held-out problems' ln(EDP / min) error; spearman: its rank "
                 "correlation)\n");
}

/* Per preset and strategy the means at the points; labels are the column heads. */
static void per_preset(const json_t *res, const json_t *block, const char *const *labels, int n,
                       FILE *out)
{
    const json_t *presets = jget(res, "presets"), *p, *strategies = jget(res, "strategies"), *st;
    size_t i, j;
    int seeds = (int)json_integer_value(jget(res, "seeds"));
    fprintf(out, "%-16s %-8s", "preset", "strategy");
    for (int k = 0; k < n; k++)
        fprintf(out, " %9s", labels[k]);
    fputc('\n', out);
    json_array_foreach(presets, i, p)
    {
        const char *pn = json_string_value(jget(p, "name"));
        const json_t *pp = jget(jget(block, "per_preset"), pn);
        json_array_foreach(strategies, j, st)
        {
            const json_t *e = jget(pp, json_string_value(st));
            fprintf(out, "%-16s %-8s", j == 0 ? pn : "", json_string_value(st));
            for (int k = 0; k < n; k++) {
                int found = (int)json_integer_value(json_array_get(jget(e, "found"), (size_t)k));
                cell(out, json_array_get(jget(e, "mean"), (size_t)k), 9, "%.3f", found < seeds);
            }
            fputc('\n', out);
        }
    }
}

/* Per strategy the ratio to the reference at the points, and the paper's figure (kind:
 * "iso_iteration" or "iso_time"). */
static void ratios(const json_t *res, const json_t *block, const char *const *labels, int n,
                   const char *kind, FILE *out)
{
    const json_t *strategies = jget(res, "strategies"), *st, *paper = jget(res, "paper");
    const char *ref = json_string_value(jget(res, "reference"));
    size_t j;
    fprintf(out, "geometric mean over presets of strategy / %s (> 1: %s better)\n", ref, ref);
    fprintf(out, "%-8s", "strategy");
    for (int k = 0; k < n; k++)
        fprintf(out, " %9s", labels[k]);
    fprintf(out, " %12s\n", "paper");
    json_array_foreach(strategies, j, st)
    {
        const char *s = json_string_value(st);
        if (strcmp(s, ref) == 0)
            continue;
        fprintf(out, "%-8s", s);
        for (int k = 0; k < n; k++)
            cell(out, json_array_get(jget(jget(block, "ratio_vs_reference"), s), (size_t)k), 9,
                 "%.2fx", 0);
        const json_t *pv = jget(jget(paper, kind), s);
        if (json_is_number(pv) && strcmp(ref, "mindmap") == 0)
            fprintf(out, " %6.2fx (%s)\n", json_number_value(pv),
                    json_string_value(jget(jget(paper, "names"), s)));
        else
            fprintf(out, " %12s\n", "-");
    }
}

static void iso_time(const json_t *res, const json_t *block, const char *title, FILE *out)
{
    char lab[24][16];
    const char *labels[24];
    const json_t *t;
    size_t i;
    int n = 0;
    json_array_foreach(jget(block, "times_s"), i, t)
    {
        if (n == 23)
            break;
        snprintf(lab[n], sizeof lab[n], "%gs", json_number_value(t));
        labels[n] = lab[n];
        n++;
    }
    if (json_is_number(jget(block, "headline_s"))) {
        snprintf(lab[n], sizeof lab[n], "T=%.3gs", jnum(block, "headline_s"));
        labels[n] = lab[n];
        n++;
    }
    if (json_is_true(jget(block, "surrogate_evaluations_free")))
        fprintf(out,
                "\n%s: best EDP / minimum at equal time; T = the median time %s needs for its "
                "budget (the paper's iso-time: MM run until convergence)\n",
                title, json_string_value(jget(res, "reference")));
    else
        fprintf(out,
                "\n%s: best EDP / minimum at equal time; T = the longest time at which every "
                "strategy's median run is still within its budget\n",
                title);
    per_preset(res, block, labels, n, out);
    ratios(res, block, labels, n, "iso_time", out);
}

/* One line of source shares: "name  n proposals  gradient 0.61  fallback 0.30 ...". */
static void source_line(const char *name, const json_t *counts, FILE *out)
{
    const char *k;
    const json_t *v;
    double total = 0;
    json_object_foreach((json_t *)counts, k, v) total += (double)json_integer_value(v);
    fprintf(out, "  %-24s %7.0f", name, total);
    json_object_foreach((json_t *)counts, k, v)
        fprintf(out, "  %s %.3f", k, total > 0 ? (double)json_integer_value(v) / total : 0.0);
    fputc('\n', out);
}

/* Where the proposals of each strategy that counts them came from, overall and per preset. */
static void sources(const json_t *res, FILE *out)
{
    const char *name, *preset;
    const json_t *st, *pc;
    if (json_object_size(jget(res, "sources")) == 0)
        return;
    fprintf(
        out,
        "\nproposal sources (share of the proposals; gradient: the projection of a gradient "
        "step on the surrogate; gradient_neighbour: when that projection was proposed already, its "
        "unvisited neighbour the surrogate predicts best; fallback: the same around the "
        "current mapping, the gradient steps having found nothing; injection: an annealed "
        "random mapping; restart: a stalled chain's new start; random: nothing else left; "
        "start: a chain's first)\n");
    json_object_foreach((json_t *)jget(res, "sources"), name, st)
    {
        source_line(name, jget(st, "total"), out);
        json_object_foreach((json_t *)jget(st, "presets"), preset, pc) source_line(preset, pc, out);
    }
}

/* Each named variant against its strategy (Welch over seeds of ln(best / minimum)). */
static void ablations(const json_t *res, FILE *out)
{
    const json_t *t;
    size_t i;
    if (json_array_size(jget(res, "ablations")) == 0)
        return;
    fprintf(out,
            "\nablations: named variant against its strategy, best EDP / minimum (geometric "
            "mean over seeds) and Welch's two-sided p on its logarithm over seeds (not "
            "corrected for the %zu tests)\n",
            json_array_size(jget(res, "ablations")));
    fprintf(out, "%-24s %-16s %6s %9s %9s %9s\n", "variant", "preset", "@N", "base", "variant",
            "p");
    json_array_foreach(jget(res, "ablations"), i, t)
    {
        fprintf(out, "%-24s %-16s %6.0f %9.3f %9.3f %9.3g\n", json_string_value(jget(t, "variant")),
                json_string_value(jget(t, "preset")), jnum(t, "checkpoint"), jnum(t, "mean_base"),
                jnum(t, "mean_variant"), jnum(t, "p"));
    }
}

void bench_accel_print_table(const json_t *res, FILE *out)
{
    char lab[8][16];
    const char *labels[8];
    const json_t *c, *strategies = jget(res, "strategies"), *st, *iso = jget(res, "iso_iteration");
    size_t i;
    int n = 0;

    fprintf(out,
            "ktune bench --accel: accel:%s, %zu presets x %lld seeds, budget %lld cost-model "
            "evaluations per run\n",
            json_string_value(jget(res, "device")), json_array_size(jget(res, "presets")),
            json_integer_value(jget(res, "seeds")), json_integer_value(jget(res, "budget")));
    fprintf(out, "invalid mappings proposed: %s\n",
            json_is_true(jget(res, "free_invalid"))
                ? "rejected by the cheap validity check, no evaluation (--free-invalid)"
                : "evaluated, told as invalid, counted in the budget");
    surrogates(res, out);
    json_array_foreach(jget(res, "checkpoints"), i, c)
    {
        if (n == 8)
            break;
        snprintf(lab[n], sizeof lab[n], "@%lld", json_integer_value(c));
        labels[n] = lab[n];
        n++;
    }
    fprintf(out, "\niso-iteration: best EDP / algorithmic minimum after N evaluations, mean over "
                 "seeds (*: some seeds had no valid mapping yet; mean over those that had)\n");
    per_preset(res, iso, labels, n, out);
    ratios(res, iso, labels, n, "iso_iteration", out);
    const json_t *rm = jget(iso, "reference_over_min");
    fprintf(out,
            "%s above the lower bound at %s: mean %.2fx, geometric mean %.2fx over %lld presets "
            "(paper: %.2fx on average)\n",
            json_string_value(jget(res, "reference")), n ? labels[n - 1] : "-", jnum(rm, "mean"),
            jnum(rm, "geomean"), json_integer_value(jget(rm, "presets")),
            jnum(jget(res, "paper"), "mindmap_over_min"));
    iso_time(res, jget(res, "iso_time_wall"), "iso-time, wall clock (searcher + cost model)", out);
    char title[128];
    snprintf(title, sizeof title, "iso-time, modelled clock (wall + %g ms per evaluation)",
             jnum(res, "eval_latency_ms"));
    iso_time(res, jget(res, "iso_time_modelled"), title, out);
    snprintf(title, sizeof title,
             "iso-time, paper's accounting (wall + %g ms per evaluation, none for mindmap's)",
             jnum(res, "eval_latency_ms"));
    iso_time(res, jget(res, "iso_time_modelled_paper"), title, out);
    fprintf(out, "\ncosts per strategy (all presets and seeds)\n");
    fprintf(out, "%-8s %8s %11s %10s %13s %13s %13s\n", "strategy", "valid", "evaluations", "s/run",
            "searcher ms", "oracle/run", "rejected/run");
    json_array_foreach(strategies, i, st)
    {
        const json_t *e = jget(jget(res, "costs"), json_string_value(st));
        fprintf(out, "%-8s %8.3f %11.0f %10.3f %13.4f %13.1f %13.1f\n", json_string_value(st),
                jnum(e, "valid_fraction"), jnum(e, "evaluations"), jnum(e, "wall_s_per_run"),
                jnum(e, "searcher_ms_per_eval"), jnum(e, "oracle_checks_per_run"),
                jnum(e, "rejected_per_run"));
    }
    fprintf(out, "(valid: share of the evaluations that were valid mappings; searcher ms: ask + "
                 "tell per evaluation, surrogate work included; oracle: validity checks the "
                 "searcher made, not counted in the budget)\n");
    sources(res, out);
    ablations(res, out);
    fprintf(out, "\nphase 2 %.1f s, all %.1f s\n", jnum(res, "phase2_s"), jnum(res, "wall_s"));
}
