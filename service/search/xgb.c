/* search/xgb — AutoTVM's XGBTuner (Chen et al. 2018) as it was when the G-BFS / N-A2C paper
 * compared against it (TVM 0.6: ModelBasedTuner + XGBoostCostModel + SimulatedAnnealingOptimizer):
 * XGBTuner(plan_size=64, loss_type="rank", optimizer="sa"), with knob features (feature_type
 * "knob": the configuration's parameter values) since AutoTVM's default "itervar" features are
 * loop statistics of TVM's lowered IR, which arbitrary kernels do not have.
 *
 * Proposals (next_batch): the plan's entries in order, skipping visited ones; once fewer than
 * `exploration` x plan_size (3 of 64) entries are left, or while there is no plan (the first
 * plan_size proposals), a random unvisited configuration. Results (update): every told trial is
 * kept (label 1 / time, failures 0); once plan_size x (fits + 1) trials were told and one
 * succeeded, the model is refitted from scratch on all of them (xgb_model.c) and simulated
 * annealing on it (xgb_anneal.c) makes the next plan: the plan_size best predicted unvisited
 * configurations. Any XGBoost failure is logged (warn) and leaves no plan, so the search goes on
 * at random until the next fit. Files: xgb_impl.h (state), xgb_model.c, xgb_anneal.c. */
#include "search/xgb_impl.h"

#include "core/log.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_BATCH,
    OPT_EXPLORATION,
    OPT_ROUNDS,
    OPT_EARLY_STOPPING,
    OPT_SA_STEPS,
    OPT_SA_EARLY_STOP,
    OPT_SA_POINTS,
    N_OPTS
};

static const searcher_option xgb_options[N_OPTS] = {
    {"batch", SEARCHER_OPT_INTEGER, "64", 1, 4096, NULL,
     "AutoTVM's plan_size: the first batch is random, then the model is refitted every batch told "
     "results and annealing plans the next batch"},
    {"exploration", SEARCHER_OPT_NUMBER, "0.05", 0, 1, NULL,
     "AutoTVM's e-greedy share: the last floor(exploration x batch) proposals of each plan are "
     "random unvisited configurations"},
    {"rounds", SEARCHER_OPT_INTEGER, "8000", 1, 100000, NULL,
     "boosting rounds per fit at most (AutoTVM's num_boost_round)"},
    {"early_stopping", SEARCHER_OPT_INTEGER, "20", 1, 10000, NULL,
     "a fit stops this many rounds after the best a-recall@batch on the training set"},
    {"sa_steps", SEARCHER_OPT_INTEGER, "500", 1, 100000, NULL,
     "simulated-annealing steps per plan at most (AutoTVM's n_iter; temperature 1 -> 0)"},
    {"sa_early_stop", SEARCHER_OPT_INTEGER, "50", 1, 100000, NULL,
     "annealing stops after this many steps without a new plan candidate"},
    {"sa_points", SEARCHER_OPT_INTEGER, "128", 1, 4096, NULL,
     "parallel annealing walkers (AutoTVM's parallel_size), persistent from plan to plan"},
};

static void xgb_destroy(void *state)
{
    xgb_state *st = state;
    if (!st)
        return;
    search_base_free(&st->b);
    xgb_knobs_free(&st->knobs);
    xgb_walkers_free(&st->w);
    free(st->x);
    free(st->y);
    free(st->id);
    free(st->plan);
    free(st->heap);
    free(st);
}

/* next_batch: the plan's next unvisited entry while more than random_tail of them are left, else
 * 0 (a random configuration). */
static int xgb_pick(void *state, config_id *slot)
{
    xgb_state *st = state;
    while (st->plan_pt < st->plan_len && search_set_has(&st->b.visited, st->plan[st->plan_pt]))
        st->plan_pt++;
    if (st->plan_pt >= st->plan_len - st->random_tail)
        return 0;
    *slot = st->plan[st->plan_pt];
    return search_set_add(&st->b.visited, *slot);
}

