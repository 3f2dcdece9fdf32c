/* neural/nn_norm — batch normalisation (nn_ops.h): statistics per channel over the batch and the
 * spatial positions, accumulated in double. */
#include <math.h>

#include "neural/nn_ops.h"

#define NN_BN_MOMENTUM 0.1

void nn_bn_forward(const float *x, int n, int c, int hw, const float *gamma, const float *beta,
                   int train, float *run_mean, float *run_var, float *mean, float *invstd, float *y)
{
    long long m = (long long)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double mu, var;
        if (train) {
            double s = 0, s2 = 0;
            for (int i = 0; i < n; i++) {
                const float *p = x + ((long long)i * c + ch) * hw;
                for (int j = 0; j < hw; j++)
                    s += p[j];
            }
            mu = s / (double)m;
            for (int i = 0; i < n; i++) {
                const float *p = x + ((long long)i * c + ch) * hw;
                for (int j = 0; j < hw; j++)
                    s2 += (p[j] - mu) * (p[j] - mu);
            }
            var = s2 / (double)m;
            run_mean[ch] = (float)((1 - NN_BN_MOMENTUM) * run_mean[ch] + NN_BN_MOMENTUM * mu);
            double unbiased = m > 1 ? var * (double)m / (double)(m - 1) : var;
            run_var[ch] = (float)((1 - NN_BN_MOMENTUM) * run_var[ch] + NN_BN_MOMENTUM * unbiased);
        } else {
            mu = run_mean[ch];
            var = run_var[ch];
        }
        double is = 1.0 / sqrt(var + NN_BN_EPS);
        mean[ch] = (float)mu;
        invstd[ch] = (float)is;
        for (int i = 0; i < n; i++) {
            const float *p = x + ((long long)i * c + ch) * hw;
            float *q = y + ((long long)i * c + ch) * hw;
            for (int j = 0; j < hw; j++)
                q[j] = (float)(gamma[ch] * ((p[j] - mu) * is) + beta[ch]);
        }
    }
}

void nn_bn_backward(const float *x, int n, int c, int hw, const float *gamma, const float *mean,
                    const float *invstd, const float *dy, float *dgamma, float *dbeta, float *dx)
{
    long long m = (long long)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double sdy = 0, sdyx = 0, mu = mean[ch], is = invstd[ch];
        for (int i = 0; i < n; i++) {
            const float *p = x + ((long long)i * c + ch) * hw;
            const float *g = dy + ((long long)i * c + ch) * hw;
            for (int j = 0; j < hw; j++) {
                sdy += g[j];
                sdyx += g[j] * ((p[j] - mu) * is);
            }
        }
        dgamma[ch] += (float)sdyx;
        dbeta[ch] += (float)sdy;
        if (!dx)
            continue;
        /* dx = gamma * is / m * (m * dy - sum(dy) - xhat * sum(dy * xhat)) */
        double k = gamma[ch] * is / (double)m;
        for (int i = 0; i < n; i++) {
            const float *p = x + ((long long)i * c + ch) * hw;
            const float *g = dy + ((long long)i * c + ch) * hw;
            float *q = dx + ((long long)i * c + ch) * hw;
            for (int j = 0; j < hw; j++)
                q[j] += (float)(k * ((double)m * g[j] - sdy - ((p[j] - mu) * is) * sdyx));
        }
    }
}
