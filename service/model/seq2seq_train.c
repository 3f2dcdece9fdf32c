/* model/seq2seq_train — seq2seq_train: epochs of shuffled minibatches, each one Adam step per
 * weight block (encoder GRU, decoder GRU, output layers) on the mean weighted cross-entropy of the
 * batch plus L2. */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "learn/adam.h"
#include "model/seq2seq_internal.h"

/* grads = grads * scale + l2 * params over one block. */
static void finish_grads(double *grads, const double *params, size_t n, double scale, double l2)
{
    for (size_t i = 0; i < n; i++)
        grads[i] = grads[i] * scale + l2 * params[i];
}

int seq2seq_train(seq2seq *m, const seq2seq_example *ex, int n, kt_error *err)
{
    int ret = -1;
    int *order = NULL;
    learn_adam adam[3] = {{0}};
    int n_adam = 0;

    if (!m) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "seq2seq training needs a model");
        goto out;
    }
    if (seq2seq_check_examples(m, ex, n, err) < 0)
        goto out;
    order = malloc((size_t)n * sizeof *order);
    if (!order)
        goto oom;
    double *params[3] = {m->enc->params, m->dec->params, m->head};
    double *grads[3] = {m->enc->grads, m->dec->grads, m->dhead};
    size_t sizes[3] = {m->enc->n_params, m->dec->n_params, m->n_head};
    for (; n_adam < 3; n_adam++) {
        if (learn_adam_init(&adam[n_adam], sizes[n_adam], m->hyper.lr) < 0)
            goto oom;
        adam[n_adam].clip = SEQ2SEQ_CLIP;
    }
    kt_rng rng;
    kt_rng_seed(&rng, m->seed ^ (0x5eb2e9ULL + (uint64_t)m->train_calls * 0x9e3779b97f4a7c15ULL));
    m->train_calls++;
    m->enc_n_tokens = 0; /* the weights change: a kept encoding is stale */
    for (int i = 0; i < n; i++)
        order[i] = i;
    int batch = m->hyper.batch < n ? m->hyper.batch : n;
    double best = INFINITY;
    int stale = 0;
    m->epochs_run = 0;
    for (int epoch = 0; epoch < m->hyper.epochs && stale < SEQ2SEQ_PATIENCE; epoch++) {
        double epoch_loss = 0.0;
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)kt_rng_below(&rng, (uint64_t)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int start = 0; start < n; start += batch) {
            int end = start + batch < n ? start + batch : n;
            seq2seq_zero_grad(m);
            for (int i = start; i < end; i++)
                epoch_loss += seq2seq_example_backward(m, &ex[order[i]]);
            for (int b = 0; b < 3; b++) {
                finish_grads(grads[b], params[b], sizes[b], 1.0 / (double)(end - start),
                             m->hyper.l2);
                learn_adam_step(&adam[b], params[b], grads[b]);
            }
        }
        /* Converged: the loss (summed over the epoch as it went) stopped falling. */
        if (epoch_loss < best * (1.0 - SEQ2SEQ_MIN_IMPROVEMENT)) {
            best = epoch_loss;
            stale = 0;
        } else {
            stale++;
        }
        m->epochs_run++;
    }
    ret = 0;
    goto out;
oom:
    kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory training a seq2seq model");
out:
    for (int b = 0; b < n_adam; b++)
        learn_adam_release(&adam[b]);
    free(order);
    return ret;
}
