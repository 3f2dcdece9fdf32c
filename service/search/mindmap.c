/* search/mindmap — Mind Mappings' phase 2 (issue 13): projected gradient descent on a frozen
 * surrogate (model/surrogate.h) of the configuration's objective, with random injections accepted
 * by simulated annealing. Without a surrogate (searcher_set_surrogate) ask returns 0.
 *
 * A chain holds a continuous point x in the surrogate's raw config features and its current
 * configuration. One proposal of a chain:
 *   1. the first: a random valid configuration (oracle-checked);
 *   2. every inject_every-th: a random valid unvisited configuration r is drawn and replaces the
 *      current one with probability min(1, exp(-(f_r - f_cur) / T)), f in centi-nepers
 *      (100 ln objective: 1 unit ~ 1% of the objective): f_r predicted by the surrogate (it was
 *      never measured: no repeats), f_cur measured (100 ln time_ms) when told, else predicted. T
 *      starts at t0 and is multiplied by anneal_factor every anneal_every injections (the paper's
 *      defaults: 10, 50, 50, 0.75: T 50 accepts a mapping twice as costly with probability 0.25).
 *      Accepted: r is proposed;
 *   3. otherwise a gradient step on whitened inputs, z <- z - lr d f / d z (f in nepers here, so
 *      lr 1 moves a feature by its gradient in training-set deviations), x clamped to the range of
 *      the space's encodings, then the projection: per parameter the value nearest in whitened
 *      encoded distance, per independent group the valid sub-configuration nearest
 *      (space_nearest_valid: exact); the oracle (1 valid, 0 invalid, -1 unknown: accepted) is
 *      asked, and an invalid projection is repaired by the nearest (encoded distance) of its
 *      HAMMING neighbours the oracle accepts (at most repair_checks checks). A configuration
 *      already proposed does not count: the chain keeps stepping from x (up to max_steps steps,
 *      each step_growth times the last); at the last one a projection onto a proposed
 *      configuration other than the current one is replaced by its unvisited neighbour the
 *      surrogate predicts best (project best), or nearest to x (nearest), or not (exact);
 *   4. still nothing (or gradient false, the ablation of issue 30): the unvisited HAMMING
 *      neighbour of the current configuration (then of the best measured one) that the surrogate
 *      predicts best and the oracle accepts, else a random valid one.
 * Before 2-4, a chain whose last restart_after told results found no new best restarts at the
 * surrogate's best of MM_RESTART_POOL random valid configurations. Each proposal's source is
 * counted (searcher_stats).
 * The proposal becomes the chain's current configuration and x snaps to its encoding (projected
 * gradient descent). Told results: f = 100 ln time_ms for ok results (for accel devices time_ms is
 * the objective EDP / minimum EDP, so f is 100x the surrogate's objective); a failure at a chain's
 * current configuration sends the chain back to its last configuration that succeeded.
 * Batches: proposals cycle over `chains` independent chains; a chain needs no results to step (the
 * gradient is the surrogate's), so any batch size works. Deterministic: every draw comes from the
 * searcher's rng, in ask / tell order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/search_set.h"

#define MM_BAD_F          1e30   /* f of a failed result: any injection replaces it */
#define MM_MAX_ROWS       200000 /* space_nearest_valid's per-group scan cap */
#define MM_SCAN_LIMIT     200000 /* random-valid fallback: ids scanned after the random draws */
#define MM_MAX_NEIGHBOURS 4096

enum { MM_PROJECT_EXACT, MM_PROJECT_NEAREST, MM_PROJECT_BEST };

