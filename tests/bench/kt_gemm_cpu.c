/* The catalog's CPU gemm (kernels/gemm/cpu.c) in Kernel Tuner's calling convention, for
 * bench_vs_kernel_tuner.py: the same kernel code, compiled by Kernel Tuner's C backend, and by the
 * bench itself to re-measure both tools' bests side by side.
 *
 * Kernel Tuner's C backend calls one C function with its tuning parameters prepended as #define
 * lines (cpu.c's #ifndef defaults then yield to them, as they yield to ktune's -D flags), its
 * numpy arrays as pointers and its numpy scalars by value, and takes the function's float return
 * value as the time of that call in milliseconds; it calls it once to verify and 7 times to time
 * (the mean is its "time"). kt_gemm times one call of ktune_kernel, the catalog's entry point
 * (buffers A, B, C; problem M, N, K), with CLOCK_MONOTONIC, as ktune-runner brackets each timed
 * call. The include path is the source tree's root (the bench passes -I).
 *
 * Kernel Tuner wraps a ".c" source in extern "C" { } unless its text names extern "C"; the guard
 * below names it, so the file stays C (gnu11, as ktune compiles it) for a C compiler. */
#ifdef __cplusplus
extern "C" {
#endif

#include <math.h>
#include <time.h>

#include "kernels/gemm/cpu.c"

/* The time of one call in ms; NAN when the kernel reports a failure (a non-zero return). */
float kt_gemm(float *A, float *B, float *C, int M, int N, int K)
{
    float *buffers[3] = {A, B, C};
    long long problem[3] = {M, N, K};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ktune_kernel(buffers, problem);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    return rc == 0 ? (float)ms : NAN;
}

#ifdef __cplusplus
}
#endif
