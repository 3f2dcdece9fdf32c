/* search/rnn — the recurrent-controller baseline of the G-BFS / N-A2C paper (after Zoph & Le's
 * neural architecture search): a GRU emits one parameter value per step, its input at each step
 * the one-hot of the previous choice (a start token first), its output a softmax over that
 * parameter's values; sampling the steps in turn gives a configuration. It is trained with
 * REINFORCE on the reward -log(time) with a moving-average baseline.
 *
 * Valid by construction (masked decoding): the steps go in parameter order, and at each step the
 * values that no valid configuration extends (space_prefix_feasible on the choices so far) get
 * probability 0; the softmax is renormalised over the others. The policy is this masked
 * distribution: its log-probability and entropy are what REINFORCE and the bonus use, so the
 * gradient flows through the feasible logits only. A space's restrictions thus never cost a
 * sample (on the GEMM tiling space an unmasked sample was valid with probability ~6.5e-6).
 *
 * Rewards: -log(time) standardised by the running mean and deviation of all successful rewards
 * told so far (clipped to +-FAIL_Z); a failed trial gets -FAIL_Z, as bad as the worst success.
 * The advantage of an episode is its standardised reward minus the baseline (an exponential
 * moving average of the batch means, updated after each batch). Every `batch` told results make
 * one Adam step on the mean of -advantage * log pi(choices) - entropy * H(pi).
 *
 * No repeats: a sample already proposed is resampled, at a temperature raised by half the base
 * temperature per attempt (so a converged controller spreads to the configurations around its
 * mode), at most `resample` times; then the proposal is a random unvisited configuration (a
 * fallback, counted: rnn_impl.h). A repeated sample whose result is told is still an episode,
 * with that result's reward (what measuring it again would give; at most `batch` such per
 * update), so the policy keeps learning on its own samples. The controller learns from every told
 * result, its own samples and fallbacks alike (any valid configuration has a finite masked
 * log-probability), without importance weights: an off-policy bias accepted so that every
 * measurement teaches it. The entropy bonus (0.3) is what keeps a controller that never repeats
 * from collapsing: with 0.05, Adam drove it onto a few configurations within ~400 results on the
 * tiling space, after which nearly every proposal was a fallback.
 *
 * Parameters with one value take no step (their index 0 is still part of the prefix). When the
 * value lists hold more than MAX_OUT values in all, long lists are cut into at most `cap`
 * contiguous buckets each: the controller picks a bucket (feasible when any value in it is) and
 * the value within it is uniform among the bucket's feasible values. */
#include "search/rnn_impl.h"
#include "search/search_set.h"

#include "learn/adam.h"
#include "learn/gru.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_HIDDEN,
    OPT_LEARNING_RATE,
    OPT_BATCH,
    OPT_ENTROPY,
    OPT_TEMPERATURE,
    OPT_BASELINE_DECAY,
    OPT_RESAMPLE,
    N_OPTS
};

static const searcher_option rnn_options[N_OPTS] = {
    {"hidden", SEARCHER_OPT_INTEGER, "32", 4, 256, NULL, "hidden units of the GRU controller"},
    {"learning_rate", SEARCHER_OPT_NUMBER, "0.02", 1e-5, 1, NULL,
     "Adam step size of the controller's REINFORCE updates"},
    {"batch", SEARCHER_OPT_INTEGER, "8", 1, 256, NULL, "told results per policy-gradient update"},
    {"entropy", SEARCHER_OPT_NUMBER, "0.3", 0, 10, NULL,
     "weight of the entropy bonus that keeps the controller exploring"},
    {"temperature", SEARCHER_OPT_NUMBER, "1", 0.05, 20, NULL,
     "softmax temperature of the controller's outputs (above 1 explores more)"},
    {"baseline_decay", SEARCHER_OPT_NUMBER, "0.9", 0, 0.999, NULL,
     "decay of the moving-average reward baseline (0: the last batch's mean)"},
    {"resample", SEARCHER_OPT_INTEGER, "8", 1, 64, NULL,
     "controller samples tried per proposal before a random unvisited configuration is taken"},
};

/* Softmax outputs over all parameters. Small enough that the output layer's product (MAX_OUT x
 * hidden) stays under OpenBLAS's threshold for threading a matrix-vector product at the default
 * hidden size: threads cost more than they save at this size. */
