/* search/na2c — Neighborhood Actor Advantage Critic (N-A2C, Algorithm 2 of "Compiler-Level Matrix
 * Multiplication Optimization for Deep Learning"). The first proposal is the start state s_0
 * (option `start`, searcher_start_id: by default the paper's [[m,1,1,1],[k,1],[n,1,1,1]], the
 * space's last configuration), then `initial` (0) extra random configurations. Every episode starts
 * from the best configuration so far (s_0 until one measures; while every told result failed, s_0
 * included, a random configuration is proposed instead, as G-BFS restarts) and walks T steps over a
 * fixed action set, each step with probability 1 - `epsilon` an action sampled from the actor's
 * policy pi(s) and otherwise a random action (epsilon 1: the actor is never used nor trained); each
 * state reached that was never proposed joins the episode's batch, and walks repeat until `batch`
 * states are collected. The batch is proposed; each told result adds the transition (s, a, r, s')
 * that first reached it to a replay memory of the latest `memory` transitions, and before the next
 * episode the actor and the critic (two small MLPs, learn/mlp) are trained on random minibatches of
 * it: advantage r + gamma V(s') - V(s), the paper's reward 1/T_cost times a constant (t_0 / t, t_0
 * the run's first successful time; 0 for a failure), and an entropy bonus that keeps the policy
 * exploring. `critic` none (the ablation of issue 30): the advantage is r alone, the critic is
 * neither used nor trained.
 *
 * Where the paper is silent: the action set is, per parameter, one step to the previous or next
 * value of its list (Kernel Tuner's neighbours), plus, for every ordered pair of numeric
 * parameters, the paper's tiling move (one value doubled, the other halved together); actions that
 * leave the space (a restriction fails, no such value) are masked out of both random and policy
 * choices, and while some action leads to a state never proposed, a step chooses among those only
 * (so a walk collects at every step instead of retracing visited ground). A state's features are
 * its parameters' value indices scaled to [-1, 1]. T: the paper's soft start (the first episode
 * walks `soft_start` steps, each next one a step fewer down to `episode_length`), then growth: one
 * step more every STALL_EPISODES episodes without a new best and whenever FRUITLESS walks in a row
 * find nothing new (the paper's "T gradually increases"), at most `max_episode_length`, back to
 * `episode_length` when the best improves; a walk takes the longer of the two. When even that finds
 * nothing within a bounded number of steps, the proposal is a random unvisited configuration, so
 * ask returns 0 only once the space is exhausted. Deterministic for a seed: the
 * networks' initial weights and every choice come from the searcher's two rngs (walks,
 * minibatches), and training happens at fixed points of the ask/tell sequence (before an episode).
 */
#include "search/search_set.h"

#include "learn/adam.h"
#include "learn/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_EPISODE_LENGTH,
    OPT_EPSILON,
    OPT_BATCH,
    OPT_MEMORY,
    OPT_HIDDEN,
    OPT_ACTOR_LR,
    OPT_CRITIC_LR,
    OPT_GAMMA,
    OPT_TRAIN_STEPS,
    OPT_MINIBATCH,
    OPT_ENTROPY,
    OPT_INITIAL,
    OPT_START,
    OPT_SOFT_START,
    OPT_MAX_EPISODE_LENGTH,
    OPT_CRITIC,
    N_OPTS
};

