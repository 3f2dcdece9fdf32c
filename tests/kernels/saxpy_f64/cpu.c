/* saxpy_f64 (tests/kernels, issue 27): the function a Kernel Tuner user writes, natural signature,
 * compiled unchanged with the configuration as -D defines; ktune generates the ktune_kernel call.
 * y[i] = alpha * x[idx[i]] + 1. NT: OpenMP threads (the runner sets them); UNROLL: iterations per
 * step; FLIP = 1 computes y[0] wrong on purpose (verification against the default catches it). */
#include <stdint.h>

void saxpy(double *y, const double *x, const int32_t *idx, double alpha, int n)
{
    int steps = n / UNROLL;
#pragma omp parallel for schedule(static)
    for (int s = 0; s < steps; s++)
        for (int u = 0; u < UNROLL; u++) {
            int i = s * UNROLL + u;
            y[i] = alpha * x[idx[i]] + 1.0;
        }
    for (int i = steps * UNROLL; i < n; i++)
        y[i] = alpha * x[idx[i]] + 1.0;
#if FLIP
    y[0] += 0.5;
#endif
}
