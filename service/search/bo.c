/* search/bo — Bayesian optimisation on a Gaussian-process surrogate (search/gp.h). A space-filling
 * start (`initial` configurations, each the farthest in value-index space of a few random
 * candidates from those already proposed), then every proposal maximises an acquisition (expected
 * improvement of log time, or a lower confidence bound) over a candidate pool: `pool` random
 * unvisited configurations plus every unvisited ADJACENT, HAMMING and PAIR_SCALE neighbour of the
 * best few configurations. The GP is refitted on each ask with new results (targets log time;
 * failures a finite penalty above the slowest success), on at most `max_train` observations (the
 * best half and an even spread of the rest); its hyper-parameters are re-chosen by marginal
 * likelihood only every few results. Batches and proposals still pending (asked, not told) use the
 * kriging believer: each is conditioned on as a point at its predicted mean, so the next pick of
 * the batch moves away from it. */
#include "search/search_set.h"
#include "search/gp.h"

#include "core/array.h"
#include "core/log.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_INITIAL, OPT_POOL, OPT_MAX_TRAIN, OPT_ACQUISITION, N_OPTS };

static const searcher_option bo_options[N_OPTS] = {
    {"initial", SEARCHER_OPT_INTEGER, "10", 1, 1000, NULL,
     "space-filling configurations proposed before the surrogate guides the search"},
    {"pool", SEARCHER_OPT_INTEGER, "192", 1, 4096, NULL,
     "random configurations scored per proposal, besides the neighbours of the best ones"},
    {"max_train", SEARCHER_OPT_INTEGER, "128", 16, 1024, NULL,
     "observations the surrogate is fitted on at most (the best half and a spread of the rest)"},
    {"acquisition", SEARCHER_OPT_STRING, "\"ei\"", 0, 0, "ei|lcb",
     "ei: expected improvement of log time; lcb: lower confidence bound mean - 2 sd"},
};

enum {
    TOP_K = 3,            /* best configurations whose neighbours join the pool */
    FILL_CANDIDATES = 24, /* random candidates per space-filling proposal */
    MAX_NEIGHBOURS = 256, /* neighbours of the best in the pool at most (the best's first) */
    MAX_LIES = 256,       /* pending proposals the GP is conditioned on at most (bounds memory) */
};
#define LCB_KAPPA 2.0

typedef struct bo_state {
    const space *sp;
    kt_rng rng;
    search_set visited;
    int initial, pool, max_train, lcb;
    int np;
    int *nv;
    gp_kind *kind;
    gp *g;
    /* Told results: ids, value indices (np per row), scores. */
    config_id *oid;
    int *ox;
    double *ot;
    int n, cap;
    /* Proposed, not yet told (in proposal order). */
    config_id *pend;
    int n_pend, pend_cap;
    int proposed;
    int *fill; /* value indices of the space-filling proposals, np each */
    int n_fill;
    int next_hyper; /* training-set size at which the hyper-parameters are re-chosen */
    /* Fit and pool scratch. */
    int *tx;
    double *ty;
    int *order;
    unsigned char *taken;
    config_id *cid;
    int *cx;
    double *cmean, *cvar;
    int ccap;
    config_id *nb; /* neighbours of one configuration */
    int nb_cap;
} bo_state;

static void bo_destroy(void *state)
{
    bo_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    gp_free(st->g);
    free(st->nv);
    free(st->kind);
    free(st->oid);
    free(st->ox);
    free(st->ot);
    free(st->pend);
    free(st->fill);
    free(st->tx);
    free(st->ty);
    free(st->order);
    free(st->taken);
    free(st->cid);
    free(st->cx);
    free(st->cmean);
    free(st->cvar);
    free(st->nb);
    free(st);
}

