/* search/auto — the default strategy: model-guided local search. A short space-filling start
 * (each of `initial` configurations the farthest, in value-index space, of a few random
 * candidates from those already proposed), then every proposal is the unvisited configuration of
 * a candidate pool with the largest expected improvement under a Gaussian process (search/gp.h,
 * search/auto_gp.c; option `model` "ei", the default since issue 29), or with `model` "ridge" the
 * one a cheap surrogate predicts fastest. The ridge surrogate is regression of log(time) on
 * one-hot (bucketed) parameter values, refitted after new results; failed trials count as a finite
 * penalty above the slowest success; it also ranks the pool for the GP's second stage and orders
 * the local walk. The pool holds random samples and the ADJACENT, HAMMING and PAIR_SCALE
 * neighbours of the best few configurations; a neighbour's ridge prediction is corrected by part
 * of its origin's residual, so interactions the additive model misses still steer the walk around
 * the incumbent. The targets of both models are clipped at the median success's log time (the
 * models rank the good half instead of modelling how slow the slow half is). Proposals asked but
 * not yet told (a batch, or earlier asks still outstanding) are fitted as failures by the ridge
 * and at their predicted means by the GP while the next are chosen, so a batch spreads out. With
 * probability `exploration` a proposal is random. After `stall` results without a new best, a
 * local walk from the current configuration takes its neighbours (model order); after
 * `long_stall`, in random order, and a used-up neighbourhood restarts the walk away from the
 * explored basins (iterated local search), since the model's order has evidently stopped helping
 * there. The option defaults were chosen by leave-one-kernel-family-out cross-validation over the
 * shared GPU spaces (bench/offline/bench_cv.h). The ridge lives in search/auto_model.c. With a
 * warm-start history (searcher_set_history), a prior fitted on related targets
 * (search/auto_prior.h) is tested before it is used: until the told results confirm its ranking
 * (auto_prior_trusted) the search is exactly the cold one; once they do, the history's
 * suggestions are proposed, the prior joins the ridge as one more column and is the GP's mean
 * function, and its best join the pool (search/README.md). */
#include "search/auto_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

enum {
    OPT_INITIAL,
    OPT_EXPLORATION,
    OPT_MODEL,
    OPT_WALK,
    OPT_STALL,
    OPT_LONG_STALL,
    OPT_POOL,
    N_OPTS
};

/* Restarts (after LONG_STALL results without a new best, at a local optimum). */
enum {
    RESTART_CANDIDATES = 8, /* random configurations a restart chooses from */
    RESTART_AWAY = 8,       /* best results a restart keeps away from */
};

static const searcher_option auto_options[N_OPTS] = {
    {"initial", SEARCHER_OPT_INTEGER, "10", 1, 1000, NULL,
     "space-filling configurations proposed before the model guides the search"},
    {"exploration", SEARCHER_OPT_NUMBER, "0.15", 0, 1, NULL,
     "probability that a model-guided proposal is a random configuration instead"},
    {"model", SEARCHER_OPT_STRING, "\"ei\"", 0, 0, "ei|ridge",
     "the pool's pick: ei, a Gaussian process's expected improvement; ridge, the ridge "
     "surrogate's fastest prediction"},
    {"walk", SEARCHER_OPT_STRING, "\"ei\"", 0, 0, "ridge|ei",
     "the local walk's order after a stall: ridge, the ridge's prediction; ei, the Gaussian "
     "process's expected improvement (with model ei)"},
    {"stall", SEARCHER_OPT_INTEGER, "3", 1, 100000, NULL,
     "results without a new best before a local walk from the current configuration takes over"},
    {"long_stall", SEARCHER_OPT_INTEGER, "30", 1, 100000, NULL,
     "results without a new best after which the walk is random and a used-up neighbourhood "
     "restarts away from the explored basins"},
    {"pool", SEARCHER_OPT_INTEGER, "32", 1, 4096, NULL,
     "random configurations in the candidate pool, besides the neighbours of the best ones"},
};

