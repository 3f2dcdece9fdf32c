/* search/auto — the default strategy: model-guided local search. A short space-filling start
 * (each of `initial` configurations the farthest, in value-index space, of a few random
 * candidates from those already proposed), then every proposal is the unvisited configuration of
 * a candidate pool that a cheap surrogate predicts fastest. The surrogate is ridge regression of
 * log(time) on one-hot (bucketed) parameter values, refitted after new results; failed trials count
 * as a finite penalty above the slowest success. The pool holds random samples and the ADJACENT,
 * HAMMING and PAIR_SCALE neighbours of the best few configurations; a neighbour's prediction is
 * corrected by part of its origin's residual, so interactions the additive model misses still
 * steer the walk around the incumbent. With probability `exploration` a proposal is random. After
 * LONG_STALL results without a new best, the local walk takes neighbours in random order (iterated
 * local search), since the model's order has evidently stopped helping there. */
#include "search/search_set.h"

#include <math.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

enum { OPT_INITIAL, OPT_EXPLORATION, N_OPTS };

static const searcher_option auto_options[N_OPTS] = {
    {"initial", SEARCHER_OPT_INTEGER, "10", 1, 1000, NULL,
     "space-filling configurations proposed before the model guides the search"},
    {"exploration", SEARCHER_OPT_NUMBER, "0.15", 0, 1, NULL,
     "probability that a model-guided proposal is a random configuration instead"},
};

enum {
    MAX_FEATURES = 256, /* one-hot columns of the surrogate */
    POOL_RANDOM = 128,  /* random samples scored per proposal */
    TOP_K = 3,          /* best configurations whose neighbours join the pool */
    FILL_CANDIDATES = 16,
    STALL = 5, /* results without improvement before local search takes over */
};
#define RESID 0.7 /* share of a configuration's residual its neighbours inherit */
#define LONG_STALL                                                                                 \
    30 /* results without improvement after which the local walk ignores the model                 \
        */

typedef struct obs {
    config_id id;
    double t; /* search_score */
} obs;

typedef struct auto_state {
    const space *sp;
    kt_rng rng;
    search_set visited;
    int initial;
    double explore;
    int np;        /* parameters */
    int nf;        /* features */
    int *nv;       /* values per parameter */
    int *nb;       /* buckets per parameter */
    int *off;      /* first feature of each parameter */
    int *idx;      /* decode scratch */
    int *fidx;     /* the observations' features, np per observation */
    obs *o;        /* told results */
    int n, cap;    /* observations */
    int proposed;  /* proposals made */
    int dirty;     /* results told since the last fit */
    double *xtx;   /* nf * nf, accumulated */
    double *a;     /* nf * nf, factorised */
    double *w;     /* nf weights */
    double mean;   /* intercept */
    double *resid; /* per observation: y - prediction at the last fit */
    int fitted;
    config_id *scratch;
    int scratch_cap;
    int *fill; /* value indices of the space-filling proposals, np each */
    int n_fill;
    int best_i; /* observation with the best score, -1 none */
    int cur_i;  /* the local search's current configuration, -1 none */
    int has_pending;
    config_id pending; /* a restart: becomes current once told */
    int since_imp;     /* results told since the best last improved */
} auto_state;

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
    st->best_i = -1;
    st->cur_i = -1;
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
    st->a = calloc(f * f, sizeof *st->a);
    st->w = calloc(f, sizeof *st->w);
    int adj = space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT);
    int ham = space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING);
    int pair = space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE);
    st->scratch_cap = adj + ham + pair + 1;
    st->scratch = malloc((size_t)st->scratch_cap * sizeof *st->scratch);
    if (!st->xtx || !st->a || !st->w || !st->scratch)
        goto oom;
    return st;
oom:
    auto_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

static int bucket(const auto_state *st, int p, int v)
{
    if (st->nb[p] == st->nv[p])
        return v;
    return (int)((long long)v * st->nb[p] / st->nv[p]);
}

/* Features of id into f (np entries). -1 if id does not decode. */
static int features(auto_state *st, config_id id, int *f)
{
    if (space_decode(st->sp, id, st->idx) < 0)
        return -1;
    for (int p = 0; p < st->np; p++)
        f[p] = st->off[p] + bucket(st, p, st->idx[p]);
    return 0;
}

static double predict_f(const auto_state *st, const int *f)
{
    double s = st->mean;
    for (int p = 0; p < st->np; p++)
        s += st->w[f[p]];
    return s;
}

/* log-time targets: failures a finite penalty above the slowest success. */
static double target(double t, double worst)
{
    return t >= SEARCH_BAD_SCORE ? worst : log(t > 1e-12 ? t : 1e-12);
}

