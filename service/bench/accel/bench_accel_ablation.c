/* bench/accel/bench_accel_ablation — `--accel`: where each strategy's proposals came from, and each
 * named variant against its strategy with Welch's t-test over seeds (see bench_accel_impl.h; issue
 * 30: an ablation beside every learned part, mindmap's gradient steps against the neighbour
 * fallback alone). Data only: bench_accel_report.c prints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/accel/bench_accel_impl.h"
#include "bench/bench_stats.h"
#include "bench/bench_strategy.h"

static const ba_run *ba_ab_at(const bench_accel_options *opt, const ba_run *runs, int p, int s,
                              int seed)
{
    return &runs[((size_t)p * (size_t)opt->n_strategies + (size_t)s) * (size_t)opt->seeds +
                 (size_t)seed];
}

/* Adds every integer member of src to the same member of dst. */
static void ba_ab_add_counts(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v)
    {
        json_int_t have = json_integer_value(json_object_get(dst, k));
        json_object_set_new(dst, k, json_integer(have + json_integer_value(v)));
    }
}

json_t *ba_sources(const bench_accel_options *opt, const json_t *presets, const ba_run *runs)
{
    json_t *out = json_object();
    int n_presets = (int)json_array_size(presets);
    for (int s = 0; out && s < opt->n_strategies; s++) {
        json_t *total = json_object(), *per = json_object();
        int any = 0;
        for (int p = 0; total && per && p < n_presets; p++) {
            json_t *pc = json_object();
            for (int seed = 0; pc && seed < opt->seeds; seed++) {
                const json_t *st = ba_ab_at(opt, runs, p, s, seed)->sources;
                if (!st)
                    continue;
                any = 1;
                ba_ab_add_counts(pc, st);
                ba_ab_add_counts(total, st);
            }
            json_object_set_new(
                per, json_string_value(json_object_get(json_array_get(presets, p), "name")), pc);
        }
        if (any)
            json_object_set_new(out, opt->strategies[s],
                                json_pack("{s:O, s:O}", "total", total, "presets", per));
        json_decref(total);
        json_decref(per);
    }
    return out;
}

static json_t *ba_ab_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* ln(best / minimum) after n evaluations of each seed of (p, s) into v; how many were finite. */
static int ba_ab_logs(const bench_accel_options *opt, const ba_run *runs, int p, int s, int n,
                      double *v)
{
    int k = 0;
    for (int seed = 0; seed < opt->seeds; seed++) {
        const ba_run *r = ba_ab_at(opt, runs, p, s, seed);
        double b = r->n > 0 ? r->best[(n < r->n ? n : r->n) - 1] : INFINITY;
        if (isfinite(b) && b > 0)
            v[k++] = log(b);
    }
    return k;
}

static void ba_ab_add(json_t *out, const char *variant, const char *base, const char *preset,
                      int cp, const double *va, int n_a, const double *vb, int n_b)
{
    bench_stats_welch_result w;
    int ok = bench_stats_welch(va, n_a, vb, n_b, &w) == 0;
    json_array_append_new(
        out, json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:o}", "variant", variant, "base",
                       base, "preset", preset, "checkpoint", cp, "mean_variant",
                       ba_ab_num(n_a ? exp(bench_stats_mean(va, n_a)) : NAN), "mean_base",
                       ba_ab_num(n_b ? exp(bench_stats_mean(vb, n_b)) : NAN), "t",
                       ba_ab_num(ok ? w.t : NAN), "df", ba_ab_num(ok ? w.df : NAN), "p",
                       ba_ab_num(ok ? w.p : NAN)));
}

/* Variant row s against base row b at cp evaluations: per preset, then a seed's mean over the
 * presets (only where every seed of both found a valid mapping on every preset). */
static void ba_ab_pair(const bench_accel_options *opt, const json_t *presets, const ba_run *runs,
                       int s, int b, int cp, double *buf, json_t *out)
{
    int seeds = opt->seeds, n_presets = (int)json_array_size(presets), complete = 1;
    double *va = buf, *vb = buf + seeds, *ma = buf + 2 * seeds, *mb = buf + 3 * seeds;
    for (int k = 0; k < seeds; k++)
        ma[k] = mb[k] = 0;
    for (int p = 0; p < n_presets; p++) {
        int n_a = ba_ab_logs(opt, runs, p, s, cp, va), n_b = ba_ab_logs(opt, runs, p, b, cp, vb);
        ba_ab_add(out, opt->strategies[s], opt->strategies[b],
                  json_string_value(json_object_get(json_array_get(presets, p), "name")), cp, va,
                  n_a, vb, n_b);
        complete &= n_a == seeds && n_b == seeds;
        for (int k = 0; complete && k < seeds; k++) {
            ma[k] += va[k] / n_presets;
            mb[k] += vb[k] / n_presets;
        }
    }
    if (complete && n_presets > 1)
        ba_ab_add(out, opt->strategies[s], opt->strategies[b], "mean", cp, ma, seeds, mb, seeds);
}

json_t *ba_ablations(const bench_accel_options *opt, const json_t *presets, const ba_run *runs,
                     const json_t *checkpoints)
{
    json_t *out = json_array(), *cp;
    double *buf = malloc((size_t)4 * (size_t)(opt->seeds > 0 ? opt->seeds : 1) * sizeof *buf);
    if (!out || !buf) {
        json_decref(out);
        out = NULL;
        goto done;
    }
    for (int s = 0; s < opt->n_strategies; s++) {
        char base[64], msg[256];
        json_t *o = NULL;
        int b = -1;
        if (!bench_strategy_is_variant(opt->strategies[s]) ||
            bench_strategy_split(opt->strategies[s], base, sizeof base, &o, msg, sizeof msg) < 0)
            continue;
        json_decref(o);
        for (int k = 0; k < opt->n_strategies; k++)
            b = strcmp(opt->strategies[k], base) == 0 ? k : b;
        if (b < 0)
            continue;
        size_t i;
        json_array_foreach(checkpoints, i, cp)
            ba_ab_pair(opt, presets, runs, s, b, (int)json_integer_value(cp), buf, out);
    }
done:
    free(buf);
    return out;
}
