/* neural/nn_cost — what a Fisher check of a network costs, figured from its shapes alone before
 * anything is allocated or computed (issue 26). Each layer of a request's inline network may be
 * within its own limits (nn_network.h: 128 layers, 1,024 channels, kernel 15, pad 7) while the
 * network implies unbounded work: with pad 7 the feature map grows 14 pixels per conv, and 15 such
 * convs of 1,024 channels need ~30 GiB of activations for one minibatch. So a network is judged as
 * a whole: the bytes nn_model_new allocates for a minibatch (parameters and their gradients, every
 * layer's output and its gradient, pooling indices, the im2col scratch, the minibatch itself) and
 * the operations of one forward and backward pass (the GEMMs of convs and linear layers, plus one
 * per value that im2col, batch norm, pooling and the other element-wise layers touch).
 *
 * A Fisher Potential of a network (nn_fisher.h: `seeds` passes of `batch` images) is computed only
 * when it needs at most NN_COST_MAX_MODEL_BYTES and NN_COST_MAX_CHECK_FLOPS; the service refuses a
 * request whose network does not (400, catalog/catalog_neural.h), so nothing it accepts can exhaust
 * the process's memory or hold a measuring thread for minutes. The limits keep ~5x (memory) and
 * ~6x (work) of headroom over the preset networks (networks/); the figures of each are in
 * service/neural/README.md.
 *
 * The figures bound every candidate of the legality check too: a transformation of one conv
 * (nn_transform.h: grouping, bottlenecking, the sequences) only removes output channels or
 * connections, never adds values or operations, so the original network's cost is the largest.
 *
 * Pure functions of the network; any thread. */
#ifndef KT_NEURAL_NN_COST_H
#define KT_NEURAL_NN_COST_H

#include "core/error.h"
#include "neural/nn_network.h"

#define NN_COST_MAX_MODEL_BYTES (512LL << 20) /* one model and minibatch of a Fisher check */
#define NN_COST_MAX_CHECK_FLOPS 1e11          /* one Fisher Potential: all its passes */
#define NN_COST_MAX_BATCH       4096          /* nn_model_new's largest minibatch */

typedef struct nn_cost {
    long long model_bytes; /* nn_model_new(net, NULL, batch) with the minibatch it reads */
    double pass_flops;     /* one forward and backward pass over batch images */
    int largest_layer;     /* the layer (nn_network_layer index) with the most output values */
    nn_shape largest;      /* its output, per image */
    int costliest_layer;   /* the layer with the most operations of a pass */
    double costliest_flops;
} nn_cost;

/* The cost of net for a minibatch of batch images (1..NN_COST_MAX_BATCH). Returns 0, or -1 with
 * err (KT_ERR_BAD_REQUEST: batch out of range; KT_ERR_CONFIG: the shapes do not propagate, which
 * a parsed network's always do). */
int nn_cost_of(const nn_network *net, int batch, nn_cost *out, kt_error *err);

/* Whether a Fisher Potential of net (seeds passes of batch images) keeps within the limits:
 * 0, or -1 with err (KT_ERR_BAD_REQUEST naming each limit exceeded with the network's figure and
 * the layer that weighs most, and a hint saying what would fit). */
int nn_cost_check(const nn_network *net, int batch, int seeds, kt_error *err);

#endif