static void fit(auto_state *st)
{
    int nf = st->nf, np = st->np;
    double worst = -INFINITY, best = INFINITY;
    int n_ok = 0;
    for (int i = 0; i < st->n; i++) {
        if (st->o[i].t < SEARCH_BAD_SCORE) {
            double y = log(st->o[i].t > 1e-12 ? st->o[i].t : 1e-12);
            worst = y > worst ? y : worst;
            best = y < best ? y : best;
            n_ok++;
        }
    }
    st->fitted = 0;
    if (n_ok == 0)
        return;
    worst += 0.5 * (worst - best) + 0.5;
    double mean = 0;
    for (int i = 0; i < st->n; i++)
        mean += target(st->o[i].t, worst);
    mean /= st->n;
    st->mean = mean;
    memset(st->w, 0, (size_t)nf * sizeof *st->w);
    for (int i = 0; i < st->n; i++) {
        double y = target(st->o[i].t, worst) - mean;
        for (int p = 0; p < np; p++)
            st->w[st->fidx[(size_t)i * np + p]] += y;
    }
    double lambda = 1.0;
    for (int i = 0; i < nf * nf; i++)
        st->a[i] = st->xtx[i];
    for (int i = 0; i < nf; i++)
        st->a[i * nf + i] += lambda;
    /* Cholesky, lower triangle in place. */
    for (int j = 0; j < nf; j++) {
        double *aj = st->a + (size_t)j * nf;
        double d = aj[j];
        for (int k = 0; k < j; k++)
            d -= aj[k] * aj[k];
        d = d > 1e-12 ? sqrt(d) : 1e-6;
        aj[j] = d;
        for (int i = j + 1; i < nf; i++) {
            double *ai = st->a + (size_t)i * nf;
            double s = ai[j];
            for (int k = 0; k < j; k++)
                s -= ai[k] * aj[k];
            ai[j] = s / d;
        }
    }
    for (int i = 0; i < nf; i++) { /* L z = b */
        const double *ai = st->a + (size_t)i * nf;
        double s = st->w[i];
        for (int k = 0; k < i; k++)
            s -= ai[k] * st->w[k];
        st->w[i] = s / ai[i];
    }
    for (int i = nf - 1; i >= 0; i--) { /* L^T w = z */
        double s = st->w[i];
        for (int k = i + 1; k < nf; k++)
            s -= st->a[(size_t)k * nf + i] * st->w[k];
        st->w[i] = s / st->a[(size_t)i * nf + i];
    }
    for (int i = 0; i < st->n; i++)
        st->resid[i] = target(st->o[i].t, worst) - predict_f(st, st->fidx + (size_t)i * np);
    st->fitted = 1;
}

/* The space-filling start: the farthest (minimum normalised index distance to earlier fills) of
 * FILL_CANDIDATES random unvisited configurations. */