static const searcher_option mindmap_options[] = {
    {"lr", SEARCHER_OPT_NUMBER, "1.0", 1e-6, 1000, NULL,
     "gradient step on whitened config features (training-set deviations per nepers of objective)"},
    {"inject_every", SEARCHER_OPT_INTEGER, "10", 0, 1000000, NULL,
     "a random valid mapping is injected every this many iterations of a chain (0: never)"},
    {"t0", SEARCHER_OPT_NUMBER, "50", 1e-9, 1e9, NULL,
     "initial temperature of the injections' acceptance, in centi-nepers (100 ln objective)"},
    {"anneal_every", SEARCHER_OPT_INTEGER, "50", 1, 1000000, NULL,
     "the temperature is multiplied by anneal_factor every this many injections"},
    {"anneal_factor", SEARCHER_OPT_NUMBER, "0.75", 1e-6, 1, NULL,
     "factor applied to the temperature every anneal_every injections"},
    {"chains", SEARCHER_OPT_INTEGER, "1", 1, 64, NULL,
     "independent descents; proposals cycle over them (batches need no more than one)"},
    {"max_steps", SEARCHER_OPT_INTEGER, "8", 1, 1000, NULL,
     "gradient steps tried per proposal while the projection lands on proposed configurations"},
    {"repair_checks", SEARCHER_OPT_INTEGER, "32", 1, 100000, NULL,
     "oracle checks when repairing an invalid projection or picking a neighbour"},
    {"sample_tries", SEARCHER_OPT_INTEGER, "1000", 1, 10000000, NULL,
     "random draws for a valid unvisited mapping before scanning for one"},
    {"neighbours", SEARCHER_OPT_INTEGER, "4096", 1, MM_MAX_NEIGHBOURS, NULL,
     "unvisited neighbours (a random subset) whose objective the surrogate predicts when the "
     "gradient steps find nothing new"},
    {"gradient", SEARCHER_OPT_BOOLEAN, "true", 0, 0, NULL,
     "gradient steps on the surrogate (false: the ablation, the neighbour fallback and the "
     "injections alone)"},
    {"step_growth", SEARCHER_OPT_NUMBER, "1", 1, 16, NULL,
     "each further gradient step of one proposal is this many times longer than the last (a line "
     "search outwards; 1: equal steps)"},
    {"restart_after", SEARCHER_OPT_INTEGER, "50", 0, 1000000, NULL,
     "a chain whose last this many proposals found no new best restarts at the surrogate's best "
     "of 64 random valid configurations (0: never)"},
    {"project", SEARCHER_OPT_STRING, "\"best\"", 0, 0, "best|nearest|exact",
     "where the last gradient step of a proposal goes when the nearest valid configuration to x "
     "was proposed already (and is not the current one): best (its unvisited neighbour the "
     "surrogate predicts best), nearest (its unvisited neighbour nearest to x), or exact "
     "(nowhere: the neighbour fallback takes over)"},
};

enum {
    O_LR,
    O_INJECT,
    O_T0,
    O_ANNEAL_EVERY,
    O_ANNEAL_FACTOR,
    O_CHAINS,
    O_STEPS,
    O_REPAIR,
    O_TRIES,
    O_NEIGHBOURS,
    O_GRADIENT,
    O_GROWTH,
    O_RESTART,
    O_PROJECT,
    N_OPTIONS
};

typedef struct mm_param {
    int off, width, n;
    double *enc; /* n x width: each value's raw encoding */
} mm_param;

typedef struct mm_chain {
    int started, cur_told, has_ok;
    config_id cur, last_ok;
    double cur_f; /* centi-nepers: measured when cur_told, else predicted */
    long iter;
    long since_best; /* the chain's told results since the searcher's best last improved */
    double *x;
} mm_chain;

/* Where proposals come from (searcher_stats), one counter per source. */
enum {
    SRC_START,
    SRC_INJECTION,
    SRC_GRADIENT,           /* the projection of x itself */
    SRC_GRADIENT_NEIGHBOUR, /* a neighbour of x's projection, which was proposed already */
    SRC_FALLBACK,
    SRC_RANDOM,
    SRC_RESTART,
    N_SRC
};
static const char *const mm_source_names[N_SRC] = {
    "start", "injection", "gradient", "gradient_neighbour", "fallback", "random", "restart"};
#define MM_RESTART_POOL 64 /* random valid configurations a restart picks its start from */

