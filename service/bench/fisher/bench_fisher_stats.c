/* bench/fisher/bench_fisher_stats — `ktune bench --fisher`: the statistics of a result, computed
 * from its per-variant measurements only (so a run and a --replay of its JSON give the same
 * figures): Spearman with its p-values, the accepted and rejected means, the random check of the
 * same acceptance rate, the timing (see bench_fisher.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

#include "bench/bench_stats.h"
#include "bench/fisher/bench_fisher.h"

/* One trained candidate (not an original): its network, Fisher ratio, verdict, and accuracy
 * difference to the same seed's original, per seed and averaged. */
typedef struct bfs_item {
    int net, accepted;
    double ratio, diff, seed_diff[BENCH_FISHER_MAX_SEEDS];
} bfs_item;

typedef struct bfs_set {
    bfs_item *it;
    int n, seeds, nets;
    double fisher_s, train_s; /* sums for the timing */
    int fisher_n, train_n;
} bfs_set;

static double get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* The trained candidates of every network; seeds: the per-seed figures (a result without
 * "accuracy_diffs", from before --seeds, has one: its accuracy_diff). */
static int collect(const json_t *res, bfs_set *s, kt_error *err)
{
    const json_t *nets = json_object_get(res, "networks"), *net;
    size_t k, i, cap = 0;
    json_array_foreach(nets, k, net) cap += json_array_size(json_object_get(net, "variants"));
    memset(s, 0, sizeof *s);
    s->seeds = json_is_integer(json_object_get(res, "seeds"))
                   ? (int)json_integer_value(json_object_get(res, "seeds"))
                   : 1;
    if (s->seeds < 1 || s->seeds > BENCH_FISHER_MAX_SEEDS)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "result: \"seeds\" %d is not in [1, %d]",
                            s->seeds, BENCH_FISHER_MAX_SEEDS);
    s->it = calloc(cap + 1, sizeof *s->it);
    if (!s->it)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for the statistics");
    s->nets = (int)json_array_size(nets);
    json_array_foreach(nets, k, net)
    {
        const json_t *v;
        json_array_foreach(json_object_get(net, "variants"), i, v)
        {
            s->fisher_s += get(v, "fisher_seconds");
            s->fisher_n++;
            if (!json_is_true(json_object_get(v, "trained")))
                continue;
            s->train_s += get(v, "train_seconds") * s->seeds;
            s->train_n += s->seeds;
            if (i == 0)
                continue;
            bfs_item *t = &s->it[s->n];
            t->net = (int)k;
            t->accepted = json_is_true(json_object_get(v, "accepted"));
            t->ratio = get(v, "fisher_ratio");
            t->diff = get(v, "accuracy_diff");
            const json_t *d = json_object_get(v, "accuracy_diffs");
            int usable = isfinite(t->ratio) && isfinite(t->diff);
            for (int j = 0; j < s->seeds; j++) {
                const json_t *x = json_is_array(d) ? json_array_get(d, (size_t)j) : NULL;
                t->seed_diff[j] = x ? (json_is_number(x) ? json_number_value(x) : NAN) : t->diff;
                usable = usable && isfinite(t->seed_diff[j]);
            }
            s->n += usable; /* an unusable one is overwritten by the next */
        }
    }
    return 0;
}

/* Shuffles y[0..n) within each network's run of items (items are grouped by network). */
static void shuffle_within(const bfs_set *s, double *y, kt_rng *r)
{
    for (int start = 0; start < s->n;) {
        int m = 1;
        while (start + m < s->n && s->it[start + m].net == s->it[start].net)
            m++;
        for (int i = m - 1; i > 0; i--) {
            int j = (int)kt_rng_below(r, (uint64_t)i + 1);
            double t = y[start + i];
            y[start + i] = y[start + j];
            y[start + j] = t;
        }
        start += m;
    }
}

/* Spearman's rho of ratio and diff over the items, and a permutation p (two-sided): the
 * differences shuffled within each network, |rho| at least as large. */
