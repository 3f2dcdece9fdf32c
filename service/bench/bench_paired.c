/* bench/bench_paired — paired comparisons over problems (see bench_paired.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_paired.h"

typedef struct bp_diff {
    double abs; /* |log a - log b|, INFINITY for a miss against a hit */
    int sign;   /* +1: a worse, -1: a better */
} bp_diff;

static int bp_diff_cmp(const void *x, const void *y)
{
    double a = ((const bp_diff *)x)->abs, b = ((const bp_diff *)y)->abs;
    return a < b ? -1 : a > b;
}

/* The two-sided exact p-value of W+ = w over n ranks 1..n without ties: the null distribution
 * counted (each of the 2^n sign patterns equally likely). */
static double bp_exact_p(int n, double w)
{
    int max = n * (n + 1) / 2;
    double count[BENCH_PAIRED_EXACT_N * (BENCH_PAIRED_EXACT_N + 1) / 2 + 1];
    memset(count, 0, sizeof count);
    count[0] = 1;
    for (int r = 1; r <= n; r++) {
        for (int s = max; s >= r; s--)
            count[s] += count[s - r];
    }
    double total = ldexp(1.0, n), lo = 0, hi = 0;
    for (int s = 0; s <= max; s++) {
        lo += s <= w + 1e-9 ? count[s] : 0;
        hi += s >= w - 1e-9 ? count[s] : 0;
    }
    double p = 2 * (lo < hi ? lo : hi) / total;
    return p > 1 ? 1 : p;
}

int bench_paired_wilcoxon(const double *a, const double *b, int n, bench_paired_result *out)
{
    memset(out, 0, sizeof *out);
    out->p = NAN;
    out->z = NAN;
    if (n < 0)
        return -1;
    bp_diff *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
    if (!d)
        return -1;
    int m = 0, ties = 0;
    double tie_sum = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            continue;
        out->n_pairs++;
        double la = log(a[i]), lb = log(b[i]);
        if (la == lb || (isinf(la) && isinf(lb)))
            continue; /* the same ratio, or two misses */
        d[m].sign = la > lb ? 1 : -1;
        d[m].abs = isinf(la) || isinf(lb) ? INFINITY : fabs(la - lb);
        out->a_better += la < lb;
        out->b_better += la > lb;
        m++;
    }
    qsort(d, (size_t)m, sizeof *d, bp_diff_cmp);
    for (int i = 0; i < m;) { /* average ranks over runs of equal |d| */
        int j = i;
        while (j + 1 < m && d[j + 1].abs == d[i].abs)
            j++;
        double rank = (i + j + 2) / 2.0, t = j - i + 1;
        for (int k = i; k <= j; k++)
            *(d[k].sign > 0 ? &out->w_plus : &out->w_minus) += rank;
        if (t > 1) {
            ties = 1;
            tie_sum += t * t * t - t;
        }
        i = j + 1;
    }
    out->n = m;
    free(d);
    if (m == 0) {
        out->p = 1;
        return 0;
    }
    double mu = m * (m + 1) / 4.0, var = m * (m + 1) * (2.0 * m + 1) / 24.0 - tie_sum / 48.0,
           dev = out->w_plus - mu;
    double cc = fabs(dev) < 0.5 ? fabs(dev) : 0.5; /* continuity correction, never past 0 */
    out->z = var > 0 ? (dev - (dev > 0 ? cc : -cc)) / sqrt(var) : 0;
    if (!ties && m <= BENCH_PAIRED_EXACT_N) {
        out->exact = 1;
        out->p = bp_exact_p(m, out->w_plus);
    } else {
        out->p = var > 0 ? erfc(fabs(out->z) / sqrt(2.0)) : 1;
    }
    return 0;
}

void bench_paired_holm(const double *p, double *adj, int n)
{
    int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order), m = 0;
    double *val = calloc((size_t)(n > 0 ? n : 1), sizeof *val);
    if (!order || !val) { /* no memory: the unadjusted Bonferroni bound, still valid */
        for (int i = 0; i < n; i++)
            adj[i] = isnan(p[i]) ? NAN : fmin(1, p[i] * n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        val[i] = p[i];
        if (!isnan(p[i]))
            order[m++] = i;
    }
    for (int i = 1; i < m; i++) { /* insertion sort by p: a report has a handful of rows */
        int k = order[i], j = i - 1;
        while (j >= 0 && val[order[j]] > val[k]) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = k;
    }
    double run = 0;
    for (int i = 0; i < n; i++)
        adj[i] = isnan(val[i]) ? NAN : adj[i];
    for (int i = 0; i < m; i++) {
        double q = fmin(1, val[order[i]] * (m - i));
        run = q > run ? q : run;
        adj[order[i]] = run;
    }
out:
    free(order);
    free(val);
}

json_t *bench_paired_ratio_json(double r)
{
    return isnan(r) ? json_null() : isinf(r) ? json_string("miss") : json_real(r);
}