static int propose_fill(auto_state *st, config_id *out)
{
    config_id best_id = 0;
    double best_d = -1;
    int np = st->np;
    for (int c = 0; c < FILL_CANDIDATES; c++) {
        config_id id = space_sample(st->sp, &st->rng);
        if (search_set_has(&st->visited, id) || space_decode(st->sp, id, st->idx) < 0)
            continue;
        double dmin = INFINITY;
        for (int k = 0; k < st->n_fill; k++) {
            const int *g = st->fill + (size_t)k * np;
            double d = 0;
            for (int p = 0; p < np; p++) {
                double x = st->nv[p] > 1 ? (double)(st->idx[p] - g[p]) / (st->nv[p] - 1) : 0;
                d += x * x;
            }
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

/* The unvisited candidate predicted fastest. */
static int propose_model(auto_state *st, config_id *out)
{
    int np = st->np, nc = 0;
    int f[256];
    int *fp = np <= 256 ? f : NULL;
    if (!fp)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    /* Best TOP_K observations (by score). */
    int top[TOP_K], nt = 0;
    for (int i = 0; i < st->n; i++) {
        int j = nt < TOP_K ? nt++ : TOP_K;
        if (j == TOP_K) {
            if (st->o[i].t >= st->o[top[TOP_K - 1]].t)
                continue;
            j = TOP_K - 1;
        }
        while (j > 0 && st->o[top[j - 1]].t > st->o[i].t) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    double best_pred = INFINITY;
    config_id best_id = 0;
    for (int k = 0; k < nt; k++) {
        double r = st->resid[top[k]] * RESID;
        config_id origin = st->o[top[k]].id;
        int m = 0;
        static const space_neighbour_kind kinds[3] = {
            SPACE_NEIGHBOURS_ADJACENT, SPACE_NEIGHBOURS_HAMMING, SPACE_NEIGHBOURS_PAIR_SCALE};
        for (int q = 0; q < 3; q++)
            m += space_neighbours(st->sp, origin, kinds[q], st->scratch + m, st->scratch_cap - m);
        for (int i = 0; i < m; i++) {
            config_id id = st->scratch[i];
            if (search_set_has(&st->visited, id) || features(st, id, fp) < 0)
                continue;
            double pr = predict_f(st, fp) + r + 1e-9 * kt_rng_uniform(&st->rng);
            if (pr < best_pred) {
                best_pred = pr;
                best_id = id;
            }
            nc++;
        }
    }
    for (int c = 0; c < POOL_RANDOM; c++) {
        config_id id = space_sample(st->sp, &st->rng);
        if (search_set_has(&st->visited, id) || features(st, id, fp) < 0)
            continue;
        double pr = predict_f(st, fp);
        if (pr < best_pred) {
            best_pred = pr;
            best_id = id;
        }
        nc++;
    }
    if (nc == 0)
        return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
    if (search_set_add(&st->visited, best_id) < 0)
        return -1;
    *out = best_id;
    return 1;
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
    double best_pred = INFINITY;
    config_id best_id = 0;
    int nc = 0;
    for (int i = 0; i < m; i++) {
        config_id id = st->scratch[i];
        if (search_set_has(&st->visited, id) || features(st, id, f) < 0)
            continue;
        /* After a long stall the model's order is evidently misleading here: walk at random. */
        double pr = st->since_imp >= LONG_STALL
                        ? kt_rng_uniform(&st->rng)
                        : (st->fitted ? predict_f(st, f) + r : 0) + 1e-9 * kt_rng_uniform(&st->rng);
        if (pr < best_pred) {
            best_pred = pr;
            best_id = id;
        }
        nc++;
    }
    if (nc == 0) {
        int rc = propose_model(st, out);
        if (rc > 0) {
            st->has_pending = 1;
            st->pending = *out;
        }
        return rc;
    }
    if (search_set_add(&st->visited, best_id) < 0)
        return -1;
    *out = best_id;
    return 1;
}

static int auto_ask(void *state, config_id *out, int max)
{
    auto_state *st = state;
    int n = 0;
    if (st->dirty) {
        fit(st);
        st->dirty = 0;
    }
    while (n < max) {
        int rc;
        if (st->proposed < st->initial || !st->fitted)
            rc = st->n_fill < st->initial
                     ? propose_fill(st, &out[n])
                     : search_random_unvisited(st->sp, &st->visited, &st->rng, &out[n]);
        else if (kt_rng_uniform(&st->rng) < st->explore)
            rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &out[n]);
        else if (st->since_imp >= STALL && (rc = propose_local(st, &out[n])) != 0)
            ;
        else
            rc = propose_model(st, &out[n]);
        if (rc <= 0)
            break;
        st->proposed++;
        n++;
    }
    return n;
}

static void auto_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    auto_state *st = state;
    int np = st->np;
    for (int i = 0; i < n; i++) {
        if (st->n == st->cap) {
            /* Three arrays share one capacity: it is stored only once all three have grown. */
            size_t cap = kt_array_next_cap((size_t)st->cap, (size_t)st->n + 1, INT_MAX);
            size_t row = (size_t)(np > 0 ? np : 1) * sizeof *st->fidx;
            if (cap == 0 || kt_array_resize((void **)&st->o, cap, sizeof *st->o) != 0 ||
                kt_array_resize((void **)&st->fidx, cap, row) != 0 ||
                kt_array_resize((void **)&st->resid, cap, sizeof *st->resid) != 0)
                return; /* out of memory: the result is not learnt from */
            st->cap = (int)cap;
        }
        int *f = st->fidx + (size_t)st->n * np;
        if (np > 256 || features(st, ids[i], f) < 0)
            continue;
        st->o[st->n].id = ids[i];
        st->o[st->n].t = search_score(&r[i]);
        st->resid[st->n] = 0;
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
        st->n++;
        for (int p = 0; p < np; p++)
            for (int q = 0; q < np; q++)
                st->xtx[(size_t)f[p] * st->nf + f[q]] += 1;
        st->dirty = 1;
    }
}

const searcher_vtable searcher_auto_vtable = {
    .name = "auto",
    .summary = "the default: space-filling start, then a ridge surrogate of log(time) picks the "
               "best predicted of random samples and neighbours of the best configurations",
    .options = auto_options,
    .n_options = N_OPTS,
    .create = auto_create,
    .ask = auto_ask,
    .tell = auto_tell,
    .destroy = auto_destroy,
};
