/* model/predictor_simple — the two baselines behind the predictor facade (predictor_impl.h):
 *
 * nearest (Kernel Launcher's rule): keeps each training problem's arguments and its fastest `top`
 * configurations. For a problem, the training problems are ordered by the Euclidean distance of
 * the log2 of their arguments (ties: the order of the set); the nearest one's configurations are
 * listed fastest first, then the next-nearest's, skipping repeats (and, constrained, the ones not
 * valid in the space). Score: -(distance) - rank / 1000, never above the one before.
 *
 * common (Kernel Tuner's fallback): every configuration among the top `top` of some training
 * problem, ranked by how many problems have it there (more first), then by its mean rank there
 * (lower first), then by the order first seen (problems in set order, fastest first). Score: the
 * share of problems. */
#include "model/predictor_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- nearest ---- */

/* The state: the problems' table (predictor_problems.c), each problem's fastest `top` rows. */
static void near_destroy(predictor *p)
{
    pred_problems *st = p->state;
    if (st) {
        pred_problems_free(st);
        free(st);
    }
    p->state = NULL;
}

static int near_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    (void)seed;
    pred_problems *st = calloc(1, sizeof *st);
    p->state = st;
    if (!st || pred_problems_train(st, p, ts, p->top, 0) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

typedef struct near_dist {
    double d;
    int i;
} near_dist;

static int near_dist_cmp(const void *a, const void *b)
{
    const near_dist *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->i - y->i;
}

static int near_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                       int width, int k, int *rows, double *score, kt_error *err)
{
    (void)width;
    const pred_problems *st = p->state;
    size_t nn = (size_t)(st->n ? st->n : 1);
    near_dist *d = malloc(nn * sizeof *d);
    double *dist = malloc(nn * sizeof *dist);
    int n = 0;
    if (!d || !dist) {
        free(d);
        free(dist);
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    pred_problems_dist(st, p, args, dist);
    for (int i = 0; i < st->n; i++)
        d[i] = (near_dist){dist[i], i};
    qsort(d, (size_t)st->n, sizeof *d, near_dist_cmp);
    for (int j = 0; j < st->n && n < k; j++) {
        int i = d[j].i;
        for (int r = st->off[i]; r < st->off[i + 1] && n < k; r++) {
            const int *row = st->rows + (size_t)r * (size_t)p->np;
            if (mode == PREDICT_CONSTRAINED && !pred_row_valid(sp, row))
                continue;
            double s = -d[j].d - (r - st->off[i]) / 1000.0;
            if (n > 0 && s > score[n - 1])
                s = score[n - 1]; /* a farther problem at almost the same distance */
            pred_row_push(p, rows, score, &n, k, row, s);
        }
    }
    free(d);
    free(dist);
    return n;
}

static int near_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    (void)bin;
    return pred_problems_save(p->state, p, meta, err);
}

static int near_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                     kt_error *err)
{
    (void)bin;
    (void)len;
    pred_problems *st = calloc(1, sizeof *st);
    p->state = st;
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return pred_problems_load(st, p, meta, 0, err);
}

const pred_ops pred_nearest_ops = {"nearest", near_train, near_decode,
                                   near_save, near_load,  near_destroy};

/* ---- common ---- */

typedef struct common_entry {
    int count;
    double rank_sum;
    int row;   /* offset into rows, in rows of np */
    int first; /* the first training row that had it (problems in set order, fastest first) */
} common_entry;

typedef struct common_state {
    int n_problems, n;
    common_entry *e;
    int *rows;
} common_state;

static void common_destroy(predictor *p)
{
    common_state *st = p->state;
    if (st) {
        free(st->e);
        free(st->rows);
        free(st);
    }
    p->state = NULL;
}

/* More problems first, then the lower mean rank, then the first seen (deterministic). */
static int common_cmp(const void *a, const void *b)
{
    const common_entry *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    double mx = x->rank_sum / x->count, my = y->rank_sum / y->count;
    if (mx != my)
        return mx < my ? -1 : 1;
    return x->first - y->first;
}

typedef struct common_sort {
    const training_set *ts;
    const int *prob, *rank;
    int np;
} common_sort;

/* Training rows by content, then by position (so the first of equal rows is the first seen). */
static int common_row_cmp(const void *a, const void *b, void *ctx)
{
    const common_sort *c = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int r = memcmp(training_set_trial(c->ts, c->prob[x], c->rank[x], NULL),
                   training_set_trial(c->ts, c->prob[y], c->rank[y], NULL),
                   (size_t)c->np * sizeof(int));
    return r ? r : x - y;
}

