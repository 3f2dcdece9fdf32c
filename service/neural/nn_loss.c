/* neural/nn_loss — softmax cross-entropy, mean over the batch (nn_ops.h). */
#include <math.h>

#include "neural/nn_ops.h"

double nn_softmax_ce(const float *logits, int n, int classes, const unsigned char *labels,
                     float *dlogits, int *correct)
{
    double total = 0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (long long)i * classes;
        int best = 0;
        double mx = z[0], s = 0;
        for (int k = 1; k < classes; k++) {
            if (z[k] > mx)
                mx = z[k];
            if (z[k] > z[best])
                best = k;
        }
        for (int k = 0; k < classes; k++)
            s += exp(z[k] - mx);
        int y = labels[i] < classes ? labels[i] : 0;
        total += log(s) - (z[y] - mx);
        right += best == y;
        if (dlogits)
            for (int k = 0; k < classes; k++)
                dlogits[(long long)i * classes + k] =
                    (float)((exp(z[k] - mx) / s - (k == y)) / (double)n);
    }
    if (correct)
        *correct = right;
    return n > 0 ? total / n : 0.0;
}
