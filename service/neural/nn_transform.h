/* neural/nn_transform — the neural transformations of one convolution layer (issue 14; the paper
 * ../shared/seeds/002: grouping, bottlenecking and the composite Sequences 1–3), written once so
 * that the kernel (kernels/conv2d_neural/cpu.c and reference.c), the network code (Fisher
 * Potential, training) and the service mean the same computation.
 *
 * The layer: input x[C][H][W] (already padded), weights, output y[K'][P][Q] with P = H-R+1,
 * Q = W-S+1, stride 1. A transformation is (groups g, bottleneck b, seq s); K' = K / b.
 *   s = 0  channel grouping ("group", and g = 1: the dense convolution): output channel k belongs
 * to group k / (K'/g) and reads input channels [grp*C/g, (grp+1)*C/g). Weights [K'][C/g][R][S]. s =
 * 1  spatial grouping ("spatial_group", the paper's Sequence 1: split → interchange → group →
 *          interchange → fuse): the output rows are split into g bands, band(y) = y*g / P; every
 *          output channel of row y reads input channels [band*C/g, (band+1)*C/g) with the same
 *          weights [K'][C/g][R][S] in every band. Needs g >= 2, g <= P.
 *   s = 2  unroll-then-group ("unroll_group", Sequence 2: unroll → group → interchange): output
 *          channels unrolled by NN_UNROLL (16); channel k belongs to group (k % 16) / (16/g).
 *          Weights [K'][C/g][R][S]. Needs g >= 2, 16 % g == 0, K' % 16 == 0.
 *   s = 3  split-group ("split_group", Sequence 3: split → group → interchange → group): the first
 *          half of the output channels (k < K'/2) grouped by g as in s = 0 over K'/2 channels, the
 *          second half (k' = k - K'/2) grouped by 2g. Weights: [K'/2][C/g][R][S] then
 *          [K'/2][C/(2g)][R][S], contiguous. Needs K' % (4g) == 0, C % (2g) == 0.
 *   Always: C % g == 0 (s = 3: C % 2g), K % b == 0, s = 0: K' % g == 0.
 * "bottleneck" is b > 1 (any s). The identity is (1, 1, 0).
 *
 * In a kernel spec the three are the parameters GROUPS, BOTTLENECK and SEQ of the variant's
 * "neural" section (kernels/README.md). No allocation here; everything is a plain value. */
#ifndef KT_NEURAL_NN_TRANSFORM_H
#define KT_NEURAL_NN_TRANSFORM_H

#include <jansson.h>

#include "core/error.h"

#define NN_UNROLL 16 /* Sequence 2's unroll factor of the output channels */

typedef struct nn_transform {
    int groups;     /* g >= 1 */
    int bottleneck; /* b >= 1 */
    int seq;        /* 0..3 as above */
} nn_transform;

/* The identity (1, 1, 0). */
nn_transform nn_transform_identity(void);
/* 1 when t is the identity (the layer computes what it did). */
int nn_transform_is_identity(const nn_transform *t);
/* Whether t applies to a layer of C inputs, K outputs and P output rows; 0 with err
 * (KT_ERR_CONFIG, naming the rule broken) when not. */
int nn_transform_valid(const nn_transform *t, int C, int K, int P, kt_error *err);
/* K' = K / b. */
int nn_transform_out_channels(const nn_transform *t, int K);
/* Weight elements of the transformed layer (the formulas above). */
long long nn_transform_weights(const nn_transform *t, int C, int K, int R, int S);
/* Input channel range [*first, *first + *count) that output element (k, y) reads. */
void nn_transform_inputs(const nn_transform *t, int C, int K, int P, int k, int y, int *first,
                         int *count);
/* Offset of weight row k (its [C_in_group][R][S] block) in the weight tensor. */
long long nn_transform_weight_offset(const nn_transform *t, int C, int K, int R, int S, int k);
/* From a configuration object holding GROUPS, BOTTLENECK and SEQ (integers); absent members take
 * the identity's values. -1 with err (KT_ERR_CONFIG) when a member is not an integer in range. */
int nn_transform_from_config(const json_t *config, nn_transform *out, kt_error *err);
/* "group", "bottleneck", "spatial_group", ... joined by '+' ("group+bottleneck"); "none" for the
 * identity. Writes at most cap bytes (NUL included). */
void nn_transform_describe(const nn_transform *t, char *buf, int cap);

#endif