static void *bo_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    bo_state *st = calloc(1, sizeof *st);
    char acq[8];
    if (!st)
        goto oom;
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    st->initial = (int)searcher_option_number(&bo_options[OPT_INITIAL], options);
    st->pool = (int)searcher_option_number(&bo_options[OPT_POOL], options);
    st->max_train = (int)searcher_option_number(&bo_options[OPT_MAX_TRAIN], options);
    const char *a = searcher_option_string(&bo_options[OPT_ACQUISITION], options, acq, sizeof acq);
    st->lcb = a && strcmp(a, "lcb") == 0;
    int np = space_num_params(sp);
    st->np = np;
    size_t pn = (size_t)(np > 0 ? np : 1);
    st->nv = calloc(pn, sizeof *st->nv);
    st->kind = calloc(pn, sizeof *st->kind);
    st->fill = calloc(pn * (size_t)st->initial, sizeof *st->fill);
    if (!st->nv || !st->kind || !st->fill)
        goto oom;
    for (int p = 0; p < np; p++) {
        st->nv[p] = space_param_num_values(sp, p);
        st->kind[p] = GP_ORDINAL;
        for (int v = 0; v < st->nv[p]; v++)
            if (isnan(space_param_value_number(sp, p, v)))
                st->kind[p] = GP_CATEGORICAL; /* strings */
    }
    if (np > 0 && np <= GP_MAX_PARAMS) {
        st->g = gp_new(np, st->nv, st->kind, err);
        if (!st->g) {
            bo_destroy(st);
            return NULL;
        }
    }
    int top = TOP_K * (space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT) +
                       space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING) +
                       space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE));
    st->nb_cap = top / TOP_K + 1;
    st->ccap = st->pool + top + 1;
    size_t tc = (size_t)st->max_train + 1;
    st->nb = malloc((size_t)st->nb_cap * sizeof *st->nb);
    st->cid = malloc((size_t)st->ccap * sizeof *st->cid);
    st->cx = malloc((size_t)st->ccap * pn * sizeof *st->cx);
    st->cmean = malloc((size_t)st->ccap * sizeof *st->cmean);
    st->cvar = malloc((size_t)st->ccap * sizeof *st->cvar);
    st->tx = malloc(tc * pn * sizeof *st->tx);
    st->ty = malloc(tc * sizeof *st->ty);
    if (!st->nb || !st->cid || !st->cx || !st->cmean || !st->cvar || !st->tx || !st->ty)
        goto oom;
    return st;
oom:
    bo_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

/* Normalised squared distance of two value-index rows. */
static double row_dist(const bo_state *st, const int *a, const int *b)
{
    double d = 0;
    for (int p = 0; p < st->np; p++) {
        double x = st->kind[p] == GP_CATEGORICAL ? (a[p] != b[p])
                   : st->nv[p] > 1               ? (double)(a[p] - b[p]) / (st->nv[p] - 1)
                                                 : 0;
        d += x * x;
    }
    return d;
}

/* The space-filling start: the farthest of FILL_CANDIDATES random unvisited configurations. */
static int propose_fill(bo_state *st, config_id *out)
{
    int np = st->np, row[GP_MAX_PARAMS];
    config_id best_id = 0;
    double best_d = -1;
    for (int c = 0; c < FILL_CANDIDATES && np <= GP_MAX_PARAMS; c++) {
        config_id id = space_sample(st->sp, &st->rng);
        if (search_set_has(&st->visited, id) || space_decode(st->sp, id, row) < 0)
            continue;
        double dmin = INFINITY;
        for (int k = 0; k < st->n_fill; k++) {
            double d = row_dist(st, row, st->fill + (size_t)k * np);
            dmin = d < dmin ? d : dmin;
        }
        if (dmin > best_d) {
            best_d = dmin;
            best_id = id;
        }
    }
    if (best_d < 0)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    if (search_set_add(&st->visited, best_id) < 0)
        return -1;
    space_decode(st->sp, best_id, st->fill + (size_t)st->n_fill * np);
    st->n_fill++;
    *out = best_id;
    return 1;
}

/* (score, index) pairs: qsort needs no context then (searchers may run on several threads). */
typedef struct scored {
    double t;
    int i;
} scored;

