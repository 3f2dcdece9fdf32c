/* learn/gru — a gated recurrent unit (Cho et al. 2014, in the form cuDNN and PyTorch use) unrolled
 * over a sequence, with a linear output head, on doubles; the matrix products go through cblas.
 * Built for the `rnn` searcher's controller, which feeds one step at a time (each input depends on
 * what the previous output made it choose) and later trains on whole sequences.
 *
 * One step, from input x and previous hidden state h (sigma the logistic function, * elementwise):
 *     z  = sigma(Wz x + bwz + Uz h + buz)           update gate
 *     r  = sigma(Wr x + bwr + Ur h + bur)           reset gate
 *     n  = tanh (Wn x + bwn + r * (Un h + bun))     candidate
 *     h' = (1 - z) * n + z * h
 *     y  = V h' + c                                 output (e.g. logits)
 *
 * All weights live in one flat vector `params` (so learn_adam can step them and a gradient check
 * can perturb any of them), gradients in `grads` with the same layout:
 *     W  [3H x I]  rows z | r | n, row-major      bw [3H]
 *     U  [3H x H]  rows z | r | n, row-major      bu [3H]
 *     V  [O x H]   row-major                      c  [O]
 * The struct's W, bw, U, bu, V, c point into params (and dW, ... into grads).
 *
 * Lifecycle: learn_gru_new -> (learn_gru_reset -> learn_gru_step* [-> learn_gru_zero_grad ->
 * learn_gru_backward])* -> learn_gru_free. The GRU owns params, grads and the forward cache; the
 * caller may write params (initialise, step an optimiser) between sequences. Pointers returned by
 * learn_gru_step / learn_gru_output stay valid until the next reset. Not thread-safe: one GRU per
 * thread. */
#ifndef KT_LEARN_GRU_H
#define KT_LEARN_GRU_H

#include <stddef.h>

#include "core/rng.h"

/* Bounds on learn_gru_new's sizes (each at least 1). */
#define LEARN_GRU_MAX_INPUT  65536
#define LEARN_GRU_MAX_HIDDEN 1024
#define LEARN_GRU_MAX_OUTPUT 65536
#define LEARN_GRU_MAX_STEPS  4096

typedef struct learn_gru {
    int n_in, n_hidden, n_out, max_steps;
    size_t n_params;
    double *params, *grads; /* owned, n_params each */
    double *W, *bw, *U, *bu, *V, *c;
    double *dW, *dbw, *dU, *dbu, *dV, *dc;
    int steps; /* steps in the forward cache since the last reset */
    /* Forward cache (owned), max_steps rows each: inputs, hidden states (max_steps + 1 rows, row 0
     * the initial state), gates, candidate, Un h + bun, outputs; backward scratch. */
    double *x, *h, *z, *r, *n, *gn, *y;
    int *hot; /* per step: the one-hot input's index, -1 for a dense input */
    double *da, *du, *dh, *dtmp;
} learn_gru;

/* A GRU with input size n_in, hidden size n_hidden, n_out outputs per step and room for max_steps
 * steps per sequence. Weights uniform in [-1/sqrt(H), 1/sqrt(H)] drawn from rng (so a seed fixes
 * them), biases zero. NULL when a size is out of bounds or out of memory. Free with
 * learn_gru_free. */
learn_gru *learn_gru_new(int n_in, int n_hidden, int n_out, int max_steps, kt_rng *rng);
void learn_gru_free(learn_gru *g);

/* Starts a sequence: empties the forward cache; the initial hidden state is h0 (n_hidden values,
 * copied) or zeros when h0 is NULL. */
void learn_gru_reset(learn_gru *g, const double *h0);
/* Runs one step on input x (n_in values) and returns its n_out outputs, or NULL when the sequence
 * already has max_steps steps. */
const double *learn_gru_step(learn_gru *g, const double *x);
/* The same with the one-hot input e_hot (0 <= hot < n_in), without the dense product: the cost
 * of a step no longer grows with n_in, nor does backward's when every step of a sequence is
 * one-hot. NULL also when hot is out of range. */
const double *learn_gru_step_onehot(learn_gru *g, int hot);
/* reset (zero state) then T steps over xs (T rows of n_in). Returns 0, or -1 if T is not in
 * [0, max_steps]. */
int learn_gru_forward(learn_gru *g, const double *xs, int T);
/* Outputs and hidden state of step t (0 <= t < steps) of the current sequence. */
const double *learn_gru_output(const learn_gru *g, int t);
const double *learn_gru_hidden(const learn_gru *g, int t);

void learn_gru_zero_grad(learn_gru *g);
/* Backpropagation through time over the current sequence: d_out holds steps rows of n_out, the
 * gradient of the loss with respect to each step's outputs. Adds the gradient of every weight to
 * grads (so several sequences accumulate; zero them first). d_x, when not NULL, receives steps
 * rows of n_in: the gradient with respect to the inputs. */
void learn_gru_backward(learn_gru *g, const double *d_out, double *d_x);
/* The general form, for a GRU inside a larger network (an encoder whose states an attention reads,
 * a decoder started from an encoder's last state). d_out: as above, or NULL when the outputs feed
 * nothing (no gradient reaches V and c). d_h, when not NULL, holds steps rows of n_hidden: extra
 * gradient of the loss with respect to each step's hidden state (learn_gru_hidden(g, t)), added to
 * what flows back through the outputs and the later steps. d_x as above. d_h0, when not NULL,
 * receives (overwrites) n_hidden values: the gradient with respect to the initial hidden state
 * given to learn_gru_reset. learn_gru_backward(g, d_out, d_x) is learn_gru_backward_seq(g, d_out,
 * NULL, d_x, NULL). */
void learn_gru_backward_seq(learn_gru *g, const double *d_out, const double *d_h, double *d_x,
                            double *d_h0);

#endif
