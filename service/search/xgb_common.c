/* search/xgb_common — what both XGBoost strategies (xgb.c with xgb_model.c / xgb_anneal.c, and
 * xgb_local.c) share: the knob-value table behind their features, the libxgboost call check, the
 * start and end of a training, the annealing walkers' arrays, prediction on a feature matrix, the
 * arrays of told trials, the one-parameter move of their annealing walks and the heap of best
 * candidates their annealing keeps. */
#include "search/xgb_impl.h"

#include "core/array.h"
#include "core/log.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xgb_knob_values(const space *sp, float **vals_out, int **voff_out)
{
    int np = space_num_params(sp), rc = -1;
    size_t nvals = 0;
    float *vals = NULL;
    int *voff = calloc((size_t)(np > 0 ? np : 1), sizeof *voff);

    if (!voff)
        goto out;
    for (int p = 0; p < np; p++) {
        voff[p] = (int)nvals;
        nvals += (size_t)space_param_num_values(sp, p);
    }
    vals = calloc(nvals ? nvals : 1, sizeof *vals);
    if (!vals)
        goto out;
    for (int p = 0; p < np; p++) {
        int nv = space_param_num_values(sp, p), numeric = 1;
        for (int v = 0; v < nv && numeric; v++)
            numeric = fabs(space_param_value_number(sp, p, v)) < FLT_MAX; /* NAN: a string */
        for (int v = 0; v < nv; v++)
            vals[voff[p] + v] = numeric ? (float)space_param_value_number(sp, p, v) : (float)v;
    }
    *vals_out = vals;
    *voff_out = voff;
    vals = NULL;
    voff = NULL;
    rc = 0;
out:
    free(vals);
    free(voff);
    return rc;
}

void xgb_knob_features(const space *sp, const float *vals, const int *voff, int *idx, config_id id,
                       float *f)
{
    int np = space_num_params(sp);
    if (space_decode(sp, id, idx) < 0)
        memset(idx, 0, (size_t)np * sizeof *idx);
    for (int p = 0; p < np; p++)
        f[p] = vals[voff[p] + idx[p]];
}

int xgb_knobs_init(xgb_knobs *k, const space *sp)
{
    int np = space_num_params(sp);
    k->idx = calloc((size_t)(np > 0 ? np : 1), sizeof *k->idx);
    if (!k->idx)
        return -1;
    return xgb_knob_values(sp, &k->vals, &k->voff);
}

void xgb_knobs_free(xgb_knobs *k)
{
    free(k->vals);
    free(k->voff);
    free(k->idx);
}

int xgb_walkers_alloc(xgb_walkers *w, size_t P, size_t np)
{
    w->pts = malloc(P * sizeof *w->pts);
    w->newp = malloc(P * sizeof *w->newp);
    w->sc = malloc(P * sizeof *w->sc);
    w->newsc = malloc(P * sizeof *w->newsc);
    w->fx = malloc(P * np * sizeof *w->fx);
    return w->pts && w->newp && w->sc && w->newsc && w->fx ? 0 : -1;
}

void xgb_walkers_free(xgb_walkers *w)
{
    free(w->pts);
    free(w->newp);
    free(w->sc);
    free(w->newsc);
    free(w->fx);
}

int xgb_predict_ids(BoosterHandle b, const space *sp, xgb_knobs *k, const config_id *ids, int n,
                    float *fx, float *out, const char *who)
{
    int np = space_num_params(sp);
    for (int i = 0; i < n; i++)
        xgb_knob_features(sp, k->vals, k->voff, k->idx, ids[i], fx + (size_t)i * (size_t)np);
    return xgb_predict_rows(b, fx, n, np, out, who);
}

int xgb_lib_check(int rc, const char *who, const char *what)
{
    if (rc != 0)
        log_warn("%s searcher: %s failed: %s", who, what, XGBGetLastError());
    return rc != 0 ? -1 : 0;
}

int xgb_set_params(BoosterHandle b, uint64_t seed, const char *who)
{
    static const char *const params[][2] = {
        {"max_depth", "3"},
        {"gamma", "0.0001"},
        {"min_child_weight", "1"},
        {"subsample", "1"},
        {"eta", "0.3"},
        {"lambda", "1"},
        {"alpha", "0"},
        {"objective", "rank:pairwise"},
        {"tree_method", "exact"},
        {"nthread", "1"},
        {"verbosity", "0"},
    };
    char text[32];
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        if (xgb_lib_check(XGBoosterSetParam(b, params[i][0], params[i][1]), who,
                          "XGBoosterSetParam") < 0)
            return -1;
    }
    snprintf(text, sizeof text, "%llu", (unsigned long long)(seed % 2147483647u));
    return xgb_lib_check(XGBoosterSetParam(b, "seed", text), who, "XGBoosterSetParam");
}

