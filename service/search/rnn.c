/* search/rnn — the recurrent-controller baseline of the G-BFS / N-A2C paper (after Zoph & Le's
 * neural architecture search): a GRU emits one parameter value per step, its input at each step
 * the one-hot of the previous choice (a start token first), its output a softmax over that
 * parameter's values; sampling the steps in turn gives a configuration. It is trained with
 * REINFORCE on the reward -log(time) with a moving-average baseline.
 *
 * Rewards: -log(time) standardised by the running mean and deviation of all successful rewards
 * told so far (clipped to +-FAIL_Z); a failed trial, and a sampled tuple that violates the space's
 * restrictions, gets -FAIL_Z, as bad as the worst success. The advantage of an episode is its
 * standardised reward minus the baseline (an exponential moving average of the batch means,
 * updated after each batch). Every `batch` told results, with at most as many invalid samples
 * queued since the last update, make one Adam step on the mean of -advantage * log pi(choices) -
 * entropy * H(pi).
 *
 * No repeats, always valid: a sampled tuple that is invalid (penalised as above) or already
 * proposed is resampled, at a temperature raised by half the base temperature per attempt (so a
 * converged controller spreads to the configurations around its mode), at most `resample` times;
 * then the proposal is a random unvisited configuration. The controller learns from every told
 * result, its own samples and these fallbacks alike, without importance weights: an off-policy
 * bias accepted so that every measurement teaches the controller.
 *
 * Parameters with one value take no step. When the value lists hold more than MAX_OUT values in
 * all, long lists are cut into at most `cap` contiguous buckets each: the controller picks a
 * bucket and the value within it is uniform. */
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
    {"batch", SEARCHER_OPT_INTEGER, "8", 1, 256, NULL,
     "told results per policy-gradient update (invalid samples, at most as many, join them)"},
    {"entropy", SEARCHER_OPT_NUMBER, "0.05", 0, 10, NULL,
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
    int *idx;      /* np: value indices of a configuration */
    int *choice;   /* T: buckets of a configuration */
    double *p;     /* largest nb: probabilities */
    double *d_out; /* T * n_out: loss gradient of an episode */
    /* Episodes waiting for the next update: buckets, raw reward, failed. */
    int *ep_choice;
    double *ep_reward;
    int *ep_failed;
    int n_ep, n_told, n_invalid; /* episodes waiting: all, told results, invalid samples */
    /* Running mean and M2 (Welford) of the successful rewards; the baseline. */
    long n_ok;
    double mean, m2, baseline;
} rnn_state;

static void rnn_destroy(void *state)
{
    rnn_state *st = state;
    if (!st)
        return;
    search_set_free(&st->visited);
    learn_gru_free(st->gru);
    learn_adam_release(&st->adam);
    free(st->param);
    free(st->nv);
    free(st->nb);
    free(st->off);
    free(st->idx);
    free(st->choice);
    free(st->p);
    free(st->d_out);
    free(st->ep_choice);
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
    /* A zero head: the first policy is uniform, as no result has said anything yet. */
    memset(st->gru->V, 0, (size_t)st->n_out * (size_t)hidden * sizeof(double));
    int max_nb = 1;
    for (int s = 0; s < st->T; s++)
        max_nb = st->nb[s] > max_nb ? st->nb[s] : max_nb;
    st->p = calloc((size_t)max_nb, sizeof *st->p);
    st->d_out = calloc((size_t)st->T * (size_t)st->n_out, sizeof *st->d_out);
    size_t cap = 2 * (size_t)st->batch; /* told results and as many invalid samples */
    st->ep_choice = calloc(cap * (size_t)st->T, sizeof *st->ep_choice);
    st->ep_reward = calloc(cap, sizeof *st->ep_reward);
    st->ep_failed = calloc(cap, sizeof *st->ep_failed);
    if (!st->p || !st->d_out || !st->ep_choice || !st->ep_reward || !st->ep_failed)
        goto oom;
    return st;
oom:
    rnn_destroy(st);
    kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return NULL;
}

