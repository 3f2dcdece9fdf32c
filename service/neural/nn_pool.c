/* neural/nn_pool — max and average pooling, window = stride, remainder rows and columns dropped
 * (nn_ops.h). */
#include "neural/nn_ops.h"

void nn_maxpool_forward(const float *x, int n, int c, int h, int w, int size, float *y, int *arg)
{
    int oh = h / size, ow = w / size;
    for (long long p = 0; p < (long long)n * c; p++) {
        const float *xp = x + p * h * w;
        float *yp = y + p * oh * ow;
        int *ap = arg + p * oh * ow;
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                int best = i * size * w + j * size;
                for (int a = 0; a < size; a++)
                    for (int b = 0; b < size; b++) {
                        int at = (i * size + a) * w + j * size + b;
                        if (xp[at] > xp[best])
                            best = at;
                    }
                yp[i * ow + j] = xp[best];
                ap[i * ow + j] = best;
            }
    }
}

void nn_maxpool_backward(int n, int c, int h, int w, int size, const int *arg, const float *dy,
                         float *dx)
{
    int oh = h / size, ow = w / size;
    for (long long p = 0; p < (long long)n * c; p++)
        for (int o = 0; o < oh * ow; o++)
            dx[p * h * w + arg[p * oh * ow + o]] += dy[p * oh * ow + o];
}

void nn_avgpool_forward(const float *x, int n, int c, int h, int w, int kh, int kw, float *y)
{
    int oh = h / kh, ow = w / kw;
    double inv = 1.0 / ((double)kh * kw);
    for (long long p = 0; p < (long long)n * c; p++) {
        const float *xp = x + p * h * w;
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                double s = 0;
                for (int a = 0; a < kh; a++)
                    for (int b = 0; b < kw; b++)
                        s += xp[(i * kh + a) * w + j * kw + b];
                y[p * oh * ow + i * ow + j] = (float)(s * inv);
            }
    }
}

void nn_avgpool_backward(int n, int c, int h, int w, int kh, int kw, const float *dy, float *dx)
{
    int oh = h / kh, ow = w / kw;
    float inv = 1.0f / (float)(kh * kw);
    for (long long p = 0; p < (long long)n * c; p++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                float g = dy[p * oh * ow + i * ow + j] * inv;
                for (int a = 0; a < kh; a++)
                    for (int b = 0; b < kw; b++)
                        dx[p * h * w + (i * kh + a) * w + j * kw + b] += g;
            }
}
