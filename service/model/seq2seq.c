/* model/seq2seq — the model of seq2seq.h: construction, the teacher-forced forward pass of one
 * example (encoder, decoder, attention, masked output), its backward pass into the three weight
 * blocks, seq2seq_next_logp and the flat weight view the gradient check uses. Training is in
 * seq2seq_train.c, serialisation in seq2seq_io.c. */
#include "model/seq2seq.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "learn/attention.h"
#include "model/seq2seq_internal.h"

void seq2seq_free(seq2seq *m)
{
    if (!m)
        return;
    learn_gru_free(m->enc);
    learn_gru_free(m->dec);
    free(m->n_values);
    free(m->offset);
    free(m->head);
    free(m->dhead);
    free(m->alpha);
    free(m->cat);
    free(m->ht);
    free(m->logp);
    free(m->dcat);
    free(m->dht);
    free(m->d_enc);
    free(m->d_dec);
    free(m->dh0);
    free(m->att);
    free(m->dlogit);
    free(m->enc_tokens);
    free(m);
}

/* Points the blocks of the output layers' flat vector v at their places. */
static void head_views(const seq2seq *m, double *v, double **Wc, double **bc, double **Wo,
                       double **bo)
{
    size_t H = (size_t)m->hidden, V = (size_t)m->total_values;
    *Wc = v;
    *bc = *Wc + 2 * H * H;
    *Wo = *bc + H;
    *bo = *Wo + V * H;
}

seq2seq *seq2seq_alloc(int token_dim, int n_params, const int *n_values, const seq2seq_hyper *h,
                       uint64_t seed)
{
    seq2seq *m = calloc(1, sizeof *m);
    if (!m)
        goto fail;
    m->token_dim = token_dim;
    m->n_params = n_params;
    m->hyper = *h;
    m->hidden = h->hidden;
    m->seed = seed;
    m->n_values = malloc((size_t)n_params * sizeof *m->n_values);
    m->offset = malloc((size_t)n_params * sizeof *m->offset);
    if (!m->n_values || !m->offset)
        goto fail;
    for (int p = 0; p < n_params; p++) {
        m->n_values[p] = n_values[p];
        m->offset[p] = m->total_values;
        m->total_values += n_values[p];
        m->max_values = n_values[p] > m->max_values ? n_values[p] : m->max_values;
    }
    size_t H = (size_t)m->hidden, V = (size_t)m->total_values, P = (size_t)n_params;
    size_t S = SEQ2SEQ_MAX_TOKENS, MV = (size_t)m->max_values;
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    m->enc = learn_gru_new(token_dim, m->hidden, 1, SEQ2SEQ_MAX_TOKENS, &rng);
    m->dec = learn_gru_new(m->total_values + 1, m->hidden, 1, n_params, &rng);
    m->n_head = 2 * H * H + H + V * H + V;
    m->head = calloc(m->n_head, sizeof *m->head);
    m->dhead = calloc(m->n_head, sizeof *m->dhead);
    m->alpha = calloc(P * S, sizeof *m->alpha);
    m->cat = calloc(P * 2 * H, sizeof *m->cat);
    m->ht = calloc(P * H, sizeof *m->ht);
    m->logp = calloc(P * MV, sizeof *m->logp);
    m->dcat = calloc(P * 2 * H, sizeof *m->dcat);
    m->dht = calloc(P * H, sizeof *m->dht);
    m->d_enc = calloc(S * H, sizeof *m->d_enc);
    m->d_dec = calloc(P * H, sizeof *m->d_dec);
    m->dh0 = calloc(H, sizeof *m->dh0);
    m->att = calloc(S, sizeof *m->att);
    m->dlogit = calloc(MV, sizeof *m->dlogit);
    m->enc_tokens = calloc(S * (size_t)token_dim, sizeof *m->enc_tokens);
    if (!m->enc || !m->dec || !m->head || !m->dhead || !m->alpha || !m->cat || !m->ht || !m->logp ||
        !m->dcat || !m->dht || !m->d_enc || !m->d_dec || !m->dh0 || !m->att || !m->dlogit ||
        !m->enc_tokens)
        goto fail;
    head_views(m, m->head, &m->Wc, &m->bc, &m->Wo, &m->bo);
    head_views(m, m->dhead, &m->dWc, &m->dbc, &m->dWo, &m->dbo);
    /* Glorot-uniform for Wc (2H -> H, tanh), +-1/sqrt(H) for Wo (as the GRUs); biases zero. */
    double sc = sqrt(6.0 / (3.0 * (double)H)), so = 1.0 / sqrt((double)H);
    for (size_t i = 0; i < 2 * H * H; i++)
        m->Wc[i] = sc * (2.0 * kt_rng_uniform(&rng) - 1.0);
    for (size_t i = 0; i < V * H; i++)
        m->Wo[i] = so * (2.0 * kt_rng_uniform(&rng) - 1.0);
    return m;
fail:
    seq2seq_free(m);
    return NULL;
}

