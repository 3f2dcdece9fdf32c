/* learn/attention — dot-product attention, forward and backward (see attention.h). */
#include "learn/attention.h"

#include <cblas.h>
#include <math.h>

void learn_attention_forward(const double *keys, int S, int H, const double *q, double *alpha,
                             double *ctx)
{
    /* score = K q, then a stable softmax in place */
    cblas_dgemv(CblasRowMajor, CblasNoTrans, S, H, 1.0, keys, H, q, 1, 0.0, alpha, 1);
    double mx = alpha[0], sum = 0.0;
    for (int i = 1; i < S; i++)
        mx = alpha[i] > mx ? alpha[i] : mx;
    for (int i = 0; i < S; i++) {
        alpha[i] = exp(alpha[i] - mx);
        sum += alpha[i];
    }
    for (int i = 0; i < S; i++)
        alpha[i] /= sum;
    /* ctx = K^T alpha */
    cblas_dgemv(CblasRowMajor, CblasTrans, S, H, 1.0, keys, H, alpha, 1, 0.0, ctx, 1);
}

void learn_attention_backward(const double *keys, int S, int H, const double *q,
                              const double *alpha, const double *d_ctx, double *d_keys, double *d_q,
                              double *scratch)
{
    /* d_alpha_i = keys_i . d_ctx; d_score_i = alpha_i (d_alpha_i - sum_j alpha_j d_alpha_j) */
    double *ds = scratch;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, S, H, 1.0, keys, H, d_ctx, 1, 0.0, ds, 1);
    double dot = 0.0;
    for (int i = 0; i < S; i++)
        dot += alpha[i] * ds[i];
    for (int i = 0; i < S; i++)
        ds[i] = alpha[i] * (ds[i] - dot);
    if (d_keys) {
        /* through ctx: d_keys_i += alpha_i d_ctx; through the score: d_keys_i += ds_i q */
        cblas_dger(CblasRowMajor, S, H, 1.0, alpha, 1, d_ctx, 1, d_keys, H);
        cblas_dger(CblasRowMajor, S, H, 1.0, ds, 1, q, 1, d_keys, H);
    }
    if (d_q) /* d_q += K^T ds */
        cblas_dgemv(CblasRowMajor, CblasTrans, S, H, 1.0, keys, H, ds, 1, 1.0, d_q, 1);
}
