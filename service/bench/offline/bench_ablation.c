/* bench/offline/bench_ablation — named variants against their strategies (see bench_ablation.h). */
#include "bench/offline/bench_ablation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_stats.h"
#include "bench/bench_strategy.h"

/* The per-seed fractions of row name at checkpoint key on space sp into v (at most cap): how many.
 */
static int bench_ablation_seeds(const json_t *sp, const char *name, const char *key, double *v,
                                int cap)
{
    const json_t *a = json_object_get(
        json_object_get(json_object_get(json_object_get(sp, "strategies"), name), "fraction_seeds"),
        key);
    size_t i;
    json_t *x;
    int n = 0;
    json_array_foreach(a, i, x)
    {
        if (n < cap)
            v[n++] = json_number_value(x);
    }
    return n;
}

static json_t *bench_ablation_num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* One test of va[n_a] against vb[n_b] appended to out. */
static void bench_ablation_add(json_t *out, const char *variant, const char *base,
                               const char *space, long long cp, const double *va, int n_a,
                               const double *vb, int n_b)
{
    bench_stats_welch_result w;
    int ok = bench_stats_welch(va, n_a, vb, n_b, &w) == 0;
    json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o}", "variant",
                                         variant, "base", base, "space", space, "checkpoint",
                                         (json_int_t)cp, "mean_variant",
                                         bench_ablation_num(bench_stats_mean(va, n_a)), "mean_base",
                                         bench_ablation_num(bench_stats_mean(vb, n_b)), "t",
                                         bench_ablation_num(ok ? w.t : NAN), "df",
                                         bench_ablation_num(ok ? w.df : NAN), "p",
                                         bench_ablation_num(ok ? w.p : NAN)));
}

/* variant against base at checkpoint cp on every space, then on the mean over the spaces. */
static void bench_ablation_pair(json_t *out, const json_t *spaces, const char *variant,
                                const char *base, long long cp, int seeds, double *buf)
{
    double *va = buf, *vb = buf + seeds, *ma = buf + 2 * seeds, *mb = buf + 3 * seeds;
    int n_a = 0, n_b = 0, n_sp = 0;
    char key[24];
    snprintf(key, sizeof key, "%lld", cp);
    size_t i;
    json_t *sp;
    for (int s = 0; s < seeds; s++)
        ma[s] = mb[s] = 0;
    json_array_foreach(spaces, i, sp)
    {
        n_a = bench_ablation_seeds(sp, variant, key, va, seeds);
        n_b = bench_ablation_seeds(sp, base, key, vb, seeds);
        if (n_a != seeds || n_b != seeds)
            continue;
        bench_ablation_add(out, variant, base, json_string_value(json_object_get(sp, "name")), cp,
                           va, n_a, vb, n_b);
        for (int s = 0; s < seeds; s++) {
            ma[s] += va[s];
            mb[s] += vb[s];
        }
        n_sp++;
    }
    if (n_sp < 2)
        return; /* one space: its own test is the mean's */
    for (int s = 0; s < seeds; s++) {
        ma[s] /= n_sp;
        mb[s] /= n_sp;
    }
    bench_ablation_add(out, variant, base, "mean", cp, ma, seeds, mb, seeds);
}

/* Holm's correction over every test of the table (issue 30): each test gains "p_holm" (null for a
 * test not made, and for all when the table is larger than bench_stats_holm takes). */
static void bench_ablation_holm(json_t *tests)
{
    size_t n = json_array_size(tests), i;
    double *p = malloc((n ? n : 1) * sizeof *p), *adj = malloc((n ? n : 1) * sizeof *adj);
    json_t *t;
    int ok = p && adj && n <= BENCH_STATS_HOLM_MAX;
    json_array_foreach(tests, i, t)
    {
        const json_t *v = json_object_get(t, "p");
        if (ok)
            p[i] = json_is_number(v) ? json_number_value(v) : NAN;
    }
    ok = ok && bench_stats_holm(p, (int)n, adj) >= 0;
    json_array_foreach(tests, i, t)
        json_object_set_new(t, "p_holm", bench_ablation_num(ok ? adj[i] : NAN));
    free(p);
    free(adj);
}