int seq2seq_hyper_fill(const seq2seq_hyper *h, seq2seq_hyper *out, kt_error *err)
{
    seq2seq_hyper d = {.hidden = 64, .epochs = 300, .lr = 0.003, .l2 = 1e-5, .batch = 16};
    if (h) {
        if (h->hidden < 0 || h->hidden > SEQ2SEQ_MAX_HIDDEN)
            goto bad_hidden;
        if (h->epochs < 0 || h->epochs > SEQ2SEQ_MAX_EPOCHS)
            goto bad_epochs;
        if (!isfinite(h->lr) || h->lr < 0 || h->lr > 1)
            goto bad_lr;
        if (!isfinite(h->l2) || h->l2 < 0 || h->l2 >= 1)
            goto bad_l2;
        if (h->batch < 0 || h->batch > SEQ2SEQ_MAX_BATCH)
            goto bad_batch;
        d.hidden = h->hidden ? h->hidden : d.hidden;
        d.epochs = h->epochs ? h->epochs : d.epochs;
        d.lr = h->lr > 0 ? h->lr : d.lr;
        d.l2 = h->l2 > 0 ? h->l2 : d.l2;
        d.batch = h->batch ? h->batch : d.batch;
    }
    *out = d;
    return 0;
bad_hidden:
    kt_error_set(err, KT_ERR_BAD_OPTION, "seq2seq hidden %d is out of range", h->hidden);
    kt_error_hint(err, "hidden is an integer in [1, %d] (default 64)", SEQ2SEQ_MAX_HIDDEN);
    return -1;
bad_epochs:
    kt_error_set(err, KT_ERR_BAD_OPTION, "seq2seq epochs %d is out of range", h->epochs);
    kt_error_hint(err, "epochs is an integer in [1, %d] (default 300)", SEQ2SEQ_MAX_EPOCHS);
    return -1;
bad_lr:
    kt_error_set(err, KT_ERR_BAD_OPTION, "seq2seq lr %g is out of range", h->lr);
    kt_error_hint(err, "lr is a number in (0, 1] (default 0.003)");
    return -1;
bad_l2:
    kt_error_set(err, KT_ERR_BAD_OPTION, "seq2seq l2 %g is out of range", h->l2);
    kt_error_hint(err, "l2 is a number in (0, 1) (default 1e-5)");
    return -1;
bad_batch:
    kt_error_set(err, KT_ERR_BAD_OPTION, "seq2seq batch %d is out of range", h->batch);
    kt_error_hint(err, "batch is an integer in [1, %d] (default 16)", SEQ2SEQ_MAX_BATCH);
    return -1;
}

seq2seq *seq2seq_new(int token_dim, int n_params, const int *n_values, const seq2seq_hyper *h,
                     uint64_t seed, kt_error *err)
{
    seq2seq_hyper hy;
    long total = 0;
    if (seq2seq_hyper_fill(h, &hy, err) < 0)
        return NULL;
    if (token_dim < 1 || token_dim > SEQ2SEQ_MAX_TOKEN_DIM) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq token size %d is out of range", token_dim);
        kt_error_hint(err, "tokens have 1 to %d features", SEQ2SEQ_MAX_TOKEN_DIM);
        return NULL;
    }
    if (n_params < 1 || n_params > SEQ2SEQ_MAX_PARAMS || !n_values) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq parameter count %d is out of range",
                     n_params);
        kt_error_hint(err, "a model emits 1 to %d parameters", SEQ2SEQ_MAX_PARAMS);
        return NULL;
    }
    for (int p = 0; p < n_params; p++) {
        if (n_values[p] < 1) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq parameter %d has %d values", p,
                         n_values[p]);
            kt_error_hint(err, "every parameter has at least one value");
            return NULL;
        }
        total += n_values[p];
        if (total > SEQ2SEQ_MAX_TOTAL_VALUES) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq parameters have too many values");
            kt_error_hint(err, "at most %d values over all parameters", SEQ2SEQ_MAX_TOTAL_VALUES);
            return NULL;
        }
    }
    seq2seq *m = seq2seq_alloc(token_dim, n_params, n_values, &hy, seed);
    if (!m)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating a seq2seq model");
    return m;
}

