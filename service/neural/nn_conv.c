/* neural/nn_conv — convolution with a neural transformation (nn_ops.h): im2col of one image, then
 * one cblas_sgemm per block of output channels that read the same input channels over the same
 * output columns. The blocks follow nn_transform.h: s = 0 the groups, s = 1 the bands of output
 * rows (all channels, the band's input channels), s = 2 the runs of 16/g consecutive channels of
 * each group inside each unroll window of 16, s = 3 the groups of each half. Which input channels
 * and which weights a block uses come from nn_transform_inputs / nn_transform_weight_offset. */
#include <cblas.h>
#include <string.h>

#include "neural/nn_ops.h"

typedef struct conv_block {
    int k0, nk;       /* output channels [k0, k0 + nk) */
    int first, count; /* input channels */
    int col0, col1;   /* output columns (y * Q + x) */
} conv_block;

int nn_conv_out_h(const nn_conv_dims *d)
{
    return d->H + 2 * d->pad - d->R + 1;
}

int nn_conv_out_w(const nn_conv_dims *d)
{
    return d->W + 2 * d->pad - d->S + 1;
}

long long nn_conv_col_size(const nn_conv_dims *d)
{
    return (long long)d->C * d->R * d->S * nn_conv_out_h(d) * nn_conv_out_w(d);
}

static void block_set(const nn_conv_dims *d, int k0, int nk, int y0, int y1, conv_block *b)
{
    int P = nn_conv_out_h(d), Q = nn_conv_out_w(d);
    b->k0 = k0;
    b->nk = nk;
    nn_transform_inputs(&d->t, d->C, d->K, P, k0, y0, &b->first, &b->count);
    b->col0 = y0 * Q;
    b->col1 = y1 * Q;
}

/* The i-th block, 0 <= i < conv_block_count. */
static int conv_block_count(const nn_conv_dims *d)
{
    int g = d->t.groups, Kp = nn_transform_out_channels(&d->t, d->K);
    switch (d->t.seq) {
    case 0:
    case 1:
        return g;
    case 2:
        return g * (Kp / NN_UNROLL);
    default:
        return 3 * g;
    }
}

static void conv_block_at(const nn_conv_dims *d, int i, conv_block *b)
{
    int g = d->t.groups, Kp = nn_transform_out_channels(&d->t, d->K), P = nn_conv_out_h(d);
    switch (d->t.seq) {
    case 0:
        block_set(d, i * (Kp / g), Kp / g, 0, P, b);
        break;
    case 1: /* rows y with y*g/P == i */
        block_set(d, 0, Kp, (i * P + g - 1) / g, ((i + 1) * P + g - 1) / g, b);
        break;
    case 2: {
        int run = NN_UNROLL / g, window = i / g, grp = i % g;
        block_set(d, window * NN_UNROLL + grp * run, run, 0, P, b);
        break;
    }
    default:
        if (i < g)
            block_set(d, i * (Kp / 2 / g), Kp / 2 / g, 0, P, b);
        else
            block_set(d, Kp / 2 + (i - g) * (Kp / 2 / (2 * g)), Kp / 2 / (2 * g), 0, P, b);
        break;
    }
}

static void im2col(const nn_conv_dims *d, const float *x, float *col)
{
    int P = nn_conv_out_h(d), Q = nn_conv_out_w(d);
    for (int c = 0; c < d->C; c++)
        for (int r = 0; r < d->R; r++)
            for (int s = 0; s < d->S; s++) {
                float *row = col + ((long long)(c * d->R + r) * d->S + s) * P * Q;
                const float *xc = x + (long long)c * d->H * d->W;
                for (int y = 0; y < P; y++) {
                    int iy = y + r - d->pad;
                    float *out = row + (long long)y * Q;
                    if (iy < 0 || iy >= d->H) {
                        memset(out, 0, sizeof(float) * (size_t)Q);
                        continue;
                    }
                    for (int xx = 0; xx < Q; xx++) {
                        int ix = xx + s - d->pad;
                        out[xx] = ix >= 0 && ix < d->W ? xc[iy * d->W + ix] : 0.0f;
                    }
                }
            }
}