static const searcher_option na2c_options[N_OPTS] = {
    {"episode_length", SEARCHER_OPT_INTEGER, "3", 1, 1000, NULL,
     "steps T of each episode's walks from the best configuration (the paper's T), after the "
     "soft start and while the search is not stalled"},
    {"epsilon", SEARCHER_OPT_NUMBER, "0.3", 0, 1, NULL,
     "probability that a step takes a random action instead of the actor's (1 - the paper's "
     "tau)"},
    {"batch", SEARCHER_OPT_INTEGER, "8", 1, 256, NULL,
     "new configurations an episode collects before they are measured together"},
    {"memory", SEARCHER_OPT_INTEGER, "512", 16, 16384, NULL,
     "transitions kept in the replay memory (the latest ones)"},
    {"hidden", SEARCHER_OPT_INTEGER, "32", 4, 256, NULL,
     "units in each of the two tanh hidden layers of the actor and the critic"},
    {"actor_lr", SEARCHER_OPT_NUMBER, "0.003", 1e-6, 1, NULL, "Adam learning rate of the actor"},
    {"critic_lr", SEARCHER_OPT_NUMBER, "0.003", 1e-6, 1, NULL, "Adam learning rate of the critic"},
    {"gamma", SEARCHER_OPT_NUMBER, "0.5", 0, 0.99, NULL,
     "discount of the critic's next-state value in the advantage"},
    {"train_steps", SEARCHER_OPT_INTEGER, "4", 0, 64, NULL,
     "minibatch updates of both networks before each episode with new results"},
    {"minibatch", SEARCHER_OPT_INTEGER, "32", 1, 256, NULL,
     "transitions drawn from the replay memory per update"},
    {"entropy", SEARCHER_OPT_NUMBER, "0.01", 0, 1, NULL,
     "weight of the policy's entropy bonus (keeps the actor from collapsing on one action)"},
    {"initial", SEARCHER_OPT_INTEGER, "0", 0, 1000, NULL,
     "extra random configurations proposed after the start, before the first episode (the best "
     "result so far is every episode's start)"},
    {"start", SEARCHER_OPT_START, "\"paper\"", 0, 0, "random|default|paper",
     "s_0, the first proposal and the first episodes' start: paper (the space's last "
     "configuration; on gemm_tiled the paper's [[m,1,1,1],[k,1],[n,1,1,1]]), default (the "
     "kernel's default configuration), random, or a configuration object {\"param\": value, ...}"},
    {"soft_start", SEARCHER_OPT_INTEGER, "12", 0, 1000, NULL,
     "the paper's soft start: the first episode walks this many steps, each next one a step fewer "
     "down to episode_length (0 or at most episode_length: none)"},
    {"max_episode_length", SEARCHER_OPT_INTEGER, "100", 1, 1000, NULL,
     "how far T grows while no new best is found (the paper's 2-D example uses T = 100); below "
     "episode_length it is episode_length"},
    {"critic", SEARCHER_OPT_STRING, "\"learned\"", 0, 0, "learned|none",
     "the advantage's baseline: learned (the critic, A = r + gamma V(s') - V(s)) or none (the "
     "ablation: no critic, A = r, REINFORCE on the one-step reward)"},
};

enum {
    MAX_ACTIONS = 1024, /* the step actions come first; pair moves beyond this are left out */
    FRUITLESS = 8,      /* walks in a row finding nothing new before they grow one step */
    STEP_BUDGET = 4096, /* walk steps per episode before a random configuration is proposed */
    STUCK_BUDGET = 64,  /* the same while the last episode from this best found nothing */
    PENDING_MIN = 256,  /* proposals awaiting a result whose transition is remembered */
    STALL_EPISODES = 4, /* episodes without a new best before the walks grow one step */
};

typedef enum {
    ACT_STEP, /* p moves v (-1 or +1) along its value list */
    ACT_PAIR, /* p's value doubles and q's halves (the paper's action) */
} na2c_action_kind;

typedef struct na2c_action {
    na2c_action_kind kind;
    int p, q, v;
} na2c_action;

typedef struct na2c_state {
    const space *sp;
    kt_rng rng;       /* walks, random configurations, the networks' initial weights */
    kt_rng train_rng; /* minibatches: training never shifts the walks' random stream */
    search_set visited;
    int T, max_T, batch, mem_cap, train_steps, minibatch, initial;
    double eps, gamma, entropy;
    int no_critic;     /* critic none: the advantage is the reward, no network is trained for it */
    int np, na, words; /* parameters, actions, 64-bit words of an action mask */
    int *nv;           /* values per parameter */
    int *voff;         /* first (p, v) entry of parameter p in dbl / half */
    int *dbl, *half;   /* value index of 2x / x/2, -1 if none */
    na2c_action *act;
    learn_mlp *actor, *critic; /* NULL when there is no action */
    learn_adam actor_opt, critic_opt;
    /* walk scratch */
    int *cur;
    double *feat;
    config_id *next_id;   /* per action: where it leads from cur */
    unsigned char *valid; /* the actions allowed at cur: the choice's mask */
    unsigned char *fresh;
    double *prob;
    /* the episode's batch, proposed in order */
    config_id *queue;
    int q_head, q_len;
    /* transitions of proposals still awaiting their result: a ring, the oldest overwritten */
    int pend_cap, pend_next;
    config_id *pend_id;
    unsigned char *pend_used;
    int *pend_s, *pend_a;
    uint64_t *pend_mask;
    /* replay memory: a ring of the latest mem_cap transitions */
    int mem_len, mem_next, mem_new;
    int *mem_s, *mem_s2, *mem_a;
    double *mem_t;
    uint64_t *mem_mask;
    /* training scratch, minibatch rows */
    int *rows;
    double *x_s, *x_s2, *v_s2, *y, *dout_c, *dout_a;
    unsigned char *m_row;
    double *dp;
    /* search */
    int told_any, stuck, fruitless;
    int t_eff;     /* T grown by stalls, episode_length..max_T */
    int soft;      /* the soft start's T (decreasing per episode), 0 once none */
    int stall;     /* episodes since the best last improved */
    int n_initial; /* random configurations proposed so far */
    search_start start;
    search_best best; /* the best success */
    double r_scale;   /* t_0: the first successful time (0 until one): reward t_0 / t */
} na2c_state;