int xgb_train_begin(const float *x, int n, int np, const float *label, int group, uint64_t seed,
                    const char *who, DMatrixHandle *dm, BoosterHandle *b)
{
    unsigned groups = (unsigned)n;
    if (xgb_lib_check(XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)np, NAN, dm, 1), who,
                      "XGDMatrixCreateFromMat") < 0 ||
        xgb_lib_check(XGDMatrixSetFloatInfo(*dm, "label", label, (bst_ulong)n), who, "set label") <
            0 ||
        (group &&
         xgb_lib_check(XGDMatrixSetUIntInfo(*dm, "group", &groups, 1), who, "set group") < 0) ||
        xgb_lib_check(XGBoosterCreate(dm, 1, b), who, "XGBoosterCreate") < 0)
        return -1;
    return xgb_set_params(*b, seed, who);
}

BoosterHandle xgb_train_end(DMatrixHandle dm, BoosterHandle b, int ok, const char *who)
{
    if (dm)
        xgb_lib_check(XGDMatrixFree(dm), who, "XGDMatrixFree");
    if (!ok && b) {
        xgb_lib_check(XGBoosterFree(b), who, "XGBoosterFree");
        b = NULL;
    }
    return b;
}

int xgb_predict_rows(BoosterHandle b, const float *fx, int n, int np, float *out, const char *who)
{
    DMatrixHandle dm = NULL;
    bst_ulong len = 0;
    const float *res = NULL;
    int rc = -1;

    if (xgb_lib_check(XGDMatrixCreateFromMat_omp(fx, (bst_ulong)n, (bst_ulong)np, NAN, &dm, 1), who,
                      "XGDMatrixCreateFromMat") < 0 ||
        xgb_lib_check(XGBoosterPredict(b, dm, 0, 0, 0, &len, &res), who, "XGBoosterPredict") < 0)
        goto done;
    if (len != (bst_ulong)n) {
        log_warn("%s searcher: XGBoosterPredict returned %llu scores for %d rows", who,
                 (unsigned long long)len, n);
        goto done;
    }
    memcpy(out, res, (size_t)n * sizeof *out);
    rc = 0;
done:
    if (dm)
        xgb_lib_check(XGDMatrixFree(dm), who, "XGDMatrixFree");
    return rc;
}

int xgb_trials_grow(float **x, double **v, config_id **id, int n, int *cap, int np)
{
    if (n < *cap)
        return 0;
    /* Three arrays share one capacity: it is stored only once all three have grown. */
    size_t next = kt_array_next_cap((size_t)*cap, (size_t)n + 1, INT_MAX);
    size_t row = (size_t)(np > 0 ? np : 1);
    if (next == 0 || kt_array_resize((void **)x, next, row * sizeof **x) != 0 ||
        kt_array_resize((void **)v, next, sizeof **v) != 0 ||
        kt_array_resize((void **)id, next, sizeof **id) != 0)
        return -1;
    *cap = (int)next;
    return 0;
}

int xgb_param_move(const space *sp, int *idx, int p, kt_rng *rng, config_id *out)
{
    int nv = space_param_num_values(sp, p);
    int old = idx[p], v = (int)kt_rng_below(rng, (uint64_t)nv - 1);
    idx[p] = v >= old ? v + 1 : v;
    int ok = space_encode(sp, idx, out) == 0;
    idx[p] = old;
    return ok;
}

int xgb_cand_worse(const xgb_cand *a, const xgb_cand *b)
{
    return a->score < b->score || (a->score == b->score && a->id > b->id);
}

static void cand_swap(xgb_cand *h, int i, int j)
{
    xgb_cand t = h[i];
    h[i] = h[j];
    h[j] = t;
}

void xgb_cand_push(xgb_cand *h, int *n, xgb_cand c)
{
    int i = (*n)++;
    h[i] = c;
    while (i > 0 && xgb_cand_worse(&h[i], &h[(i - 1) / 2])) {
        cand_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

void xgb_cand_replace_worst(xgb_cand *h, int n, xgb_cand c)
{
    int i = 0;
    h[0] = c;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= n)
            return;
        if (k + 1 < n && xgb_cand_worse(&h[k + 1], &h[k]))
            k++;
        if (!xgb_cand_worse(&h[k], &h[i]))
            return;
        cand_swap(h, i, k);
        i = k;
    }
}

int xgb_cand_cmp_desc(const void *a, const void *b)
{
    const xgb_cand *x = a, *y = b;
    return xgb_cand_worse(y, x) ? -1 : xgb_cand_worse(x, y) ? 1 : 0;
}
