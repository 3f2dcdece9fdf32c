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
    int n;        /* problems */
    double *lg;   /* n * na */
    int *off;     /* n + 1, in rows */
    int *rows;    /* per problem, fastest first */
    double *rat;  /* ratio to the problem's best, per row */
    double *vote; /* scratch: per row */
    int *cand;    /* scratch: per row */
    int *near;    /* scratch: problems by distance */
    double *dist; /* scratch: per problem */
} local_state;

static void local_destroy(predictor *p)
{
    local_state *st = p->state;
    if (st) {
        free(st->lg);
        free(st->off);
        free(st->rows);
        free(st->rat);
        free(st->vote);
        free(st->cand);
        free(st->near);
        free(st->dist);
        free(st);
    }
    p->state = NULL;
}

static local_state *local_alloc(predictor *p, int n, int total)
{
    local_state *st = calloc(1, sizeof *st);
    size_t nn = (size_t)(n ? n : 1), nt = (size_t)(total ? total : 1);
    if (!st)
        return NULL;
    p->state = st;
    st->n = n;
    st->lg = malloc(nn * (size_t)p->nf * sizeof *st->lg);
    st->off = calloc(nn + 1, sizeof *st->off);
    st->rows = malloc(nt * (size_t)p->np * sizeof *st->rows);
    st->rat = malloc(nt * sizeof *st->rat);
    st->vote = malloc(nt * sizeof *st->vote);
    st->cand = malloc(nt * sizeof *st->cand);
    st->near = malloc(nn * sizeof *st->near);
    st->dist = malloc(nn * sizeof *st->dist);
    if (!st->lg || !st->off || !st->rows || !st->rat || !st->vote || !st->cand || !st->near ||
        !st->dist) {
        local_destroy(p);
        return NULL;
    }
    return st;
}

static int local_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    (void)seed;
    int n = 0, total = 0, j = 0, at = 0;
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        int t = training_set_num_trials(ts, i);
        n += t > 0;
        total += t < LOCAL_POOL ? t : LOCAL_POOL;
    }
    local_state *st = local_alloc(p, n, total);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int i = 0; i < training_set_num_problems(ts); i++) {
        int t = training_set_num_trials(ts, i);
        double best;
        if (t == 0)
            continue;
        training_set_trial(ts, i, 0, &best);
        const double *a = training_set_problem_args(ts, i);
        for (int q = 0; q < p->nf; q++)
            st->lg[(size_t)j * (size_t)p->nf + (size_t)q] = log2(a[q] < 1 ? 1 : a[q]);
        st->off[j] = at;
        for (int r = 0; r < t && r < LOCAL_POOL; r++, at++) {
            double ms;
            memcpy(st->rows + (size_t)at * (size_t)p->np, training_set_trial(ts, i, r, &ms),
                   (size_t)p->np * sizeof *st->rows);
            st->rat[at] = ms / best;
        }
        j++;
    }
    st->off[j] = at;
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

static int local_same(const predictor *p, const local_state *st, int r, const int *row)
{
    return memcmp(st->rows + (size_t)r * (size_t)p->np, row, (size_t)p->np * sizeof *row) == 0;
}