static int cmp_scored(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Fills st->order with the observations by score, best first. */
static int sort_observations(bo_state *st)
{
    scored *s = malloc((size_t)(st->n > 0 ? st->n : 1) * sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < st->n; i++)
        s[i] = (scored){st->ot[i], i};
    qsort(s, (size_t)st->n, sizeof *s, cmp_scored);
    for (int i = 0; i < st->n; i++)
        st->order[i] = s[i].i;
    free(s);
    return 0;
}

/* log-time target; failures a finite penalty above the slowest success. */
static double target(double t, double worst)
{
    return t >= SEARCH_BAD_SCORE ? worst : log(t > 1e-12 ? t : 1e-12);
}

/* Fits the GP on at most max_train observations (the best half, then an even spread of the
 * others), then conditions it on the pending proposals at their predicted means. Returns the
 * best training target through *best; -1 when the fit failed. */
static int fit(bo_state *st, double *best)
{
    int np = st->np, n = st->n, m = 0;
    double worst = -INFINITY, lo = INFINITY;
    for (int i = 0; i < n; i++) {
        if (st->ot[i] < SEARCH_BAD_SCORE) {
            double y = log(st->ot[i] > 1e-12 ? st->ot[i] : 1e-12);
            worst = y > worst ? y : worst;
            lo = y < lo ? y : lo;
        }
    }
    if (!isfinite(lo))
        return -1; /* nothing succeeded yet */
    worst += 0.5 * (worst - lo) + 0.5;
    memset(st->taken, 0, (size_t)n);
    if (n <= st->max_train) {
        for (int i = 0; i < n; i++)
            st->taken[i] = 1;
        m = n;
    } else {
        if (sort_observations(st) < 0)
            return -1;
        int half = st->max_train / 2;
        for (int k = 0; k < half; k++)
            st->taken[st->order[k]] = 1;
        int rest = st->max_train - half, others = n - half;
        for (int k = 0; k < rest; k++)
            st->taken[st->order[half + (int)((long long)k * others / rest)]] = 1;
        m = st->max_train;
    }
    int k = 0;
    for (int i = 0; i < n && k < m; i++) {
        if (!st->taken[i])
            continue;
        memcpy(st->tx + (size_t)k * np, st->ox + (size_t)i * np, (size_t)np * sizeof *st->tx);
        st->ty[k] = target(st->ot[i], worst);
        k++;
    }
    unsigned flags = 0;
    if (n >= st->next_hyper) { /* told results, not the (capped) training set */
        flags = GP_FIT_HYPER;
        st->next_hyper = n + (n / 6 > 3 ? n / 6 : 3);
    }
    kt_error err;
    if (gp_fit(st->g, st->tx, st->ty, k, flags, &err) < 0) {
        log_warn("bo: surrogate fit failed (%s); proposing at random", err.message);
        return -1;
    }
    *best = lo;
    int row[GP_MAX_PARAMS];
    for (int i = 0; i < st->n_pend && i < MAX_LIES; i++) {
        double mu;
        if (space_decode(st->sp, st->pend[i], row) < 0 || gp_predict(st->g, row, 1, &mu, NULL) < 0)
            continue;
        gp_add(st->g, row, mu);
    }
    return 0;
}

/* Adds id to the pool when unvisited and decodable. */
static void pool_add(bo_state *st, int *nc, config_id id)
{
    if (*nc >= st->ccap || search_set_has(&st->visited, id))
        return;
    if (space_decode(st->sp, id, st->cx + (size_t)*nc * st->np) < 0)
        return;
    st->cid[(*nc)++] = id;
}

/* The pool's candidate with the best acquisition: 1 with *out set (and visited), 0 when the pool
 * is empty, -1 out of memory. */
static int propose_model(bo_state *st, double best, config_id *out)
{
    int nc = 0;
    static const space_neighbour_kind kinds[3] = {
        SPACE_NEIGHBOURS_ADJACENT, SPACE_NEIGHBOURS_HAMMING, SPACE_NEIGHBOURS_PAIR_SCALE};
    /* The best TOP_K observations (insertion into a short sorted list). */
    int top[TOP_K], nt = 0;
    for (int i = 0; i < st->n; i++) {
        int j;
        if (st->ot[i] >= SEARCH_BAD_SCORE)
            continue;
        if (nt < TOP_K)
            j = nt++;
        else if (st->ot[i] < st->ot[top[TOP_K - 1]])
            j = TOP_K - 1;
        else
            continue;
        while (j > 0 && st->ot[top[j - 1]] > st->ot[i]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    for (int k = 0; k < nt && nc < MAX_NEIGHBOURS; k++) {
        for (int q = 0; q < 3; q++) {
            int m = space_neighbours(st->sp, st->oid[top[k]], kinds[q], st->nb, st->nb_cap);
            for (int i = 0; i < m && nc < MAX_NEIGHBOURS; i++)
                pool_add(st, &nc, st->nb[i]);
        }
    }
    for (int c = 0; c < st->pool && space_count(st->sp) > 0; c++)
        pool_add(st, &nc, space_sample(st->sp, &st->rng));
    if (nc == 0)
        return 0;
    if (gp_predict(st->g, st->cx, nc, st->cmean, st->cvar) < 0)
        return -1;
    int pick = -1;
    double pick_a = -INFINITY;
    for (int i = 0; i < nc; i++) {
        double a = st->lcb ? -(st->cmean[i] - LCB_KAPPA * sqrt(st->cvar[i]))
                           : gp_ei(st->cmean[i], st->cvar[i], best);
        if (a > pick_a) {
            pick_a = a;
            pick = i;
        }
    }
    if (search_set_add(&st->visited, st->cid[pick]) < 0)
        return -1;
    *out = st->cid[pick];
    /* Kriging believer: the pick's predicted mean stands in for its result. */
    if (gp_count(st->g) < st->max_train + MAX_LIES)
        gp_add(st->g, st->cx + (size_t)pick * st->np, st->cmean[pick]);
    return 1;
}

static int pend_push(bo_state *st, config_id id)
{
    if (st->n_pend == st->pend_cap) {
        size_t cap = kt_array_next_cap((size_t)st->pend_cap, (size_t)st->n_pend + 1, INT_MAX);
        if (cap == 0 || kt_array_resize((void **)&st->pend, cap, sizeof *st->pend) != 0)
            return -1;
        st->pend_cap = (int)cap;
    }
    st->pend[st->n_pend++] = id;
    return 0;
}

static int bo_ask(void *state, config_id *out, int max)
{
    bo_state *st = state;
    int n = 0, fitted = 0;
    double best = 0;
    while (n < max) {
        int rc = 0;
        if (st->proposed < st->initial && st->n_fill < st->initial) {
            rc = propose_fill(st, &out[n]);
        } else {
            if (!fitted && st->g && st->n > 0)
                fitted = fit(st, &best) == 0 ? 1 : -1;
            if (fitted == 1)
                rc = propose_model(st, best, &out[n]);
            if (rc == 0)
                rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &out[n]);
        }
        if (rc <= 0 || pend_push(st, out[n]) < 0)
            break;
        st->proposed++;
        n++;
    }
    return n;
}

static void bo_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    bo_state *st = state;
    int np = st->np;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < st->n_pend; k++) {
            if (st->pend[k] == ids[i]) {
                memmove(st->pend + k, st->pend + k + 1,
                        (size_t)(st->n_pend - k - 1) * sizeof *st->pend);
                st->n_pend--;
                break;
            }
        }
        if (st->n == st->cap) {
            /* The arrays share one capacity: it is stored only once all have grown. */
            size_t cap = kt_array_next_cap((size_t)st->cap, (size_t)st->n + 1, INT_MAX);
            size_t row = (size_t)(np > 0 ? np : 1) * sizeof *st->ox;
            if (cap == 0 || kt_array_resize((void **)&st->oid, cap, sizeof *st->oid) != 0 ||
                kt_array_resize((void **)&st->ox, cap, row) != 0 ||
                kt_array_resize((void **)&st->ot, cap, sizeof *st->ot) != 0 ||
                kt_array_resize((void **)&st->order, cap, sizeof *st->order) != 0 ||
                kt_array_resize((void **)&st->taken, cap, sizeof *st->taken) != 0)
                return; /* out of memory: the result is not learnt from */
            st->cap = (int)cap;
        }
        if (np > GP_MAX_PARAMS || space_decode(st->sp, ids[i], st->ox + (size_t)st->n * np) < 0)
            continue;
        st->oid[st->n] = ids[i];
        st->ot[st->n] = search_score(&r[i]);
        st->n++;
    }
}

const searcher_vtable searcher_bo_vtable = {
    .name = "bo",
    .summary = "Bayesian optimisation: a Gaussian process on value indices (Matern-5/2 per "
               "parameter, Hamming for categories) and expected improvement over random samples "
               "and neighbours of the best; pick it for a pure GP search without auto's local walk "
               "and restarts",
    .options = bo_options,
    .n_options = N_OPTS,
    .create = bo_create,
    .ask = bo_ask,
    .tell = bo_tell,
    .destroy = bo_destroy,
};