static void na2c_destroy(void *state)
{
    na2c_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    free(st->nv);
    free(st->voff);
    free(st->dbl);
    free(st->half);
    free(st->act);
    learn_mlp_free(st->actor);
    learn_mlp_free(st->critic);
    learn_adam_release(&st->actor_opt);
    learn_adam_release(&st->critic_opt);
    free(st->cur);
    free(st->feat);
    free(st->next_id);
    free(st->valid);
    free(st->fresh);
    free(st->prob);
    free(st->queue);
    free(st->pend_id);
    free(st->pend_used);
    free(st->pend_s);
    free(st->pend_a);
    free(st->pend_mask);
    free(st->mem_s);
    free(st->mem_s2);
    free(st->mem_a);
    free(st->mem_t);
    free(st->mem_mask);
    free(st->rows);
    free(st->x_s);
    free(st->x_s2);
    free(st->v_s2);
    free(st->y);
    free(st->dout_c);
    free(st->dout_a);
    free(st->m_row);
    free(st->dp);
    free(st);
}

typedef struct value_pos {
    double x;
    int v;
} value_pos;

static int cmp_value_pos(const void *a, const void *b)
{
    double x = ((const value_pos *)a)->x, y = ((const value_pos *)b)->x;
    return x < y ? -1 : x > y;
}

/* Index of value x in the sorted list, -1 if absent. */
static int find_value(const value_pos *s, int n, double x)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (s[mid].x == x)
            return s[mid].v;
        if (s[mid].x < x)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* dbl / half tables of the numeric parameters (no strings, no booleans, like PAIR_SCALE); 1 if
 * parameter p has a value that doubles (has_dbl) or halves (has_half). 0, or -1 out of memory. */
static int build_scale_tables(na2c_state *st, unsigned char *has_dbl, unsigned char *has_half)
{
    int total = 0, maxv = 0;
    for (int p = 0; p < st->np; p++) {
        st->voff[p] = total;
        total += st->nv[p];
        maxv = st->nv[p] > maxv ? st->nv[p] : maxv;
    }
    st->dbl = malloc((size_t)(total ? total : 1) * sizeof *st->dbl);
    st->half = malloc((size_t)(total ? total : 1) * sizeof *st->half);
    value_pos *sorted = malloc((size_t)(maxv ? maxv : 1) * sizeof *sorted);
    int rc = -1;
    if (!st->dbl || !st->half || !sorted)
        goto done;
    for (int p = 0; p < st->np; p++) {
        int n = st->nv[p], numeric = 1;
        for (int v = 0; v < n && numeric; v++) {
            json_t *j = space_param_value_json(st->sp, p, v);
            sorted[v] = (value_pos){space_param_value_number(st->sp, p, v), v};
            numeric = j && json_is_number(j) && isfinite(sorted[v].x);
            json_decref(j);
        }
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_value_pos);
        for (int v = 0; v < n; v++) {
            double x = space_param_value_number(st->sp, p, v);
            int d = -1, h = -1;
            if (numeric && x != 0) { /* zero would not move */
                d = find_value(sorted, n, 2 * x);
                h = find_value(sorted, n, x / 2);
            }
            st->dbl[st->voff[p] + v] = d;
            st->half[st->voff[p] + v] = h;
            has_dbl[p] |= d >= 0;
            has_half[p] |= h >= 0;
        }
    }
    rc = 0;
