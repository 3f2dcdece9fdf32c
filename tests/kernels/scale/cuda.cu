/* Test kernel "scale" (CUDA): y = 2*x, correct for every configuration.
 *
 * Parameters (-D defines):
 *   BLOCK  threads per block (block.x)
 *   ITEMS  elements per thread: thread t of block b handles i = b*BLOCK*ITEMS + t + u*BLOCK,
 *          u < ITEMS (neighbouring threads touch neighbouring elements), i < n only
 *
 * Launch: block = (BLOCK, 1, 1), grid = (ceil(n / (BLOCK*ITEMS)), 1, 1), no shared memory. */

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) scale_kernel(float *x, float *y, long long n)
{
    const long long base = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
#pragma unroll
    for (int u = 0; u < ITEMS; u++) {
        const long long i = base + (long long)u * BLOCK;
        if (i < n)
            y[i] = 2.0f * x[i];
    }
}