enum { MAX_OUT = 256 };
#define FAIL_Z    3.0 /* standardised reward of a failure; successes are clipped to +-FAIL_Z */
#define GRAD_CLIP 5.0

typedef struct rnn_state {
    const space *sp;
    kt_rng rng;
    search_set visited;
    search_map told; /* id -> its reward (bits of a double; NaN for a failure), once told */
    double lr, entropy, temp, decay;
    int batch, resample;
    int np;       /* parameters of the space */
    int T;        /* steps: parameters with more than one value */
    int *param;   /* T: the parameter of each step */
    int *nv, *nb; /* T: values and buckets of each step's parameter */
    int *off;     /* T: first output (and, + 1, first input) of each step */
    int n_in, n_out;
    learn_gru *gru; /* NULL when T == 0 (at most one configuration) */
    learn_adam adam;
    int *idx;            /* np: value indices of a configuration */
    int *choice;         /* T: buckets of a configuration */
    double *p;           /* largest nb: probabilities */
    unsigned char *mask; /* largest nb: 1 for a feasible bucket */
    double *d_out;       /* T * n_out: loss gradient of an episode */
    /* Episodes waiting for the next update: value indices (np each), raw reward, failed; told
     * results and repeated samples of told configurations. */
    int *ep_idx;
    double *ep_reward;
    int *ep_failed;
    int n_ep, n_told, n_repeat;
    /* Running mean and M2 (Welford) of the successful rewards; the baseline. */
    long n_ok;
    double mean, m2, baseline;
    searcher_rnn_stats stats;
} rnn_state;

static void rnn_destroy(void *state)
{
    rnn_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    search_map_free(&st->told);
    learn_gru_free(st->gru);
    learn_adam_release(&st->adam);
    free(st->param);
    free(st->nv);
    free(st->nb);
    free(st->off);
    free(st->idx);
    free(st->choice);
    free(st->p);
    free(st->mask);
    free(st->d_out);
    free(st->ep_idx);
    free(st->ep_reward);
    free(st->ep_failed);
    free(st);
}

/* Buckets per step: every value its own output, unless the lists hold more than MAX_OUT values in
 * all; then the largest cap (>= 2) on buckets per parameter that fits. */
static void rnn_buckets(rnn_state *st)
{
    int total = 0, cap = 0;
    for (int s = 0; s < st->T; s++) {
        total += st->nv[s];
        cap = st->nv[s] > cap ? st->nv[s] : cap;
    }
    while (total > MAX_OUT && cap > 2) {
        cap--;
        total = 0;
        for (int s = 0; s < st->T; s++)
            total += st->nv[s] < cap ? st->nv[s] : cap;
    }
    for (int s = 0, o = 0; s < st->T; s++) {
        st->nb[s] = st->nv[s] < cap ? st->nv[s] : cap;
        st->off[s] = o;
        o += st->nb[s];
    }
    st->n_out = total > 0 ? total : 1;
    st->n_in = 1 + st->n_out;
}