int seq2seq_token_dim(const seq2seq *m)
{
    return m->token_dim;
}

int seq2seq_num_params(const seq2seq *m)
{
    return m->n_params;
}

seq2seq_hyper seq2seq_get_hyper(const seq2seq *m)
{
    return m->hyper;
}

int seq2seq_epochs_run(const seq2seq *m)
{
    return m->epochs_run;
}

/* tanh through one exp: glibc's tanh goes through expm1, several times slower, and the output
 * layer takes n_params x hidden of them per example. Relative error ~1e-15 (a series below 0.01,
 * where 1 - e would cancel). */
static double fast_tanh(double x)
{
    double a = fabs(x);
    if (a < 0.01) {
        double x2 = x * x;
        return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 - x2 * (17.0 / 315.0))));
    }
    double e = exp(-2.0 * a), t = (1.0 - e) / (1.0 + e);
    return x < 0 ? -t : t;
}

/* Runs the encoder over tokens, unless reuse is set and they are the tokens it last ran on. */
static void encode(seq2seq *m, const double *tokens, int n_tokens, int reuse)
{
    size_t bytes = (size_t)n_tokens * (size_t)m->token_dim * sizeof *tokens;
    if (reuse && m->enc_n_tokens == n_tokens && memcmp(m->enc_tokens, tokens, bytes) == 0)
        return;
    learn_gru_reset(m->enc, NULL);
    for (int i = 0; i < n_tokens; i++)
        learn_gru_step(m->enc, tokens + (size_t)i * (size_t)m->token_dim);
    if (reuse) {
        memcpy(m->enc_tokens, tokens, bytes);
        m->enc_n_tokens = n_tokens;
    } else {
        m->enc_n_tokens = 0;
    }
}

/* The teacher-forced forward of `steps` decoder steps after encoding tokens: step t's input is the
 * start token (t = 0) or prefix[t-1]; fills alpha, cat, ht and logp for steps 0..steps-1. */
static void forward(seq2seq *m, const double *tokens, int n_tokens, const int *prefix, int steps,
                    int reuse)
{
    int H = m->hidden, S = n_tokens, MV = m->max_values;
    encode(m, tokens, n_tokens, reuse);
    const double *keys = learn_gru_hidden(m->enc, 0); /* S contiguous rows */
    learn_gru_reset(m->dec, learn_gru_hidden(m->enc, S - 1));
    for (int t = 0; t < steps; t++) {
        int hot = t == 0 ? m->total_values : m->offset[t - 1] + prefix[t - 1];
        learn_gru_step_onehot(m->dec, hot);
        const double *s = learn_gru_hidden(m->dec, t);
        double *cat = m->cat + (size_t)t * 2 * (size_t)H;
        learn_attention_forward(keys, S, H, s, m->alpha + (size_t)t * SEQ2SEQ_MAX_TOKENS, cat);
        memcpy(cat + H, s, (size_t)H * sizeof *cat);
    }
    /* h~ = tanh(cat Wc^T + bc) for every step at once */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, steps, H, 2 * H, 1.0, m->cat, 2 * H, m->Wc,
                2 * H, 0.0, m->ht, H);
    for (int t = 0; t < steps; t++) {
        double *ht = m->ht + (size_t)t * (size_t)H, *lp = m->logp + (size_t)t * (size_t)MV;
        for (int j = 0; j < H; j++)
            ht[j] = fast_tanh(ht[j] + m->bc[j]);
        /* logits of parameter t's slice only, then a stable log-softmax over it */
        int nv = m->n_values[t], off = m->offset[t];
        memcpy(lp, m->bo + off, (size_t)nv * sizeof *lp);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, nv, H, 1.0, m->Wo + (size_t)off * (size_t)H, H, ht,
                    1, 1.0, lp, 1);
        double mx = lp[0], sum = 0.0;
        for (int v = 1; v < nv; v++)
            mx = lp[v] > mx ? lp[v] : mx;
        for (int v = 0; v < nv; v++)
            sum += exp(lp[v] - mx);
        double lse = mx + log(sum);
        for (int v = 0; v < nv; v++)
            lp[v] -= lse;
    }
    m->steps = steps;
    m->n_tokens = n_tokens;
}