typedef struct mindmap_state {
    const space *sp;
    kt_rng rng;
    double lr, t0, anneal_factor, temp;
    int inject_every, anneal_every, n_chains, max_steps, repair_checks, sample_tries, n_predict;
    int use_gradient, restart_after, project; /* project: MM_PROJECT_* */
    double step_growth;
    long sources[N_SRC];
    surrogate *m;
    double pf[SURROGATE_MAX_PROBLEM_FEATURES];
    int P, W;
    mm_param *par;
    const double *sd;
    double *lo, *hi;
    searcher_oracle_fn oracle;
    void *oracle_arg;
    search_set visited, rejected;
    search_map told, owner; /* id -> f bits; id -> chain */
    mm_chain *chains;
    int next_chain;
    long injections;
    search_best best; /* the best success, by f */
    /* scratch */
    int *idx;
    double *xbuf, *grad, *cand_x, *cand_f, *cand_d, *pool_x, *pool_f;
    config_id *pool;
    const double *proj; /* the point space_nearest_valid projects */
    config_id *nb;
    int max_nb;
} mindmap_state;

static void *mindmap_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    mindmap_state *st = calloc(1, sizeof *st);
    if (!st) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    st->lr = searcher_option_number(&mindmap_options[O_LR], options);
    st->inject_every = (int)searcher_option_number(&mindmap_options[O_INJECT], options);
    st->t0 = searcher_option_number(&mindmap_options[O_T0], options);
    st->anneal_every = (int)searcher_option_number(&mindmap_options[O_ANNEAL_EVERY], options);
    st->anneal_factor = searcher_option_number(&mindmap_options[O_ANNEAL_FACTOR], options);
    st->n_chains = (int)searcher_option_number(&mindmap_options[O_CHAINS], options);
    st->max_steps = (int)searcher_option_number(&mindmap_options[O_STEPS], options);
    st->repair_checks = (int)searcher_option_number(&mindmap_options[O_REPAIR], options);
    st->sample_tries = (int)searcher_option_number(&mindmap_options[O_TRIES], options);
    st->n_predict = (int)searcher_option_number(&mindmap_options[O_NEIGHBOURS], options);
    st->use_gradient = searcher_option_bool(&mindmap_options[O_GRADIENT], options);
    st->step_growth = searcher_option_number(&mindmap_options[O_GROWTH], options);
    st->restart_after = (int)searcher_option_number(&mindmap_options[O_RESTART], options);
    char proj[16];
    const char *pj =
        searcher_option_string(&mindmap_options[O_PROJECT], options, proj, sizeof proj);
    st->project = !pj || strcmp(pj, "best") == 0 ? MM_PROJECT_BEST
                  : strcmp(pj, "nearest") == 0   ? MM_PROJECT_NEAREST
                                                 : MM_PROJECT_EXACT;
    st->temp = st->t0;
    st->P = space_num_params(sp);
    return st;
}

/* Frees what mindmap_set_surrogate allocated (after a failure, or at the end). */
static void drop_tables(mindmap_state *st)
{
    for (int p = 0; st->par && p < st->P; p++)
        free(st->par[p].enc);
    free(st->par);
    for (int c = 0; st->chains && c < st->n_chains; c++)
        free(st->chains[c].x);
    free(st->chains);
    free(st->lo);
    free(st->hi);
    free(st->idx);
    free(st->xbuf);
    free(st->grad);
    free(st->cand_x);
    free(st->cand_f);
    free(st->cand_d);
    free(st->nb);
    free(st->pool_x);
    free(st->pool_f);
    free(st->pool);
    st->pool_x = st->pool_f = NULL;
    st->pool = NULL;
    st->par = NULL;
    st->chains = NULL;
    st->lo = st->hi = st->xbuf = st->grad = st->cand_x = st->cand_f = st->cand_d = NULL;
    st->idx = NULL;
    st->nb = NULL;
}

static void mindmap_destroy(void *state)
{
    mindmap_state *st = state;
    if (!st)
        return;
    drop_tables(st);
    search_set_free(&st->visited);
    search_set_free(&st->rejected);
    search_map_free(&st->told);
    search_map_free(&st->owner);
    free(st);
}

static void mindmap_set_oracle(void *state, searcher_oracle_fn fn, void *arg)
{
    mindmap_state *st = state;
    st->oracle = fn;
    st->oracle_arg = arg;
}

