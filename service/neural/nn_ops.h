/* neural/nn_ops — the layer operations of the small CNNs (issue 14), forward and backward, on float
 * batches in NCHW layout. Plain functions over caller-owned buffers: no allocation, no state, any
 * thread. One file per noun: nn_conv.c, nn_norm.c (batch norm), nn_relu.c, nn_pool.c, nn_linear.c,
 * nn_loss.c. Every backward ACCUMULATES into its outputs (dx, dw, ...): the caller zeroes them
 * first, so that a tensor read by two layers (a residual block's input) sums both gradients.
 *
 * Call order: *_forward, then (training, Fisher) *_backward with the same inputs. */
#ifndef KT_NEURAL_NN_OPS_H
#define KT_NEURAL_NN_OPS_H

#include "neural/nn_transform.h"

/* A stride-1 convolution without bias, with transformation t (nn_transform.h): input
 * [n][C][H][W] (not padded; pad zeros added around it), weights as nn_transform_weight_offset
 * lays them out, output [n][K'][P][Q] with P = H + 2*pad - R + 1, Q likewise, K' = K / b. */
typedef struct nn_conv_dims {
    int C, H, W, K, R, S, pad;
    nn_transform t;
} nn_conv_dims;

int nn_conv_out_h(const nn_conv_dims *d);
int nn_conv_out_w(const nn_conv_dims *d);
/* Floats of the im2col scratch one call needs (C*R*S x P*Q). */
long long nn_conv_col_size(const nn_conv_dims *d);
/* col: nn_conv_col_size floats of scratch. */
void nn_conv_forward(const nn_conv_dims *d, const float *x, int n, const float *w, float *y,
                     float *col);
/* dw += dL/dw; dx += dL/dx unless dx is NULL (the network's input). col, dcol: scratch of
 * nn_conv_col_size floats each (dcol unused when dx is NULL). */
void nn_conv_backward(const nn_conv_dims *d, const float *x, int n, const float *w, const float *dy,
                      float *dw, float *dx, float *col, float *dcol);

/* Batch norm over [n][c][hw]: train 1 uses the batch's mean and (biased) variance and updates the
 * running statistics (momentum 0.1, unbiased variance); train 0 uses the running statistics.
 * mean and invstd (c floats) receive what was used (the backward needs them). */
#define NN_BN_EPS 1e-5
void nn_bn_forward(const float *x, int n, int c, int hw, const float *gamma, const float *beta,
                   int train, float *run_mean, float *run_var, float *mean, float *invstd,
                   float *y);
/* Training-mode backward (the statistics depend on x). */
void nn_bn_backward(const float *x, int n, int c, int hw, const float *gamma, const float *mean,
                    const float *invstd, const float *dy, float *dgamma, float *dbeta, float *dx);

void nn_relu_forward(const float *x, long long count, float *y);
/* dx += dy where y > 0. */
void nn_relu_backward(const float *y, long long count, const float *dy, float *dx);

/* Max pooling, window = stride = size, output floor(h/size) x floor(w/size); arg receives the
 * index (in x) of each output's maximum. */
void nn_maxpool_forward(const float *x, int n, int c, int h, int w, int size, float *y, int *arg);
void nn_maxpool_backward(int n, int c, int h, int w, int size, const int *arg, const float *dy,
                         float *dx);
/* Average pooling with a kh x kw window (= stride); the global one is kh = h, kw = w. */
void nn_avgpool_forward(const float *x, int n, int c, int h, int w, int kh, int kw, float *y);
void nn_avgpool_backward(int n, int c, int h, int w, int kh, int kw, const float *dy, float *dx);

/* y[n][out] = x[n][in] . w[out][in]^T + b. */
void nn_linear_forward(const float *x, int n, int in, int out, const float *w, const float *b,
                       float *y);
void nn_linear_backward(const float *x, int n, int in, int out, const float *w, const float *dy,
                        float *dw, float *db, float *dx);

/* Mean softmax cross-entropy of logits [n][classes] against labels; dlogits (may be NULL)
 * receives (overwritten) d mean-loss / d logits; correct (may be NULL) the number of rows whose
 * arg max is the label. */
double nn_softmax_ce(const float *logits, int n, int classes, const unsigned char *labels,
                     float *dlogits, int *correct);

#endif