static void auto_destroy(void *state)
{
    auto_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    free(st->nv);
    free(st->nb);
    free(st->off);
    free(st->idx);
    free(st->fidx);
    free(st->o);
    free(st->xtx);
    free(st->a);
    free(st->w);
    free(st->resid);
    free(st->scratch);
    free(st->fill);
    auto_prior_free(&st->prior);
    free(st->pp);
    free(st->out_id);
    free(st->ok_y);
    auto_gp_free(st);
    free(st);
}

static void *auto_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    auto_state *st = calloc(1, sizeof *st);
    if (!st)
        goto oom;
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    st->initial = (int)searcher_option_number(&auto_options[OPT_INITIAL], options);
    st->explore = searcher_option_number(&auto_options[OPT_EXPLORATION], options);
    st->stall = (int)searcher_option_number(&auto_options[OPT_STALL], options);
    st->long_stall = (int)searcher_option_number(&auto_options[OPT_LONG_STALL], options);
    st->pool_random = (int)searcher_option_number(&auto_options[OPT_POOL], options);
    char model[8];
    const char *m = searcher_option_string(&auto_options[OPT_MODEL], options, model, sizeof model);
    st->model_ei = m && strcmp(m, "ei") == 0;
    m = searcher_option_string(&auto_options[OPT_WALK], options, model, sizeof model);
    st->walk_ei = st->model_ei && m && strcmp(m, "ei") == 0;
    st->best_i = -1;
    st->cur_i = -1;
    st->clip = INFINITY;
    int np = space_num_params(sp);
    st->np = np;
    size_t pn = (size_t)(np > 0 ? np : 1);
    st->nv = calloc(pn, sizeof *st->nv);
    st->nb = calloc(pn, sizeof *st->nb);
    st->off = calloc(pn, sizeof *st->off);
    st->idx = calloc(pn, sizeof *st->idx);
    st->fill = calloc(pn * (size_t)st->initial, sizeof *st->fill);
    if (!st->nv || !st->nb || !st->off || !st->idx || !st->fill)
        goto oom;
    int per = np > 0 ? MAX_FEATURES / np : 1;
    if (per < 2)
        per = 2;
    for (int p = 0; p < np; p++) {
        st->nv[p] = space_param_num_values(sp, p);
        st->nb[p] = st->nv[p] < per ? st->nv[p] : per;
        st->off[p] = st->nf;
        st->nf += st->nb[p];
    }
    if (st->nf < 1)
        st->nf = 1;
    size_t f = (size_t)st->nf;
    st->xtx = calloc(f * f, sizeof *st->xtx);
    st->a = calloc((f + 1) * (f + 1), sizeof *st->a); /* + 1: the prior's column */
    st->w = calloc(f + 1, sizeof *st->w);
    int adj = space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT);
    int ham = space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING);
    int pair = space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE);
    st->scratch_cap = adj + ham + pair + 1;
    st->scratch = malloc((size_t)st->scratch_cap * sizeof *st->scratch);
    if (!st->xtx || !st->a || !st->w || !st->scratch)
        goto oom;
    if (st->model_ei && auto_gp_init(st, err) < 0) {
        auto_destroy(st);
        return NULL;
    }
    return st;
oom:
    auto_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