/* A per-problem array back into ratios (n values into v, at most cap); the count. */
static int bp_ratios(const json_t *arr, double *v, int cap)
{
    size_t i;
    const json_t *x;
    int n = 0;
    json_array_foreach(arr, i, x)
    {
        if (n >= cap)
            break;
        v[n++] = json_is_number(x) ? json_number_value(x) : json_is_string(x) ? INFINITY : NAN;
    }
    return n;
}

json_t *bench_paired_report(const json_t *preds, const char *const *learned, int n_learned,
                            const char *const *baselines, int n_baselines)
{
    static const char *const metrics[] = {"top1", "top5"};
    json_t *rows = json_array();
    double *va = NULL, *vb = NULL, *p = NULL;
    int cap = 0, nrows = 0;
    for (int l = 0; l < n_learned; l++) {
        const json_t *pp = json_object_get(json_object_get(preds, learned[l]), "per_problem");
        for (int m = 0; pp && m < 2; m++) {
            int len = (int)json_array_size(json_object_get(pp, metrics[m]));
            cap = len > cap ? len : cap;
        }
    }
    va = calloc((size_t)cap + 1, sizeof *va);
    vb = calloc((size_t)cap + 1, sizeof *vb);
    if (!rows || !va || !vb)
        goto fail;
    for (int l = 0; l < n_learned; l++) {
        const json_t *pa = json_object_get(json_object_get(preds, learned[l]), "per_problem");
        for (int b = 0; pa && b < n_baselines; b++) {
            const json_t *pb = json_object_get(json_object_get(preds, baselines[b]), "per_problem");
            for (int m = 0; pb && m < 2; m++) {
                int na = bp_ratios(json_object_get(pa, metrics[m]), va, cap),
                    nb = bp_ratios(json_object_get(pb, metrics[m]), vb, cap);
                bench_paired_result r;
                if (na != nb || bench_paired_wilcoxon(va, vb, na, &r) < 0)
                    continue; /* not the same problems: no pairs */
                json_t *row = json_pack(
                    "{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:o, s:f, s:b}", "a", learned[l],
                    "b", baselines[b], "metric", metrics[m], "n_pairs", r.n_pairs, "n", r.n,
                    "a_better", r.a_better, "b_better", r.b_better, "w_plus", r.w_plus, "w_minus",
                    r.w_minus, "z", isnan(r.z) ? json_null() : json_real(r.z), "p", r.p, "exact",
                    r.exact);
                if (!row || json_array_append_new(rows, row) < 0)
                    goto fail;
                nrows++;
            }
        }
    }
    if (!(p = calloc((size_t)nrows + 1, sizeof *p)))
        goto fail;
    for (int i = 0; i < nrows; i++)
        p[i] = json_number_value(json_object_get(json_array_get(rows, (size_t)i), "p"));
    bench_paired_holm(p, p, nrows);
    for (int i = 0; i < nrows; i++)
        json_object_set_new(json_array_get(rows, (size_t)i), "p_holm", json_real(p[i]));
    free(va);
    free(vb);
    free(p);
    return rows;
fail:
    free(va);
    free(vb);
    free(p);
    json_decref(rows);
    return NULL;
}

void bench_paired_print(const json_t *paired, FILE *out)
{
    size_t i;
    const json_t *r;
    if (json_array_size(paired) == 0)
        return;
    fprintf(out,
            "\npaired over the held-out problems (Wilcoxon signed-rank on log ratio, two-sided; "
            "a miss is the largest difference; Holm over the %zu rows)\n",
            json_array_size(paired));
    fprintf(out, "%-9s %-9s %-6s %5s %5s %8s %8s %8s %9s %8s %8s\n", "a", "b", "metric", "pairs",
            "diff", "a better", "b better", "z", "p", "p Holm", "verdict");
    json_array_foreach(paired, i, r)
    {
        double p = json_number_value(json_object_get(r, "p_holm"));
        int ab = (int)json_integer_value(json_object_get(r, "a_better")),
            bb = (int)json_integer_value(json_object_get(r, "b_better"));
        const json_t *z = json_object_get(r, "z");
        fprintf(out, "%-9s %-9s %-6s %5lld %5lld %8d %8d",
                json_string_value(json_object_get(r, "a")),
                json_string_value(json_object_get(r, "b")),
                json_string_value(json_object_get(r, "metric")),
                json_integer_value(json_object_get(r, "n_pairs")),
                json_integer_value(json_object_get(r, "n")), ab, bb);
        if (json_is_number(z))
            fprintf(out, " %8.2f", json_number_value(z));
        else
            fprintf(out, " %8s", "-");
        fprintf(out, " %8.4f%s %8.4f %8s\n", json_number_value(json_object_get(r, "p")),
                json_is_true(json_object_get(r, "exact")) ? "e" : " ", p,
                p >= 0.05                  ? "no diff"
                : json_number_value(z) < 0 ? "a better"
                                           : "b better");
    }
    fprintf(out, "(e: exact p; verdict at Holm-adjusted 0.05; a/b better: pairs where its ratio "
                 "is lower)\n");
}

