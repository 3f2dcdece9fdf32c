/* bench/device/bench_device_compare — Welch's t-tests between the rows of a device bench, from the
 * result's "strategies" member (see bench_device_compare.h). */
#include "bench/device/bench_device_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_parse.h"
#include "bench/bench_stats.h"

static json_t *cmp_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The per-seed values of one row at the checkpoint; null (a seed that found nothing) becomes
 * INFINITY, which the test refuses. Returns how many. */
static int cmp_values(const json_t *row, const char *member, const char *key, double *v)
{
    const json_t *per =
        json_object_get(json_object_get(json_object_get(row, member), key), "per_seed");
    const json_t *x;
    size_t i;
    int n = 0;
    json_array_foreach(per, i, x)
    {
        if (n == BENCH_MAX_SEEDS)
            break;
        v[n++] = json_is_number(x) ? json_number_value(x) : INFINITY;
    }
    return n;
}

static int cmp_is_tested_before(const json_t *tested, const char *label, size_t before)
{
    for (size_t i = 0; i < before && i < json_array_size(tested); i++) {
        if (strcmp(json_string_value(json_array_get(tested, i)), label) == 0)
            return 1;
    }
    return 0;
}

/* p_holm of every test of the array: Holm's correction over the tests made (p not null). 0, or -1
 * when out of memory or the family is larger than bench_stats_holm takes. */
static int cmp_holm(json_t *tests)
{
    size_t n = json_array_size(tests);
    double *p = malloc((n ? n : 1) * sizeof *p), *adj = malloc((n ? n : 1) * sizeof *adj);
    int rc = -1;
    if (!p || !adj)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(json_array_get(tests, i), "p");
        p[i] = json_is_number(v) ? json_number_value(v) : NAN;
    }
    if (bench_stats_holm(p, (int)(n > BENCH_STATS_HOLM_MAX ? BENCH_STATS_HOLM_MAX + 1 : n), adj) <
        0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (json_object_set_new(json_array_get(tests, i), "p_holm", cmp_num(adj[i])) < 0)
            goto out;
    }
    rc = 0;
out:
    free(p);
    free(adj);
    return rc;
}

json_t *bench_device_welch_json(const json_t *strategies, const json_t *tested, const char *member,
                                const char *key)
{
    double a[BENCH_MAX_SEEDS], b[BENCH_MAX_SEEDS];
    json_t *out = json_array(), *x;
    size_t i;

    json_array_foreach(tested, i, x)
    {
        const char *la = json_string_value(x), *lb;
        const json_t *ra = json_object_get(strategies, la ? la : ""), *rb;
        if (!out || !ra)
            continue;
        int na = cmp_values(ra, member, key, a);
        json_object_foreach((json_t *)strategies, lb, rb)
        {
            bench_stats_welch_result w;
            if (strcmp(la, lb) == 0 || cmp_is_tested_before(tested, lb, i))
                continue;
            int nb = cmp_values(rb, member, key, b);
            int ok = bench_stats_welch(a, na, b, nb, &w) == 0;
            json_t *e = json_pack(
                "{s:s, s:s, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:n, s:o}", "a", la, "b", lb, "n_a",
                na, "n_b", nb, "mean_a", cmp_num(w.mean_a), "mean_b", cmp_num(w.mean_b), "t",
                ok && !isnan(w.t) ? cmp_num(w.t) : json_null(), "df", cmp_num(w.df), "p",
                ok ? cmp_num(w.p) : json_null(), "p_holm", "lower_by", cmp_num(w.lower_by));
            if (!e || json_array_append_new(out, e) < 0) {
                json_decref(out);
                out = NULL;
                break;
            }
        }
    }
    if (out && cmp_holm(out) < 0) {
        json_decref(out);
        out = NULL;
    }
    return out;
}
