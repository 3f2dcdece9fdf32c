/* search/xgb_local — the xgb strategy as it was before issue 15, kept because it scores better
 * than AutoTVM's settings (search/xgb.c) on the replay spaces at budgets up to 400 (mean fraction
 * of the optimum @100 0.918 against 0.881, 20 seeds; equal at 900). It is AutoTVM's XGBTuner
 * loosened for small budgets: plan (`batch`) 16, 30 fixed boosting rounds, annealing restarted
 * every plan from the best measured configurations plus random ones, local moves (one parameter to
 * a random other value, or one x2 and another /2), each proposal random with probability
 * `exploration`. The rest as xgb: an XGBoost model (libxgboost's C API) trained with rank:pairwise
 * on every told trial: features are the parameter values, one column per parameter (the number
 * where every value of the parameter is a number that fits a float, else the value's index), the
 * label is best time / time (failures 0), all trials one query group.
 *
 * The first `batch` proposals are random. Every `batch` told results (once one has succeeded) the
 * model is retrained from scratch and simulated annealing on it (`sa_points` parallel walkers
 * starting from the best measured configurations plus random ones, one random move per step
 * (xgbl_walk), temperature 1 -> 0 over `sa_steps`, early stop after 50 steps without change)
 * collects the `batch` unvisited configurations the model ranks highest: the plan. Proposals take
 * the plan in order; each is instead random with probability `exploration`; an exhausted plan
 * proposes at random.
 *
 * Determinism: XGBoost runs with nthread=1, the exact tree method, no subsampling and a seed
 * derived from ours, so the same told sequence gives the same model. Any XGBoost failure is logged
 * (warn) and leaves the plan empty, so the search goes on with random picks. */
#include "search/xgb_impl.h"

#include "core/log.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_BATCH, OPT_EXPLORATION, OPT_ROUNDS, OPT_SA_STEPS, OPT_SA_POINTS, N_OPTS };

static const searcher_option xgbl_options[N_OPTS] = {
    {"batch", SEARCHER_OPT_INTEGER, "16", 1, 4096, NULL,
     "configurations per model-chosen batch (AutoTVM's plan_size): the first batch is random, "
     "then the model is retrained from scratch every batch told results"},
    {"exploration", SEARCHER_OPT_NUMBER, "0.05", 0, 1, NULL,
     "probability that a proposal is a random configuration instead of the model's next pick"},
    {"rounds", SEARCHER_OPT_INTEGER, "30", 1, 1000, NULL,
     "boosting rounds per training (trees of depth 3, eta 0.3)"},
    {"sa_steps", SEARCHER_OPT_INTEGER, "100", 1, 10000, NULL,
     "simulated-annealing steps on the model per batch at most (stops early after 50 steps "
     "without a new top candidate)"},
    {"sa_points", SEARCHER_OPT_INTEGER, "128", 1, 4096, NULL,
     "parallel annealing walkers: the best measured configurations (up to a quarter) plus random "
     "ones"},
};

enum { SA_EARLY_STOP = 50, WALK_TRIES = 4 };

typedef struct xgbl_state {
    search_base b; /* first: its ask is the vtable's */
    uint64_t seed;
    int batch, rounds, sa_steps, sa_points;
    double explore;
    int np;
    xgb_knobs knobs;   /* knob features; knobs.idx: decode scratch */
    int *twice, *half; /* value index of 2x / 0.5x value v of parameter p at voff[p] + v, or -1 */
    /* told trials */
    float *x;      /* np features per trial */
    double *t;     /* search_score per trial */
    config_id *id; /* per trial */
    int n, cap, n_ok, since_train;
    double best_t;
    /* the plan: plan[pos..len) */
    config_id *plan;
    int plan_pos, plan_len;
    xgb_walkers w; /* annealing */
    xgb_cand *top; /* min-heap of the best `batch` candidates (worst at 0) */
    int n_top;
} xgbl_state;

static void xgbl_destroy(void *state)
{
    xgbl_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    xgb_knobs_free(&st->knobs);
    xgb_walkers_free(&st->w);
    free(st->twice);
    free(st->half);
    free(st->x);
    free(st->t);
    free(st->id);
    free(st->plan);
    free(st->top);
    free(st);
}

