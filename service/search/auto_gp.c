/* search/auto_gp — `auto`'s expected-improvement pick (option `model` "ei"; search/auto_impl.h): a
 * Gaussian process (search/gp.h) on the same clipped log-time targets as the ridge surrogate,
 * fitted at the start of each ask on at most AUTO_GP_TRAIN told results (the best half and an even
 * spread of the rest), conditioned on the outstanding proposals at their predicted means (kriging
 * believer), then asked for the candidate of the pool with the largest expected improvement. Two
 * stages keep a proposal cheap: the GP's mean for every candidate, its variance only for the
 * AUTO_GP_VAR best by mean and by the ridge's prediction. The hyper-parameters are re-chosen only
 * every few results, as `bo` does. With a warm-start prior the told results confirm (prior_on),
 * the prior is the GP's mean function: the GP models what the ridge's prior term (beta times the
 * centred prior value) leaves unexplained, so expected improvement weighs the history's ranking
 * against the uncertainty around the measured points instead of the ridge alone following it
 * (issue 29: an honest history no longer traps the search in the history's best basin).
 * Everything here is deterministic (no randomness). */
#include "search/auto_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

int auto_gp_init(auto_state *st, kt_error *err)
{
    int np = st->np, rc = -1;
    gp_kind *kind = NULL;
    for (int p = 0; p < np; p++)
        if (st->nv[p] > GP_MAX_VALUES)
            np = 0;
    if (np < 1 || np > GP_MAX_PARAMS)
        return 0; /* no GP: the ridge picks alone */
    kind = calloc((size_t)np, sizeof *kind);
    if (!kind)
        goto oom;
    for (int p = 0; p < np; p++) {
        kind[p] = GP_ORDINAL;
        for (int v = 0; v < st->nv[p]; v++)
            if (isnan(space_param_value_number(st->sp, p, v)))
                kind[p] = GP_CATEGORICAL; /* strings */
    }
    st->g = gp_new(np, st->nv, kind, err);
    if (!st->g)
        goto out;
    st->ccap = st->pool_random + TOP_K * st->scratch_cap + AUTO_PRIOR_TOP;
    st->cid = malloc((size_t)st->ccap * sizeof *st->cid);
    st->crow = malloc((size_t)st->ccap * (size_t)np * sizeof *st->crow);
    st->cpred = malloc((size_t)st->ccap * sizeof *st->cpred);
    st->cmean = malloc((size_t)st->ccap * sizeof *st->cmean);
    st->cprior = malloc((size_t)st->ccap * sizeof *st->cprior);
    st->gx = malloc((size_t)(AUTO_GP_TRAIN + 1) * (size_t)np * sizeof *st->gx);
    st->gy = malloc((size_t)(AUTO_GP_TRAIN + 1) * sizeof *st->gy);
    if (!st->cid || !st->crow || !st->cpred || !st->cmean || !st->cprior || !st->gx || !st->gy)
        goto oom;
    rc = 0;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    free(kind);
    return rc;
}

void auto_gp_free(auto_state *st)
{
    gp_free(st->g);
    free(st->cid);
    free(st->crow);
    free(st->cpred);
    free(st->cmean);
    free(st->cprior);
    free(st->gx);
    free(st->gy);
    free(st->gorder);
}

/* (score, index) pairs sorted best first; ties by index (deterministic, no qsort context). */
typedef struct gp_scored {
    double t;
    int i;
} gp_scored;

static int cmp_scored(const void *a, const void *b)
{
    const gp_scored *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Marks in st->gorder (n entries, 0/1) the told results the GP is fitted on: all of them up to
 * AUTO_GP_TRAIN, else the best half and an even spread of the rest. 0, or -1 out of memory. */
static int choose_training(auto_state *st, int *m)
{
    int n = st->n;
    if (kt_array_resize((void **)&st->gorder, (size_t)(n > 0 ? n : 1), sizeof *st->gorder) != 0)
        return -1;
    if (n <= AUTO_GP_TRAIN) {
        for (int i = 0; i < n; i++)
            st->gorder[i] = 1;
        *m = n;
        return 0;
    }
    gp_scored *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < n; i++) {
        s[i] = (gp_scored){st->o[i].t, i};
        st->gorder[i] = 0;
    }
    qsort(s, (size_t)n, sizeof *s, cmp_scored);
    int half = AUTO_GP_TRAIN / 2, rest = AUTO_GP_TRAIN - half, others = n - half;
    for (int k = 0; k < half; k++)
        st->gorder[s[k].i] = 1;
    for (int k = 0; k < rest; k++)
        st->gorder[s[half + (int)((long long)k * others / rest)].i] = 1;
    free(s);
    *m = AUTO_GP_TRAIN;
    return 0;
}