static int local_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                        int width, int k, int *rows, double *score, kt_error *err)
{
    (void)width;
    (void)err;
    local_state *st = p->state;
    int nk = p->loc_k < st->n ? p->loc_k : st->n, nc = 0, n = 0;
    for (int i = 0; i < st->n; i++) {
        double s = 0;
        for (int q = 0; q < p->nf; q++) {
            double x =
                st->lg[(size_t)i * (size_t)p->nf + (size_t)q] - log2(args[q] < 1 ? 1 : args[q]);
            s += x * x;
        }
        st->dist[i] = sqrt(s);
        st->near[i] = i;
    }
    qsort_r(st->near, (size_t)st->n, sizeof *st->near, local_near_cmp, st);
    /* candidates: the neighbours' near-best rows, first occurrence only, in the order met */
    for (int a = 0; a < nk; a++) {
        int j = st->near[a];
        for (int r = st->off[j]; r < st->off[j + 1] && st->rat[r] <= 1 + p->loc_tol; r++) {
            int seen = 0;
            for (int c = 0; c < nc && !seen; c++)
                seen = local_same(p, st, st->cand[c], st->rows + (size_t)r * (size_t)p->np);
            if (seen || (mode == PREDICT_CONSTRAINED &&
                         !pred_row_valid(sp, st->rows + (size_t)r * (size_t)p->np)))
                continue;
            st->cand[nc++] = r;
        }
    }
    for (int c = 0; c < nc; c++) {
        const int *row = st->rows + (size_t)st->cand[c] * (size_t)p->np;
        double v = 0;
        for (int a = 0; a < nk; a++) {
            int j = st->near[a];
            for (int r = st->off[j]; r < st->off[j + 1]; r++) {
                if (local_same(p, st, r, row)) {
                    double g = 1 - (st->rat[r] - 1) / p->loc_tol;
                    v += g > 0 ? g / (1 + st->dist[j]) : 0;
                    break;
                }
            }
        }
        st->vote[st->cand[c]] = v;
    }
    qsort_r(st->cand, (size_t)nc, sizeof *st->cand, local_vote_cmp, st);
    for (int c = 0; c < nc && n < k; c++)
        pred_row_push(p, rows, score, &n, k, st->rows + (size_t)st->cand[c] * (size_t)p->np,
                      st->vote[st->cand[c]]);
    /* the fill: every problem by distance, fastest first */
    double s = n > 0 ? score[n - 1] : 0;
    for (int a = 0; a < st->n && n < k; a++) {
        int j = st->near[a];
        for (int r = st->off[j]; r < st->off[j + 1] && n < k; r++) {
            const int *row = st->rows + (size_t)r * (size_t)p->np;
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
    json_t *probs = json_array();
    for (int i = 0; probs && i < st->n; i++) {
        json_t *lg = json_array(), *rows = json_array(), *rat = json_array();
        for (int q = 0; lg && q < p->nf; q++)
            json_array_append_new(lg, json_real(st->lg[(size_t)i * (size_t)p->nf + (size_t)q]));
        for (int r = st->off[i]; rows && rat && r < st->off[i + 1]; r++) {
            json_array_append_new(rows,
                                  pred_int_array(st->rows + (size_t)r * (size_t)p->np, p->np));
            json_array_append_new(rat, json_real(st->rat[r]));
        }
        json_t *o = lg && rows && rat
                        ? json_pack("{s:o, s:o, s:o}", "log2_args", lg, "rows", rows, "ratios", rat)
                        : NULL;
        if (!o || json_array_append_new(probs, o) != 0) {
            json_decref(probs);
            probs = NULL;
        }
    }
    if (!probs || json_object_set_new(meta, "problems", probs) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

static int local_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                      kt_error *err)
{
    (void)bin;
    (void)len;
    const json_t *probs = json_object_get(meta, "problems");
    int n = json_is_array(probs) ? (int)json_array_size(probs) : -1, total = 0, at = 0;
    for (int i = 0; i < n; i++) {
        const json_t *rows = json_object_get(json_array_get(probs, (size_t)i), "rows");
        total += json_is_array(rows) ? (int)json_array_size(rows) : 0;
    }
    local_state *st = n >= 0 && total < (1 << 24) ? local_alloc(p, n, total) : NULL;
    if (!st)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "local model: bad \"problems\"");
    for (int i = 0; i < n; i++) {
        const json_t *o = json_array_get(probs, (size_t)i), *lg = json_object_get(o, "log2_args");
        const json_t *rows = json_object_get(o, "rows"), *rat = json_object_get(o, "ratios");
        if (!json_is_array(lg) || json_array_size(lg) != (size_t)p->nf || !json_is_array(rows) ||
            !json_is_array(rat) || json_array_size(rat) != json_array_size(rows))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "local model: bad problem %d", i);
        for (int q = 0; q < p->nf; q++)
            st->lg[(size_t)i * (size_t)p->nf + (size_t)q] =
                json_number_value(json_array_get(lg, (size_t)q));
        st->off[i] = at;
        for (size_t r = 0; r < json_array_size(rows); r++, at++) {
            double x = json_number_value(json_array_get(rat, r));
            if (!(x >= 1) || !isfinite(x) ||
                pred_read_ints(json_array_get(rows, r), p->np, p->nv,
                               st->rows + (size_t)at * (size_t)p->np) < 0)
                return kt_error_set(err, KT_ERR_BAD_REQUEST, "local model: bad row");
            st->rat[at] = x;
        }
    }
    st->off[n] = at;
    return 0;
}

const pred_ops pred_local_ops = {"local",    local_train, local_decode,
                                 local_save, local_load,  local_destroy};
