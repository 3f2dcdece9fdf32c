/* neural/nn_linear — fully connected layer with bias on cblas (nn_ops.h). */
#include <cblas.h>

#include "neural/nn_ops.h"

void nn_linear_forward(const float *x, int n, int in, int out, const float *w, const float *b,
                       float *y)
{
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++)
            y[(long long)i * out + o] = b[o];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 1.0f, y,
                out);
}

void nn_linear_backward(const float *x, int n, int in, int out, const float *w, const float *dy,
                        float *dw, float *db, float *dx)
{
    /* dW[out][in] += dy^T . x; db += sum of dy rows; dx[n][in] += dy . W */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw,
                in);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++)
            db[o] += dy[(long long)i * out + o];
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in,
                    1.0f, dx, in);
}