static void spearman(const bfs_set *s, int perms, kt_rng *r, double *rho, double *p_t,
                     double *p_perm)
{
    int n = s->n;
    double *x = malloc((size_t)(n + 1) * sizeof *x), *y = malloc((size_t)(n + 1) * sizeof *y);
    *rho = *p_t = *p_perm = NAN;
    if (!x || !y || n < 3)
        goto done;
    for (int i = 0; i < n; i++) {
        x[i] = s->it[i].ratio;
        y[i] = s->it[i].diff;
    }
    *rho = bench_fisher_spearman(x, y, n);
    if (!isfinite(*rho))
        goto done;
    /* Student's t approximation, n - 2 degrees of freedom */
    double t = fabs(*rho) >= 1 ? INFINITY : *rho * sqrt((n - 2) / (1 - *rho * *rho));
    *p_t = isfinite(t) ? bench_stats_t_p_two_sided(t, n - 2) : 0;
    int hits = 0;
    for (int k = 0; k < perms; k++) {
        shuffle_within(s, y, r);
        double q = bench_fisher_spearman(x, y, n);
        hits += isfinite(q) && fabs(q) >= fabs(*rho) - 1e-12;
    }
    *p_perm = (hits + 1.0) / (perms + 1.0);
done:
    free(x);
    free(y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* The random check for column c (c < seeds: that seed's differences; c == seeds: the means):
 * Fisher's accepted mean, the random check's draws (per network as many of its items as Fisher
 * accepted there), their mean, 2.5% and 97.5% quantiles and the one-sided p. */
static json_t *random_check(const bfs_set *s, int c, int perms, uint64_t seed)
{
    int n = s->n, acc = 0;
    double fisher = 0, rej = 0;
    int *idx = malloc((size_t)(n + 1) * sizeof *idx);
    int *per_net = calloc((size_t)s->nets + 1, sizeof *per_net);
    double *draws = malloc((size_t)perms * sizeof *draws);
    json_t *j = NULL;
    if (!idx || !per_net || !draws)
        goto done;
#define COL(i) (c == s->seeds ? s->it[i].diff : s->it[i].seed_diff[c])
    for (int i = 0; i < n; i++) {
        if (s->it[i].accepted) {
            fisher += COL(i);
            per_net[s->it[i].net]++;
            acc++;
        } else {
            rej += COL(i);
        }
    }
    kt_rng r;
    kt_rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(c + 1)));
    int hits = 0;
    double mean = 0;
    for (int k = 0; k < perms; k++) {
        double sum = 0;
        int start = 0;
        for (int g = 0; g < s->nets; g++) { /* items are grouped by network */
            int m = 0;
            while (start + m < n && s->it[start + m].net == g)
                m++;
            for (int i = 0; i < m; i++)
                idx[i] = start + i;
            for (int i = 0; i < per_net[g] && i < m; i++) { /* partial Fisher-Yates */
                int t = i + (int)kt_rng_below(&r, (uint64_t)(m - i)), u = idx[i];
                idx[i] = idx[t];
                idx[t] = u;
                sum += COL(idx[i]);
            }
            start += m;
        }
        draws[k] = acc ? sum / acc : NAN;
        mean += draws[k];
        hits += acc && draws[k] >= fisher / acc - 1e-12;
    }
#undef COL
    qsort(draws, (size_t)perms, sizeof *draws, cmp_double);
    j = json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "candidates", n, "accepted", acc,
                  "acceptance_rate", num(n ? (double)acc / n : NAN), "fisher_accepted_mean_diff",
                  num(acc ? fisher / acc : NAN), "fisher_rejected_mean_diff",
                  num(n - acc ? rej / (n - acc) : NAN), "random_accepted_mean_diff",
                  num(acc ? mean / perms : NAN), "random_lo",
                  num(acc ? bench_stats_quantile(draws, perms, 0.025) : NAN), "random_hi",
                  num(acc ? bench_stats_quantile(draws, perms, 0.975) : NAN), "p_one_sided",
                  num(acc && acc < n ? (hits + 1.0) / (perms + 1.0) : NAN));
done:
    free(idx);
    free(per_net);
    free(draws);
    return j;
}

/* Each network's Spearman (raw Fisher Potential against mean accuracy, its trained variants,
 * the original included). */
static void network_spearman(json_t *net)
{
    const json_t *vs = json_object_get(net, "variants"), *v;
    size_t i, cap = json_array_size(vs);
    double *x = malloc((cap + 1) * sizeof *x), *y = malloc((cap + 1) * sizeof *y), rho = NAN;
    int n = 0;
    if (x && y) {
        json_array_foreach(vs, i, v)
        {
            if (!json_is_true(json_object_get(v, "trained")))
                continue;
            x[n] = get(v, "fisher");
            y[n++] = get(v, "test_accuracy");
        }
        rho = bench_fisher_spearman(x, y, n);
    }
    json_object_set_new(net, "spearman", num(rho));
    free(x);
    free(y);
}