/* The k best told results (by score, best first) into top: how many (at most k). */
static int best_observations(const auto_state *st, int *top, int k)
{
    int nt = 0;
    for (int i = 0; i < st->n; i++) {
        int j = nt < k ? nt++ : k;
        if (j == k) {
            if (st->o[i].t >= st->o[top[k - 1]].t)
                continue;
            j = k - 1;
        }
        while (j > 0 && st->o[top[j - 1]].t > st->o[i].t) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    return nt;
}

/* Squared distance of value indices a and b, each parameter scaled to [0, 1]. */
static double index_distance(const auto_state *st, const int *a, const int *b)
{
    double d = 0;
    for (int p = 0; p < st->np; p++) {
        double x = st->nv[p] > 1 ? (double)(a[p] - b[p]) / (st->nv[p] - 1) : 0;
        d += x * x;
    }
    return d;
}

/* Of candidates random configurations, the unvisited one farthest from the n points pts (decoded
 * value indices, np each; minimum normalised index distance) in *best_id; returns its distance
 * (INFINITY when n is 0), or -1 when no candidate was unvisited. */
static double farthest_unvisited(auto_state *st, int candidates, const int *pts, int n,
                                 config_id *best_id)
{
    double best_d = -1;
    for (int c = 0; c < candidates; c++) {
        config_id id = space_sample(st->sp, &st->rng);
        if (search_set_has(&st->visited, id) || space_decode(st->sp, id, st->idx) < 0)
            continue;
        double dmin = INFINITY;
        for (int k = 0; k < n; k++) {
            double d = index_distance(st, st->idx, pts + (size_t)k * st->np);
            dmin = d < dmin ? d : dmin;
        }
        if (dmin > best_d) {
            best_d = dmin;
            *best_id = id;
        }
    }
    return best_d;
}

/* Proposes id (unvisited): 1 with *out set, -1 out of memory. */
static int propose_id(auto_state *st, config_id id, config_id *out)
{
    if (search_set_add(&st->visited, id) < 0)
        return -1;
    *out = id;
    return 1;
}

/* The candidate predicted fastest of those offered so far (pred INFINITY: none yet). */
typedef struct auto_pick {
    double pred;
    config_id id;
    int n; /* candidates offered */
} auto_pick;

static void pick_offer(auto_pick *k, config_id id, double pred)
{
    if (pred < k->pred) {
        k->pred = pred;
        k->id = id;
    }
    k->n++;
}

/* Offers id to the model's pool unless proposed already or without features: its prediction plus
 * bias, plus a tiny random tie-break when jitter. fp: feature scratch. */
static void pool_offer(auto_state *st, int *fp, config_id id, double bias, int jitter, auto_pick *k)
{
    if (search_set_has(&st->visited, id) || auto_features(st, id, fp) < 0)
        return;
    double pred = auto_predict(st, fp) + bias + (jitter ? 1e-9 * kt_rng_uniform(&st->rng) : 0);
    auto_gp_offer(st, id, pred, auto_prior_f(st, fp)); /* a no-op unless the GP is fitted */
    pick_offer(k, id, pred);
}

/* The space-filling start: the farthest (minimum normalised index distance to earlier fills) of
 * FILL_CANDIDATES random unvisited configurations. */
static int propose_fill(auto_state *st, config_id *out)
{
    config_id best_id = 0;
    if (farthest_unvisited(st, FILL_CANDIDATES, st->fill, st->n_fill, &best_id) < 0)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    if (propose_id(st, best_id, out) < 0)
        return -1;
    space_decode(st->sp, best_id, st->fill + (size_t)st->n_fill * st->np);
    st->n_fill++;
    return 1;
}

/* Whether the last fit used a warm-start prior (the told results confirm it:
 * auto_prior_trusted, search/auto_prior.h): its suggestions are then proposed and its best join
 * the pool; otherwise nothing of it is used. */
static int prior_trusted(const auto_state *st)
{
    return st->fitted && st->prior_on;
}

/* The GP fitted for this ask (model ei): once per ask, only when a proposal needs it. */
static void gp_ensure(auto_state *st)
{
    if (st->model_ei && !st->gp_tried) {
        st->gp_tried = 1;
        auto_gp_fit(st);
    }
}

/* The unvisited candidate predicted fastest. */
static int propose_model(auto_state *st, config_id *out)
{
    int np = st->np;
    int f[256];
    int *fp = np <= 256 ? f : NULL;
    if (!fp)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    int top[TOP_K];
    int nt = best_observations(st, top, TOP_K);
    auto_pick pick = {INFINITY, 0, 0};
    gp_ensure(st);
    st->nc = 0;
    for (int k = 0; k < nt; k++) {
        double r = st->resid[top[k]] * RESID;
        config_id origin = st->o[top[k]].id;
        int m = 0;
        static const space_neighbour_kind kinds[3] = {
            SPACE_NEIGHBOURS_ADJACENT, SPACE_NEIGHBOURS_HAMMING, SPACE_NEIGHBOURS_PAIR_SCALE};
        for (int q = 0; q < 3; q++)
            m += space_neighbours(st->sp, origin, kinds[q], st->scratch + m, st->scratch_cap - m);
        for (int i = 0; i < m; i++)
            pool_offer(st, fp, st->scratch[i], r, 1, &pick);
    }
    /* The related targets' best, while the told results still confirm the prior. */
    int n_top = prior_trusted(st) ? st->prior.n_top : 0;
    for (int k = 0; k < n_top; k++)
        pool_offer(st, fp, st->prior.top[k], 0, 0, &pick);
    for (int c = 0; c < st->pool_random; c++)
        pool_offer(st, fp, space_sample(st->sp, &st->rng), 0, 0, &pick);
    if (pick.n == 0)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    config_id ei_id;
    if (auto_gp_pick(st, &ei_id) > 0)
        pick.id = ei_id;
    return propose_id(st, pick.id, out);
}

/* A restart of the local walk: of RESTART_CANDIDATES random unvisited configurations, the farthest
 * (value-index distance) from the RESTART_AWAY best results, i.e. out of the basins already
 * explored. 1 with *out proposed, 0 nothing left, -1 out of memory. */
static int propose_restart(auto_state *st, config_id *out)
{
    int top[RESTART_AWAY], away[RESTART_AWAY * 256], n_away = 0;
    int nt = st->np <= 256 ? best_observations(st, top, RESTART_AWAY) : 0;
    for (int k = 0; k < nt; k++) /* those that do not decode are left out */
        n_away += space_decode(st->sp, st->o[top[k]].id, away + (size_t)n_away * st->np) == 0;
    config_id best_id = 0;
    if (nt == 0 || farthest_unvisited(st, RESTART_CANDIDATES, away, n_away, &best_id) < 0)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    return propose_id(st, best_id, out);
}

/* Local search from the current configuration: its unvisited neighbour (ADJACENT, HAMMING,
 * PAIR_SCALE) predicted fastest. When none is left (a local optimum), the model's pick becomes
 * the next current once told. */
static int propose_local(auto_state *st, config_id *out)
{
    if (st->cur_i < 0)
        return 0;
    int f[256];
    config_id cur = st->o[st->cur_i].id;
    double r = st->fitted ? st->resid[st->cur_i] * RESID : 0;
    static const space_neighbour_kind kinds[3] = {
        SPACE_NEIGHBOURS_ADJACENT, SPACE_NEIGHBOURS_HAMMING, SPACE_NEIGHBOURS_PAIR_SCALE};
    int m = 0;
    for (int q = 0; q < 3; q++)
        m += space_neighbours(st->sp, cur, kinds[q], st->scratch + m, st->scratch_cap - m);
    auto_pick pick = {INFINITY, 0, 0};
    /* walk ei: the GP's expected improvement orders the walk until the long stall */
    int walk_ei = st->walk_ei && st->since_imp < st->long_stall;
    if (walk_ei)
        gp_ensure(st);
    st->nc = 0;
    for (int i = 0; i < m; i++) {
        config_id id = st->scratch[i];
        if (search_set_has(&st->visited, id) || auto_features(st, id, f) < 0)
            continue;
        /* After a long stall the model's order is evidently misleading here: walk at random. */
        double pr = st->since_imp >= st->long_stall ? kt_rng_uniform(&st->rng)
                                                    : (st->fitted ? auto_predict(st, f) + r : 0) +
                                                          1e-9 * kt_rng_uniform(&st->rng);
        pick_offer(&pick, id, pr);
        if (walk_ei)
            auto_gp_offer(st, id, pr, auto_prior_f(st, f));
    }
    if (pick.n == 0) {
        /* A local optimum: the model's pick near the best, or after a long stall (the model's
         * basin is evidently used up) a restart away from the best results. */
        int rc =
            st->since_imp >= st->long_stall ? propose_restart(st, out) : propose_model(st, out);
        if (rc > 0) {
            st->has_pending = 1;
            st->pending = *out;
        }
        return rc;
    }
    config_id ei_id;
    if (walk_ei && auto_gp_pick(st, &ei_id) > 0)
        pick.id = ei_id;
    return propose_id(st, pick.id, out);
}

/* A warm start's next suggestion (search/auto_prior.h: the history's first ids, then the prior's
 * best): with a usable prior only once the told results confirm it (prior_trusted: the space's
 * own measurements test the history before any of its suggestions is measured); with suggestions
 * alone (no usable prior to test) the first is tried, the next while the suggestions measure
 * faster than the rest (auto_prior_weight above AUTO_PRIOR_TRUST). 1 with *out set, 0 when none
 * is left or the history is not trusted. */
static int propose_suggested(auto_state *st, config_id *out)
{
    if (st->has_prior ? !prior_trusted(st)
                      : st->n > 0 && auto_prior_weight(&st->prior) <= AUTO_PRIOR_TRUST)
        return 0;
    for (int k = 0; k < st->prior.n_sugg; k++) {
        if (!search_set_has(&st->visited, st->prior.sugg[k]))
            return propose_id(st, st->prior.sugg[k], out);
    }
    return 0;
}

/* The start: space-filling proposals; in a warm start every other one is the history's next
 * suggestion instead once it is trusted (back to back once its weight is above
 * AUTO_PRIOR_CONFIRMED), so that the suggestions' measurements have the space-filling ones to be
 * compared with (auto_prior_weight). */
static int propose_start(auto_state *st, config_id *out)
{
    int rc;
    if ((st->proposed % 2 == 0 || st->n_fill >= st->initial ||
         auto_prior_weight(&st->prior) > AUTO_PRIOR_CONFIRMED) &&
        (rc = propose_suggested(st, out)) != 0)
        return rc;
    return st->n_fill < st->initial ? propose_fill(st, out)
                                    : search_random_unvisited(st->sp, &st->visited, &st->rng, out);
}

/* Records id as outstanding (asked, not told); 0, or -1 out of memory (then it is not). */
static int outstanding_add(auto_state *st, config_id id)
{
    if (st->n_out == st->out_cap) {
        size_t cap = kt_array_next_cap((size_t)st->out_cap, (size_t)st->n_out + 1, INT_MAX);
        if (cap == 0 || kt_array_resize((void **)&st->out_id, cap, sizeof *st->out_id) != 0)
            return -1;
        st->out_cap = (int)cap;
    }
    st->out_id[st->n_out++] = id;
    return 0;
}

static void outstanding_remove(auto_state *st, config_id id)
{
    for (int k = 0; k < st->n_out; k++) {
        if (st->out_id[k] == id) {
            st->out_id[k] = st->out_id[--st->n_out];
            return;
        }
    }
}

/* One proposal into *out: 1, 0 when nothing is left, -1 out of memory. */
static int propose_one(auto_state *st, config_id *out)
{
    int rc;
    if (st->proposed < st->initial || !st->fitted)
        return propose_start(st, out);
    /* A prior confirmed only after the start (its test needs results) still has its suggestions
     * measured: every other proposal while trusted, every one once its weight is confirmed. */
    if (prior_trusted(st) &&
        (st->proposed % 2 == 0 || auto_prior_weight(&st->prior) > AUTO_PRIOR_CONFIRMED) &&
        (rc = propose_suggested(st, out)) != 0)
        return rc;
    if (kt_rng_uniform(&st->rng) < st->explore)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    /* With model ei, one walk step per batch: the rest of it, chosen while proposals are still
     * outstanding, is the GP's (kriging believer), which spreads it instead of crowding it
     * around the walk's current configuration. At batch 1 nothing is outstanding. */
    int walk = st->since_imp >= st->stall && (!st->model_ei || st->n_out == 0);
    if (walk && (rc = propose_local(st, out)) != 0)
        return rc;
    return propose_model(st, out);
}

/* Proposals not told yet (this batch's earlier ones, and earlier asks' still outstanding) join the
 * fit as lies while the rest of the batch is chosen; the lies are gone when ask returns. At batch
 * 1 with nothing outstanding no lie is ever fitted: the proposals are those of one-by-one. */
static int auto_ask(void *state, config_id *out, int max)
{
    auto_state *st = state;
    int n = 0;
    st->gp_tried = 0; /* the GP is refitted in each ask that needs it */
    st->gp_ok = 0;
    for (int k = 0; k < st->n_out; k++)
        st->dirty |= auto_lie_push(st, st->out_id[k]);
    while (n < max) {
        if (st->dirty) {
            auto_fit(st);
            st->dirty = 0;
        }
        int rc = propose_one(st, &out[n]);
        if (rc <= 0)
            break;
        st->proposed++;
        if (outstanding_add(st, out[n]) == 0 && n + 1 < max && st->fitted)
            st->dirty |= auto_lie_push(st, out[n]);
        n++;
    }
    if (st->n_lie > 0) {
        auto_lie_pop_all(st);
        st->dirty = 1;
    }
    return n;
}

static void auto_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    auto_state *st = state;
    int np = st->np;
    for (int i = 0; i < n; i++) {
        outstanding_remove(st, ids[i]);
        if (auto_obs_reserve(st) < 0)
            return; /* out of memory: the result is not learnt from */
        int *f = st->fidx + (size_t)st->n * np;
        if (np > 256 || auto_features(st, ids[i], f) < 0)
            continue;
        st->o[st->n].id = ids[i];
        st->o[st->n].t = search_score(&r[i]);
        if (st->best_i < 0 || st->o[st->n].t < st->o[st->best_i].t) {
            st->best_i = st->n;
            st->since_imp = 0;
        } else {
            st->since_imp++;
        }
        int jump = st->has_pending && ids[i] == st->pending;
        if (st->cur_i < 0 || st->o[st->n].t < st->o[st->cur_i].t || jump) {
            st->cur_i = st->n;
            st->has_pending = 0;
        }
        auto_obs_add(st);
        st->dirty = 1;
    }
}

