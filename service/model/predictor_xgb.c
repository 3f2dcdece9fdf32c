/* model/predictor_xgb — the learned baseline behind the predictor facade (predictor_impl.h): one
 * XGBoost multi-class classifier (multi:softprob, libxgboost's C API) per parameter with two or
 * more values, on the problem's feature row (problem_features: log2 of each argument, its
 * fractional position between powers of two, its trailing zero bits, its size relative to the
 * others, the total and spread of the logs). Training rows: each problem's `top` fastest
 * configurations, the i-th weighted next_weight^i; the label is the parameter's value index.
 *
 * Decoding: the classifiers' class probabilities for the problem are the scorer of beam_search
 * (log-probabilities, floor 1e-9; the parameters are scored independently, so the beam's total is
 * the joint log-probability under independence), constrained by the space: every candidate valid.
 *
 * Determinism: nthread 1, the exact tree method, no subsampling, a seed derived from ours.
 * Serialised with XGBoosterSaveModelToBuffer (UBJSON), one length-prefixed blob per parameter. */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#include "model/beam.h"
#include "model/problem_tokens.h"

typedef struct xgbp_state {
    BoosterHandle *b; /* np, NULL for a parameter of one value */
    int fdim;
    double *logp; /* scratch: the decoded problem's log-probabilities, voff[p] + v */
    int *voff;
} xgbp_state;

static int xgbp_check(int rc, const char *what, kt_error *err)
{
    if (rc != 0)
        return kt_error_set(err, KT_ERR_INTERNAL, "xgboost: %s failed: %s", what,
                            XGBGetLastError());
    return 0;
}

static void xgbp_destroy(predictor *p)
{
    xgbp_state *st = p->state;
    if (st) {
        for (int q = 0; st->b && q < p->np; q++) {
            if (st->b[q])
                XGBoosterFree(st->b[q]);
        }
        free(st->b);
        free(st->logp);
        free(st->voff);
        free(st);
    }
    p->state = NULL;
}

static xgbp_state *xgbp_alloc(predictor *p)
{
    xgbp_state *st = calloc(1, sizeof *st);
    size_t nvals = 0;
    if (!st)
        return NULL;
    p->state = st;
    st->fdim = problem_features_derived_dim(p->na, p->nd);
    st->b = calloc((size_t)p->np, sizeof *st->b);
    st->voff = calloc((size_t)p->np, sizeof *st->voff);
    for (int q = 0; st->voff && q < p->np; q++) {
        st->voff[q] = (int)nvals;
        nvals += (size_t)p->nv[q];
    }
    st->logp = calloc(nvals ? nvals : 1, sizeof *st->logp);
    if (!st->b || !st->voff || !st->logp) {
        xgbp_destroy(p);
        return NULL;
    }
    return st;
}

static int xgbp_train_one(predictor *p, DMatrixHandle dm, int q, uint64_t seed, BoosterHandle *out,
                          kt_error *err)
{
    BoosterHandle b = NULL;
    char num_class[16], depth[16], seed_text[32];
    snprintf(num_class, sizeof num_class, "%d", p->nv[q]);
    snprintf(depth, sizeof depth, "%d", p->depth);
    snprintf(seed_text, sizeof seed_text, "%llu",
             (unsigned long long)((seed + (uint64_t)q) % 2147483647u));
    const char *const params[][2] = {
        {"objective", "multi:softprob"},
        {"num_class", num_class},
        {"max_depth", depth},
        {"eta", "0.3"},
        {"min_child_weight", "0.5"},
        {"lambda", "1"},
        {"subsample", "1"},
        {"tree_method", "exact"},
        {"nthread", "1"},
        {"verbosity", "0"},
        {"seed", seed_text},
    };
    if (xgbp_check(XGBoosterCreate(&dm, 1, &b), "XGBoosterCreate", err) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        if (xgbp_check(XGBoosterSetParam(b, params[i][0], params[i][1]), "XGBoosterSetParam", err) <
            0)
            goto fail;
    }
    for (int it = 0; it < p->rounds; it++) {
        if (xgbp_check(XGBoosterUpdateOneIter(b, it, dm), "XGBoosterUpdateOneIter", err) < 0)
            goto fail;
    }
    *out = b;
    return 0;
fail:
    if (b)
        XGBoosterFree(b);
    return -1;
}

