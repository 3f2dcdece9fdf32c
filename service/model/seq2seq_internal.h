/* model/seq2seq_internal — the seq2seq struct shared by seq2seq.c (model, forward, backward),
 * seq2seq_train.c and seq2seq_io.c. Not part of the room's interface. Everything hangs off struct
 * seq2seq and is freed by seq2seq_free. */
#ifndef KT_MODEL_SEQ2SEQ_INTERNAL_H
#define KT_MODEL_SEQ2SEQ_INTERNAL_H

#include "learn/gru.h"
#include "model/seq2seq.h"

#define SEQ2SEQ_CLIP            5.0  /* gradient norm clip of each block's Adam */
#define SEQ2SEQ_PATIENCE        20   /* epochs without improvement before training stops */
#define SEQ2SEQ_MIN_IMPROVEMENT 1e-3 /* relative fall of the epoch loss that counts */

struct seq2seq {
    int token_dim, n_params, hidden, total_values, max_values;
    int *n_values, *offset; /* offset[p]: global index of parameter p's first value */
    seq2seq_hyper hyper;
    uint64_t seed;
    long train_calls;
    int epochs_run; /* by the last seq2seq_train (early stop) */
    learn_gru *enc; /* token_dim -> H, SEQ2SEQ_MAX_TOKENS steps; its 1-output head is unused */
    learn_gru *dec; /* one-hot of total_values + 1 (the last: start) -> H, n_params steps */
    /* Output layers, one flat vector (params) and its gradient: Wc [H x 2H] | bc [H] | Wo [V x H]
     * | bo [V], row-major. */
    size_t n_head;
    double *head, *dhead;
    double *Wc, *bc, *Wo, *bo, *dWc, *dbc, *dWo, *dbo;
    /* Forward scratch of one example, n_params rows: attention weights (SEQ2SEQ_MAX_TOKENS each),
     * [c_t; s_t] (2H), h~_t (H), log-probabilities of the slice (max_values). */
    double *alpha, *cat, *ht, *logp;
    int steps, n_tokens; /* of the forward in the scratch */
    /* Backward scratch: d[c; s] (n_params x 2H), dh~ (n_params x H), d of the encoder states
     * (SEQ2SEQ_MAX_TOKENS x H), of the decoder states (n_params x H), dh0 (H), attention (S). */
    double *dcat, *dht, *d_enc, *d_dec, *dh0, *att, *dlogit; /* dlogit: max_values */
    /* The tokens the encoder last ran on (next_logp reuses the encoding when they are the same). */
    double *enc_tokens;
    int enc_n_tokens; /* 0: no valid encoding */
};

/* Allocates a model with the given sizes and hyper (already validated and defaulted) and weights
 * drawn from seed; NULL out of memory. */
seq2seq *seq2seq_alloc(int token_dim, int n_params, const int *n_values, const seq2seq_hyper *h,
                       uint64_t seed);
/* How many weights a model of these sizes has (seq2seq_num_weights before allocating it). */
size_t seq2seq_weight_count(int token_dim, int hidden, int total_values);
/* Validates examples for m (KT_ERR_BAD_REQUEST naming the first bad one). */
int seq2seq_check_examples(const seq2seq *m, const seq2seq_example *ex, int n, kt_error *err);
/* Validates and defaults a hyper (NULL: every default) into *out. */
int seq2seq_hyper_fill(const seq2seq_hyper *h, seq2seq_hyper *out, kt_error *err);
/* Adds the gradient of one example's weighted loss to the three blocks' gradients; returns the
 * example's loss (weight * sum of -log p). The example must be valid. */
double seq2seq_example_backward(seq2seq *m, const seq2seq_example *ex);
/* Zeroes the gradients of the three blocks. */
void seq2seq_zero_grad(seq2seq *m);

#endif
