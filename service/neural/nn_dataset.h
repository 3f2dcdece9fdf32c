/* neural/nn_dataset — labelled images for Fisher Potential and training (issue 14): Fashion-MNIST
 * read from Debian's dataset-fashion-mnist (gzip'd IDX files in /usr/share/datasets/fashion-mnist,
 * installed by deploy/install-deps.sh), or the small copy shipped for tests when the package is
 * absent (networks/data/fashion-mnist-small/: the first 1000 training and 500 test images of the
 * same files, same format).
 *
 * Names: "fashion-mnist" (the package; KT_ERR_UNAVAILABLE with the apt hint when absent) and
 * "fashion-mnist-small" (the shipped copy). Images are float, NCHW (1×28×28), pixel/255 normalised
 * by the training set's mean 0.2860 and standard deviation 0.3530; labels 0..9.
 *
 * Lifecycle: nn_dataset_load -> read fields -> nn_dataset_release. */
#ifndef KT_NEURAL_NN_DATASET_H
#define KT_NEURAL_NN_DATASET_H

#include "core/error.h"

#define NN_DATASET_MAX_IMAGES 100000

typedef struct nn_dataset_paths {
    const char
        *package_dir; /* NULL: $KTUNE_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist */
    const char
        *small_dir; /* the shipped copy (<networks dir>/data/fashion-mnist-small); NULL: none */
} nn_dataset_paths;

typedef struct nn_dataset {
    int n;                       /* images */
    int channels, height, width; /* 1, 28, 28 */
    int classes;                 /* 10 */
    float *images;               /* n * channels * height * width, owned */
    unsigned char *labels;       /* n, owned */
} nn_dataset;

/* 1 for the names above. */
int nn_dataset_known(const char *name);
/* Loads split "train" or "test" of name, at most max_images (0: all) from the start of the file.
 * Errors: KT_ERR_BAD_REQUEST (unknown name or split), KT_ERR_UNAVAILABLE (files absent, with a
 * hint), KT_ERR_IO (unreadable or malformed: the file and what is wrong). */
int nn_dataset_load(const char *name, const char *split, int max_images,
                    const nn_dataset_paths *paths, nn_dataset *out, kt_error *err);
void nn_dataset_release(nn_dataset *d);

#endif