static int mindmap_set_surrogate(void *state, surrogate *m, const double *pf, int n, kt_error *err)
{
    mindmap_state *st = state;
    if (st->m)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "mindmap: the surrogate is set already");
    if (n != surrogate_num_problem_features(m))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "mindmap: %d problem features, the surrogate takes %d", n,
                            surrogate_num_problem_features(m));
    if (surrogate_check_space(m, st->sp, err) < 0)
        return -1;
    int W = surrogate_config_width(m), P = st->P;
    st->max_nb = space_max_neighbours(st->sp, SPACE_NEIGHBOURS_HAMMING);
    st->max_nb = st->max_nb < 1                   ? 1
                 : st->max_nb > MM_MAX_NEIGHBOURS ? MM_MAX_NEIGHBOURS
                                                  : st->max_nb;
    st->par = calloc((size_t)P, sizeof *st->par);
    st->chains = calloc((size_t)st->n_chains, sizeof *st->chains);
    st->lo = malloc((size_t)W * sizeof *st->lo);
    st->hi = malloc((size_t)W * sizeof *st->hi);
    st->idx = malloc((size_t)P * sizeof *st->idx);
    st->xbuf = malloc((size_t)W * sizeof *st->xbuf);
    st->grad = malloc((size_t)W * sizeof *st->grad);
    st->cand_x = malloc((size_t)st->max_nb * (size_t)W * sizeof *st->cand_x);
    st->cand_f = malloc((size_t)st->max_nb * sizeof *st->cand_f);
    st->cand_d = malloc((size_t)st->max_nb * sizeof *st->cand_d);
    st->nb = malloc((size_t)st->max_nb * sizeof *st->nb);
    st->pool_x = malloc((size_t)MM_RESTART_POOL * (size_t)W * sizeof *st->pool_x);
    st->pool_f = malloc((size_t)MM_RESTART_POOL * sizeof *st->pool_f);
    st->pool = malloc((size_t)MM_RESTART_POOL * sizeof *st->pool);
    if (!st->par || !st->chains || !st->lo || !st->hi || !st->idx || !st->xbuf || !st->grad ||
        !st->cand_x || !st->cand_f || !st->cand_d || !st->nb || !st->pool_x || !st->pool_f ||
        !st->pool)
        goto nomem;
    for (int i = 0; i < W; i++) {
        st->lo[i] = INFINITY;
        st->hi[i] = -INFINITY;
    }
    for (int p = 0; p < P; p++) {
        mm_param *q = &st->par[p];
        if (surrogate_param_slice(m, st->sp, p, &q->off, &q->width) < 0) {
            drop_tables(st);
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "mindmap: parameter %d", p);
        }
        q->n = space_param_num_values(st->sp, p);
        q->enc = calloc((size_t)q->n * (size_t)(q->width > 0 ? q->width : 1), sizeof *q->enc);
        if (!q->enc)
            goto nomem;
        for (int v = 0; v < q->n; v++) {
            double *e = q->enc + (size_t)v * (size_t)q->width;
            surrogate_encode_value(m, st->sp, p, v, e);
            for (int k = 0; k < q->width; k++) {
                st->lo[q->off + k] = fmin(st->lo[q->off + k], e[k]);
                st->hi[q->off + k] = fmax(st->hi[q->off + k], e[k]);
            }
        }
    }
    for (int c = 0; c < st->n_chains; c++) {
        st->chains[c].x = calloc((size_t)W, sizeof *st->chains[c].x);
        if (!st->chains[c].x)
            goto nomem;
    }
    st->W = W;
    st->sd = surrogate_config_sd(m);
    memcpy(st->pf, pf, (size_t)n * sizeof *pf);
    st->m = m;
    return 0;
nomem:
    drop_tables(st);
    return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
}

/* 1 when the oracle does not call id invalid (remembered). */
static int oracle_ok(mindmap_state *st, config_id id)
{
    if (search_set_has(&st->rejected, id))
        return 0;
    if (!st->oracle || st->oracle(st->oracle_arg, id) != 0)
        return 1;
    search_set_add(&st->rejected, id);
    return 0;
}

/* A random unvisited configuration the oracle accepts (not marked visited): 1, or 0 if none was
 * found (sample_tries draws, then a scan of at most MM_SCAN_LIMIT ids from a random start). */
static int random_valid(mindmap_state *st, config_id *out)
{
    uint64_t count = space_count(st->sp);
    if (count == 0)
        return 0;
    for (int t = 0; t < st->sample_tries; t++) {
        config_id id = space_sample(st->sp, &st->rng);
        if (!search_set_has(&st->visited, id) && oracle_ok(st, id)) {
            *out = id;
            return 1;
        }
    }
    uint64_t start = kt_rng_below(&st->rng, count);
    for (uint64_t k = 0; k < count && k < MM_SCAN_LIMIT; k++) {
        config_id id = (start + k) % count;
        if (!search_set_has(&st->visited, id) && oracle_ok(st, id)) {
            *out = id;
            return 1;
        }
    }
    return 0;
}