static void *xgb_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    static const search_hooks hooks = {"xgb", NULL, xgb_pick, NULL};
    xgb_state *st = search_base_new(sizeof *st, &hooks, sp, options, seed, err);
    if (!st)
        return NULL;
    st->seed = seed;
    st->plan_size = (int)searcher_option_number(&xgb_options[OPT_BATCH], options);
    st->random_tail =
        (int)(searcher_option_number(&xgb_options[OPT_EXPLORATION], options) * st->plan_size);
    st->max_rounds = (int)searcher_option_number(&xgb_options[OPT_ROUNDS], options);
    st->stop_rounds = (int)searcher_option_number(&xgb_options[OPT_EARLY_STOPPING], options);
    st->sa_iter = (int)searcher_option_number(&xgb_options[OPT_SA_STEPS], options);
    st->sa_early_stop = (int)searcher_option_number(&xgb_options[OPT_SA_EARLY_STOP], options);
    st->sa_parallel = (int)searcher_option_number(&xgb_options[OPT_SA_POINTS], options);
    st->np = space_num_params(sp);
    if (xgb_knobs_init(&st->knobs, sp) < 0)
        goto oom;
    uint64_t count = space_count(sp);
    st->n_points = count < (uint64_t)st->sa_parallel ? (int)count : st->sa_parallel;
    size_t P = (size_t)(st->n_points > 0 ? st->n_points : 1);
    size_t pn = (size_t)(st->np > 0 ? st->np : 1);
    st->plan = malloc((size_t)st->plan_size * sizeof *st->plan);
    st->heap = malloc((size_t)st->plan_size * sizeof *st->heap);
    if (!st->plan || !st->heap || xgb_walkers_alloc(&st->w, P, pn) < 0)
        goto oom;
    xgb_walk_init(st);
    return st;
oom:
    xgb_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

/* update: keep the trials; refit and replan once plan_size x (fits + 1) are told. */
static void xgb_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    xgb_state *st = state;
    for (int i = 0; i < n; i++) {
        if (xgb_trials_grow(&st->x, &st->y, &st->id, st->n, &st->cap, st->np) < 0) {
            log_warn("xgb searcher: out of memory for the told trials; not learning from more");
            break;
        }
        double t = search_score(&r[i]);
        double y = t < SEARCH_BAD_SCORE && t > 0 ? 1.0 / t : 0.0;
        xgb_features(st, ids[i], st->x + (size_t)st->n * (size_t)st->np);
        st->y[st->n] = y;
        st->id[st->n] = ids[i];
        st->n++;
        st->y_max = y > st->y_max ? y : st->y_max;
    }
    if ((int64_t)st->n < (int64_t)st->plan_size * (st->train_ct + 1) || st->y_max <= 0)
        return;
    st->plan_len = st->plan_pt = 0;
    BoosterHandle b = xgb_fit(st);
    if (!b || xgb_find_maximums(st, b) < 0) {
        st->plan_len = st->plan_pt = 0;
        log_warn("xgb searcher: no plan after %d trials; proposing at random until the next fit",
                 st->n);
    } else {
        log_debug("xgb searcher: fit %d on %d trials: %d rounds (best %d, a-recall %.3f), %d "
                  "annealing steps, plan of %d (%d dropped for a negative score)",
                  st->train_ct + 1, st->n, st->last_rounds, st->last_best_round, st->last_recall,
                  st->last_sa_iters, st->plan_len, st->last_dropped);
    }
    st->train_ct++;
    if (b)
        XGBoosterFree(b);
}

const searcher_vtable searcher_xgb_vtable = {
    .name = "xgb",
    .summary = "AutoTVM's XGBTuner: a rank:pairwise XGBoost cost model refitted every plan of 64 "
               "(early stopping on a-recall), plans chosen by persistent simulated annealing on "
               "the model with one-knob (whole parameter group) moves",
    .options = xgb_options,
    .n_options = N_OPTS,
    .create = xgb_create,
    .ask = search_base_ask,
    .tell = xgb_tell,
    .destroy = xgb_destroy,
};
