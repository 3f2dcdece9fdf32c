/* Reference of "typed_cuda": y[i] = alpha * x[n-1-idx[i]] + shift + a in double (see cuda.cu).
 * The ABI words (kernels/README.md): p[0] n, p[1] a (a double's bits), then the scalars: p[2]
 * alpha (an f32 scalar's value as a double's bits), p[3] shift. */
#include <stdint.h>
#include <string.h>

int ktune_reference(float *const *b, const long long *p);

int ktune_reference(float *const *b, const long long *p)
{
    double *y = (double *)b[0];
    const double *x = (const double *)b[1];
    const int32_t *idx = (const int32_t *)b[2];
    long long n = p[0], shift = p[3];
    double a, alpha_word;
    memcpy(&a, &p[1], sizeof a);
    memcpy(&alpha_word, &p[2], sizeof alpha_word);
    double alpha = (double)(float)alpha_word; /* the kernel takes it as a float */
    for (long long i = 0; i < n; i++) {
        long long j = idx[i];
        if (j < 0 || j >= n)
            j = 0;
        /* the product rounded on its own; the GPU may fuse it into the add: the tolerance covers
         * that */
        volatile double t = alpha * x[n - 1 - j];
        y[i] = t + (double)(int)shift + a;
    }
    return 0;
}
