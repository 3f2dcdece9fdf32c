/* bench/fisher/bench_fisher_report — `ktune bench --fisher`: Spearman's rank correlation, the
 * structure check of a result (a saved one is checked before it is reprinted) and the tables (see
 * bench_fisher.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/fisher/bench_fisher.h"

typedef struct bf_rank {
    double v;
    int i;
} bf_rank;

static int cmp_rank(const void *a, const void *b)
{
    const bf_rank *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i - y->i;
}

/* Ranks (1-based; ties their mean rank) of x into r. 0, -1 on no memory. */
static int ranks(const double *x, int n, double *r)
{
    bf_rank *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < n; i++) {
        s[i].v = x[i];
        s[i].i = i;
    }
    qsort(s, (size_t)n, sizeof *s, cmp_rank);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && s[j + 1].v == s[i].v)
            j++;
        for (int k = i; k <= j; k++)
            r[s[k].i] = (i + j) / 2.0 + 1;
        i = j + 1;
    }
    free(s);
    return 0;
}

double bench_fisher_spearman(const double *x, const double *y, int n)
{
    double rho = NAN;
    double *rx = NULL, *ry = NULL;
    if (n < 2)
        goto done;
    rx = malloc((size_t)n * sizeof *rx);
    ry = malloc((size_t)n * sizeof *ry);
    if (!rx || !ry || ranks(x, n, rx) < 0 || ranks(y, n, ry) < 0)
        goto done;
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        mx += rx[i];
        my += ry[i];
    }
    mx /= n;
    my /= n;
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    if (sxx > 0 && syy > 0)
        rho = sxy / sqrt(sxx * syy);
done:
    free(rx);
    free(ry);
    return rho;
}

/* A member that must be a number in [lo, hi] (null allowed when nullable). */
static int want_num(const json_t *o, const char *where, const char *key, double lo, double hi,
                    int nullable, kt_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (nullable && json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: \"%s\" is not a number", where, key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: \"%s\" %g is not in [%g, %g]", where, key,
                            x, lo, hi);
    return 0;
}

static int check_variant(const json_t *v, const char *where, kt_error *err)
{
    if (!json_is_string(json_object_get(v, "description")) ||
        !json_is_boolean(json_object_get(v, "accepted")) ||
        !json_is_boolean(json_object_get(v, "trained")) ||
        !json_is_array(json_object_get(v, "changes")))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "%s: description, accepted, trained or changes missing", where);
    if (want_num(v, where, "params", 1, 1e12, 0, err) ||
        want_num(v, where, "params_ratio", 0, 1e3, 0, err) ||
        want_num(v, where, "fisher", 0, 1e300, 0, err) ||
        want_num(v, where, "fisher_ratio", 0, 1e300, 0, err) ||
        want_num(v, where, "fisher_seconds", 0, 1e6, 0, err))
        return -1;
    if (json_is_true(json_object_get(v, "trained")) &&
        (want_num(v, where, "test_accuracy", 0, 1, 0, err) ||
         want_num(v, where, "accuracy_diff", -1, 1, 0, err) ||
         want_num(v, where, "train_loss", 0, 1e6, 0, err) ||
         want_num(v, where, "train_seconds", 0, 1e7, 0, err)))
        return -1;
    return 0;
}

int bench_fisher_check(const json_t *res, kt_error *err)
{
    const char *mode = json_string_value(json_object_get(res, "mode"));
    if (!mode || strcmp(mode, "fisher") != 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "not a --fisher result (mode %s)",
                            mode ? mode : "missing");
    if (!json_is_string(json_object_get(res, "data")))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "result: \"data\" missing");
    if (want_num(res, "result", "train_images", 1, 1e6, 0, err) ||
        want_num(res, "result", "test_images", 1, 1e6, 0, err) ||
        want_num(res, "result", "epochs", 1, 1e4, 0, err) ||
        want_num(res, "result", "threshold", 0, 1e3, 0, err))
        return -1;
    const json_t *nets = json_object_get(res, "networks");
    if (!json_is_array(nets) || json_array_size(nets) == 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "result: no networks");
    size_t k;
    const json_t *net;
    json_array_foreach(nets, k, net)
    {
        char where[160];
        const char *name = json_string_value(json_object_get(net, "name"));
        const json_t *vs = json_object_get(net, "variants");
        if (!name || !json_is_array(vs) || json_array_size(vs) == 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "networks[%zu]: name or variants missing",
                                k);
        if (want_num(net, name, "spearman", -1, 1, 1, err))
            return -1;
        size_t i;
        const json_t *v;
        json_array_foreach(vs, i, v)
        {
            snprintf(where, sizeof where, "%s variant %zu", name, i);
            if (check_variant(v, where, err) < 0)
                return -1;
        }
        if (!json_is_true(json_object_get(json_array_get(vs, 0), "trained")))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: the original is not trained", name);
    }
    const json_t *sp = json_object_get(res, "spearman"), *tm = json_object_get(res, "timing");
    if (!json_is_object(sp) || !json_is_object(tm) ||
        !json_is_object(json_object_get(res, "accuracy")))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "result: spearman, accuracy or timing missing");
    if (want_num(sp, "spearman", "rho", -1, 1, 1, err) ||
        want_num(tm, "timing", "fisher_seconds", 0, 1e6, 0, err) ||
        want_num(tm, "timing", "train_seconds", 0, 1e7, 0, err) ||
        want_num(tm, "timing", "train_over_fisher", 0, 1e12, 0, err))
        return -1;
    return 0;
}

