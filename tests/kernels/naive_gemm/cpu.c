/* Test kernel "naive_gemm": C = A*B (row-major, A M×K, B K×N) by triple loop; LOOP_ORDER 0 is i-j-k
 * (dot products), 1 is i-k-j (rows of B streamed). */
#ifndef LOOP_ORDER
#define LOOP_ORDER 0
#endif

int ktune_kernel(float *const *buffers, const long long *problem);

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *a = buffers[0], *b = buffers[1];
    float *c = buffers[2];
    long long m = problem[0], n = problem[1], k = problem[2];
#if LOOP_ORDER == 0
    for (long long i = 0; i < m; i++)
        for (long long j = 0; j < n; j++) {
            float acc = 0.0f;
            for (long long p = 0; p < k; p++)
                acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
#else
    for (long long i = 0; i < m; i++) {
        for (long long j = 0; j < n; j++)
            c[i * n + j] = 0.0f;
        for (long long p = 0; p < k; p++) {
            float aip = a[i * k + p];
            for (long long j = 0; j < n; j++)
                c[i * n + j] += aip * b[p * n + j];
        }
    }
#endif
    return 0;
}
