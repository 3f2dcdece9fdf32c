/* Test kernel "typed_cuda" (CUDA, issue 27): the argument packing of runner/cuda_args.h end to end.
 * y[i] = alpha * x[n-1-idx[i]] + shift + a in double, where x is f64, idx i32 (iota: reversed x),
 * alpha an f32 scalar, shift an i32 scalar, and a a float problem argument (a double in the ABI).
 *
 * Parameters (-D defines): BLOCK threads per block. Launch: block = (BLOCK, 1, 1),
 * grid = (ceil(n / BLOCK), 1, 1), no shared memory. */

#ifndef BLOCK
#define BLOCK 128
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
    typed_kernel(double *y, const double *x, const int *idx, long long n, double a, float alpha,
                 int shift)
{
    const long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n)
        return;
    long long j = idx[i];
    if (j < 0 || j >= n)
        j = 0;
    y[i] = (double)alpha * x[n - 1 - j] + (double)shift + a;
}
