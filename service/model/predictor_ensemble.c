/* model/predictor_ensemble — the ensemble behind the predictor facade (predictor_impl.h): trains
 * the base predictors whose weight is above 0 (hyper w_seq2seq, w_nearest, w_xgb, w_local [1 each],
 * w_common [0.5]: the one member blind to the problem, it counts half) on the same training set
 * and seed, and fuses their ranked lists.
 *
 * Fusion: each member decodes its top `list` [20] (at least k) rows for the problem (constrained:
 * each valid in the space, so every fused row is valid too). A row's fused score is the weighted
 * reciprocal-rank sum  sum_m w_m / (fuse_c + rank_m)  (rank from 1; fuse_c [10]: with short lists
 * a large constant counts the members that agree, a small one trusts each member's first rows).
 * Ties: the row first met going round the members rank by rank (members in kind order). The top-1
 * is the fused best (agreement between members). With diverse [1], the next slots go to each
 * member's own first choice not yet taken (members by weight, then kind order), so the top-5 holds
 * the favourite of every member but (when all six differ) the last; the rest is filled in fused
 * order. Scores: the fused score, never above the one before (best first).
 *
 * Bytes: the meta line lists the members ({"kind", "weight"}); the payload is one length-prefixed
 * blob per member, each the member's own predictor_save bytes (read back with predictor_load, its
 * kind and parameters checked against the ensemble's). */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ENS_MEMBERS 5

static const char *const ens_kind[ENS_MEMBERS] = {"seq2seq", "nearest", "common", "xgb", "local"};

typedef struct ens_state {
    predictor *m[ENS_MEMBERS]; /* NULL: weight 0 */
    int *rows;                 /* scratch: ENS_MEMBERS * PREDICTOR_MAX_K rows of np */
    double *score;             /* scratch: ENS_MEMBERS * PREDICTOR_MAX_K */
    int *cand;                 /* scratch: distinct rows (offsets into rows) */
    double *fused;             /* scratch: their fused scores */
} ens_state;

static void ens_destroy(predictor *p)
{
    ens_state *st = p->state;
    if (st) {
        for (int i = 0; i < ENS_MEMBERS; i++)
            predictor_free(st->m[i]);
        free(st->rows);
        free(st->score);
        free(st->cand);
        free(st->fused);
        free(st);
    }
    p->state = NULL;
}

static ens_state *ens_alloc(predictor *p)
{
    size_t n = (size_t)ENS_MEMBERS * PREDICTOR_MAX_K;
    ens_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    p->state = st;
    st->rows = malloc(n * (size_t)p->np * sizeof *st->rows);
    st->score = malloc(n * sizeof *st->score);
    st->cand = malloc(n * sizeof *st->cand);
    st->fused = malloc(n * sizeof *st->fused);
    if (!st->rows || !st->score || !st->cand || !st->fused) {
        ens_destroy(p);
        return NULL;
    }
    return st;
}

static int ens_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    int used = 0;
    ens_state *st = ens_alloc(p);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; i < ENS_MEMBERS; i++)
        used += p->ens_w[i] > 0;
    if (used == 0) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "ensemble: every member's weight is 0");
        kt_error_hint(err, "give w_seq2seq, w_nearest, w_common or w_xgb a weight above 0");
        return -1;
    }
    for (int i = 0; i < ENS_MEMBERS; i++) {
        if (!(p->ens_w[i] > 0))
            continue;
        json_t *h = pred_member_hyper(p, ens_kind[i]);
        if (!h)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        st->m[i] = predictor_train(ens_kind[i], ts, h, seed, err);
        json_decref(h);
        if (!st->m[i]) {
            kt_error_prefix(err, "ensemble member %s", ens_kind[i]);
            return -1;
        }
    }
    return 0;
}

/* Index of row among the n candidates (offsets into st->rows), or -1. */
static int ens_find(const predictor *p, const ens_state *st, int n, const int *row)
{
    for (int j = 0; j < n; j++) {
        if (memcmp(st->rows + (size_t)st->cand[j] * (size_t)p->np, row,
                   (size_t)p->np * sizeof *row) == 0)
            return j;
    }
    return -1;
}

/* Appends candidate j to the output unless there; keeps the scores non-increasing. */
static void ens_emit(const predictor *p, const ens_state *st, int j, int *rows, double *score,
                     int *n, int k)
{
    double s = st->fused[j];
    if (*n > 0 && s > score[*n - 1])
        s = score[*n - 1];
    pred_row_push(p, rows, score, n, k, st->rows + (size_t)st->cand[j] * (size_t)p->np, s);
}

