#include "learn/adam.h"

#include <math.h>
#include <stdlib.h>

int learn_adam_init(learn_adam *a, size_t n, double lr)
{
    *a = (learn_adam){.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .n = n};
    a->m = calloc(n ? n : 1, sizeof *a->m);
    a->v = calloc(n ? n : 1, sizeof *a->v);
    if (!a->m || !a->v) {
        learn_adam_release(a);
        return -1;
    }
    return 0;
}

void learn_adam_step(learn_adam *a, double *params, const double *grads)
{
    double scale = 1.0;
    if (a->clip > 0) {
        double norm2 = 0;
        for (size_t i = 0; i < a->n; i++)
            if (isfinite(grads[i]))
                norm2 += grads[i] * grads[i];
        double norm = sqrt(norm2);
        if (norm > a->clip)
            scale = a->clip / norm;
    }
    a->step++;
    double c1 = 1.0 - pow(a->beta1, (double)a->step);
    double c2 = 1.0 - pow(a->beta2, (double)a->step);
    for (size_t i = 0; i < a->n; i++) {
        double g = grads[i] * scale;
        if (!isfinite(g))
            continue; /* one bad gradient must not poison the weights */
        a->m[i] = a->beta1 * a->m[i] + (1.0 - a->beta1) * g;
        a->v[i] = a->beta2 * a->v[i] + (1.0 - a->beta2) * g * g;
        params[i] -= a->lr * (a->m[i] / c1) / (sqrt(a->v[i] / c2) + a->eps);
    }
}

void learn_adam_release(learn_adam *a)
{
    free(a->m);
    free(a->v);
    a->m = a->v = NULL;
    a->n = 0;
}
