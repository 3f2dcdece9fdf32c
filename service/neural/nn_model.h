/* neural/nn_model — a network instantiated for computing (issue 14): its parameters (one flat float
 * vector, with gradients of the same layout), and the buffers of a forward and backward pass over a
 * minibatch of at most max_batch images. Used by nn_fisher (one pass, nothing trained) and
 * nn_train.
 *
 * Initialisation (nn_model_init): conv weights Kaiming normal (std sqrt(2 / fan_in), fan_in = the
 * input channels of the output's group times R*S), each conv from its own rng seeded by the seed
 * mixed with the conv's index, so a conv whose shape a transformation does not change gets the
 * same weights in the original and the candidate; linear weights normal with std sqrt(1 / in)
 * seeded by the seed and the layer's index, biases 0; batch norm scale 1, shift 0, running mean
 * 0 and variance 1.
 *
 * Lifecycle: nn_model_new -> nn_model_init -> [nn_model_set_stop] -> (nn_model_forward
 * [-> nn_model_backward])* -> nn_model_free. One thread at a time per model. */
#ifndef KT_NEURAL_NN_MODEL_H
#define KT_NEURAL_NN_MODEL_H

#include <stdint.h>

#include "core/error.h"
#include "neural/nn_network.h"
#include "neural/nn_stop.h"

typedef struct nn_model nn_model;

/* per_conv NULL: the original network. Errors: KT_ERR_CONFIG (per_conv not valid),
 * KT_ERR_NO_MEMORY. The network must outlive the model. */
nn_model *nn_model_new(const nn_network *net, const nn_transform *per_conv, int max_batch,
                       kt_error *err);
void nn_model_free(nn_model *m);
void nn_model_init(nn_model *m, uint64_t seed);

long long nn_model_param_count(const nn_model *m);
float *nn_model_params(nn_model *m);
float *nn_model_grads(nn_model *m);
/* Whether parameter i is a weight that weight decay applies to (conv and linear weights). */
int nn_model_param_decays(const nn_model *m, long long i);

/* The stop check asked before every layer and every image of a conv by the passes that follow
 * (borrowed until it is replaced; NULL: never stopped). */
void nn_model_set_stop(nn_model *m, const nn_stop *stop);
/* Forward over n images x ([n][C][H][W]); train 1: batch norm with batch statistics (training
 * mode; the running statistics are updated), 0: with the running statistics. With labels, *loss
 * (may be NULL) gets the mean softmax cross-entropy and *correct (may be NULL) the number of
 * right answers, and nn_model_backward may follow. Returns 0, -1 with err (KT_ERR_BAD_REQUEST:
 * n out of range or a label out of range), or NN_STOPPED / NN_TIMED_OUT (err says where) when the
 * stop check said so: the outputs are then partial and no backward may follow. */
int nn_model_forward(nn_model *m, const float *x, int n, int train, const unsigned char *labels,
                     double *loss, int *correct, kt_error *err);
/* Gradients of the mean loss of the last forward (with labels) into nn_model_grads (overwritten)
 * and into every conv output (nn_model_conv_grad). Returns 0, or NN_STOPPED / NN_TIMED_OUT when
 * the stop check said so (the gradients are then partial). */
int nn_model_backward(nn_model *m);
/* Logits of the last forward ([n][classes]). */
const float *nn_model_logits(const nn_model *m);
/* Conv conv's output of the last forward (its activation A, [n][K'][P][Q], before batch norm)
 * and dL/dA after nn_model_backward; shape (may be NULL) receives K', P, Q. */
const float *nn_model_conv_output(const nn_model *m, int conv, nn_shape *shape);
const float *nn_model_conv_grad(const nn_model *m, int conv);

#endif