static void encode_id(const mindmap_state *st, config_id id, double *x)
{
    space_decode(st->sp, id, st->idx);
    for (int p = 0; p < st->P; p++) {
        const mm_param *q = &st->par[p];
        memcpy(x + q->off, q->enc + (size_t)st->idx[p] * (size_t)q->width,
               (size_t)q->width * sizeof *x);
    }
}

/* Whitened squared distance of value v of parameter p from the point st->proj. */
static double value_cost(void *arg, int p, int v)
{
    const mindmap_state *st = arg;
    const mm_param *q = &st->par[p];
    const double *e = q->enc + (size_t)v * (size_t)q->width;
    double d = 0;
    for (int k = 0; k < q->width; k++) {
        double t = (st->proj[q->off + k] - e[k]) / st->sd[q->off + k];
        d += t * t;
    }
    return d;
}

static double distance_to(mindmap_state *st, const double *x, config_id id)
{
    double d = 0;
    st->proj = x;
    space_decode(st->sp, id, st->idx);
    for (int p = 0; p < st->P; p++)
        d += value_cost(st, p, st->idx[p]);
    return d;
}

static int propose(mindmap_state *st, mm_chain *c, int ci, config_id id)
{
    if (search_set_add(&st->visited, id) < 0 || search_map_reserve(&st->owner) < 0)
        return 0;
    search_map_put(&st->owner, id, (uint64_t)ci);
    c->cur = id;
    c->cur_told = 0;
    encode_id(st, id, c->x);
    c->cur_f = 100.0 * surrogate_predict(st->m, st->pf, c->x, NULL);
    return 1;
}

/* Sorts ids[0..n) by key ascending (insertion sort: n is small), keys alongside. */
static void sort_by(config_id *ids, double *key, int n)
{
    for (int i = 1; i < n; i++) {
        config_id id = ids[i];
        double k = key[i];
        int j = i - 1;
        while (j >= 0 && key[j] > k) {
            ids[j + 1] = ids[j];
            key[j + 1] = key[j];
            j--;
        }
        ids[j + 1] = id;
        key[j + 1] = k;
    }
}

/* The unvisited HAMMING neighbours of id, in nb; returns how many. */
static int fresh_neighbours(mindmap_state *st, config_id id)
{
    int n = space_neighbours(st->sp, id, SPACE_NEIGHBOURS_HAMMING, st->nb, st->max_nb), k = 0;
    for (int i = 0; i < n; i++) {
        if (!search_set_has(&st->visited, st->nb[i]) && !search_set_has(&st->rejected, st->nb[i]))
            st->nb[k++] = st->nb[i];
    }
    return k;
}

/* The first of the sorted candidates nb[0..n) the oracle accepts, within repair_checks. */
static int first_accepted(mindmap_state *st, int n, config_id *out)
{
    for (int i = 0, checks = 0; i < n && checks < st->repair_checks; i++, checks++) {
        if (oracle_ok(st, st->nb[i])) {
            *out = st->nb[i];
            return 1;
        }
    }
    return 0;
}

/* An invalid projection id of x: its nearest neighbour (to x) the oracle accepts. */
static int repair(mindmap_state *st, const double *x, config_id id, config_id *out)
{
    int n = fresh_neighbours(st, id);
    for (int i = 0; i < n; i++)
        st->cand_d[i] = distance_to(st, x, st->nb[i]);
    sort_by(st->nb, st->cand_d, n);
    return first_accepted(st, n, out);
}