/* Softmax of step s's logits at temperature tau into st->p (numerically stable). */
static void rnn_softmax(rnn_state *st, int s, const double *y, double tau)
{
    const double *l = y + st->off[s];
    int nb = st->nb[s];
    double m = l[0], sum = 0;
    for (int k = 1; k < nb; k++)
        m = l[k] > m ? l[k] : m;
    for (int k = 0; k < nb; k++) {
        st->p[k] = exp((l[k] - m) / tau);
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

/* Bucket b of step s holds the values [first(b), first(b + 1)). */
static int bucket_first(const rnn_state *st, int s, int b)
{
    return (int)(((long)b * st->nv[s] + st->nb[s] - 1) / st->nb[s]);
}

/* Samples a configuration from the controller at temperature tau into st->choice and st->idx. */
static void rnn_sample(rnn_state *st, double tau)
{
    memset(st->idx, 0, (size_t)st->np * sizeof *st->idx);
    learn_gru_reset(st->gru, NULL);
    for (int s = 0; s < st->T; s++) {
        const double *y = rnn_feed(st, s);
        rnn_softmax(st, s, y, tau);
        double u = kt_rng_uniform(&st->rng), acc = 0;
        int b = st->nb[s] - 1;
        for (int k = 0; k < st->nb[s]; k++) {
            acc += st->p[k];
            if (u < acc) {
                b = k;
                break;
            }
        }
        st->choice[s] = b;
        int lo = bucket_first(st, s, b), hi = bucket_first(st, s, b + 1);
        st->idx[st->param[s]] = lo + (int)kt_rng_below(&st->rng, (uint64_t)(hi - lo));
    }
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
        memcpy(st->choice, st->ep_choice + (size_t)e * (size_t)st->T,
               (size_t)st->T * sizeof *st->choice);
        memset(st->d_out, 0, (size_t)st->T * (size_t)O * sizeof *st->d_out);
        learn_gru_reset(st->gru, NULL);
        for (int s = 0; s < st->T; s++) {
            const double *y = rnn_feed(st, s);
            rnn_softmax(st, s, y, st->temp);
            double H = 0;
            for (int k = 0; k < st->nb[s]; k++)
                H -= st->p[k] > 0 ? st->p[k] * log(st->p[k]) : 0;
            double *d = st->d_out + (size_t)s * (size_t)O + st->off[s];
            /* d/dlogit of -adv * log p[choice] - entropy * H, through the temperature. */
            for (int k = 0; k < st->nb[s]; k++) {
                double pk = st->p[k];
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
    st->n_ep = st->n_told = st->n_invalid = 0;
}

/* Queues an episode (the buckets in st->choice): a told result (told) or an invalid sample. The
 * policy is updated once `batch` results are told; at most as many invalid samples join them (the
 * rest are dropped), so that a space where most tuples are invalid does not multiply the updates.
 */
static void rnn_episode(rnn_state *st, double reward, int failed, int told)
{
    if (!told && st->n_invalid >= st->batch)
        return;
    memcpy(st->ep_choice + (size_t)st->n_ep * (size_t)st->T, st->choice,
           (size_t)st->T * sizeof *st->choice);
    st->ep_reward[st->n_ep] = reward;
    st->ep_failed[st->n_ep] = failed;
    st->n_ep++;
    st->n_told += told;
    st->n_invalid += !told;
    if (st->n_told == st->batch)
        rnn_update(st);
}

/* One proposal: 1 with *out set, 0 when the space is exhausted, -1 out of memory. */
static int rnn_propose(rnn_state *st, config_id *out)
{
    if (st->visited.used >= space_count(st->sp))
        return 0;
    for (int k = 0; st->gru && k < st->resample; k++) {
        config_id id;
        rnn_sample(st, st->temp * (1.0 + 0.5 * k));
        if (space_encode(st->sp, st->idx, &id) < 0) {
            rnn_episode(st, 0, 1, 0); /* a tuple the restrictions rule out: penalised */
            continue;
        }
        int added = search_set_add(&st->visited, id);
        if (added < 0)
            return -1;
        if (added) {
            *out = id;
            return 1;
        }
    }
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
        for (int s = 0; s < st->T; s++) {
            int v = st->idx[st->param[s]];
            st->choice[s] = (int)(((long)v * st->nb[s]) / st->nv[s]);
        }
        double t = search_score(&r[i]);
        int failed = t >= SEARCH_BAD_SCORE;
        double reward = failed ? 0 : -log(fmax(t, 1e-12)); /* a zero time stays finite */
        if (!failed) { /* Welford: the running mean and spread that standardise rewards */
            st->n_ok++;
            double delta = reward - st->mean;
            st->mean += delta / (double)st->n_ok;
            st->m2 += delta * (reward - st->mean);
        }
        rnn_episode(st, reward, failed, 1);
    }
}

const searcher_vtable searcher_rnn_vtable = {
    .name = "rnn",
    .summary = "recurrent controller (GRU) emitting one parameter value per step, trained with "
               "REINFORCE on -log(time) with a moving-average baseline",
    .options = rnn_options,
    .n_options = N_OPTS,
    .create = rnn_create,
    .ask = rnn_ask,
    .tell = rnn_tell,
    .destroy = rnn_destroy,
};