void seq2seq_zero_grad(seq2seq *m)
{
    learn_gru_zero_grad(m->enc);
    learn_gru_zero_grad(m->dec);
    memset(m->dhead, 0, m->n_head * sizeof *m->dhead);
}

double seq2seq_example_backward(seq2seq *m, const seq2seq_example *ex)
{
    int H = m->hidden, T = m->n_params, S = ex->n_tokens, MV = m->max_values;
    double w = ex->weight, loss = 0.0;

    forward(m, ex->tokens, S, ex->target, T, 0);
    /* Output layer: dlogit = w (softmax - onehot) on the slice; dh~ = Wo_slice^T dlogit, then
     * through the tanh (dht holds d pre-activation afterwards). */
    for (int t = 0; t < T; t++) {
        int nv = m->n_values[t], off = m->offset[t], tgt = ex->target[t];
        const double *lp = m->logp + (size_t)t * (size_t)MV, *ht = m->ht + (size_t)t * (size_t)H;
        double *dht = m->dht + (size_t)t * (size_t)H, *Wo = m->Wo + (size_t)off * (size_t)H;
        loss -= w * lp[tgt];
        for (int v = 0; v < nv; v++) {
            m->dlogit[v] = w * (exp(lp[v]) - (v == tgt));
            m->dbo[off + v] += m->dlogit[v];
        }
        cblas_dger(CblasRowMajor, nv, H, 1.0, m->dlogit, 1, ht, 1, m->dWo + (size_t)off * (size_t)H,
                   H);
        cblas_dgemv(CblasRowMajor, CblasTrans, nv, H, 1.0, Wo, H, m->dlogit, 1, 0.0, dht, 1);
        for (int j = 0; j < H; j++) {
            dht[j] *= 1.0 - ht[j] * ht[j];
            m->dbc[j] += dht[j];
        }
    }
    /* dWc += dpre^T cat; dcat = dpre Wc */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, 2 * H, T, 1.0, m->dht, H, m->cat, 2 * H,
                1.0, m->dWc, 2 * H);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, 2 * H, H, 1.0, m->dht, H, m->Wc,
                2 * H, 0.0, m->dcat, 2 * H);
    /* Attention: d context -> encoder states and decoder state; the state half of cat -> the
     * decoder state directly. */
    const double *keys = learn_gru_hidden(m->enc, 0);
    memset(m->d_enc, 0, (size_t)S * (size_t)H * sizeof *m->d_enc);
    for (int t = 0; t < T; t++) {
        const double *dcat = m->dcat + (size_t)t * 2 * (size_t)H;
        double *dd = m->d_dec + (size_t)t * (size_t)H;
        memcpy(dd, dcat + H, (size_t)H * sizeof *dd);
        learn_attention_backward(keys, S, H, learn_gru_hidden(m->dec, t),
                                 m->alpha + (size_t)t * SEQ2SEQ_MAX_TOKENS, dcat, m->d_enc, dd,
                                 m->att);
    }
    /* Decoder (its initial state is the encoder's last), then the encoder. */
    learn_gru_backward_seq(m->dec, NULL, m->d_dec, NULL, m->dh0);
    double *d_last = m->d_enc + (size_t)(S - 1) * (size_t)H;
    for (int j = 0; j < H; j++)
        d_last[j] += m->dh0[j];
    learn_gru_backward_seq(m->enc, NULL, m->d_enc, NULL, NULL);
    return loss;
}

