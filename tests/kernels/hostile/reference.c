/* Reference of the test kernel hostile: y = 2*x. */
int ktune_reference(float *const *buffers, const long long *problem);

int ktune_reference(float *const *buffers, const long long *problem)
{
    const float *x = buffers[0];
    float *y = buffers[1];
    for (long long i = 0; i < problem[0]; i++)
        y[i] = 2.0f * x[i];
    return 0;
}
