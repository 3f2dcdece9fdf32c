/* model/seq2seq — the paper's model (seed 001): a problem, given as a sequence of token rows (dense
 * vectors of token_dim features), is translated into a kernel configuration, one parameter value
 * per step.
 *
 *   encoder: GRU over the token rows                    e_1 .. e_S  (hidden H)
 *   decoder: GRU started from e_S; its input at step t is the one-hot of the previous parameter's
 *            chosen value (global index over all parameters' values; a start token at t = 0) s_t
 *   attention (Luong, dot score): alpha_t = softmax(e_i . s_t), c_t = sum_i alpha_ti e_i
 *   output: h~_t = tanh(Wc [c_t; s_t] + bc); logits = Wo h~_t + bo over ALL parameters' values,
 *           masked to parameter t's values (softmax over that slice only)
 *
 * Training: weighted cross-entropy summed over the steps, teacher forcing, Adam on minibatches
 * (gradient norm clipped at 5 per block), L2 on every weight; deterministic for a seed.
 *
 * Lifecycle: seq2seq_new (or seq2seq_load) -> seq2seq_train* -> seq2seq_next_logp* ->
 * seq2seq_free. The model owns its weights and scratch; examples and tokens are borrowed for the
 * call. Not thread-safe: one caller at a time per model (every call uses the model's scratch). */
#ifndef KT_MODEL_SEQ2SEQ_H
#define KT_MODEL_SEQ2SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"

/* Bounds (KT_ERR_BAD_REQUEST beyond them). */
#define SEQ2SEQ_MAX_TOKEN_DIM    4096
#define SEQ2SEQ_MAX_TOKENS       256 /* token rows per example */
#define SEQ2SEQ_MAX_PARAMS       256
#define SEQ2SEQ_MAX_TOTAL_VALUES 16384 /* all parameters' values together */
#define SEQ2SEQ_MAX_HIDDEN       512
#define SEQ2SEQ_MAX_EPOCHS       100000
#define SEQ2SEQ_MAX_BATCH        4096

typedef struct seq2seq seq2seq;

typedef struct seq2seq_hyper {
    int hidden;  /* [64] */
    int epochs;  /* [300] */
    double lr;   /* [0.003] Adam */
    double l2;   /* [1e-5] */
    int batch;   /* [16] examples per Adam step */
} seq2seq_hyper; /* zero fields take the defaults */

typedef struct seq2seq_example {
    const double *tokens; /* n_tokens rows of token_dim */
    int n_tokens;
    const int *target; /* n_params value indices: the configuration to emit */
    double weight;     /* > 0: the best of a problem 1, next-best ones less */
} seq2seq_example;

/* A model for token rows of token_dim features and n_params parameters (parameter p has
 * n_values[p] values; copied). h may be NULL (every default). Weights drawn from seed. NULL with
 * err: KT_ERR_BAD_OPTION for a hyper-parameter out of range, KT_ERR_BAD_REQUEST for sizes,
 * KT_ERR_NO_MEMORY. */
seq2seq *seq2seq_new(int token_dim, int n_params, const int *n_values, const seq2seq_hyper *h,
                     uint64_t seed, kt_error *err);
void seq2seq_free(seq2seq *m);

/* Trains on n examples (teacher forcing, weighted cross-entropy summed over the steps) for at most
 * hyper.epochs epochs: it stops early when the epoch's loss has not fallen by 0.1% below its best
 * for 20 epochs (converged; seq2seq_epochs_run says how many ran). Returns
 * 0, -1 with err (KT_ERR_BAD_REQUEST naming the example and field: no examples, a token count out
 * of [1, SEQ2SEQ_MAX_TOKENS], a non-finite token, a target value out of its list, a weight not
 * finite and > 0). Deterministic for a seed: the order of the minibatches is drawn from an rng
 * seeded by the model's seed and the number of seq2seq_train calls made before. */
int seq2seq_train(seq2seq *m, const seq2seq_example *ex, int n, kt_error *err);

/* Encodes tokens and gives the log-probabilities of parameter `len`'s values after the prefix
 * (teacher-forced decoder run over the prefix) in logp (n_values[len] values). Returns 0, -1 when
 * an argument is out of range (len not in [0, n_params), n_tokens out of bounds, a prefix value out
 * of its list). The encoding of the last tokens is kept, so a beam search over one problem encodes
 * it once. Not thread-safe (uses the model's scratch). */
int seq2seq_next_logp(seq2seq *m, const double *tokens, int n_tokens, const int *prefix, int len,
                      double *logp);

/* Serialisation: appends the model (magic, format, sizes, hyper, seed, weights as little-endian
 * IEEE doubles) to out; seq2seq_load reads what seq2seq_save wrote from buf[*pos..len), advancing
 * *pos past it; NULL with err (KT_ERR_BAD_REQUEST) on a bad or truncated buffer. */
int seq2seq_save(const seq2seq *m, strbuf *out, kt_error *err);
seq2seq *seq2seq_load(const unsigned char *buf, size_t len, size_t *pos, kt_error *err);

/* Sizes and hyper-parameters (defaults filled). */
int seq2seq_token_dim(const seq2seq *m);
int seq2seq_num_params(const seq2seq *m);
seq2seq_hyper seq2seq_get_hyper(const seq2seq *m);
/* Epochs the last seq2seq_train ran (at most hyper.epochs; fewer when it converged early). */
int seq2seq_epochs_run(const seq2seq *m);

/* For gradient checks and tests: every weight as one flat index space (encoder GRU, decoder GRU,
 * output layers), and the training loss of n examples without L2 (sum over examples of weight *
 * sum over steps of -log p(target)) with, when grad is not NULL, its gradient (seq2seq_num_weights
 * values, overwritten). Returns 0, -1 with err on bad examples. */
size_t seq2seq_num_weights(const seq2seq *m);
double *seq2seq_weight(seq2seq *m, size_t i);
int seq2seq_loss(seq2seq *m, const seq2seq_example *ex, int n, double *loss, double *grad,
                 kt_error *err);

#endif