int bench_fisher_summarise(json_t *res, int permutations, uint64_t seed, kt_error *err)
{
    bfs_set s;
    int rc = -1;
    json_t *per_seed = NULL, *all = NULL;
    if (collect(res, &s, err) < 0)
        goto done;
    size_t k;
    json_t *net;
    json_array_foreach(json_object_get(res, "networks"), k, net) network_spearman(net);
    kt_rng r;
    kt_rng_seed(&r, seed ^ 0x51ea4a11ULL);
    double rho, p_t, p_perm;
    spearman(&s, permutations / 10 > 1000 ? permutations / 10 : 1000, &r, &rho, &p_t, &p_perm);
    int na = 0, nr = 0;
    double sa = 0, sr = 0;
    for (int i = 0; i < s.n; i++) {
        if (s.it[i].accepted) {
            sa += s.it[i].diff;
            na++;
        } else {
            sr += s.it[i].diff;
            nr++;
        }
    }
    all = random_check(&s, s.seeds, permutations, seed);
    per_seed = json_array();
    for (int c = 0; c < s.seeds && all && per_seed; c++) {
        json_t *one = random_check(&s, c, permutations, seed);
        if (!one || json_array_append_new(per_seed, one) < 0)
            goto nomem;
    }
    if (!all || !per_seed || json_object_set(all, "per_seed", per_seed) < 0 ||
        json_object_set_new(all, "permutations", json_integer(permutations)) < 0)
        goto nomem;
    double fmean = s.fisher_n ? s.fisher_s / s.fisher_n : NAN;
    double tmean = s.train_n ? s.train_s / s.train_n : NAN;
    json_t *sp =
        json_pack("{s:o,s:i,s:s,s:o,s:o}", "rho", num(rho), "n", s.n, "over",
                  "Fisher ratio vs accuracy difference to the original (mean over seeds), trained "
                  "candidates of all networks",
                  "p_t", num(p_t), "p_permutation", num(p_perm));
    json_t *acc = json_pack("{s:i,s:o,s:i,s:o}", "accepted_trained", na, "accepted_mean_diff",
                            num(na ? sa / na : NAN), "rejected_trained", nr, "rejected_mean_diff",
                            num(nr ? sr / nr : NAN));
    json_t *tm = json_pack("{s:o,s:o,s:o,s:i,s:i}", "fisher_seconds", num(fmean), "train_seconds",
                           num(tmean), "train_over_fisher", num(tmean / fmean), "fisher_count",
                           s.fisher_n, "train_count", s.train_n);
    if (json_object_set_new(res, "spearman", sp) < 0 ||
        json_object_set_new(res, "accuracy", acc) < 0 ||
        json_object_set_new(res, "timing", tm) < 0 || json_object_set(res, "random_check", all) < 0)
        goto nomem;
    rc = 0;
    goto done;
nomem:
    kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for the statistics");
done:
    json_decref(all);
    json_decref(per_seed);
    free(s.it);
    return rc;
}

/* The settings a pooled replay's files must share. */
static const char *const BFS_SAME[] = {
    "data",      "train_images", "test_images",  "epochs", "batch", "lr",
    "threshold", "fisher_batch", "fisher_seeds", "seed",   NULL};

/* m = (m_a n_a + m_b n_b) / (n_a + n_b) for a mean over seeds. */
static void pool_mean(json_t *a, const json_t *b, const char *key, int na, int nb)
{
    double x = get(a, key) * na + get(b, key) * nb;
    json_object_set_new(a, key, num(x / (na + nb)));
}

