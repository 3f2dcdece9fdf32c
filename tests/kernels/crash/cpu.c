/* Test kernel "crash": stores through a NULL pointer, so the process running it dies by SIGSEGV.
 * Both the pointer and the store are volatile: the compiler can neither see the NULL (and turn the
 * store into a trap) nor drop the store. */
int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    volatile float *volatile nowhere = 0;
    (void)buffers;
    *nowhere = (float)problem[0];
    return 0;
}