/* Features of id into f (np floats). */
static void xgbl_features(xgbl_state *st, config_id id, float *f)
{
    xgb_knob_features(st->b.sp, st->knobs.vals, st->knobs.voff, st->knobs.idx, id, f);
}

static int xgbl_check(int rc, const char *what)
{
    return xgb_lib_check(rc, "xgb_local", what);
}

/* A booster trained from scratch on every told trial, or NULL after a logged failure. */
static BoosterHandle xgbl_train(xgbl_state *st)
{
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    float *label = malloc((size_t)st->n * sizeof *label);
    int ok = 0;

    if (!label) {
        log_warn("xgb_local searcher: out of memory for the training labels");
        goto done;
    }
    for (int i = 0; i < st->n; i++)
        label[i] = st->t[i] >= SEARCH_BAD_SCORE ? 0.0f : (float)(st->best_t / st->t[i]);
    /* all trials one query group; AutoTVM's XGBoostCostModel parameters, single-threaded and
     * exact for determinism */
    if (xgb_train_begin(st->x, st->n, st->np, label, 1, st->seed, "xgb_local", &dm, &b) < 0)
        goto done;
    for (int it = 0; it < st->rounds; it++) {
        if (xgbl_check(XGBoosterUpdateOneIter(b, it, dm), "XGBoosterUpdateOneIter") < 0)
            goto done;
    }
    ok = 1;
done:
    b = xgb_train_end(dm, b, ok, "xgb_local");
    free(label);
    return b;
}

/* Model scores (higher = predicted faster) of ids[0..n) into out. -1 after a logged failure. */
static int xgbl_predict(xgbl_state *st, BoosterHandle b, const config_id *ids, int n, float *out)
{
    return xgb_predict_ids(b, st->b.sp, &st->knobs, ids, n, st->w.fx, out, "xgb_local");
}

/* Offers id to the top-`batch` heap unless visited or already offered. 1 if it entered, -1 no
 * memory. */
static int top_offer(xgbl_state *st, search_set *seen, config_id id, float score)
{
    xgb_cand c = {score, id};
    if (search_set_has(&st->b.visited, id) || search_set_has(seen, id))
        return 0;
    if (st->n_top == st->batch && !xgb_cand_worse(&st->top[0], &c))
        return 0;
    if (search_set_add(seen, id) < 0)
        return -1;
    if (st->n_top < st->batch)
        xgb_cand_push(st->top, &st->n_top, c);
    else /* an entry once displaced scores below the heap from then on: never re-offered */
        xgb_cand_replace_worst(st->top, st->n_top, c);
    return 1;
}

/* One random-walk step (AutoTVM: one knob to a random other value). A few random single-parameter
 * changes are tried, then a few random PAIR_SCALE moves (one value x2, another /2: the only moves
 * where restrictions fix products), then the full PAIR_SCALE and HAMMING lists, then a random
 * configuration. Random tries keep walks cheap: listing every neighbour of a tiling configuration
 * costs a hundred or two failed lookups. */
static config_id xgbl_walk(xgbl_state *st, config_id id)
{
    config_id out;
    int *idx = st->knobs.idx;
    if (st->np > 0 && space_decode(st->b.sp, id, idx) == 0) {
        for (int k = 0; k < WALK_TRIES; k++) {
            int p = (int)kt_rng_below(&st->b.rng, (uint64_t)st->np);
            if (space_param_num_values(st->b.sp, p) >= 2 &&
                xgb_param_move(st->b.sp, idx, p, &st->b.rng, &out))
                return out;
        }
        for (int k = 0; k < WALK_TRIES && st->np > 1; k++) {
            int p = (int)kt_rng_below(&st->b.rng, (uint64_t)st->np);
            int q = (int)kt_rng_below(&st->b.rng, (uint64_t)st->np - 1);
            q += q >= p;
            int vp = st->twice[st->knobs.voff[p] + idx[p]],
                vq = st->half[st->knobs.voff[q] + idx[q]];
            if (vp < 0 || vq < 0)
                continue;
            int op = idx[p], oq = idx[q];
            idx[p] = vp;
            idx[q] = vq;
            int ok = space_encode(st->b.sp, idx, &out) == 0;
            idx[p] = op;
            idx[q] = oq;
            if (ok)
                return out;
        }
    }
    int m = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, st->b.nb, st->b.nb_cap);
    if (m == 0)
        m = space_neighbours(st->b.sp, id, SPACE_NEIGHBOURS_HAMMING, st->b.nb, st->b.nb_cap);
    if (m == 0)
        return space_sample(st->b.sp, &st->b.rng);
    return st->b.nb[kt_rng_below(&st->b.rng, (uint64_t)m)];
}

