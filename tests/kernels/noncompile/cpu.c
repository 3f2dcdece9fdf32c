/* Test kernel "noncompile": y = 2*x, but BROKEN=1 puts a syntax error in the source. */
#ifndef BROKEN
#define BROKEN 0
#endif

int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *x = buffers[0];
    float *y = buffers[1];
    for (long long i = 0; i < problem[0]; i++)
#if BROKEN
        y[i] = 2.0f * x[i] + ;
#else
        y[i] = 2.0f * x[i];
#endif
    return 0;
}
