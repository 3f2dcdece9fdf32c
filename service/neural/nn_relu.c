/* neural/nn_relu — the rectifier (nn_ops.h). */
#include "neural/nn_ops.h"

void nn_relu_forward(const float *x, long long count, float *y)
{
    for (long long i = 0; i < count; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void nn_relu_backward(const float *y, long long count, const float *dy, float *dx)
{
    for (long long i = 0; i < count; i++)
        if (y[i] > 0.0f)
            dx[i] += dy[i];
}
