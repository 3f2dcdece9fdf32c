/* neural/nn_train — trains a network (with transformations applied) by SGD with momentum on a
 * labelled data set and measures its test accuracy (issue 14: validating the Fisher Potential
 * check against what training says). Same seeds and schedule give the same result on the same
 * machine. Single-threaded OpenBLAS calls; slow by design only in image count.
 *
 * Lifecycle: nn_train (one call; no state kept). */
#ifndef KT_NEURAL_NN_TRAIN_H
#define KT_NEURAL_NN_TRAIN_H

#include <stdint.h>

#include "core/error.h"
#include "neural/nn_dataset.h"
#include "neural/nn_network.h"

typedef struct nn_train_opts {
    int epochs;          /* default 3 */
    int batch;           /* default 64 */
    double lr;           /* default 0.05, cosine-decayed to 0 over the run */
    double momentum;     /* default 0.9 */
    double weight_decay; /* default 5e-4 */
    uint64_t seed;       /* initialisation and shuffling */
    /* Called after each epoch (may be NULL): epoch from 1, mean training loss, test accuracy so
     * far (NAN when not evaluated yet). */
    void (*progress)(void *arg, int epoch, double loss, double test_accuracy);
    void *progress_arg;
} nn_train_opts;

typedef struct nn_train_result {
    double train_loss;    /* mean over the last epoch */
    double test_accuracy; /* fraction of test images classified right after the last epoch */
    double seconds;       /* wall time of training and evaluation */
    long long params;     /* trainable parameters */
} nn_train_result;

nn_train_opts nn_train_default_opts(void);
/* Errors: those of nn_fisher_potential (shape, transformations), KT_ERR_NO_MEMORY. */
int nn_train(const nn_network *net, const nn_transform *per_conv, const nn_dataset *train,
             const nn_dataset *test, const nn_train_opts *o, nn_train_result *out, kt_error *err);

#endif