static double get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "0.8512 0.8490 0.8533": a variant's accuracy per seed (nothing for a result before --seeds). */
static void print_seeds(const json_t *v, FILE *out)
{
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(v, "accuracies"), i, a)
        fprintf(out, "%s %.4f", i ? "" : " ", json_number_value(a));
}

static void print_net(const json_t *net, FILE *out)
{
    fprintf(out,
            "\n%s: %lld parameters, Fisher %.6g; %lld candidates, %lld accepted; %lld trained, "
            "Spearman(Fisher, accuracy) %.3f\n",
            json_string_value(json_object_get(net, "name")), (long long)get(net, "params"),
            get(net, "fisher"), (long long)get(net, "candidates"), (long long)get(net, "accepted"),
            (long long)get(net, "trained"), get(net, "spearman"));
    fprintf(out, "  %-44s %9s %7s %9s %8s %9s %8s%s\n", "variant", "params", "params×", "Fisher×",
            "verdict", "accuracy", "Δacc",
            json_object_get(json_array_get(json_object_get(net, "variants"), 0), "accuracies")
                ? "  accuracy per seed"
                : "");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(net, "variants"), i, v)
    {
        if (!json_is_true(json_object_get(v, "trained")))
            continue;
        fprintf(out, "  %-44.44s %9lld %7.3f %9.4f %8s %9.4f %+8.4f",
                json_string_value(json_object_get(v, "description")), (long long)get(v, "params"),
                get(v, "params_ratio"), get(v, "fisher_ratio"),
                i == 0                                         ? "-"
                : json_is_true(json_object_get(v, "accepted")) ? "accepted"
                                                               : "rejected",
                get(v, "test_accuracy"), get(v, "accuracy_diff"));
        print_seeds(v, out);
        fputc('\n', out);
    }
}

/* One row of the random check: Fisher's accepted against random draws of the same size. */
static void print_check(const char *what, const json_t *c, FILE *out)
{
    fprintf(out, "  %-12s %4lld of %4lld  %+9.4f  %+9.4f  [%+.4f, %+.4f]  %+9.4f  %8.5f\n", what,
            (long long)get(c, "accepted"), (long long)get(c, "candidates"),
            get(c, "fisher_accepted_mean_diff"), get(c, "random_accepted_mean_diff"),
            get(c, "random_lo"), get(c, "random_hi"), get(c, "fisher_rejected_mean_diff"),
            get(c, "p_one_sided"));
}

static void print_random_check(const json_t *res, FILE *out)
{
    const json_t *rc = json_object_get(res, "random_check");
    if (!json_is_object(rc))
        return;
    fprintf(out,
            "\nFisher against a random check of the same acceptance rate (per network as many of "
            "its trained candidates drawn at random as Fisher accepted there; %lld draws; "
            "accuracy difference to the same seed's original; p: share of draws whose accepted "
            "mean is at least Fisher's, one-sided)\n",
            (long long)get(rc, "permutations"));
    fprintf(out, "  %-12s %12s  %9s  %9s  %18s  %9s  %8s\n", "accuracy of", "accepted", "Fisher",
            "random", "random 95%", "rejected", "p");
    print_check("seed mean", rc, out);
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(rc, "per_seed"), i, c)
    {
        char what[32];
        snprintf(what, sizeof what, "seed %lld", (long long)get(res, "seed") + (long long)i);
        print_check(what, c, out);
    }
}

void bench_fisher_print_table(const json_t *res, FILE *out)
{
    fprintf(out,
            "Fisher Potential check validated: %s, %lld training / %lld test images, %lld "
            "epochs, threshold %.3g, seed %lld\n",
            json_string_value(json_object_get(res, "data")), (long long)get(res, "train_images"),
            (long long)get(res, "test_images"), (long long)get(res, "epochs"),
            get(res, "threshold"), (long long)get(res, "seed"));
    if (json_object_get(res, "seeds"))
        fprintf(out,
                "%lld training seeds per trained variant; Fisher Potential averaged over %lld "
                "initialisations; trained per network: %s\n",
                (long long)get(res, "seeds"), (long long)get(res, "fisher_seeds"),
                get(res, "train_variants") > 0
                    ? "every whole-network variant, then single-layer ones at random"
                    : "accepted and rejected ones spread over their Fisher ratios");
    size_t k;
    const json_t *net;
    json_array_foreach(json_object_get(res, "networks"), k, net) print_net(net, out);
    const json_t *sp = json_object_get(res, "spearman"), *acc = json_object_get(res, "accuracy"),
                 *tm = json_object_get(res, "timing");
    fprintf(out,
            "\nSpearman rank correlation, Fisher ratio vs accuracy difference, all %lld trained "
            "variants: %.3f",
            (long long)get(sp, "n"), get(sp, "rho"));
    if (json_object_get(sp, "p_t"))
        fprintf(out, " (two-sided p %.4f by Student's t, %.4f by permutation within networks)",
                get(sp, "p_t"), get(sp, "p_permutation"));
    fputc('\n', out);
    fprintf(out,
            "Accuracy difference to the original: accepted %+.4f (mean of %lld), rejected "
            "%+.4f (mean of %lld)\n",
            get(acc, "accepted_mean_diff"), (long long)get(acc, "accepted_trained"),
            get(acc, "rejected_mean_diff"), (long long)get(acc, "rejected_trained"));
    fprintf(out,
            "One legality check (Fisher, mean of %lld): %.4f s; one training (mean of %lld): "
            "%.1f s; training / check: %.0fx\n",
            (long long)get(tm, "fisher_count"), get(tm, "fisher_seconds"),
            (long long)get(tm, "train_count"), get(tm, "train_seconds"),
            get(tm, "train_over_fisher"));
    print_random_check(res, out);
}
