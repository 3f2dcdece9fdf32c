/* gemm_tiled (CUDA): fp32 C = A·B, row-major (A is M×K, B is K×N, C is M×N), with the TVM-style
 * tiling of the G-BFS / N-A2C GEMM space: every dimension is split into factors whose product is
 * the dimension (m0*m1*m2*m3 == M, n0*n1*n2*n3 == N, k0*k1 == K, enforced by the restrictions).
 *
 * Parameters (-D defines), each a power of two 1 .. 4096:
 *   m0  thread blocks along M (grid.y)
 *   m1  virtual threads along M: the block's BM = m1*m2*m3 rows are m1 sub-tiles of m2*m3 rows, and
 *       every thread works in each of them (strided by m2*m3 rows, as TVM's vthread)
 *   m2  threads along M (block.y)
 *   m3  consecutive rows per thread within a sub-tile (the inner, register-blocked extent)
 *   n0, n1, n2, n3  the same for N: blocks (grid.x), virtual threads, threads (block.x), inner
 *   k0  outer steps over K
 *   k1  depth of one step: the block stages A[BM×k1] (transposed) and B[k1×BN] in shared memory
 *
 * Thread (tx, ty) of block (bx, by) owns the m1*m3 × n1*n3 elements of C at
 *   row = by*BM + v*(m2*m3) + ty*m3 + i   (v < m1, i < m3)
 *   col = bx*BN + w*(n2*n3) + tx*n3 + j   (w < n1, j < n3)
 * which cover the BM×BN block tile exactly once. Loads and stores are bounds-checked, so a grid
 * that overhangs M or N (not possible under the restrictions) stays in bounds.
 *
 * Launch: block = (n2, m2, 1), grid = (n0, m0, 1), dynamic shared memory 4*k1*(m1*m2*m3 + n1*n2*n3)
 * bytes. */

#ifndef m0
#define m0 1
#endif
#ifndef m1
#define m1 1
#endif
#ifndef m2
#define m2 16
#endif
#ifndef m3
#define m3 4
#endif
#ifndef n0
#define n0 1
#endif
#ifndef n1
#define n1 1
#endif
#ifndef n2
#define n2 16
#endif
#ifndef n3
#define n3 4
#endif
#ifndef k0
#define k0 1
#endif
#ifndef k1
#define k1 16
#endif

#define GT_BM      ((m1) * (m2) * (m3)) /* rows of C per block */
#define GT_BN      ((n1) * (n2) * (n3)) /* columns of C per block */
#define GT_THREADS ((m2) * (n2))

static_assert(m0 >= 1 && m1 >= 1 && m2 >= 1 && m3 >= 1, "m factors must be >= 1");
static_assert(n0 >= 1 && n1 >= 1 && n2 >= 1 && n3 >= 1, "n factors must be >= 1");
static_assert(k0 >= 1 && k1 >= 1, "k factors must be >= 1");

extern "C" __global__ void __launch_bounds__(GT_THREADS)
    gemm_tiled_kernel(float *A, float *B, float *C, long long M, long long N, long long K)
{
    extern __shared__ float4 kt_smem[];
    float *const as = reinterpret_cast<float *>(kt_smem); /* [k1][GT_BM]: A transposed */
    float *const bs = as + k1 * GT_BM;                    /* [k1][GT_BN] */

    const int tx = threadIdx.x; /* 0 .. n2-1 */
    const int ty = threadIdx.y; /* 0 .. m2-1 */
    const int tid = ty * n2 + tx;
    const long long row0 = (long long)blockIdx.y * GT_BM;
    const long long col0 = (long long)blockIdx.x * GT_BN;

    float acc[m1][m3][n1][n3];
#pragma unroll
    for (int v = 0; v < m1; v++)
#pragma unroll
        for (int i = 0; i < m3; i++)
#pragma unroll
            for (int w = 0; w < n1; w++)
#pragma unroll
                for (int j = 0; j < n3; j++)
                    acc[v][i][w][j] = 0.0f;

    const long long steps = (K + k1 - 1) / k1; /* == k0 under the restrictions */
    for (long long s = 0; s < steps; s++) {
        const long long kb = s * k1;
        __syncthreads(); /* the previous step's reads of as and bs are done */
        for (int e = tid; e < GT_BM * k1; e += GT_THREADS) {
            const int r = e / k1, kk = e % k1;
            const long long gr = row0 + r, gk = kb + kk;
            as[kk * GT_BM + r] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
        for (int e = tid; e < k1 * GT_BN; e += GT_THREADS) {
            const int kk = e / GT_BN, c = e % GT_BN;
            const long long gk = kb + kk, gc = col0 + c;
            bs[kk * GT_BN + c] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        __syncthreads(); /* the step's tiles are in shared memory */
#pragma unroll 4
        for (int kk = 0; kk < k1; kk++) {
            float a[m1][m3], b[n1][n3];
#pragma unroll
            for (int v = 0; v < m1; v++)
#pragma unroll
                for (int i = 0; i < m3; i++)
                    a[v][i] = as[kk * GT_BM + v * (m2 * m3) + ty * m3 + i];
#pragma unroll
            for (int w = 0; w < n1; w++)
#pragma unroll
                for (int j = 0; j < n3; j++)
                    b[w][j] = bs[kk * GT_BN + w * (n2 * n3) + tx * n3 + j];
#pragma unroll
            for (int v = 0; v < m1; v++)
#pragma unroll
                for (int i = 0; i < m3; i++)
#pragma unroll
                    for (int w = 0; w < n1; w++)
#pragma unroll
                        for (int j = 0; j < n3; j++)
                            acc[v][i][w][j] = fmaf(a[v][i], b[w][j], acc[v][i][w][j]);
        }
    }

#pragma unroll
    for (int v = 0; v < m1; v++)
#pragma unroll
        for (int i = 0; i < m3; i++) {
            const long long gr = row0 + v * (m2 * m3) + ty * m3 + i;
            if (gr >= M)
                continue;
#pragma unroll
            for (int w = 0; w < n1; w++)
#pragma unroll
                for (int j = 0; j < n3; j++) {
                    const long long gc = col0 + w * (n2 * n3) + tx * n3 + j;
                    if (gc < N)
                        C[gr * N + gc] = acc[v][i][w][j];
                }
        }
}