/* Indices of the best `k` successful trials into out (k <= n_ok): a partial selection sort,
 * k is small. */
static int best_trials(const xgbl_state *st, int *out, int k)
{
    int got = 0;
    for (int r = 0; r < k; r++) {
        int bi = -1;
        for (int i = 0; i < st->n; i++) {
            if (st->t[i] >= SEARCH_BAD_SCORE)
                continue;
            int taken = 0;
            for (int j = 0; j < got && !taken; j++)
                taken = out[j] == i;
            if (!taken && (bi < 0 || st->t[i] < st->t[bi]))
                bi = i;
        }
        if (bi < 0)
            break;
        out[got++] = bi;
    }
    return got;
}

/* Simulated annealing on the model: fills the plan with the best predicted unvisited
 * configurations. -1 on a model failure (logged) or no memory; the plan is then empty. */
static int xgbl_anneal(xgbl_state *st, BoosterHandle b)
{
    search_set seen = {0};
    int P = st->sa_points, rc = -1;
    int *best = malloc((size_t)(P / 4 + 1) * sizeof *best);

    st->n_top = 0;
    st->plan_len = st->plan_pos = 0;
    if (!best)
        goto done;
    int nb = best_trials(st, best, P / 4);
    for (int i = 0; i < P; i++)
        st->w.pts[i] = i < nb ? st->id[best[i]] : space_sample(st->b.sp, &st->b.rng);
    if (xgbl_predict(st, b, st->w.pts, P, st->w.sc) < 0)
        goto done;
    for (int i = 0; i < P; i++) {
        if (top_offer(st, &seen, st->w.pts[i], st->w.sc[i]) < 0)
            goto done;
    }
    double temp = 1.0, cool = 1.0 / (st->sa_steps + 1);
    int last_change = 0;
    for (int k = 0; k < st->sa_steps && k < last_change + SA_EARLY_STOP; k++) {
        for (int i = 0; i < P; i++)
            st->w.newp[i] = xgbl_walk(st, st->w.pts[i]);
        if (xgbl_predict(st, b, st->w.newp, P, st->w.newsc) < 0)
            goto done;
        for (int i = 0; i < P; i++) {
            double d = ((double)st->w.newsc[i] - st->w.sc[i]) / (temp + 1e-5);
            if (kt_rng_uniform(&st->b.rng) < exp(d < 1 ? d : 1)) {
                st->w.pts[i] = st->w.newp[i];
                st->w.sc[i] = st->w.newsc[i];
            }
            int in = top_offer(st, &seen, st->w.newp[i], st->w.newsc[i]);
            if (in < 0)
                goto done;
            if (in)
                last_change = k;
        }
        temp -= cool;
    }
    qsort(st->top, (size_t)st->n_top, sizeof *st->top, xgb_cand_cmp_desc);
    for (int i = 0; i < st->n_top; i++)
        st->plan[i] = st->top[i].id;
    st->plan_len = st->n_top;
    rc = 0;
done:
    search_set_free(&seen);
    free(best);
    return rc;
}

/* The plan's next unvisited entry, unless this proposal explores (0: a random configuration). */
static int xgbl_pick(void *state, config_id *slot)
{
    xgbl_state *st = state;
    int rc = 0;
    if (st->plan_pos < st->plan_len && kt_rng_uniform(&st->b.rng) >= st->explore) {
        while (st->plan_pos < st->plan_len && rc == 0) {
            config_id id = st->plan[st->plan_pos++];
            rc = search_set_add(&st->b.visited, id);
            if (rc > 0)
                *slot = id;
        }
    }
    return rc;
}