/* The prior's part of the GP's mean for a configuration of prior value p (0 unless prior_on). */
static double prior_mean(const auto_state *st, double p)
{
    return st->prior_on ? st->beta * (p - st->pbar) : 0;
}

int auto_gp_fit(auto_state *st)
{
    int np = st->np, m = 0, k = 0;
    st->gp_ok = 0;
    if (!st->g || !st->fitted || st->n_ok == 0 || choose_training(st, &m) < 0)
        return -1;
    for (int i = 0; i < st->n && k < m; i++) {
        if (!st->gorder[i] || space_decode(st->sp, st->o[i].id, st->gx + (size_t)k * np) < 0)
            continue;
        st->gy[k++] = auto_target(st, &st->o[i]) - prior_mean(st, st->pp[i]);
    }
    if (k == 0)
        return -1;
    unsigned flags = 0;
    if (st->n >= st->gp_next_hyper) { /* told results, not the (capped) training set */
        flags = GP_FIT_HYPER;
        st->gp_next_hyper = st->n + (st->n / 6 > 3 ? st->n / 6 : 3);
    }
    kt_error err;
    if (gp_fit(st->g, st->gx, st->gy, k, flags, &err) < 0)
        return -1;
    /* Kriging believer: each outstanding proposal stands in at its predicted mean. */
    for (int i = 0; i < st->n_out && i < AUTO_GP_LIES; i++) {
        double mu;
        if (space_decode(st->sp, st->out_id[i], st->gx) < 0 ||
            gp_predict(st->g, st->gx, 1, &mu, NULL) < 0)
            continue;
        gp_add(st->g, st->gx, mu);
    }
    st->gp_best = st->ok_y[0] < st->clip ? st->ok_y[0] : st->clip;
    st->gp_ok = 1;
    return 0;
}

void auto_gp_offer(auto_state *st, config_id id, double pred, double prior)
{
    if (!st->gp_ok || st->nc >= st->ccap)
        return;
    st->cprior[st->nc] = prior_mean(st, prior);
    st->cid[st->nc] = id;
    memcpy(st->crow + (size_t)st->nc * st->np, st->idx, (size_t)st->np * sizeof *st->crow);
    st->cpred[st->nc] = pred;
    st->nc++;
}

/* Marks the k candidates of smallest v (nc of them) in sel. s: scratch of nc entries. */
static void mark_best(const double *v, int nc, int k, gp_scored *s, unsigned char *sel)
{
    for (int i = 0; i < nc; i++)
        s[i] = (gp_scored){v[i], i};
    qsort(s, (size_t)nc, sizeof *s, cmp_scored);
    for (int i = 0; i < k && i < nc; i++)
        sel[s[i].i] = 1;
}

int auto_gp_pick(auto_state *st, config_id *out)
{
    int nc = st->nc, np = st->np, rc = 0;
    st->nc = 0;
    if (!st->gp_ok || nc == 0)
        return 0;
    gp_scored *s = malloc((size_t)nc * sizeof *s);
    unsigned char *sel = calloc((size_t)nc, 1);
    int *rows = malloc((size_t)2 * AUTO_GP_VAR * (size_t)np * sizeof *rows);
    int *which = malloc((size_t)2 * AUTO_GP_VAR * sizeof *which);
    double mean[2 * AUTO_GP_VAR], var[2 * AUTO_GP_VAR];
    if (!s || !sel || !rows || !which || gp_predict(st->g, st->crow, nc, st->cmean, NULL) < 0)
        goto out;
    for (int i = 0; i < nc; i++)
        st->cmean[i] += st->cprior[i];
    mark_best(st->cmean, nc, AUTO_GP_VAR, s, sel);
    mark_best(st->cpred, nc, AUTO_GP_VAR, s, sel);
    int m = 0;
    for (int i = 0; i < nc; i++) {
        if (!sel[i])
            continue;
        memcpy(rows + (size_t)m * np, st->crow + (size_t)i * np, (size_t)np * sizeof *rows);
        which[m++] = i;
    }
    if (gp_predict(st->g, rows, m, mean, var) < 0)
        goto out;
    for (int j = 0; j < m; j++)
        mean[j] += st->cprior[which[j]];
    int pick = -1;
    double best_a = -INFINITY;
    for (int j = 0; j < m; j++) {
        /* Ties (EI 0 far from the best): the lower mean, then the pool's order. */
        double a = gp_ei(mean[j], var[j], st->gp_best) - 1e-12 * mean[j];
        if (a > best_a) {
            best_a = a;
            pick = j;
        }
    }
    if (pick < 0)
        goto out;
    *out = st->cid[which[pick]];
    /* the rest of a batch moves away (the GP holds what the prior leaves unexplained) */
    gp_add(st->g, rows + (size_t)pick * np, mean[pick] - st->cprior[which[pick]]);
    rc = 1;
out:
    free(s);
    free(sel);
    free(rows);
    free(which);
    return rc;
}
