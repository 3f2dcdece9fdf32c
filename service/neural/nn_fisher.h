/* neural/nn_fisher — Fisher Potential at initialisation (issue 14; paper ../shared/seeds/002
 * section 5.2, after BlockSwap): for each conv layer's output channel c, with A its activation
 * (the conv's output, N×P×Q over a minibatch of N images) and g = dL/dA,
 *   Δ_c = 1/(2N) Σ_n (−Σ_ij A_nij g_nij)²,
 * summed over the channels of a layer and over the layers. The network is initialised (Kaiming
 * normal, batch norm in training mode, seeded per layer so that layers a transformation does not
 * touch get the same weights in the original and the candidate), one minibatch goes forward and
 * backward through softmax cross-entropy, and nothing is trained.
 *
 * Precisely (nn_fisher.c): A is the conv's output before its batch norm, g the gradient of the
 * batch-MEAN loss (as BlockSwap's implementation), so Δ_c = 0.5 * mean_n (Σ_ij A g)². With batch
 * norm in training mode right after the conv, Σ_n Σ_ij A g = 0 per channel (scale invariance):
 * Δ_c is the spread over the images of a per-image quantity whose batch mean is zero.
 *
 * Pure computation: no caching here (neural/nn_legality.h caches), no global state; any thread. */
#ifndef KT_NEURAL_NN_FISHER_H
#define KT_NEURAL_NN_FISHER_H

#include <stdint.h>

#include "core/error.h"
#include "neural/nn_dataset.h"
#include "neural/nn_network.h"
#include "neural/nn_stop.h"

typedef struct nn_fisher_opts {
    int batch; /* images in the minibatch (default 64; at most 1024); the first `batch` images of
                  a fixed seeded shuffle of data */
    int seeds; /* initialisations averaged (default 1; at most 16) */
    uint64_t seed; /* base seed of initialisation and minibatch */
} nn_fisher_opts;

/* batch 64, seeds 1, seed 1. */
nn_fisher_opts nn_fisher_default_opts(void);

/* The Fisher Potential of net with per_conv applied (NULL: the original); per_layer, when not NULL,
 * receives each conv's Δ_l (nn_network_conv_count entries). stop (may be NULL: never) is asked
 * between layers and images (nn_stop.h). Returns 0; NN_STOPPED or NN_TIMED_OUT when stop said so
 * (nothing in *total; err says where); -1 with err: KT_ERR_CONFIG (per_conv not valid for net),
 * KT_ERR_BAD_REQUEST (data's image shape or classes differ from net's input, or net beyond the
 * limits of neural/nn_cost.h: nothing is allocated then), KT_ERR_NO_MEMORY. */
int nn_fisher_potential(const nn_network *net, const nn_transform *per_conv, const nn_dataset *data,
                        const nn_fisher_opts *o, const nn_stop *stop, double *total,
                        double *per_layer, kt_error *err);

#endif