int seq2seq_check_examples(const seq2seq *m, const seq2seq_example *ex, int n, kt_error *err)
{
    if (n < 1 || !ex) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq training needs examples, got %d", n);
        kt_error_hint(err, "give at least one example");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const seq2seq_example *e = &ex[i];
        if (e->n_tokens < 1 || e->n_tokens > SEQ2SEQ_MAX_TOKENS || !e->tokens) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq example %d has %d tokens", i,
                         e->n_tokens);
            kt_error_hint(err, "an example has 1 to %d token rows", SEQ2SEQ_MAX_TOKENS);
            return -1;
        }
        for (size_t k = 0; k < (size_t)e->n_tokens * (size_t)m->token_dim; k++) {
            if (!isfinite(e->tokens[k])) {
                kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq example %d has a non-finite token",
                             i);
                kt_error_hint(err, "token features are finite numbers");
                return -1;
            }
        }
        if (!e->target) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq example %d has no target", i);
            kt_error_hint(err, "a target holds one value index per parameter");
            return -1;
        }
        for (int p = 0; p < m->n_params; p++) {
            if (e->target[p] < 0 || e->target[p] >= m->n_values[p]) {
                kt_error_set(err, KT_ERR_BAD_REQUEST,
                             "seq2seq example %d: value index %d of parameter %d is out of range",
                             i, e->target[p], p);
                kt_error_hint(err, "parameter %d has %d values", p, m->n_values[p]);
                return -1;
            }
        }
        if (!isfinite(e->weight) || e->weight <= 0) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq example %d has weight %g", i, e->weight);
            kt_error_hint(err, "weights are finite and > 0");
            return -1;
        }
    }
    return 0;
}

int seq2seq_next_logp(seq2seq *m, const double *tokens, int n_tokens, const int *prefix, int len,
                      double *logp)
{
    if (!m || !tokens || !logp || n_tokens < 1 || n_tokens > SEQ2SEQ_MAX_TOKENS || len < 0 ||
        len >= m->n_params || (len > 0 && !prefix))
        return -1;
    for (int p = 0; p < len; p++)
        if (prefix[p] < 0 || prefix[p] >= m->n_values[p])
            return -1;
    forward(m, tokens, n_tokens, prefix, len + 1, 1);
    memcpy(logp, m->logp + (size_t)len * (size_t)m->max_values,
           (size_t)m->n_values[len] * sizeof *logp);
    return 0;
}

size_t seq2seq_weight_count(int token_dim, int hidden, int total_values)
{
    /* Two GRUs with a 1-output head (gru.h's layout), then Wc, bc, Wo, bo. */
    size_t H = (size_t)hidden, D = (size_t)token_dim, V = (size_t)total_values;
    size_t gru_rest = 3 * H + 3 * H * H + 3 * H + H + 1;
    return 3 * H * D + gru_rest + 3 * H * (V + 1) + gru_rest + 2 * H * H + H + V * H + V;
}

size_t seq2seq_num_weights(const seq2seq *m)
{
    return m->enc->n_params + m->dec->n_params + m->n_head;
}

double *seq2seq_weight(seq2seq *m, size_t i)
{
    m->enc_n_tokens = 0; /* the caller may change it: the kept encoding is stale */
    if (i < m->enc->n_params)
        return &m->enc->params[i];
    i -= m->enc->n_params;
    if (i < m->dec->n_params)
        return &m->dec->params[i];
    i -= m->dec->n_params;
    return i < m->n_head ? &m->head[i] : NULL;
}

int seq2seq_loss(seq2seq *m, const seq2seq_example *ex, int n, double *loss, double *grad,
                 kt_error *err)
{
    if (seq2seq_check_examples(m, ex, n, err) < 0)
        return -1;
    double total = 0.0;
    seq2seq_zero_grad(m);
    for (int i = 0; i < n; i++)
        total += seq2seq_example_backward(m, &ex[i]);
    if (grad) {
        memcpy(grad, m->enc->grads, m->enc->n_params * sizeof *grad);
        grad += m->enc->n_params;
        memcpy(grad, m->dec->grads, m->dec->n_params * sizeof *grad);
        grad += m->dec->n_params;
        memcpy(grad, m->dhead, m->n_head * sizeof *grad);
    }
    *loss = total;
    return 0;
}