static int ens_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                      int width, int k, int *rows, double *score, kt_error *err)
{
    ens_state *st = p->state;
    int list = p->ens_list > k ? p->ens_list : k, got[ENS_MEMBERS] = {0}, nc = 0, n = 0;
    int order[ENS_MEMBERS], no = 0;
    if (list > PREDICTOR_MAX_K)
        list = PREDICTOR_MAX_K;
    for (int i = 0; i < ENS_MEMBERS; i++) {
        predictor *m = st->m[i];
        if (!m)
            continue;
        size_t at = (size_t)i * PREDICTOR_MAX_K;
        got[i] = m->ops->decode(m, args, sp, mode, width > list ? width : list, list,
                                st->rows + at * (size_t)p->np, st->score + at, err);
        if (got[i] < 0) {
            kt_error_prefix(err, "ensemble member %s", ens_kind[i]);
            return -1;
        }
    }
    /* distinct rows in round-robin order (rank by rank, members in kind order): the tie order */
    for (int r = 0; r < list; r++) {
        for (int i = 0; i < ENS_MEMBERS; i++) {
            if (r >= got[i])
                continue;
            int off = i * PREDICTOR_MAX_K + r;
            int j = ens_find(p, st, nc, st->rows + (size_t)off * (size_t)p->np);
            if (j < 0) {
                j = nc++;
                st->cand[j] = off;
                st->fused[j] = 0;
            }
            st->fused[j] += p->ens_w[i] / (p->ens_c + r + 1);
        }
    }
    /* the fused best first */
    for (int emitted = 0; emitted < 1 && nc > 0; emitted++) {
        int best = 0;
        for (int j = 1; j < nc; j++)
            best = st->fused[j] > st->fused[best] ? j : best;
        ens_emit(p, st, best, rows, score, &n, k);
    }
    /* each member's first choice, members by weight (then kind order) */
    for (int i = 0; p->ens_diverse && i < ENS_MEMBERS; i++) {
        int at = no;
        if (!st->m[i] || got[i] == 0)
            continue;
        while (at > 0 && p->ens_w[order[at - 1]] < p->ens_w[i]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
        no++;
    }
    for (int o = 0; o < no && n < k; o++) {
        int off = order[o] * PREDICTOR_MAX_K;
        ens_emit(p, st, ens_find(p, st, nc, st->rows + (size_t)off * (size_t)p->np), rows, score,
                 &n, k);
    }
    /* the rest in fused order (selection: nc is at most 4 * list) */
    for (int done = 0; n < k && done < nc; done++) {
        int best = -1;
        for (int j = 0; j < nc; j++) {
            int taken = 0;
            for (int t = 0; t < n && !taken; t++)
                taken = memcmp(rows + (size_t)t * (size_t)p->np,
                               st->rows + (size_t)st->cand[j] * (size_t)p->np,
                               (size_t)p->np * sizeof *rows) == 0;
            if (!taken && (best < 0 || st->fused[j] > st->fused[best]))
                best = j;
        }
        if (best < 0)
            break;
        ens_emit(p, st, best, rows, score, &n, k);
    }
    return n;
}

static int ens_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    const ens_state *st = p->state;
    json_t *members = json_array();
    int rc = -1;
    if (!members || json_object_set_new(meta, "members", members) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; i < ENS_MEMBERS; i++) {
        strbuf one;
        if (!st->m[i])
            continue;
        strbuf_init(&one, (size_t)1 << 31);
        rc = predictor_save(st->m[i], &one, err);
        if (rc == 0 && (one.failed || pred_put_blob(bin, strbuf_str(&one), one.len) < 0 ||
                        json_array_append_new(members, json_pack("{s:s, s:f}", "kind", ens_kind[i],
                                                                 "weight", p->ens_w[i])) != 0))
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        strbuf_release(&one);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int ens_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                    kt_error *err)
{
    size_t pos = 0;
    const json_t *members = json_object_get(meta, "members");
    ens_state *st = ens_alloc(p);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    int want = 0;
    for (int i = 0; i < ENS_MEMBERS; i++)
        want += p->ens_w[i] > 0;
    if (!json_is_array(members) || json_array_size(members) != (size_t)want || want == 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "ensemble model: the members do not match the weights");
    size_t e = 0;
    for (int i = 0; i < ENS_MEMBERS; i++) {
        const unsigned char *data;
        size_t n;
        if (!(p->ens_w[i] > 0))
            continue;
        const json_t *o = json_array_get(members, e++);
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (!kind || strcmp(kind, ens_kind[i]) != 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "ensemble model: member %zu is not %s",
                                e - 1, ens_kind[i]);
        if (pred_get_blob(bin, len, &pos, &data, &n, err) < 0)
            return -1;
        if (!(st->m[i] = predictor_load(data, n, err))) {
            kt_error_prefix(err, "ensemble member %s", ens_kind[i]);
            return -1;
        }
        if (strcmp(predictor_kind(st->m[i]), ens_kind[i]) != 0 ||
            !json_equal(st->m[i]->params, p->params) ||
            !json_equal(st->m[i]->arg_names, p->arg_names))
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "ensemble model: member %s has another layout", ens_kind[i]);
    }
    if (pos != len)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "ensemble model: trailing bytes");
    return 0;
}

const pred_ops pred_ensemble_ops = {"ensemble", ens_train, ens_decode,
                                    ens_save,   ens_load,  ens_destroy};
