/* search/xgb_model — the cost model of the xgb strategy, as AutoTVM's XGBoostCostModel with
 * loss_type "rank": knob features, the fit (rank:pairwise, max_depth 3, gamma 1e-4,
 * min_child_weight 1, subsample 1, eta 0.3, lambda 1, alpha 0; up to 8000 rounds with early
 * stopping on the training set's a-recall@plan_size) and prediction. Single-threaded, exact trees
 * and a fixed seed, so the same trials give the same model. */
#include "search/xgb_impl.h"

#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xgb_features(xgb_state *st, config_id id, float *f)
{
    xgb_knob_features(st->b.sp, st->knobs.vals, st->knobs.voff, st->knobs.idx, id, f);
}

static int xgb_check(int rc, const char *what)
{
    return xgb_lib_check(rc, "xgb", what);
}

/* Sort keys: numpy's argsort(preds)[::-1] puts equal predictions latest row first; get_rank's
 * argsort(-labels) puts equal labels earliest position first. */
static int by_pred_desc(const void *a, const void *b)
{
    const xgb_rank_item *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->i < y->i) - (x->i > y->i);
}

static int by_label_desc(const void *a, const void *b)
{
    const xgb_rank_item *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

double xgb_average_recall(const float *pred, const float *label, int n, int top,
                          xgb_rank_item *items, int *rank)
{
    if (n <= 0 || top <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        items[i] = (xgb_rank_item){pred[i], i};
    qsort(items, (size_t)n, sizeof *items, by_pred_desc);
    /* items[j].i is the row at position j; relabel the positions by their labels */
    for (int j = 0; j < n; j++)
        items[j] = (xgb_rank_item){label[items[j].i], j};
    qsort(items, (size_t)n, sizeof *items, by_label_desc);
    for (int r = 0; r < n; r++)
        rank[items[r].i] = r;
    int m = top < n ? top : n;
    double sum = 0;
    for (int i = 0; i < m; i++) {
        int hit = 0;
        for (int j = 0; j < i; j++) /* AutoTVM's recall_curve counts ranks[:i], excluding i */
            hit += rank[j] <= i;
        sum += (double)hit / (i + 1);
    }
    return sum / top;
}

/* The training rows in a random order (AutoTVM's np.random.permutation): features and labels. */
static int training_rows(xgb_state *st, float *xs, float *label)
{
    int *perm = malloc((size_t)st->n * sizeof *perm);
    if (!perm)
        return -1;
    for (int i = 0; i < st->n; i++)
        perm[i] = i;
    for (int i = st->n - 1; i > 0; i--) {
        int j = (int)kt_rng_below(&st->b.rng, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    size_t np = (size_t)st->np;
    for (int r = 0; r < st->n; r++) {
        memcpy(xs + (size_t)r * np, st->x + (size_t)perm[r] * np, np * sizeof *xs);
        label[r] = (float)(st->y[perm[r]] / (st->y_max > 1e-300 ? st->y_max : 1e-300));
    }
    free(perm);
    return 0;
}

BoosterHandle xgb_fit(xgb_state *st)
{
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    size_t n = (size_t)st->n, np = (size_t)(st->np > 0 ? st->np : 1);
    float *xs = malloc(n * np * sizeof *xs), *label = malloc(n * sizeof *label);
    xgb_rank_item *items = malloc(n * sizeof *items);
    int *rank = malloc(n * sizeof *rank);
    int ok = 0;

    st->last_rounds = st->last_best_round = 0;
    st->last_recall = 0;
    if (!xs || !label || !items || !rank || training_rows(st, xs, label) < 0) {
        log_warn("xgb searcher: out of memory for the training set");
        goto done;
    }
    /* No query groups: all rows are one group, as in AutoTVM's DMatrix. */
    if (xgb_train_begin(xs, st->n, st->np, label, 0, st->seed, "xgb", &dm, &b) < 0)
        goto done;
    /* AutoTVM's custom_callback: after each round the training set's a-recall@plan_size; stop once
     * stop_rounds rounds passed without a strictly better one. The booster keeps every round. */
    double best = -INFINITY;
    int best_it = 0, it;
    for (it = 0; it < st->max_rounds; it++) {
        bst_ulong len = 0;
        const float *pred = NULL;
        if (xgb_check(XGBoosterUpdateOneIter(b, it, dm), "XGBoosterUpdateOneIter") < 0 ||
            xgb_check(XGBoosterPredict(b, dm, 0, 0, 0, &len, &pred), "XGBoosterPredict") < 0)
            goto done;
        if (len != (bst_ulong)n) {
            log_warn("xgb searcher: XGBoosterPredict returned %llu scores for %zu rows",
                     (unsigned long long)len, n);
            goto done;
        }
        double score = xgb_average_recall(pred, label, st->n, st->plan_size, items, rank);
        if (score > best) {
            best = score;
            best_it = it;
        } else if (it - best_it >= st->stop_rounds) {
            it++;
            break;
        }
    }
    st->last_rounds = it;
    st->last_best_round = best_it;
    st->last_recall = best;
    ok = 1;
done:
    b = xgb_train_end(dm, b, ok, "xgb");
    free(xs);
    free(label);
    free(items);
    free(rank);
    return b;
}

int xgb_predict(xgb_state *st, BoosterHandle b, const config_id *ids, int n, float *out)
{
    return xgb_predict_ids(b, st->b.sp, &st->knobs, ids, n, st->w.fx, out, "xgb");
}