static int xgbp_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    int *prob = NULL, *rank = NULL, rc = -1;
    float *x = NULL, *w = NULL, *label = NULL;
    DMatrixHandle dm = NULL;
    int n = pred_training_rows(p, ts, &prob, &rank);
    xgbp_state *st = n >= 0 ? xgbp_alloc(p) : NULL;
    if (!st)
        goto oom;
    x = malloc((size_t)(n ? n : 1) * (size_t)st->fdim * sizeof *x);
    w = malloc((size_t)(n ? n : 1) * sizeof *w);
    label = malloc((size_t)(n ? n : 1) * sizeof *label);
    if (!x || !w || !label)
        goto oom;
    for (int i = 0; i < n; i++) {
        problem_features_derived(training_set_problem_args(ts, prob[i]), p->na, p->nd,
                                 x + (size_t)i * (size_t)st->fdim);
        w[i] = (float)pow(p->next_weight, rank[i]);
    }
    if (xgbp_check(XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)st->fdim, NAN, &dm, 1),
                   "XGDMatrixCreateFromMat", err) < 0 ||
        xgbp_check(XGDMatrixSetFloatInfo(dm, "weight", w, (bst_ulong)n), "set weight", err) < 0)
        goto out;
    for (int q = 0; q < p->np; q++) {
        if (p->nv[q] < 2)
            continue;
        for (int i = 0; i < n; i++)
            label[i] = (float)training_set_trial(ts, prob[i], rank[i], NULL)[q];
        if (xgbp_check(XGDMatrixSetFloatInfo(dm, "label", label, (bst_ulong)n), "set label", err) <
                0 ||
            xgbp_train_one(p, dm, q, seed, &st->b[q], err) < 0)
            goto out;
    }
    rc = 0;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    if (dm)
        XGDMatrixFree(dm);
    free(prob);
    free(rank);
    free(x);
    free(w);
    free(label);
    return rc;
}

static int xgbp_scorer(void *ctx, const int *prefix, int len, double *logp)
{
    (void)prefix;
    predictor *p = ctx;
    const xgbp_state *st = p->state;
    memcpy(logp, st->logp + st->voff[len], (size_t)p->nv[len] * sizeof *logp);
    return 0;
}

static int xgbp_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                       int width, int k, int *rows, double *score, kt_error *err)
{
    xgbp_state *st = p->state;
    float f[4 * PRED_MAX_FEATS + 2];
    DMatrixHandle dm = NULL;
    int rc = -1;

    problem_features_derived(args, p->na, p->nd, f);
    if (xgbp_check(XGDMatrixCreateFromMat_omp(f, 1, (bst_ulong)st->fdim, NAN, &dm, 1),
                   "XGDMatrixCreateFromMat", err) < 0)
        goto out;
    for (int q = 0; q < p->np; q++) {
        bst_ulong len = 0;
        const float *res = NULL;
        double *lp = st->logp + st->voff[q];
        if (!st->b[q]) {
            lp[0] = 0;
            continue;
        }
        if (xgbp_check(XGBoosterPredict(st->b[q], dm, 0, 0, 0, &len, &res), "XGBoosterPredict",
                       err) < 0)
            goto out;
        if (len != (bst_ulong)p->nv[q]) {
            kt_error_set(err, KT_ERR_INTERNAL, "xgboost gave %llu classes for %d values",
                         (unsigned long long)len, p->nv[q]);
            goto out;
        }
        for (int v = 0; v < p->nv[q]; v++)
            lp[v] = log(res[v] > 1e-9f ? (double)res[v] : 1e-9);
    }
    beam_mode bm = mode == PREDICT_GREEDY ? BEAM_GREEDY
                   : mode == PREDICT_FREE ? BEAM_FREE
                                          : BEAM_CONSTRAINED;
    rc = beam_search(p->np, p->nv, xgbp_scorer, p, bm, width, bm == BEAM_CONSTRAINED ? sp : NULL, k,
                     rows, score);
    if (rc < 0)
        kt_error_set(err, KT_ERR_NO_MEMORY, "beam search failed");
out:
    if (dm)
        XGDMatrixFree(dm);
    return rc;
}

static int xgbp_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    const xgbp_state *st = p->state;
    if (json_object_set_new(meta, "features", json_integer(st->fdim)) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int q = 0; q < p->np; q++) {
        bst_ulong len = 0;
        const char *buf = NULL;
        if (st->b[q] &&
            xgbp_check(XGBoosterSaveModelToBuffer(st->b[q], "{\"format\": \"ubj\"}", &len, &buf),
                       "XGBoosterSaveModelToBuffer", err) < 0)
            return -1;
        if (pred_put_blob(bin, buf, st->b[q] ? (size_t)len : 0) < 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    return 0;
}

static int xgbp_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                     kt_error *err)
{
    size_t pos = 0;
    xgbp_state *st = xgbp_alloc(p);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    if (json_integer_value(json_object_get(meta, "features")) != st->fdim)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "xgb model: another feature layout");
    for (int q = 0; q < p->np; q++) {
        const unsigned char *data;
        size_t n;
        if (pred_get_blob(bin, len, &pos, &data, &n, err) < 0)
            return -1;
        if ((n == 0) != (p->nv[q] < 2))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "xgb model: parameter %d damaged", q);
        if (n == 0)
            continue;
        if (xgbp_check(XGBoosterCreate(NULL, 0, &st->b[q]), "XGBoosterCreate", err) < 0 ||
            xgbp_check(XGBoosterLoadModelFromBuffer(st->b[q], data, (bst_ulong)n),
                       "XGBoosterLoadModelFromBuffer", err) < 0 ||
            xgbp_check(XGBoosterSetParam(st->b[q], "nthread", "1"), "XGBoosterSetParam", err) < 0)
            return -1;
    }
    return 0;
}

const pred_ops pred_xgb_ops = {"xgb", xgbp_train, xgbp_decode, xgbp_save, xgbp_load, xgbp_destroy};
