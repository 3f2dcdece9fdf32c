/* learn/mlp — a multi-layer perceptron on doubles: dense layers, a tanh or relu activation after
 * every hidden layer, a linear output. Forward and backward run on a batch of rows with
 * cblas_dgemm. All weights live in one flat vector and their gradients in another of the same
 * layout, so learn_adam steps the network in one call and a gradient check can perturb any weight.
 * Layout, layer by layer: W (n_in x n_out, row-major: row i holds input i's weights), then b
 * (n_out).
 *
 * Call order: learn_mlp_new -> (learn_mlp_forward [-> learn_mlp_backward -> step the params with
 * learn_mlp_params / learn_mlp_grads] [-> learn_mlp_input_grad])* -> learn_mlp_free. backward and
 * input_grad use what the last forward
 * cached, so the two come in pairs. The network owns its weights, gradients and buffers; the
 * pointers it hands out stay valid until the next forward (outputs) or until free (params, grads).
 * Not thread-safe: one network, one thread at a time.
 *
 * The softmax helpers at the end turn a row of outputs into a (masked) probability distribution
 * and carry a loss gradient back through it, for policy networks. */
#ifndef KT_LEARN_MLP_H
#define KT_LEARN_MLP_H

#include <stddef.h>

#include "core/rng.h"

typedef enum {
    LEARN_ACT_TANH = 0,
    LEARN_ACT_RELU,
} learn_activation;

typedef struct learn_mlp learn_mlp;

/* Limits on what learn_mlp_new accepts (anything larger is refused with NULL). */
#define LEARN_MLP_MAX_LAYERS 8     /* dense layers */
#define LEARN_MLP_MAX_WIDTH  65536 /* units in one layer */
#define LEARN_MLP_MAX_BATCH  65536 /* rows in one forward */

/* sizes: n_layers + 1 entries, the input width, each hidden width, the output width (n_layers
 * dense layers, 1 <= n_layers <= LEARN_MLP_MAX_LAYERS, every size >= 1). Weights are drawn from
 * rng (Glorot for tanh, He for relu, normal), biases are zero, so a seed fixes the network. NULL
 * for bad sizes or out of memory. */
learn_mlp *learn_mlp_new(int n_layers, const int *sizes, learn_activation act, kt_rng *rng);
void learn_mlp_free(learn_mlp *m);

int learn_mlp_num_inputs(const learn_mlp *m);
int learn_mlp_num_outputs(const learn_mlp *m);
size_t learn_mlp_num_params(const learn_mlp *m);
/* The flat weight vector (num_params entries), owned by the network; writable. */
double *learn_mlp_params(learn_mlp *m);
/* The flat gradient vector, same layout, filled by learn_mlp_backward. */
double *learn_mlp_grads(learn_mlp *m);

/* Multiplies the output layer's weights by factor (e.g. 0.1 for a policy that starts near
 * uniform). */
void learn_mlp_scale_output(learn_mlp *m, double factor);

/* x: batch rows of num_inputs (row-major), 1 <= batch <= LEARN_MLP_MAX_BATCH. Returns batch rows
 * of num_outputs, owned by the network and valid until the next forward, or NULL for a bad batch or
 * out of memory. The input is copied, so x may change afterwards. */
const double *learn_mlp_forward(learn_mlp *m, const double *x, int batch);

/* dout: d loss / d output for the rows of the last forward (batch x num_outputs). Overwrites the
 * gradient vector with d loss / d weights summed over the batch (scale dout by 1/batch for a mean).
 * Returns 0, or -1 if no forward came first. */
int learn_mlp_backward(learn_mlp *m, const double *dout);

/* dx = d loss / d input for the rows of the last forward (batch x num_inputs), given dout as for
 * backward; the weights' gradient vector is left as it was (the surrogate's gradient search
 * descends on the inputs of a frozen network). Returns 0, or -1 if no forward came first. */
int learn_mlp_input_grad(learn_mlp *m, const double *dout, double *dx);

/* p = softmax(z) over the n entries whose mask is nonzero (mask NULL: all); masked entries get
 * p = 0. Returns the number of entries allowed; 0 (p all zero) when none is, or when z holds a
 * non-finite value among them. */
int learn_softmax(const double *z, const unsigned char *mask, int n, double *p);
/* dz = J^T dp for p = softmax(z): dz_i = p_i (dp_i - sum_j p_j dp_j). Masked entries have p = 0,
 * so their dz is 0. dp may be dz. */
void learn_softmax_backward(const double *p, const double *dp, int n, double *dz);

#endif