done:
    free(sorted);
    return rc;
}

/* The fixed action set: steps, then the pair moves some configuration could take. */
static int build_actions(na2c_state *st)
{
    int np = st->np, rc = -1;
    unsigned char *has_dbl = calloc((size_t)(np ? np : 1), 1);
    unsigned char *has_half = calloc((size_t)(np ? np : 1), 1);
    st->act = malloc(MAX_ACTIONS * sizeof *st->act);
    if (!has_dbl || !has_half || !st->act || build_scale_tables(st, has_dbl, has_half) < 0)
        goto done;
    for (int p = 0; p < np; p++) {
        if (st->nv[p] < 2)
            continue;
        if (st->na + 2 <= MAX_ACTIONS) {
            st->act[st->na++] = (na2c_action){ACT_STEP, p, -1, -1};
            st->act[st->na++] = (na2c_action){ACT_STEP, p, -1, +1};
        }
    }
    for (int p = 0; p < np; p++) {
        for (int q = 0; q < np && st->na < MAX_ACTIONS; q++) {
            if (p != q && has_dbl[p] && has_half[q])
                st->act[st->na++] = (na2c_action){ACT_PAIR, p, q, 0};
        }
    }
    rc = 0;
done:
    free(has_dbl);
    free(has_half);
    return rc;
}

static int alloc_all(na2c_state *st)
{
    size_t np = (size_t)(st->np ? st->np : 1), na = (size_t)(st->na ? st->na : 1);
    size_t w = (size_t)st->words, mc = (size_t)st->mem_cap, pc = (size_t)st->pend_cap;
    size_t mb = (size_t)st->minibatch;
    st->cur = malloc(np * sizeof *st->cur);
    st->feat = malloc(np * sizeof *st->feat);
    st->next_id = malloc(na * sizeof *st->next_id);
    st->valid = malloc(na);
    st->fresh = malloc(na);
    st->prob = malloc(na * sizeof *st->prob);
    st->queue = malloc((size_t)st->batch * sizeof *st->queue);
    st->pend_id = malloc(pc * sizeof *st->pend_id);
    st->pend_used = calloc(pc, 1);
    st->pend_s = malloc(pc * np * sizeof *st->pend_s);
    st->pend_a = malloc(pc * sizeof *st->pend_a);
    st->pend_mask = malloc(pc * w * sizeof *st->pend_mask);
    st->mem_s = malloc(mc * np * sizeof *st->mem_s);
    st->mem_s2 = malloc(mc * np * sizeof *st->mem_s2);
    st->mem_a = malloc(mc * sizeof *st->mem_a);
    st->mem_t = malloc(mc * sizeof *st->mem_t);
    st->mem_mask = malloc(mc * w * sizeof *st->mem_mask);
    st->rows = malloc(mb * sizeof *st->rows);
    st->x_s = malloc(mb * np * sizeof *st->x_s);
    st->x_s2 = malloc(mb * np * sizeof *st->x_s2);
    st->v_s2 = malloc(mb * sizeof *st->v_s2);
    st->y = malloc(mb * sizeof *st->y);
    st->dout_c = malloc(mb * sizeof *st->dout_c);
    st->dout_a = malloc(mb * na * sizeof *st->dout_a);
    st->m_row = malloc(na);
    st->dp = malloc(na * sizeof *st->dp);
    return st->cur && st->feat && st->next_id && st->valid && st->fresh && st->prob && st->queue &&
                   st->pend_id && st->pend_used && st->pend_s && st->pend_a && st->pend_mask &&
                   st->mem_s && st->mem_s2 && st->mem_a && st->mem_t && st->mem_mask && st->rows &&
                   st->x_s && st->x_s2 && st->v_s2 && st->y && st->dout_c && st->dout_a &&
                   st->m_row && st->dp
               ? 0
               : -1;
}