json_t *bench_ablations(const bench_options *opt, const json_t *spaces, const json_t *checkpoints)
{
    json_t *out = json_array(), *cp;
    double *buf = malloc((size_t)4 * (size_t)(opt->seeds > 0 ? opt->seeds : 1) * sizeof *buf);
    if (!out || !buf) {
        json_decref(out);
        out = NULL;
        goto done;
    }
    for (int r = 0; r < opt->n_strategies; r++) {
        const char *variant = opt->strategies[r];
        char base[64], msg[256];
        json_t *o = NULL;
        int found = 0;
        if (!bench_strategy_is_variant(variant) ||
            bench_strategy_split(variant, base, sizeof base, &o, msg, sizeof msg) < 0)
            continue;
        json_decref(o);
        for (int b = 0; b < opt->n_strategies; b++)
            found |= strcmp(opt->strategies[b], base) == 0;
        if (!found)
            continue;
        size_t k;
        json_array_foreach(checkpoints, k, cp) bench_ablation_pair(
            out, spaces, variant, base, (long long)json_integer_value(cp), opt->seeds, buf);
    }
    bench_ablation_holm(out);
done:
    free(buf);
    return out;
}

/* The cell of one test: "base variant p holm", "*" when the Holm-adjusted p is significant. */
static void bench_ablation_cell(const json_t *t, FILE *out)
{
    const json_t *p = json_object_get(t, "p"), *h = json_object_get(t, "p_holm");
    char cell[40];
    fprintf(out, "  %.3f %.3f ", json_number_value(json_object_get(t, "mean_base")),
            json_number_value(json_object_get(t, "mean_variant")));
    if (json_is_number(p) && json_is_number(h))
        snprintf(cell, sizeof cell, "%.3g %.3g%s", json_number_value(p), json_number_value(h),
                 json_number_value(h) < BENCH_STATS_ALPHA ? "*" : "");
    else
        snprintf(cell, sizeof cell, "-");
    fprintf(out, "%-14s", cell);
}

void bench_print_ablations(const json_t *result, FILE *out)
{
    const json_t *ab = json_object_get(result, "ablations"),
                 *cps = json_object_get(result, "checkpoints");
    size_t n_cp = json_array_size(cps), i, k;
    json_t *cp;
    if (json_array_size(ab) == 0 || n_cp == 0)
        return;
    fprintf(out,
            "\nablations: each named variant against its strategy, fraction of the optimum over "
            "seeds (base, variant), Welch's two-sided p and Holm's adjusted p over the table's %zu "
            "tests (* adjusted p < 0.05)\n",
            json_array_size(ab));
    int w = 7; /* the variant column: its longest label */
    for (i = 0; i < json_array_size(ab); i++) {
        size_t n = strlen(json_string_value(json_object_get(json_array_get(ab, i), "variant")));
        w = (int)n > w ? (int)n : w;
    }
    fprintf(out, "%-30s %-*s", "space", w, "variant");
    json_array_foreach(cps, k, cp)
    {
        char h[32];
        snprintf(h, sizeof h, "@%lld base var p holm", (long long)json_integer_value(cp));
        fprintf(out, "  %-28s", h);
    }
    fputc('\n', out);
    /* the tests come checkpoint-major per variant: a row gathers one (variant, space) */
    for (i = 0; i < json_array_size(ab); i++) {
        const json_t *t = json_array_get(ab, i);
        const char *v = json_string_value(json_object_get(t, "variant"));
        const char *s = json_string_value(json_object_get(t, "space"));
        long long c0 = (long long)json_integer_value(json_array_get(cps, 0));
        if (json_integer_value(json_object_get(t, "checkpoint")) != c0)
            continue;
        fprintf(out, "%-30.30s %-*s", s, w, v);
        json_array_foreach(cps, k, cp)
        {
            for (size_t j = 0; j < json_array_size(ab); j++) {
                const json_t *u = json_array_get(ab, j);
                if (json_integer_value(json_object_get(u, "checkpoint")) ==
                        json_integer_value(cp) &&
                    strcmp(json_string_value(json_object_get(u, "variant")), v) == 0 &&
                    strcmp(json_string_value(json_object_get(u, "space")), s) == 0) {
                    bench_ablation_cell(u, out);
                    break;
                }
            }
        }
        fputc('\n', out);
    }
}