/* The unvisited neighbour of id the surrogate predicts best and the oracle accepts. */
static int best_neighbour(mindmap_state *st, config_id id, config_id *out)
{
    int n = fresh_neighbours(st, id);
    if (n == 0)
        return 0;
    if (n > st->n_predict) { /* a random subset: the batched forward is the cost */
        for (int i = 0; i < st->n_predict; i++) {
            int j = i + (int)kt_rng_below(&st->rng, (uint64_t)(n - i));
            config_id t = st->nb[i];
            st->nb[i] = st->nb[j];
            st->nb[j] = t;
        }
        n = st->n_predict;
    }
    for (int i = 0; i < n; i++)
        encode_id(st, st->nb[i], st->cand_x + (size_t)i * (size_t)st->W);
    if (surrogate_predict_batch(st->m, st->pf, st->cand_x, n, st->cand_f) < 0)
        return 0;
    sort_by(st->nb, st->cand_f, n);
    return first_accepted(st, n, out);
}

/* One gradient step of chain c, mult times lr long, and its projection: 1 with a fresh valid
 * *out (2 when it is a neighbour of the projection), else 0. project (MM_PROJECT_*): where a
 * projection onto a proposed configuration other than the current one goes instead: its unvisited
 * neighbour the surrogate predicts best, or the one nearest to x, or nowhere (exact). */
static int gradient_step(mindmap_state *st, mm_chain *c, double mult, int project, config_id *out)
{
    surrogate_predict(st->m, st->pf, c->x, st->grad);
    double scale = mult * st->lr / surrogate_objective_sd(st->m);
    for (int i = 0; i < st->W; i++) {
        double g = st->grad[i];
        if (!isfinite(g))
            continue;
        double x = c->x[i] - scale * st->sd[i] * st->sd[i] * g;
        c->x[i] = x < st->lo[i] ? st->lo[i] : x > st->hi[i] ? st->hi[i] : x;
    }
    config_id id;
    st->proj = c->x;
    if (space_nearest_valid(st->sp, value_cost, st, MM_MAX_ROWS, &id) < 0)
        return 0;
    if (search_set_has(&st->visited, id)) {
        int found = id != c->cur && (project == MM_PROJECT_NEAREST ? repair(st, c->x, id, out)
                                     : project == MM_PROJECT_BEST  ? best_neighbour(st, id, out)
                                                                   : 0);
        return found ? 2 : 0;
    }
    if (oracle_ok(st, id)) {
        *out = id;
        return 1;
    }
    return repair(st, c->x, id, out);
}

/* A stalled chain's new start: of MM_RESTART_POOL random valid unvisited configurations, the one
 * the surrogate predicts best. 1 with *out, 0 when none was found. */
static int restart_pick(mindmap_state *st, config_id *out)
{
    int n = 0;
    for (int k = 0; k < MM_RESTART_POOL; k++) {
        config_id id;
        if (!random_valid(st, &id))
            break;
        st->pool[n] = id;
        encode_id(st, id, st->pool_x + (size_t)n * (size_t)st->W);
        n++;
    }
    if (n == 0 || surrogate_predict_batch(st->m, st->pf, st->pool_x, n, st->pool_f) < 0)
        return 0;
    int b = 0;
    for (int k = 1; k < n; k++)
        b = st->pool_f[k] < st->pool_f[b] ? k : b;
    *out = st->pool[b];
    return 1;
}

/* One proposal of chain ci: 1 with *out, or 0 when nothing is left to propose. */
static int chain_step(mindmap_state *st, int ci, config_id *out)
{
    mm_chain *c = &st->chains[ci];
    config_id id;
    if (!c->started) {
        if (!random_valid(st, &id) || !propose(st, c, ci, id))
            return 0;
        c->started = 1;
        st->sources[SRC_START]++;
        *out = id;
        return 1;
    }
    c->iter++;
    int src = SRC_GRADIENT;
    if (st->restart_after > 0 && c->since_best >= st->restart_after) {
        c->since_best = 0; /* a stall: away from the explored basin */
        if (restart_pick(st, &id)) {
            src = SRC_RESTART;
            goto found;
        }
    }
    if (st->inject_every > 0 && c->iter % st->inject_every == 0 && random_valid(st, &id)) {
        encode_id(st, id, st->xbuf);
        double f_r = 100.0 * surrogate_predict(st->m, st->pf, st->xbuf, NULL);
        double u = kt_rng_uniform(&st->rng);
        int accept = f_r <= c->cur_f || u < exp(-(f_r - c->cur_f) / st->temp);
        st->injections++;
        if (st->injections % st->anneal_every == 0)
            st->temp *= st->anneal_factor;
        if (accept) {
            src = SRC_INJECTION;
            goto found;
        }
    }
    double mult = 1;
    for (int s = 0; st->use_gradient && s < st->max_steps; s++, mult *= st->step_growth) {
        int g = gradient_step(st, c, mult, s == st->max_steps - 1 ? st->project : MM_PROJECT_EXACT,
                              &id);
        if (g) {
            src = g == 2 ? SRC_GRADIENT_NEIGHBOUR : SRC_GRADIENT;
            goto found;
        }
    }
    src = SRC_FALLBACK;
    if (best_neighbour(st, c->cur, &id) || (st->best.known && best_neighbour(st, st->best.id, &id)))
        goto found;
    src = SRC_RANDOM;
    if (random_valid(st, &id))
        goto found;
    return 0;
found:
    if (!propose(st, c, ci, id))
        return 0;
    st->sources[src]++;
    *out = id;
    return 1;
}