static int make_networks(na2c_state *st, int hidden, double actor_lr, double critic_lr)
{
    int in = st->np ? st->np : 1;
    const int a_sizes[4] = {in, hidden, hidden, st->na}, c_sizes[4] = {in, hidden, hidden, 1};
    st->actor = learn_mlp_new(3, a_sizes, LEARN_ACT_TANH, &st->rng);
    st->critic = learn_mlp_new(3, c_sizes, LEARN_ACT_TANH, &st->rng);
    if (!st->actor || !st->critic)
        return -1;
    learn_mlp_scale_output(st->actor, 0.1); /* a near-uniform first policy */
    if (learn_adam_init(&st->actor_opt, learn_mlp_num_params(st->actor), actor_lr) < 0 ||
        learn_adam_init(&st->critic_opt, learn_mlp_num_params(st->critic), critic_lr) < 0)
        return -1;
    st->actor_opt.clip = st->critic_opt.clip = 5.0;
    return 0;
}

static void *na2c_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    na2c_state *st = calloc(1, sizeof *st);
    if (!st)
        goto oom;
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    kt_rng_seed(&st->train_rng, seed ^ 0x9e3779b97f4a7c15ULL);
    const searcher_option *o = na2c_options;
    st->T = (int)searcher_option_number(&o[OPT_EPISODE_LENGTH], options);
    st->eps = searcher_option_number(&o[OPT_EPSILON], options);
    st->batch = (int)searcher_option_number(&o[OPT_BATCH], options);
    st->mem_cap = (int)searcher_option_number(&o[OPT_MEMORY], options);
    int hidden = (int)searcher_option_number(&o[OPT_HIDDEN], options);
    double actor_lr = searcher_option_number(&o[OPT_ACTOR_LR], options);
    double critic_lr = searcher_option_number(&o[OPT_CRITIC_LR], options);
    st->gamma = searcher_option_number(&o[OPT_GAMMA], options);
    st->train_steps = (int)searcher_option_number(&o[OPT_TRAIN_STEPS], options);
    st->minibatch = (int)searcher_option_number(&o[OPT_MINIBATCH], options);
    st->entropy = searcher_option_number(&o[OPT_ENTROPY], options);
    st->initial = (int)searcher_option_number(&o[OPT_INITIAL], options);
    char critic[16];
    const char *c = searcher_option_string(&o[OPT_CRITIC], options, critic, sizeof critic);
    st->no_critic = c && strcmp(c, "none") == 0;
    st->t_eff = st->T;
    st->max_T = (int)searcher_option_number(&o[OPT_MAX_EPISODE_LENGTH], options);
    st->max_T = st->max_T > st->T ? st->max_T : st->T;
    st->soft = (int)searcher_option_number(&o[OPT_SOFT_START], options);
    st->soft = st->soft > st->T ? st->soft : 0;
    st->np = space_num_params(sp);
    st->pend_cap = 4 * st->batch > PENDING_MIN ? 4 * st->batch : PENDING_MIN;
    size_t np = (size_t)(st->np ? st->np : 1);
    st->nv = malloc(np * sizeof *st->nv);
    st->voff = malloc(np * sizeof *st->voff);
    if (!st->nv || !st->voff)
        goto oom;
    for (int p = 0; p < st->np; p++)
        st->nv[p] = space_param_num_values(sp, p);
    if (build_actions(st) < 0)
        goto oom;
    st->words = (st->na + 63) / 64 ? (st->na + 63) / 64 : 1;
    if (alloc_all(st) < 0)
        goto oom;
    if (st->na > 0 && make_networks(st, hidden, actor_lr, critic_lr) < 0)
        goto oom;
    if (space_count(sp) > 0) { /* an empty space has no start: ask returns 0 */
        if (searcher_start_id("na2c", &o[OPT_START], options, sp, &st->rng, &st->start.id, NULL,
                              err) < 0)
            goto fail;
        st->start.pending = 1;
    }
    return st;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
fail:
    na2c_destroy(st);
    return NULL;
}

static void features(const na2c_state *st, const int *idx, double *f)
{
    for (int p = 0; p < st->np; p++)
        f[p] = st->nv[p] > 1 ? 2.0 * idx[p] / (st->nv[p] - 1) - 1.0 : 0.0;
    if (st->np == 0)
        f[0] = 0;
}