/* b's trainings (other training seeds of the same variants) appended to network a. */
static int merge_network(json_t *a, json_t *b, const char *path, kt_error *err)
{
    const char *name = json_string_value(json_object_get(a, "name"));
    json_t *va = json_object_get(a, "variants"), *sa = json_object_get(a, "train_seeds");
    json_t *vb = json_object_get(b, "variants"), *sb = json_object_get(b, "train_seeds");
    if (!json_is_array(sa) || !json_is_array(sb))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "--replay %s: %s has no train_seeds", path,
                            name);
    int na = (int)json_array_size(sa), nb = (int)json_array_size(sb);
    if (json_array_size(va) != json_array_size(vb) || na + nb > BENCH_FISHER_MAX_SEEDS)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "--replay %s: %s has other variants, or more than %d seeds", path, name,
                            BENCH_FISHER_MAX_SEEDS);
    size_t i, j;
    json_t *x;
    json_array_foreach(sb, j, x)
    {
        for (size_t q = 0; q < (size_t)na; q++)
            if (json_equal(json_array_get(sa, q), x))
                return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                    "--replay %s: %s training seed %lld twice", path, name,
                                    (long long)json_integer_value(x));
    }
    json_array_foreach(va, i, x)
    {
        json_t *y = json_array_get(vb, i);
        if (!json_equal(json_object_get(x, "description"), json_object_get(y, "description")) ||
            !json_equal(json_object_get(x, "fisher"), json_object_get(y, "fisher")) ||
            !json_equal(json_object_get(x, "trained"), json_object_get(y, "trained")))
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "--replay %s: %s variant %zu differs (description, Fisher "
                                "Potential or trained): not the same --seed",
                                path, name, i);
        if (!json_is_true(json_object_get(x, "trained")))
            continue;
        if (json_array_extend(json_object_get(x, "accuracies"), json_object_get(y, "accuracies")) <
                0 ||
            json_array_extend(json_object_get(x, "accuracy_diffs"),
                              json_object_get(y, "accuracy_diffs")) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "--replay %s: %s variant %zu has no per-seed accuracies", path,
                                name, i);
        pool_mean(x, y, "test_accuracy", na, nb);
        pool_mean(x, y, "accuracy_diff", na, nb);
        pool_mean(x, y, "train_loss", na, nb);
        pool_mean(x, y, "train_seconds", na, nb);
    }
    return json_array_extend(sa, sb) < 0
               ? kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for --replay")
               : 0;
}

/* one's networks into res: a network met before gets one's training seeds, a new one is added. */
static int pool_file(json_t *res, json_t *one, const char *path, kt_error *err)
{
    for (int i = 0; BFS_SAME[i]; i++)
        if (!json_equal(json_object_get(res, BFS_SAME[i]), json_object_get(one, BFS_SAME[i])))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "--replay %s: \"%s\" differs", path,
                                BFS_SAME[i]);
    json_t *nets = json_object_get(res, "networks"), *b, *a;
    size_t k, q;
    json_array_foreach(json_object_get(one, "networks"), k, b)
    {
        json_t *same = NULL;
        json_array_foreach(nets, q, a) if (json_equal(json_object_get(a, "name"),
                                                      json_object_get(b, "name"))) same = a;
        if (same ? merge_network(same, b, path, err) < 0 : json_array_append(nets, b) < 0)
            return same ? -1 : kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for --replay");
    }
    return 0;
}

json_t *bench_fisher_replay(const char *const *paths, int n, int permutations, kt_error *err)
{
    json_t *res = NULL, *one = NULL;
    json_error_t je;
    for (int f = 0; f < n; f++) {
        if (!(one = json_load_file(paths[f], 0, &je))) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "--replay %s: %s", paths[f], je.text);
            goto fail;
        }
        if (bench_fisher_check(one, err) < 0) {
            kt_error_prefix(err, "--replay %s", paths[f]);
            goto fail;
        }
        if (!res) {
            res = one;
        } else if (pool_file(res, one, paths[f], err) < 0) {
            goto fail;
        } else {
            json_decref(one);
        }
        one = NULL;
    }
    /* every network with the same training seeds: they are the result's */
    const json_t *seeds = json_object_get(json_array_get(json_object_get(res, "networks"), 0),
                                          "train_seeds"),
                 *net;
    size_t k;
    json_array_foreach(json_object_get(res, "networks"), k, net)
    {
        if (seeds && !json_equal(seeds, json_object_get(net, "train_seeds"))) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "--replay: %s was trained with other seeds than %s",
                         json_string_value(json_object_get(net, "name")),
                         json_string_value(json_object_get(
                             json_array_get(json_object_get(res, "networks"), 0), "name")));
            goto fail;
        }
    }
    if (seeds) {
        json_object_set(res, "train_seeds", (json_t *)seeds);
        json_object_set_new(res, "seeds", json_integer((json_int_t)json_array_size(seeds)));
    }
    if (bench_fisher_summarise(res, permutations,
                               (uint64_t)json_integer_value(json_object_get(res, "seed")), err) < 0)
        goto fail;
    return res;
fail:
    json_decref(one);
    json_decref(res);
    return NULL;
}