static void *rnn_create(const space *sp, const json_t *options, uint64_t seed, kt_error *err)
{
    rnn_state *st = calloc(1, sizeof *st);
    if (!st)
        goto oom;
    st->sp = sp;
    kt_rng_seed(&st->rng, seed);
    int hidden = (int)searcher_option_number(&rnn_options[OPT_HIDDEN], options);
    st->lr = searcher_option_number(&rnn_options[OPT_LEARNING_RATE], options);
    st->batch = (int)searcher_option_number(&rnn_options[OPT_BATCH], options);
    st->entropy = searcher_option_number(&rnn_options[OPT_ENTROPY], options);
    st->temp = searcher_option_number(&rnn_options[OPT_TEMPERATURE], options);
    st->decay = searcher_option_number(&rnn_options[OPT_BASELINE_DECAY], options);
    st->resample = (int)searcher_option_number(&rnn_options[OPT_RESAMPLE], options);
    st->np = space_num_params(sp);
    size_t pn = (size_t)(st->np > 0 ? st->np : 1);
    st->param = calloc(pn, sizeof *st->param);
    st->nv = calloc(pn, sizeof *st->nv);
    st->nb = calloc(pn, sizeof *st->nb);
    st->off = calloc(pn, sizeof *st->off);
    st->idx = calloc(pn, sizeof *st->idx);
    st->choice = calloc(pn, sizeof *st->choice);
    if (!st->param || !st->nv || !st->nb || !st->off || !st->idx || !st->choice)
        goto oom;
    for (int q = 0; q < st->np; q++) {
        int nv = space_param_num_values(sp, q);
        if (nv > 1) {
            st->param[st->T] = q;
            st->nv[st->T++] = nv;
        }
    }
    if (st->T == 0)
        return st; /* nothing to choose: proposals are the (at most one) configuration */
    rnn_buckets(st);
    /* The controller's weights come from the searcher's rng, so the seed fixes them too. */
    st->gru = learn_gru_new(st->n_in, hidden, st->n_out, st->T, &st->rng);
    if (!st->gru || learn_adam_init(&st->adam, st->gru->n_params, st->lr) < 0)
        goto oom;
    st->adam.clip = GRAD_CLIP;
    /* A zero head: the first policy is uniform over the feasible values, as no result has said
     * anything yet. */
    memset(st->gru->V, 0, (size_t)st->n_out * (size_t)hidden * sizeof(double));
    int max_nb = 1;
    for (int s = 0; s < st->T; s++)
        max_nb = st->nb[s] > max_nb ? st->nb[s] : max_nb;
    st->p = calloc((size_t)max_nb, sizeof *st->p);
    st->mask = calloc((size_t)max_nb, sizeof *st->mask);
    st->d_out = calloc((size_t)st->T * (size_t)st->n_out, sizeof *st->d_out);
    size_t cap = 2 * (size_t)st->batch; /* told results and as many repeated samples */
    st->ep_idx = calloc(cap * pn, sizeof *st->ep_idx);
    st->ep_reward = calloc(cap, sizeof *st->ep_reward);
    st->ep_failed = calloc(cap, sizeof *st->ep_failed);
    if (!st->p || !st->mask || !st->d_out || !st->ep_idx || !st->ep_reward || !st->ep_failed)
        goto oom;
    return st;
oom:
    rnn_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

/* Bucket b of step s holds the values [first(b), first(b + 1)). */
static int bucket_first(const rnn_state *st, int s, int b)
{
    return (int)(((long)b * st->nv[s] + st->nb[s] - 1) / st->nb[s]);
}

/* The bucket of value v of step s (the inverse of bucket_first). */
static int bucket_of(const rnn_state *st, int s, int v)
{
    return (int)(((long)v * st->nb[s]) / st->nv[s]);
}

/* Value v of step s's parameter is feasible after the choices in idx for the parameters before it
 * (idx[q] is set to v). */
static int value_feasible(const rnn_state *st, int s, int *idx, int v)
{
    int q = st->param[s];
    idx[q] = v;
    return space_prefix_feasible(st->sp, idx, q + 1);
}

/* st->mask for step s given the choices in idx before its parameter: 1 for each bucket holding a
 * feasible value. idx[param[s]] is restored. Returns the number of feasible buckets. */
static int rnn_mask(rnn_state *st, int s, int *idx)
{
    int q = st->param[s], keep = idx[q], n = 0;
    for (int b = 0; b < st->nb[s]; b++) {
        int hi = bucket_first(st, s, b + 1);
        st->mask[b] = 0;
        for (int v = bucket_first(st, s, b); v < hi && !st->mask[b]; v++)
            st->mask[b] = (unsigned char)value_feasible(st, s, idx, v);
        n += st->mask[b];
    }
    idx[q] = keep;
    return n;
}

/* Masked softmax of step s's logits at temperature tau into st->p (numerically stable):
 * infeasible buckets (st->mask 0) get probability 0, the others share 1. At least one bucket must
 * be feasible. */
static void rnn_softmax(rnn_state *st, int s, const double *y, double tau)
{
    const double *l = y + st->off[s];
    int nb = st->nb[s];
    double m = -HUGE_VAL, sum = 0;
    for (int k = 0; k < nb; k++)
        if (st->mask[k] && l[k] > m)
            m = l[k];
    for (int k = 0; k < nb; k++) {
        st->p[k] = st->mask[k] ? exp((l[k] - m) / tau) : 0;
        sum += st->p[k];
    }
    for (int k = 0; k < nb; k++)
        st->p[k] /= sum;
}

/* Feeds step s's input: the start token at step 0, else the previous step's choice. */
static const double *rnn_feed(rnn_state *st, int s)
{
    return learn_gru_step_onehot(st->gru, s == 0 ? 0 : 1 + st->off[s - 1] + st->choice[s - 1]);
}

/* Samples a configuration from the masked controller at temperature tau into st->choice and
 * st->idx. Returns 0, or -1 when a step has no feasible value (an empty space: never for a
 * non-empty one, as each choice keeps the prefix feasible). */
static int rnn_sample(rnn_state *st, double tau)
{
    memset(st->idx, 0, (size_t)st->np * sizeof *st->idx);
    learn_gru_reset(st->gru, NULL);
    for (int s = 0; s < st->T; s++) {
        const double *y = rnn_feed(st, s);
        if (rnn_mask(st, s, st->idx) == 0)
            return -1;
        rnn_softmax(st, s, y, tau);
        double u = kt_rng_uniform(&st->rng), acc = 0;
        int b = -1;
        for (int k = 0; k < st->nb[s]; k++) {
            if (!st->mask[k])
                continue;
            b = k; /* the last feasible bucket, should rounding leave u above the sum */
            acc += st->p[k];
            if (u < acc)
                break;
        }
        st->choice[s] = b;
        int lo = bucket_first(st, s, b), hi = bucket_first(st, s, b + 1), q = st->param[s];
        if (hi - lo == 1) {
            st->idx[q] = lo;
            continue;
        }
        /* A bucket of several values: uniform among its feasible ones (at least one). */
        int nf = 0;
        for (int v = lo; v < hi; v++)
            nf += value_feasible(st, s, st->idx, v);
        int pick = (int)kt_rng_below(&st->rng, (uint64_t)nf), v = lo;
        for (; v < hi; v++)
            if (value_feasible(st, s, st->idx, v) && pick-- == 0)
                break;
        st->idx[q] = v;
    }
    return 0;
}

/* One REINFORCE step on the waiting episodes. */
static void rnn_update(rnn_state *st)
{
    int B = st->n_ep, O = st->n_out;
    double sd = st->n_ok >= 2 ? sqrt(st->m2 / (double)(st->n_ok - 1)) : 0;
    double zsum = 0;

    learn_gru_zero_grad(st->gru);
    for (int e = 0; e < B; e++) {
        double z = -FAIL_Z;
        if (!st->ep_failed[e]) {
            z = sd > 1e-12 ? (st->ep_reward[e] - st->mean) / sd : 0;
            z = z > FAIL_Z ? FAIL_Z : z < -FAIL_Z ? -FAIL_Z : z;
        }
        zsum += z;
        double adv = z - st->baseline;
        memcpy(st->idx, st->ep_idx + (size_t)e * (size_t)st->np, (size_t)st->np * sizeof *st->idx);
        for (int s = 0; s < st->T; s++)
            st->choice[s] = bucket_of(st, s, st->idx[st->param[s]]);
        memset(st->d_out, 0, (size_t)st->T * (size_t)O * sizeof *st->d_out);
        learn_gru_reset(st->gru, NULL);
        for (int s = 0; s < st->T; s++) {
            const double *y = rnn_feed(st, s);
            /* A valid configuration's own choice is always feasible, so the mask is not empty. */
            rnn_mask(st, s, st->idx);
            rnn_softmax(st, s, y, st->temp);
            double H = 0;
            for (int k = 0; k < st->nb[s]; k++)
                H -= st->p[k] > 0 ? st->p[k] * log(st->p[k]) : 0;
            double *d = st->d_out + (size_t)s * (size_t)O + st->off[s];
            /* d/dlogit of -adv * log p[choice] - entropy * H of the masked distribution, through
             * the temperature; an infeasible logit (p 0) gets no gradient. */
            for (int k = 0; k < st->nb[s]; k++) {
                double pk = st->p[k];
                if (!st->mask[k])
                    continue;
                double g = -adv * ((k == st->choice[s]) - pk);
                if (pk > 0)
                    g += st->entropy * pk * (log(pk) + H);
                d[k] = g / (st->temp * B);
            }
        }
        learn_gru_backward(st->gru, st->d_out, NULL);
    }
    learn_adam_step(&st->adam, st->gru->params, st->gru->grads);
    st->baseline = st->decay * st->baseline + (1.0 - st->decay) * zsum / B;
    st->n_ep = st->n_told = st->n_repeat = 0;
}

/* Queues an episode (value indices idx): a told result (told) or a repeated sample of a told
 * configuration. The policy is updated once `batch` results are told; at most as many repeats
 * join them (the rest are dropped), so that a converged controller does not multiply updates. */
static void rnn_episode(rnn_state *st, const int *idx, double reward, int failed, int told)
{
    if (!told && st->n_repeat >= st->batch)
        return;
    memcpy(st->ep_idx + (size_t)st->n_ep * (size_t)st->np, idx, (size_t)st->np * sizeof *idx);
    st->ep_reward[st->n_ep] = reward;
    st->ep_failed[st->n_ep] = failed;
    st->n_ep++;
    st->n_told += told;
    st->n_repeat += !told;
    if (st->n_told == st->batch)
        rnn_update(st);
}

/* A repeated sample (st->idx, id) of the controller: when its result is known, an episode with
 * that reward, as if measured again. */
static void rnn_repeat(rnn_state *st, config_id id)
{
    uint64_t bits;
    if (!search_map_get(&st->told, id, &bits))
        return; /* asked, not told yet */
    double reward;
    memcpy(&reward, &bits, sizeof reward);
    rnn_episode(st, st->idx, isnan(reward) ? 0 : reward, isnan(reward), 0);
}

/* One proposal: 1 with *out set, 0 when the space is exhausted, -1 out of memory. */
static int rnn_propose(rnn_state *st, config_id *out)
{
    if (st->visited.used >= space_count(st->sp))
        return 0;
    for (int k = 0; st->gru && k < st->resample; k++) {
        config_id id;
        if (rnn_sample(st, st->temp * (1.0 + 0.5 * k)) < 0)
            break;
        st->stats.samples++;
        if (space_encode(st->sp, st->idx, &id) < 0) {
            st->stats.invalid++; /* the masking let an invalid tuple through: a bug, counted */
            continue;
        }
        int added = search_set_add(&st->visited, id);
        if (added < 0)
            return -1;
        if (added) {
            *out = id;
            return 1;
        }
        st->stats.repeats++;
        rnn_repeat(st, id);
    }
    if (st->gru)
        st->stats.fallbacks++;
    return search_random_unvisited(st->sp, &st->visited, &st->rng, out);
}

static int rnn_ask(void *state, config_id *out, int max)
{
    rnn_state *st = state;
    int n = 0;
    while (n < max && rnn_propose(st, &out[n]) > 0)
        n++;
    return n;
}

static void rnn_tell(void *state, const config_id *ids, const trial_result *r, int n)
{
    rnn_state *st = state;
    if (!st->gru)
        return;
    for (int i = 0; i < n; i++) {
        if (space_decode(st->sp, ids[i], st->idx) < 0)
            continue; /* not of this space: nothing to learn */
        double t = search_score(&r[i]);
        int failed = t >= SEARCH_BAD_SCORE;
        double reward = failed ? 0 : -log(fmax(t, 1e-12)); /* a zero time stays finite */
        if (!failed) { /* Welford: the running mean and spread that standardise rewards */
            st->n_ok++;
            double delta = reward - st->mean;
            st->mean += delta / (double)st->n_ok;
            st->m2 += delta * (reward - st->mean);
        }
        double known = failed ? NAN : reward;
        uint64_t bits;
        memcpy(&bits, &known, sizeof bits);
        if (search_map_reserve(&st->told) == 0) /* out of memory: its repeats teach nothing */
            search_map_put(&st->told, ids[i], bits);
        rnn_episode(st, st->idx, reward, failed, 1);
    }
}

void searcher_rnn_stats_get(const void *state, searcher_rnn_stats *out)
{
    const rnn_state *st = state;
    *out = st->stats;
}

const searcher_vtable searcher_rnn_vtable = {
    .name = "rnn",
    .summary = "recurrent controller (GRU) emitting one parameter value per step, masked to the "
               "values that can still complete a valid configuration, trained with REINFORCE on "
               "-log(time) with a moving-average baseline",
    .options = rnn_options,
    .n_options = N_OPTS,
    .create = rnn_create,
    .ask = rnn_ask,
    .tell = rnn_tell,
    .destroy = rnn_destroy,
};