/* Where each action leads from st->cur (valid[a], next_id[a]); returns how many are valid. */
static int valid_actions(na2c_state *st)
{
    int *idx = st->cur, n = 0;
    for (int a = 0; a < st->na; a++) {
        const na2c_action *x = &st->act[a];
        int p = x->p, q = x->q, keep_p = idx[p], keep_q = q >= 0 ? idx[q] : 0, ok = 0;
        if (x->kind == ACT_STEP) {
            int v = keep_p + x->v;
            if (v >= 0 && v < st->nv[p]) {
                idx[p] = v;
                ok = 1;
            }
        } else {
            int d = st->dbl[st->voff[p] + keep_p], h = st->half[st->voff[q] + keep_q];
            if (d >= 0 && h >= 0) {
                idx[p] = d;
                idx[q] = h;
                ok = 1;
            }
        }
        ok = ok && space_encode(st->sp, idx, &st->next_id[a]) == 0;
        st->valid[a] = (unsigned char)ok;
        n += ok;
        idx[p] = keep_p;
        if (q >= 0)
            idx[q] = keep_q;
    }
    return n;
}

/* The k-th (0-based) valid action. */
static int kth_valid(const na2c_state *st, int k)
{
    for (int a = 0; a < st->na; a++) {
        if (st->valid[a] && k-- == 0)
            return a;
    }
    return -1;
}

/* An action from st->cur (n_valid > 0 of them valid): random with probability epsilon, else
 * sampled from the actor's masked policy (epsilon 1: never). -1 out of memory. */
static int choose_action(na2c_state *st, int n_valid)
{
    if (st->eps >= 1 || kt_rng_uniform(&st->rng) < st->eps)
        return kth_valid(st, (int)kt_rng_below(&st->rng, (uint64_t)n_valid));
    features(st, st->cur, st->feat);
    const double *z = learn_mlp_forward(st->actor, st->feat, 1);
    if (!z)
        return -1;
    if (learn_softmax(z, st->valid, st->na, st->prob) == 0) /* a diverged actor: act at random */
        return kth_valid(st, (int)kt_rng_below(&st->rng, (uint64_t)n_valid));
    double u = kt_rng_uniform(&st->rng), acc = 0;
    int last = -1;
    for (int a = 0; a < st->na; a++) {
        if (!st->valid[a])
            continue;
        last = a;
        acc += st->prob[a];
        if (u < acc)
            return a;
    }
    return last; /* rounding left u above the sum */
}