static int mindmap_ask(void *state, config_id *out, int max)
{
    mindmap_state *st = state;
    int n = 0;
    if (!st->m)
        return 0;
    while (n < max) {
        int ci = st->next_chain;
        st->next_chain = (st->next_chain + 1) % st->n_chains;
        if (!chain_step(st, ci, &out[n]))
            break;
        n++;
    }
    return n;
}

static void mindmap_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    mindmap_state *st = state;
    for (int i = 0; i < n; i++) {
        int ok = r[i].status == TRIAL_OK && isfinite(r[i].time_ms) && r[i].time_ms > 0;
        double f = ok ? 100.0 * log(r[i].time_ms) : MM_BAD_F;
        uint64_t bits, ci;
        memcpy(&bits, &f, sizeof bits);
        if (search_map_reserve(&st->told) == 0)
            search_map_put(&st->told, ids[i], bits);
        int improved = ok && search_best_offer(&st->best, ids[i], f);
        if (!st->chains || !search_map_get(&st->owner, ids[i], &ci))
            continue;
        mm_chain *c = &st->chains[ci];
        c->since_best = improved ? 0 : c->since_best + 1;
        if (ok) {
            c->has_ok = 1;
            c->last_ok = ids[i];
        }
        if (c->cur != ids[i])
            continue;
        if (ok || !c->has_ok) {
            c->cur_told = 1;
            c->cur_f = f;
            continue;
        }
        /* A failure at the current point: back to the chain's last success. */
        uint64_t fb;
        c->cur = c->last_ok;
        c->cur_told = search_map_get(&st->told, c->cur, &fb);
        if (c->cur_told)
            memcpy(&c->cur_f, &fb, sizeof fb);
        if (st->m)
            encode_id(st, c->cur, c->x);
    }
}

/* The warm start's first ids are proposed by searcher.c: never again by a chain. */
static int mindmap_history(void *state, const searcher_history *h, kt_error *err)
{
    mindmap_state *st = state;
    for (int i = 0; i < h->n_first; i++) {
        if (search_set_add(&st->visited, h->first[i]) < 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    return 0;
}

static json_t *mindmap_stats(const void *state)
{
    const mindmap_state *st = state;
    json_t *o = json_object();
    for (int k = 0; o && k < N_SRC; k++)
        json_object_set_new(o, mm_source_names[k], json_integer((json_int_t)st->sources[k]));
    return o;
}

const searcher_vtable searcher_mindmap_vtable = {
    .name = "mindmap",
    .summary = "Mind Mappings: projected gradient descent on a trained surrogate of the objective, "
               "with annealed random injections and restarts when stalled (needs a surrogate "
               "model: accel devices). On the accel presets the gradient steps beat the neighbour "
               "fallback alone at 50-100 evaluations (Welch p 0.011 / 0.004), not at 200-500, and "
               "make 35% of the proposals (tests/bench/results/ablation-mindmap.txt)",
    .options = mindmap_options,
    .n_options = N_OPTIONS,
    .create = mindmap_create,
    .ask = mindmap_ask,
    .tell = mindmap_tell,
    .destroy = mindmap_destroy,
    .history = mindmap_history,
    .needs_surrogate = 1,
    .set_surrogate = mindmap_set_surrogate,
    .set_oracle = mindmap_set_oracle,
    .stats = mindmap_stats,
};
