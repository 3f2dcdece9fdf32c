/* Test kernel "wrong": y = 2*x + 1 against a reference of 2*x, so every element fails verification.
 */
int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *x = buffers[0];
    float *y = buffers[1];
    for (long long i = 0; i < problem[0]; i++)
        y[i] = 2.0f * x[i] + 1.0f;
    return 0;
}
