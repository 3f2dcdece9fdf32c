/* model/predictor_local — "local": the configurations that are near-best on the problems nearest
 * to the one asked (Kernel Launcher's nearest rule made robust to timing noise and to one
 * neighbour's accident; Kernel Tuner's "common" restricted to the neighbourhood).
 *
 * Training keeps, per tuned problem, the log2 of its arguments and its fastest `pool` (128)
 * configurations with their time relative to that problem's best (ratio >= 1). For a problem, the
 * `neighbours` [4] nearest training problems (Euclidean distance of the log2 arguments, as nearest;
 * ties: set order) vote: a configuration measured on neighbour j at ratio r gets
 * w_j * max(0, 1 - (r - 1) / tol) with w_j = 1 / (1 + d_j) and tol [0.10] — a configuration within
 * a few percent of a neighbour's best counts almost fully (timing noise does not decide), one
 * beyond 1 + tol not at all, and a configuration good on several neighbours beats one neighbour's
 * single best. Candidates: the neighbours' configurations within 1 + tol of their best, by vote
 * (ties: nearer neighbour first, then faster there); then, when fewer than k, the rest of the
 * problems' configurations by distance, fastest first (as nearest). Constrained: rows not valid in
 * the space are skipped. Score: the vote (the fill: below the last vote, decreasing).
 *
 * Bytes: the meta line holds the problems (log2 arguments, rows, ratios). */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOCAL_POOL 128

typedef struct local_state {
    pred_problems tab; /* problems, their fastest rows and ratios (predictor_problems.c) */
    double *vote;      /* scratch: per row */
    int *cand;         /* scratch: per row */
    int *near;         /* scratch: problems by distance */
    double *dist;      /* scratch: per problem */
} local_state;

static void local_destroy(predictor *p)
{
    local_state *st = p->state;
    if (st) {
        pred_problems_free(&st->tab);
        free(st->vote);
        free(st->cand);
        free(st->near);
        free(st->dist);
        free(st);
    }
    p->state = NULL;
}

/* The decode scratch for the table st->tab; -1 out of memory. */
static int local_scratch(local_state *st)
{
    int n = st->tab.n, total = st->tab.off[n];
    size_t nn = (size_t)(n ? n : 1), nt = (size_t)(total ? total : 1);
    st->vote = malloc(nt * sizeof *st->vote);
    st->cand = malloc(nt * sizeof *st->cand);
    st->near = malloc(nn * sizeof *st->near);
    st->dist = malloc(nn * sizeof *st->dist);
    return st->vote && st->cand && st->near && st->dist ? 0 : -1;
}

static int local_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    (void)seed;
    local_state *st = calloc(1, sizeof *st);
    p->state = st;
    if (!st || pred_problems_train(&st->tab, p, ts, LOCAL_POOL, 1) < 0 || local_scratch(st) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

static int local_near_cmp(const void *a, const void *b, void *ctx)
{
    const local_state *st = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (st->dist[x] != st->dist[y])
        return st->dist[x] < st->dist[y] ? -1 : 1;
    return x - y;
}

/* Higher vote first, then the order met (cand holds row offsets in the order met). */
static int local_vote_cmp(const void *a, const void *b, void *ctx)
{
    const local_state *st = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (st->vote[x] != st->vote[y])
        return st->vote[x] > st->vote[y] ? -1 : 1;
    return x - y;
}

static int local_same(const predictor *p, const pred_problems *t, int r, const int *row)
{
    return memcmp(t->rows + (size_t)r * (size_t)p->np, row, (size_t)p->np * sizeof *row) == 0;
}

static int local_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                        int width, int k, int *rows, double *score, kt_error *err)
{
    (void)width;
    (void)err;
    local_state *st = p->state;
    const pred_problems *t = &st->tab;
    int nk = p->loc_k < t->n ? p->loc_k : t->n, nc = 0, n = 0;
    pred_problems_dist(t, p, args, st->dist);
    for (int i = 0; i < t->n; i++)
        st->near[i] = i;
    qsort_r(st->near, (size_t)t->n, sizeof *st->near, local_near_cmp, st);
    /* candidates: the neighbours' near-best rows, first occurrence only, in the order met */
    for (int a = 0; a < nk; a++) {
        int j = st->near[a];
        for (int r = t->off[j]; r < t->off[j + 1] && t->rat[r] <= 1 + p->loc_tol; r++) {
            int seen = 0;
            for (int c = 0; c < nc && !seen; c++)
                seen = local_same(p, t, st->cand[c], t->rows + (size_t)r * (size_t)p->np);
            if (seen || (mode == PREDICT_CONSTRAINED &&
                         !pred_row_valid(sp, t->rows + (size_t)r * (size_t)p->np)))
                continue;
            st->cand[nc++] = r;
        }
    }
    for (int c = 0; c < nc; c++) {
        const int *row = t->rows + (size_t)st->cand[c] * (size_t)p->np;
        double v = 0;
        for (int a = 0; a < nk; a++) {
            int j = st->near[a];
            for (int r = t->off[j]; r < t->off[j + 1]; r++) {
                if (local_same(p, t, r, row)) {
                    double g = 1 - (t->rat[r] - 1) / p->loc_tol;
                    v += g > 0 ? g / (1 + st->dist[j]) : 0;
                    break;
                }
            }
        }
        st->vote[st->cand[c]] = v;
    }
    qsort_r(st->cand, (size_t)nc, sizeof *st->cand, local_vote_cmp, st);
    for (int c = 0; c < nc && n < k; c++)
        pred_row_push(p, rows, score, &n, k, t->rows + (size_t)st->cand[c] * (size_t)p->np,
                      st->vote[st->cand[c]]);
    /* the fill: every problem by distance, fastest first */
    double s = n > 0 ? score[n - 1] : 0;
    for (int a = 0; a < t->n && n < k; a++) {
        int j = st->near[a];
        for (int r = t->off[j]; r < t->off[j + 1] && n < k; r++) {
            const int *row = t->rows + (size_t)r * (size_t)p->np;
            if (mode == PREDICT_CONSTRAINED && !pred_row_valid(sp, row))
                continue;
            s -= pred_row_push(p, rows, score, &n, k, row, s - 1e-3) ? 1e-3 : 0;
        }
    }
    return n;
}

static int local_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    (void)bin;
    const local_state *st = p->state;
    return pred_problems_save(&st->tab, p, meta, err);
}

static int local_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                      kt_error *err)
{
    (void)bin;
    (void)len;
    local_state *st = calloc(1, sizeof *st);
    p->state = st;
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    if (pred_problems_load(&st->tab, p, meta, 1, err) < 0)
        return -1;
    if (local_scratch(st) < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "local model: bad \"problems\"");
    return 0;
}

const pred_ops pred_local_ops = {"local",    local_train, local_decode,
                                 local_save, local_load,  local_destroy};