static void col2im_add(const nn_conv_dims *d, const float *col, float *dx)
{
    int P = nn_conv_out_h(d), Q = nn_conv_out_w(d);
    for (int c = 0; c < d->C; c++)
        for (int r = 0; r < d->R; r++)
            for (int s = 0; s < d->S; s++) {
                const float *row = col + ((long long)(c * d->R + r) * d->S + s) * P * Q;
                float *xc = dx + (long long)c * d->H * d->W;
                for (int y = 0; y < P; y++) {
                    int iy = y + r - d->pad;
                    if (iy < 0 || iy >= d->H)
                        continue;
                    for (int xx = 0; xx < Q; xx++) {
                        int ix = xx + s - d->pad;
                        if (ix >= 0 && ix < d->W)
                            xc[iy * d->W + ix] += row[(long long)y * Q + xx];
                    }
                }
            }
}

void nn_conv_forward(const nn_conv_dims *d, const float *x, int n, const float *w, float *y,
                     float *col)
{
    int P = nn_conv_out_h(d), Q = nn_conv_out_w(d), PQ = P * Q, RS = d->R * d->S;
    int Kp = nn_transform_out_channels(&d->t, d->K), nb = conv_block_count(d);
    for (int img = 0; img < n; img++) {
        const float *xi = x + (long long)img * d->C * d->H * d->W;
        float *yi = y + (long long)img * Kp * PQ;
        im2col(d, xi, col);
        for (int i = 0; i < nb; i++) {
            conv_block b;
            conv_block_at(d, i, &b);
            const float *wb = w + nn_transform_weight_offset(&d->t, d->C, d->K, d->R, d->S, b.k0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b.nk, b.col1 - b.col0,
                        b.count * RS, 1.0f, wb, b.count * RS,
                        col + (long long)b.first * RS * PQ + b.col0, PQ, 0.0f,
                        yi + (long long)b.k0 * PQ + b.col0, PQ);
        }
    }
}

void nn_conv_backward(const nn_conv_dims *d, const float *x, int n, const float *w, const float *dy,
                      float *dw, float *dx, float *col, float *dcol)
{
    int P = nn_conv_out_h(d), Q = nn_conv_out_w(d), PQ = P * Q, RS = d->R * d->S;
    int Kp = nn_transform_out_channels(&d->t, d->K), nb = conv_block_count(d);
    for (int img = 0; img < n; img++) {
        const float *xi = x + (long long)img * d->C * d->H * d->W;
        const float *dyi = dy + (long long)img * Kp * PQ;
        im2col(d, xi, col);
        if (dx)
            memset(dcol, 0, sizeof(float) * (size_t)nn_conv_col_size(d));
        for (int i = 0; i < nb; i++) {
            conv_block b;
            conv_block_at(d, i, &b);
            long long off = nn_transform_weight_offset(&d->t, d->C, d->K, d->R, d->S, b.k0);
            int cols = b.col1 - b.col0, kk = b.count * RS;
            const float *dyb = dyi + (long long)b.k0 * PQ + b.col0;
            /* dW[nk][kk] += dY[nk][cols] . col[kk][cols]^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b.nk, kk, cols, 1.0f, dyb, PQ,
                        col + (long long)b.first * RS * PQ + b.col0, PQ, 1.0f, dw + off, kk);
            /* dcol[kk][cols] += W[nk][kk]^T . dY[nk][cols] */
            if (dx)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kk, cols, b.nk, 1.0f, w + off,
                            kk, dyb, PQ, 1.0f, dcol + (long long)b.first * RS * PQ + b.col0, PQ);
        }
        if (dx)
            col2im_add(d, dcol, dx + (long long)img * d->C * d->H * d->W);
    }
}
