/* Test kernel "hang": spins forever on a volatile flag that nothing clears, so the compiler cannot
 * remove the loop. The runner never replies; the backend kills it. */
int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    volatile int spinning = 1;
    (void)buffers;
    (void)problem;
    while (spinning) {
    }
    return 0;
}