/* Remembers how id was reached (from st->cur by action a, with st->valid as the mask). */
static void pending_add(na2c_state *st, config_id id, int a)
{
    int k = st->pend_next;
    st->pend_next = (k + 1) % st->pend_cap;
    st->pend_used[k] = 1;
    st->pend_id[k] = id;
    st->pend_a[k] = a;
    memcpy(st->pend_s + (size_t)k * (size_t)st->np, st->cur, (size_t)st->np * sizeof *st->cur);
    uint64_t *m = st->pend_mask + (size_t)k * (size_t)st->words;
    memset(m, 0, (size_t)st->words * sizeof *m);
    for (int b = 0; b < st->na; b++) {
        if (st->valid[b])
            m[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

static void queue_push(na2c_state *st, config_id id)
{
    st->queue[(st->q_head + st->q_len++) % st->batch] = id;
}

/* One walk from s0, as long as the soft start's T or the grown T, whichever is longer: returns the
 * states collected, or -1 out of memory. */
static int walk(na2c_state *st, config_id s0, int *steps_left)
{
    int collected = 0, len = st->soft > st->t_eff ? st->soft : st->t_eff;
    if (space_decode(st->sp, s0, st->cur) < 0) {
        *steps_left = 0;
        return 0;
    }
    for (int t = 0; (t < len) && (*steps_left > 0) && st->q_len < st->batch; t++) {
        (*steps_left)--;
        int n = valid_actions(st);
        if (n == 0) {
            if (t == 0)
                *steps_left = 0; /* nowhere to go from s0, and so never will be */
            break;
        }
        int fresh = 0; /* actions to states never proposed: the walk prefers them */
        for (int b = 0; b < st->na; b++) {
            st->fresh[b] = st->valid[b] && !search_set_has(&st->visited, st->next_id[b]);
            fresh += st->fresh[b];
        }
        if (fresh > 0) {
            memcpy(st->valid, st->fresh, (size_t)st->na);
            n = fresh;
        }
        int a = choose_action(st, n);
        if (a < 0)
            return -1;
        config_id id = st->next_id[a];
        if (!search_set_has(&st->visited, id)) {
            if (search_set_add(&st->visited, id) < 0)
                return -1;
            pending_add(st, id, a);
            queue_push(st, id);
            collected++;
        }
        space_decode(st->sp, id, st->cur);
    }
    return collected;
}

/* The critic's values of the rows' features x (rows of np) into v. -1 out of memory. */
static int critic_values(na2c_state *st, const double *x, int rows, double *v)
{
    const double *out = learn_mlp_forward(st->critic, x, rows);
    if (!out)
        return -1;
    memcpy(v, out, (size_t)rows * sizeof *v);
    return 0;
}

/* One A2C update of both networks on a random minibatch of the memory. -1 out of memory. */
static int train_step(na2c_state *st)
{
    int mb = st->minibatch < st->mem_len ? st->minibatch : st->mem_len, na = st->na;
    int in = st->np ? st->np : 1;
    for (int k = 0; k < mb; k++) {
        int j = (int)kt_rng_below(&st->train_rng, (uint64_t)st->mem_len);
        st->rows[k] = j;
        features(st, st->mem_s + (size_t)j * (size_t)st->np, st->x_s + (size_t)k * (size_t)in);
        features(st, st->mem_s2 + (size_t)j * (size_t)st->np, st->x_s2 + (size_t)k * (size_t)in);
    }
    if (!st->no_critic && critic_values(st, st->x_s2, mb, st->v_s2) < 0)
        return -1;
    for (int k = 0; k < mb; k++) {
        double t = st->mem_t[st->rows[k]];
        double r = t > 0 && t < SEARCH_BAD_SCORE && st->r_scale > 0 ? st->r_scale / t : 0.0;
        st->y[k] = st->no_critic ? r : r + st->gamma * st->v_s2[k]; /* none: the advantage is r */
    }
    if (!st->no_critic) {
        const double *v = learn_mlp_forward(st->critic, st->x_s, mb);
        if (!v)
            return -1;
        for (int k = 0; k < mb; k++) {
            st->dout_c[k] = (v[k] - st->y[k]) / mb;
            st->y[k] -= v[k]; /* now the advantage */
        }
        learn_mlp_backward(st->critic, st->dout_c);
        learn_adam_step(&st->critic_opt, learn_mlp_params(st->critic), learn_mlp_grads(st->critic));
    }

    const double *z = learn_mlp_forward(st->actor, st->x_s, mb);
    if (!z)
        return -1;
    for (int k = 0; k < mb; k++) {
        int j = st->rows[k], a = st->mem_a[j];
        const uint64_t *m = st->mem_mask + (size_t)j * (size_t)st->words;
        double *p = st->prob, *dz = st->dout_a + (size_t)k * (size_t)na;
        for (int b = 0; b < na; b++)
            st->m_row[b] = (unsigned char)((m[b / 64] >> (b % 64)) & 1);
        if (learn_softmax(z + (size_t)k * (size_t)na, st->m_row, na, p) == 0 || p[a] <= 0) {
            memset(dz, 0, (size_t)na * sizeof *dz);
            continue;
        }
        /* loss = -A log p_a - entropy * H(p), per row, mean over the minibatch */
        for (int b = 0; b < na; b++)
            st->dp[b] = p[b] > 0 ? st->entropy * (log(p[b]) + 1.0) / mb : 0.0;
        st->dp[a] -= st->y[k] / (p[a] * mb);
        learn_softmax_backward(p, st->dp, na, dz);
    }
    learn_mlp_backward(st->actor, st->dout_a);
    learn_adam_step(&st->actor_opt, learn_mlp_params(st->actor), learn_mlp_grads(st->actor));
    return 0;
}

/* Collects the next episode's batch into the queue: 1, 0 when the space is exhausted, -1 out of
 * memory. */
static int refill(na2c_state *st)
{
    config_id id;
    int rc;
    if (space_count(st->sp) == 0)
        return 0;
    rc = search_start_take(&st->start, &st->visited, &id); /* s_0, then the `initial` random ones */
    if (rc < 0)
        return -1;
    if (rc > 0)
        queue_push(st, id);
    while (st->n_initial < st->initial && st->q_len < st->batch) {
        rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &id);
        if (rc < 0)
            return -1;
        st->n_initial = rc == 0 ? st->initial : st->n_initial + 1;
        if (rc > 0)
            queue_push(st, id);
    }
    if (st->q_len > 0)
        return 1;
    if (!st->best.known && st->told_any) { /* all told failed, s_0 too: restart at random (G-BFS) */
        rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &id);
        if (rc > 0)
            queue_push(st, id);
        return rc;
    }
    /* epsilon 1: the actor never chooses, so neither network is trained (the ablation) */
    if (st->actor && st->eps < 1 && st->mem_new > 0 && st->mem_len > 0) {
        for (int k = 0; k < st->train_steps; k++) {
            if (train_step(st) < 0)
                return -1;
        }
        st->mem_new = 0;
    }
    if (++st->stall % STALL_EPISODES == 0 && st->t_eff < st->max_T)
        st->t_eff++; /* long at the same start: look farther */
    config_id s0 = st->best.known ? st->best.id : st->start.id;
    int steps_left = st->stuck ? STUCK_BUDGET : STEP_BUDGET;
    while (st->actor && st->q_len < st->batch && steps_left > 0) {
        int c = walk(st, s0, &steps_left);
        if (c < 0)
            return -1;
        st->fruitless = c ? 0 : st->fruitless + 1;
        if (st->fruitless >= FRUITLESS && st->t_eff < st->max_T) {
            st->t_eff++;
            st->fruitless = 0;
        }
    }
    if (st->soft > st->T)
        st->soft--; /* the soft start: one step shorter each episode, down to T */
    if (st->q_len > 0)
        return 1;
    st->stuck = 1; /* the neighbourhood of s0 looks used up: walk briefly until the best moves */
    rc = search_random_unvisited(st->sp, &st->visited, &st->rng, &id);
    if (rc > 0)
        queue_push(st, id);
    return rc;
}

static int na2c_ask(void *state, config_id *out, int max)
{
    na2c_state *st = state;
    int n = 0;
    while (n < max) {
        if (st->q_len == 0 && refill(st) <= 0)
            break;
        out[n++] = st->queue[st->q_head];
        st->q_head = (st->q_head + 1) % st->batch;
        st->q_len--;
    }
    return n;
}

static void memory_add(na2c_state *st, int k, config_id id, double t)
{
    int j = st->mem_next;
    size_t np = (size_t)st->np, w = (size_t)st->words;
    if (space_decode(st->sp, id, st->mem_s2 + (size_t)j * np) < 0)
        return;
    memcpy(st->mem_s + (size_t)j * np, st->pend_s + (size_t)k * np, np * sizeof *st->mem_s);
    memcpy(st->mem_mask + (size_t)j * w, st->pend_mask + (size_t)k * w, w * sizeof *st->mem_mask);
    st->mem_a[j] = st->pend_a[k];
    st->mem_t[j] = t;
    st->mem_next = (j + 1) % st->mem_cap;
    st->mem_len += st->mem_len < st->mem_cap;
    st->mem_new++;
}

static void na2c_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    na2c_state *st = state;
    for (int i = 0; i < n; i++) {
        double t = search_score(&r[i]);
        if (st->r_scale == 0 && t > 0 && t < SEARCH_BAD_SCORE)
            st->r_scale = t; /* t_0: fixed for the run, so rewards keep their meaning */
        st->told_any = 1;
        if (t < SEARCH_BAD_SCORE && search_best_offer(&st->best, ids[i], t)) {
            st->t_eff = st->T;
            st->fruitless = 0;
            st->stall = 0;
            st->stuck = 0;
        }
        for (int k = 0; k < st->pend_cap; k++) {
            if (st->pend_used[k] && st->pend_id[k] == ids[i]) {
                st->pend_used[k] = 0;
                memory_add(st, k, ids[i], t);
                break;
            }
        }
    }
}

const searcher_vtable searcher_na2c_vtable = {
    .name = "na2c",
    .summary = "Neighborhood Actor Advantage Critic: epsilon-greedy walks of T steps from the best "
               "configuration guided by an actor-critic trained on a replay memory. On the 8 "
               "replay spaces the learnt policy does not beat its ablation epsilon 1 (random "
               "walks) nor the critic its ablation critic none (Welch p >= 0.14 on the mean over "
               "the spaces at 25-200 evaluations: tests/bench/results/ablation-na2c.txt)",
    .options = na2c_options,
    .n_options = N_OPTS,
    .create = na2c_create,
    .ask = na2c_ask,
    .tell = na2c_tell,
    .destroy = na2c_destroy,
};
