/* neural/nn_network — a small CNN described as JSON (issue 14): what Fisher Potential is computed
 * on and what the validation trains. Stride-1 convolutions with padding, batch norm, ReLU, max /
 * average pooling, residual blocks, global average pooling, linear; softmax cross-entropy at the
 * end. Presets ship in networks/ (each .json file) (networks/README.md documents the format):
 *
 *   {"name": "vgg_fm", "input": [1, 28, 28], "classes": 10,
 *    "layers": [{"type": "conv", "name": "conv1", "out": 32, "kernel": 3, "pad": 1},
 *               {"type": "batchnorm"}, {"type": "relu"}, {"type": "maxpool", "size": 2},
 *               {"type": "residual", "layers": [...]},   (output = input + body(input))
 *               {"type": "global_avgpool"}, {"type": "flatten"}, {"type": "linear", "out": 10}]}
 *
 * Every conv has a name, unique in the network (residual bodies included). A conv layer is a
 * conv2d_neural problem: C inputs, K = out, H/W = its input size + 2*pad, R = S = kernel.
 *
 * Lifecycle: nn_network_parse / nn_network_load_file -> queries (any thread; read-only) ->
 * nn_network_free. nn_presets_load -> nn_presets_find (borrowed network) -> nn_presets_free. */
#ifndef KT_NEURAL_NN_NETWORK_H
#define KT_NEURAL_NN_NETWORK_H

#include <jansson.h>

#include "core/error.h"
#include "neural/nn_transform.h"

#define NN_MAX_LAYERS     128 /* layers of one network, residual bodies included */
#define NN_MAX_CHANNELS   1024
#define NN_MAX_INPUT_SIDE 256
#define NN_NAME_MAX       64
#define NN_MAX_PRESETS    32

typedef struct nn_network nn_network;

/* One convolution layer as a kernel problem (batch not included). */
typedef struct nn_conv_shape {
    char name[NN_NAME_MAX + 1];
    int index;         /* among the network's convs, in forward order */
    int C, K;          /* input and output channels */
    int H, W;          /* input height and width after padding */
    int R, S;          /* filter size */
    int pad;           /* padding applied to the layer's input */
    int in_residual;   /* 1 inside a residual body */
    int bottleneck_ok; /* 1 when a bottleneck (fewer outputs) can propagate: the output does not end
                          a residual body (its channel count must match the skip) */
} nn_conv_shape;

/* Parses and validates a network (shapes propagated, every layer checked). NULL with err
 * (KT_ERR_BAD_REQUEST naming the layer and field) when the description is not valid. */
nn_network *nn_network_parse(const json_t *doc, kt_error *err);
nn_network *nn_network_load_file(const char *path, kt_error *err);
void nn_network_free(nn_network *n);

const char *nn_network_name(const nn_network *n);
/* 16 hex digits: FNV-1a 64 of the canonical JSON (nn_network_json dumped compact, sorted keys). */
const char *nn_network_hash(const nn_network *n);
/* Canonical description (new reference). */
json_t *nn_network_json(const nn_network *n);
int nn_network_conv_count(const nn_network *n);
/* The i-th conv (0 <= i < conv_count). Returns 0, -1 when out of range. */
int nn_network_conv(const nn_network *n, int i, nn_conv_shape *out);
/* Index of the conv named name, -1 when none. */
int nn_network_find_conv(const nn_network *n, const char *name);
/* Whether per_conv (an array of conv_count transformations; NULL: all identity) can be applied:
 * each valid for its layer (nn_transform_valid) and a bottleneck only where bottleneck_ok.
 * Returns 1, or 0 with err (KT_ERR_CONFIG, naming the layer). */
int nn_network_transforms_valid(const nn_network *n, const nn_transform *per_conv, kt_error *err);
/* Trainable parameters of the network with per_conv applied (NULL: original). -1 when invalid. */
long long nn_network_params(const nn_network *n, const nn_transform *per_conv);

/* The layers, flattened in forward order (added for the model and tests): a residual layer is
 * followed by its body (`body` layers, nested residuals included), then the layer after the block.
 */
typedef enum nn_layer_kind {
    NN_LAYER_CONV,
    NN_LAYER_BATCHNORM,
    NN_LAYER_RELU,
    NN_LAYER_MAXPOOL,
    NN_LAYER_AVGPOOL,
    NN_LAYER_RESIDUAL,
    NN_LAYER_GLOBAL_AVGPOOL,
    NN_LAYER_FLATTEN,
    NN_LAYER_LINEAR
} nn_layer_kind;

typedef struct nn_layer {
    nn_layer_kind kind;
    char name[NN_NAME_MAX + 1]; /* conv: its name; others: "" */
    int out;                    /* conv, linear: output channels / units */
    int kernel, pad;            /* conv (convs have no bias: batch norm follows them) */
    int size;                   /* max/avg pool: window = stride */
    int body;                   /* residual: the layers of its body that follow it */
    int conv;                   /* conv: index among the convs; -1 otherwise */
} nn_layer;

/* A layer's output (or input) shape; flat after "flatten" (c units, h = w = 1). */
typedef struct nn_shape {
    int c, h, w;
    int flat;
} nn_shape;

int nn_network_layer_count(const nn_network *n);
const nn_layer *nn_network_layer(const nn_network *n, int i); /* NULL when out of range */
nn_shape nn_network_input(const nn_network *n);
int nn_network_classes(const nn_network *n);
/* Shapes of every layer with per_conv applied (NULL: the original): in[i] / out[i] (each
 * nn_network_layer_count entries; either may be NULL). A residual layer's out is the block's
 * output. Returns 0, or -1 with err (KT_ERR_CONFIG naming the layer) when per_conv does not fit. */
int nn_network_shapes(const nn_network *n, const nn_transform *per_conv, nn_shape *in,
                      nn_shape *out, kt_error *err);

/* The preset networks: every *.json in dir (at most NN_MAX_PRESETS), each file's "name" unique. */
typedef struct nn_presets nn_presets;
nn_presets *nn_presets_load(const char *dir, kt_error *err);
void nn_presets_free(nn_presets *p);
int nn_presets_count(const nn_presets *p);
const nn_network *nn_presets_at(const nn_presets *p, int i);
const nn_network *nn_presets_find(const nn_presets *p, const char *name); /* NULL when none */

#endif