static int common_train(predictor *p, const training_set *ts, uint64_t seed, kt_error *err)
{
    (void)seed;
    int *prob = NULL, *rank = NULL, *order = NULL;
    int total = pred_training_rows(p, ts, &prob, &rank), rc = -1;
    common_state *st = calloc(1, sizeof *st);
    if (total < 0 || !st)
        goto oom;
    st->e = malloc((size_t)(total ? total : 1) * sizeof *st->e);
    st->rows = malloc((size_t)(total ? total : 1) * (size_t)p->np * sizeof *st->rows);
    order = malloc((size_t)(total ? total : 1) * sizeof *order);
    if (!st->e || !st->rows || !order)
        goto oom;
    for (int i = 0; i < total; i++)
        order[i] = i;
    common_sort cs = {ts, prob, rank, p->np};
    qsort_r(order, (size_t)total, sizeof *order, common_row_cmp, &cs);
    for (int i = 0; i < total; i++) {
        const int *row = training_set_trial(ts, prob[order[i]], rank[order[i]], NULL);
        int j = st->n - 1;
        if (j < 0 ||
            memcmp(st->rows + (size_t)j * (size_t)p->np, row, (size_t)p->np * sizeof *row) != 0) {
            j = st->n++;
            memcpy(st->rows + (size_t)j * (size_t)p->np, row, (size_t)p->np * sizeof *row);
            st->e[j] = (common_entry){0, 0, j, order[i]};
        }
        st->e[j].count++;
        st->e[j].rank_sum += rank[order[i]];
    }
    for (int i = 0; i < training_set_num_problems(ts); i++)
        st->n_problems += training_set_num_trials(ts, i) > 0;
    qsort(st->e, (size_t)st->n, sizeof *st->e, common_cmp);
    p->state = st;
    st = NULL;
    rc = 0;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    if (st) {
        free(st->e);
        free(st->rows);
        free(st);
    }
    free(prob);
    free(rank);
    free(order);
    return rc;
}

static int common_decode(predictor *p, const double *args, const space *sp, predict_mode mode,
                         int width, int k, int *rows, double *score, kt_error *err)
{
    (void)args;
    (void)width;
    (void)err;
    const common_state *st = p->state;
    int n = 0;
    for (int j = 0; j < st->n && n < k; j++) {
        const int *row = st->rows + (size_t)st->e[j].row * (size_t)p->np;
        if (mode == PREDICT_CONSTRAINED && !pred_row_valid(sp, row))
            continue;
        pred_row_push(p, rows, score, &n, k, row, (double)st->e[j].count / st->n_problems);
    }
    return n;
}

static int common_save(const predictor *p, json_t *meta, strbuf *bin, kt_error *err)
{
    (void)bin;
    const common_state *st = p->state;
    json_t *ranked = json_array();
    for (int j = 0; ranked && j < st->n; j++) {
        json_t *o =
            json_pack("{s:o, s:i, s:f}", "row",
                      pred_int_array(st->rows + (size_t)st->e[j].row * (size_t)p->np, p->np),
                      "count", st->e[j].count, "rank_sum", st->e[j].rank_sum);
        if (!o || json_array_append_new(ranked, o) != 0) {
            json_decref(ranked);
            ranked = NULL;
        }
    }
    if (!ranked || json_object_set_new(meta, "ranked", ranked) != 0 ||
        json_object_set_new(meta, "n_problems", json_integer(st->n_problems)) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

static int common_load(predictor *p, const json_t *meta, const unsigned char *bin, size_t len,
                       kt_error *err)
{
    (void)bin;
    (void)len;
    const json_t *ranked = json_object_get(meta, "ranked");
    const json_t *np = json_object_get(meta, "n_problems");
    int n = json_is_array(ranked) ? (int)json_array_size(ranked) : -1;
    if (n < 0 || n > (1 << 24) || !json_is_integer(np) || json_integer_value(np) < 1)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "common model: bad \"ranked\"");
    common_state *st = calloc(1, sizeof *st);
    if (!st)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    p->state = st;
    st->n_problems = (int)json_integer_value(np);
    st->e = malloc((size_t)(n ? n : 1) * sizeof *st->e);
    st->rows = malloc((size_t)(n ? n : 1) * (size_t)p->np * sizeof *st->rows);
    if (!st->e || !st->rows)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (int j = 0; j < n; j++) {
        const json_t *o = json_array_get(ranked, (size_t)j);
        const json_t *c = json_object_get(o, "count"), *rs = json_object_get(o, "rank_sum");
        if (!json_is_integer(c) || json_integer_value(c) < 1 || !json_is_number(rs) ||
            pred_read_ints(json_object_get(o, "row"), p->np, p->nv,
                           st->rows + (size_t)j * (size_t)p->np) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "common model: bad entry %d", j);
        st->e[j] = (common_entry){(int)json_integer_value(c), json_number_value(rs), j, j};
    }
    st->n = n;
    return 0;
}

const pred_ops pred_common_ops = {"common",    common_train, common_decode,
                                  common_save, common_load,  common_destroy};