static int auto_features_cb(void *ctx, config_id id, int *f)
{
    return auto_features(ctx, id, f);
}

/* The history: auto proposes the first ids itself (proposes_first), as suggestions of its warm
 * start with the prior's best (propose_start); the prior (auto_prior_fit) is used only when it
 * explains its own sources (auto_prior.usable), and then only while the told results confirm it
 * (auto_prior_trusted); suggestions without a usable prior while they do not contradict them
 * (auto_prior_weight). */
static int auto_history(void *state, const searcher_history *h, kt_error *err)
{
    auto_state *st = state;
    if (st->np > 256)
        return 0;
    if (h->n_prior > 0 &&
        auto_prior_fit(&st->prior, h, st->np, st->nf, auto_features_cb, st, err) < 0)
        return -1;
    if (auto_prior_suggest(&st->prior, h->first, h->n_first, err) < 0) {
        auto_prior_free(&st->prior);
        return -1;
    }
    st->has_prior = st->prior.usable;
    st->beta = 1;
    st->fitted = 0;
    st->dirty = 1; /* the next ask fits (the prior alone until results come) */
    return 0;
}

const searcher_vtable searcher_auto_vtable = {
    .name = "auto",
    .summary = "the default, pick it unless a reason below applies: space-filling start, then "
               "a Gaussian process's expected improvement picks among random samples and "
               "neighbours of the best configurations (a ridge surrogate ranks them and orders a "
               "local walk after a stall; farthest-point restarts), constants chosen by "
               "leave-one-kernel-family-out cross-validation",
    .options = auto_options,
    .n_options = N_OPTS,
    .create = auto_create,
    .ask = auto_ask,
    .tell = auto_tell,
    .destroy = auto_destroy,
    .history = auto_history,
    .proposes_first = 1,
};