static void *xgbl_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    static const search_hooks hooks = {"xgb_local", NULL, xgbl_pick, NULL};
    xgbl_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);
    if (!st)
        return NULL;
    st->seed = seed;
    st->batch = (int)searcher_option_number(&xgbl_options[OPT_BATCH], options);
    st->explore = searcher_option_number(&xgbl_options[OPT_EXPLORATION], options);
    st->rounds = (int)searcher_option_number(&xgbl_options[OPT_ROUNDS], options);
    st->sa_steps = (int)searcher_option_number(&xgbl_options[OPT_SA_STEPS], options);
    st->sa_points = (int)searcher_option_number(&xgbl_options[OPT_SA_POINTS], options);
    st->best_t = SEARCH_BAD_SCORE;
    int np = space_num_params(sp);
    st->np = np;
    size_t pn = (size_t)(np > 0 ? np : 1), nvals = 0;
    if (xgb_knobs_init(&st->knobs, sp) < 0)
        goto oom;
    for (int p = 0; p < np; p++)
        nvals += (size_t)space_param_num_values(sp, p);
    /* twice / half: the value index of 2x / x/2 in the same list (-1 none), for the x2 / /2 moves
     */
    st->twice = malloc((nvals ? nvals : 1) * sizeof *st->twice);
    st->half = malloc((nvals ? nvals : 1) * sizeof *st->half);
    if (!st->twice || !st->half)
        goto oom;
    for (int p = 0; p < np; p++) {
        int nv = space_param_num_values(sp, p), numeric = 1;
        for (int v = 0; v < nv && numeric; v++)
            numeric = fabs(space_param_value_number(sp, p, v)) < FLT_MAX; /* NAN: a string */
        for (int v = 0; v < nv; v++) {
            double x = space_param_value_number(sp, p, v);
            st->twice[st->knobs.voff[p] + v] = st->half[st->knobs.voff[p] + v] = -1;
            for (int w = 0; w < nv && numeric && x != 0; w++) {
                double y = space_param_value_number(sp, p, w);
                if (y == 2 * x)
                    st->twice[st->knobs.voff[p] + v] = w;
                if (2 * y == x)
                    st->half[st->knobs.voff[p] + v] = w;
            }
        }
    }
    size_t P = (size_t)st->sa_points;
    st->plan = malloc((size_t)st->batch * sizeof *st->plan);
    st->top = malloc((size_t)st->batch * sizeof *st->top);
    if (!st->plan || !st->top || xgb_walkers_alloc(&st->w, P, pn) < 0)
        goto oom;
    return st;
oom:
    xgbl_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

static void xgbl_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    xgbl_state *st = state;
    for (int i = 0; i < n; i++) {
        if (xgb_trials_grow(&st->x, &st->t, &st->id, st->n, &st->cap, st->np) < 0) {
            log_warn(
                "xgb_local searcher: out of memory for the told trials; not learning from more");
            break;
        }
        double t = search_score(&r[i]);
        xgbl_features(st, ids[i], st->x + (size_t)st->n * (size_t)st->np);
        st->t[st->n] = t;
        st->id[st->n] = ids[i];
        st->n++;
        st->since_train++;
        if (t < SEARCH_BAD_SCORE) {
            st->n_ok++;
            st->best_t = t < st->best_t ? t : st->best_t;
        }
    }
    if (st->since_train < st->batch || st->n_ok == 0)
        return;
    st->since_train = 0;
    st->plan_len = st->plan_pos = 0;
    BoosterHandle b = xgbl_train(st);
    int failed = !b || xgbl_anneal(st, b) < 0;
    if (failed) {
        st->plan_len = st->plan_pos = 0;
        log_warn(
            "xgb_local searcher: no model-chosen batch after %d trials; proposing at random until "
            "the next training",
            st->n);
    }
    if (b)
        xgbl_check(XGBoosterFree(b), "XGBoosterFree");
}

const searcher_vtable searcher_xgb_local_vtable = {
    .name = "xgb_local",
    .summary = "xgb loosened for small budgets (before issue 15): plans of 16, 30 boosting rounds, "
               "annealing restarted every plan with local moves, random exploration",
    .options = xgbl_options,
    .n_options = N_OPTS,
    .create = xgbl_create,
    .ask = search_base_ask,
    .tell = xgbl_tell,
    .destroy = xgbl_destroy,
};
