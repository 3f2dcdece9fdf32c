/* Test kernel "scale": y = 2*x, unrolled UNROLL times; correct for every configuration. */
#ifndef UNROLL
#define UNROLL 1
#endif

int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *x = buffers[0];
    float *y = buffers[1];
    long long n = problem[0], i = 0;
    for (; i + UNROLL <= n; i += UNROLL)
        for (int u = 0; u < UNROLL; u++)
            y[i + u] = 2.0f * x[i + u];
    for (; i < n; i++)
        y[i] = 2.0f * x[i];
    return 0;
}