/* A run's per-problem arrays of one predictor: its "per_problem", or built from "heldout" rows. */
static json_t *bp_run_ratios(const json_t *pred)
{
    const json_t *pp = json_object_get(pred, "per_problem"), *h;
    size_t i;
    if (pp)
        return json_incref((json_t *)pp);
    json_t *out = json_pack("{s:[], s:[]}", "top1", "top5");
    json_array_foreach(json_object_get(pred, "heldout"), i, h)
    {
        const json_t *r1 = json_object_get(h, "top1_ratio"), *r5 = json_object_get(h, "top5_ratio");
        int unmes5 = json_integer_value(json_object_get(h, "top5_unmeasured")) > 0;
        double v1 = json_is_number(r1)   ? json_number_value(r1)
                    : json_is_string(r1) ? INFINITY
                                         : NAN;
        double v5 = unmes5               ? NAN
                    : json_is_number(r5) ? json_number_value(r5)
                    : json_is_string(r5) ? INFINITY
                                         : NAN;
        if (!out ||
            json_array_append_new(json_object_get(out, "top1"), bench_paired_ratio_json(v1)) < 0 ||
            json_array_append_new(json_object_get(out, "top5"), bench_paired_ratio_json(v5)) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *bench_paired_pool(json_t *const *results, int n, const char *const *learned, int n_learned,
                          const char *const *baselines, int n_baselines)
{
    json_t *pool = json_pack("{s:s, s:i, s:{}}", "mode", "predict-pool", "runs", n, "kernels"),
           *pooled = json_object(); /* kernel -> predictor -> {top1, top5} */
    const char *kernel;
    json_t *k;
    if (!pool || !pooled)
        goto fail;
    for (int r = 0; r < n; r++) {
        const json_t *preds = json_object_get(results[r], "predictors");
        const char *kn = json_string_value(json_object_get(results[r], "kernel"));
        int all = kn != NULL;
        for (int i = 0; all && i < n_learned + n_baselines; i++)
            all = json_object_get(preds, i < n_learned ? learned[i] : baselines[i - n_learned]) !=
                  NULL;
        if (!all)
            continue; /* not every predictor: its problems would not pair */
        json_t *kp = json_object_get(pooled, kn);
        if (!kp && (json_object_set_new(pooled, kn, kp = json_object()) < 0 || !kp))
            goto fail;
        for (int i = 0; i < n_learned + n_baselines; i++) {
            const char *name = i < n_learned ? learned[i] : baselines[i - n_learned];
            json_t *mine = bp_run_ratios(json_object_get(preds, name)),
                   *acc = json_object_get(kp, name);
            if (!mine)
                goto fail;
            if (!acc) {
                json_object_set_new(kp, name, json_pack("{s:o}", "per_problem", mine));
                continue;
            }
            json_t *app = json_object_get(acc, "per_problem");
            json_array_extend(json_object_get(app, "top1"), json_object_get(mine, "top1"));
            json_array_extend(json_object_get(app, "top5"), json_object_get(mine, "top5"));
            json_decref(mine);
        }
        json_t *row = json_object_get(json_object_get(pool, "kernels"), kn);
        if (!row)
            json_object_set_new(json_object_get(pool, "kernels"), kn,
                                row = json_pack("{s:i}", "runs", 0));
        json_object_set_new(row, "runs",
                            json_integer(json_integer_value(json_object_get(row, "runs")) + 1));
    }
    json_object_foreach(pooled, kernel, k)
    {
        json_t *rows = bench_paired_report(k, learned, n_learned, baselines, n_baselines),
               *row = json_object_get(json_object_get(pool, "kernels"), kernel);
        if (!rows || !row)
            goto fail;
        json_object_set_new(
            row, "problems",
            json_integer((json_int_t)json_array_size(json_object_get(
                json_object_get(json_object_get(k, learned[0]), "per_problem"), "top1"))));
        json_object_set_new(row, "paired", rows);
    }
    json_decref(pooled);
    return pool;
fail:
    json_decref(pool);
    json_decref(pooled);
    return NULL;
}

void bench_paired_pool_print(const json_t *pool, FILE *out)
{
    const char *kernel;
    const json_t *k;
    fprintf(out, "ktune bench --predict --pool: %lld saved reports pooled per kernel\n",
            json_integer_value(json_object_get(pool, "runs")));
    json_object_foreach((json_t *)json_object_get(pool, "kernels"), kernel, k)
    {
        fprintf(out, "\n== %s: %lld runs, %lld held-out problems pooled ==", kernel,
                json_integer_value(json_object_get(k, "runs")),
                json_integer_value(json_object_get(k, "problems")));
        bench_paired_print(json_object_get(k, "paired"), out);
    }
}
