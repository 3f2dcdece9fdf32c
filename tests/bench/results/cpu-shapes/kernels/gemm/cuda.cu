/* gemm (CUDA): fp32 C = A·B, row-major (A is M×K, B is K×N, C is M×N), any M, N, K >= 1.
 *
 * Each block computes a BM×BN tile of C; its (BN/TN)×(BM/TM) threads each own TM×TN elements of
 * that tile, strided so that neighbouring threads own neighbouring columns (conflict-free shared
 * reads, coalesced stores): thread (tx, ty) owns rows ty + i*(BM/TM), i < TM, and columns
 * tx + j*(BN/TN), j < TN. K is walked in BK-deep steps: every thread loads its share of the A tile
 * (BM×BK) and the B tile (BK×BN) into registers, stores them into shared memory (A transposed, so
 * that the inner product reads a column of A as a contiguous row), and the block multiplies the
 * tiles out of shared memory. Out-of-range elements (edges of M, N, K) load as 0 and are not
 * stored.
 *
 * Launch: block = (BN/TN, BM/TM, 1), grid = (ceil(N/BN), ceil(M/BM), 1), dynamic shared memory
 * 4*(1+DBUF)*BK*(BM+BN+2*PAD) bytes.
 *
 * Parameters (-D defines):
 *   BM, BN  rows and columns of C per block (the block tile)
 *   BK      depth of the K step staged in shared memory
 *   TM, TN  rows and columns of C per thread (the thread tile, kept in registers)
 *   VEC     floats per global load (1, 2 or 4: float, float2, float4). A vector load is used only
 *           where it is aligned and in range: for A when K % VEC == 0, for B when N % VEC == 0
 *           (tile offsets are multiples of VEC because BK and BN are); other loads are scalar.
 *   PAD     floats of padding per shared-memory row (bank-conflict avoidance)
 *   DBUF    1: two shared-memory stages: the next step's tiles are loaded from global memory into
 *           registers before the current step is multiplied and stored into the other stage after
 *           it, one barrier per step; 0: one stage, load, barrier, multiply, barrier. */

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef DBUF
#define DBUF 1
#endif

#define GEMM_THREADS (((BM) / (TM)) * ((BN) / (TN)))
#define GEMM_STAGES  ((DBUF) ? 2 : 1)
#define GEMM_LDA     ((BM) + (PAD))                                    /* shared A: [BK][BM+PAD] */
#define GEMM_LDB     ((BN) + (PAD))                                    /* shared B: [BK][BN+PAD] */
#define GEMM_A_VECS  ((BM) * (BK) / (VEC))                             /* vectors in an A tile */
#define GEMM_B_VECS  ((BK) * (BN) / (VEC))                             /* vectors in a B tile */
#define GEMM_A_LOADS ((GEMM_A_VECS + GEMM_THREADS - 1) / GEMM_THREADS) /* per thread */
#define GEMM_B_LOADS ((GEMM_B_VECS + GEMM_THREADS - 1) / GEMM_THREADS)

static_assert(BM % TM == 0 && BN % TN == 0, "BM must be a multiple of TM, BN of TN");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(BK % VEC == 0 && BN % VEC == 0, "BK and BN must be multiples of VEC");
static_assert(PAD >= 0 && (DBUF == 0 || DBUF == 1), "PAD >= 0, DBUF 0 or 1");

/* VEC consecutive floats from p (16- or 8-byte aligned when VEC is 4 or 2). */
__device__ __forceinline__ void gemm_load_vec(const float *p, float *dst)
{
    if constexpr (VEC == 4) {
        const float4 v = *reinterpret_cast<const float4 *>(p);
        dst[0] = v.x;
        dst[1] = v.y;
        dst[2] = v.z;
        dst[3] = v.w;
    } else if constexpr (VEC == 2) {
        const float2 v = *reinterpret_cast<const float2 *>(p);
        dst[0] = v.x;
        dst[1] = v.y;
    } else {
        dst[0] = p[0];
    }
}

/* Loads this thread's share of the A and B tiles of the K step starting at k0 into registers. */
__device__ __forceinline__ void gemm_load_tiles(const float *A, const float *B, long long M,
                                                long long N, long long K, long long row0,
                                                long long col0, long long k0, int tid,
                                                float (&a)[GEMM_A_LOADS][VEC],
                                                float (&b)[GEMM_B_LOADS][VEC])
{
    const bool a_vec = (K % VEC) == 0;
    const bool b_vec = (N % VEC) == 0;
#pragma unroll
    for (int l = 0; l < GEMM_A_LOADS; l++) {
        const int v = tid + l * GEMM_THREADS;
        if (v < GEMM_A_VECS) {
            const int r = v / (BK / VEC);         /* tile row (m) */
            const int c = (v % (BK / VEC)) * VEC; /* tile column (k), a multiple of VEC */
            const long long gr = row0 + r, gk = k0 + c;
            if (a_vec && gr < M && gk < K) {
                /* gk and K are multiples of VEC: gk + VEC <= K, and the address is aligned */
                gemm_load_vec(A + gr * K + gk, a[l]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    a[l][j] = (gr < M && gk + j < K) ? A[gr * K + gk + j] : 0.0f;
            }
        }
    }
#pragma unroll
    for (int l = 0; l < GEMM_B_LOADS; l++) {
        const int v = tid + l * GEMM_THREADS;
        if (v < GEMM_B_VECS) {
            const int r = v / (BN / VEC);         /* tile row (k) */
            const int c = (v % (BN / VEC)) * VEC; /* tile column (n), a multiple of VEC */
            const long long gk = k0 + r, gc = col0 + c;
            if (b_vec && gk < K && gc < N) {
                gemm_load_vec(B + gk * N + gc, b[l]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    b[l][j] = (gk < K && gc + j < N) ? B[gk * N + gc + j] : 0.0f;
            }
        }
    }
}

/* Stores the registers loaded by gemm_load_tiles into shared stage (as, bs). */
__device__ __forceinline__ void gemm_store_tiles(float *as, float *bs, int tid,
                                                 const float (&a)[GEMM_A_LOADS][VEC],
                                                 const float (&b)[GEMM_B_LOADS][VEC])
{
#pragma unroll
    for (int l = 0; l < GEMM_A_LOADS; l++) {
        const int v = tid + l * GEMM_THREADS;
        if (v < GEMM_A_VECS) {
            const int r = v / (BK / VEC);
            const int c = (v % (BK / VEC)) * VEC;
#pragma unroll
            for (int j = 0; j < VEC; j++)
                as[(c + j) * GEMM_LDA + r] = a[l][j]; /* transposed: as[k][m] */
        }
    }
#pragma unroll
    for (int l = 0; l < GEMM_B_LOADS; l++) {
        const int v = tid + l * GEMM_THREADS;
        if (v < GEMM_B_VECS) {
            const int r = v / (BN / VEC);
            const int c = (v % (BN / VEC)) * VEC;
#pragma unroll
            for (int j = 0; j < VEC; j++)
                bs[r * GEMM_LDB + c + j] = b[l][j];
        }
    }
}

/* acc += (this thread's rows of as) · (its columns of bs) over the BK-deep stage. */
__device__ __forceinline__ void gemm_multiply(const float *as, const float *bs, int tx, int ty,
                                              float (&acc)[TM][TN])
{
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
        float av[TM], bv[TN];
#pragma unroll
        for (int i = 0; i < TM; i++)
            av[i] = as[kk * GEMM_LDA + ty + i * (BM / TM)];
#pragma unroll
        for (int j = 0; j < TN; j++)
            bv[j] = bs[kk * GEMM_LDB + tx + j * (BN / TN)];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    gemm_kernel(float *A, float *B, float *C, long long M, long long N, long long K)
{
    extern __shared__ float4 kt_smem[]; /* float4: 16-byte aligned */
    float *const as_base = reinterpret_cast<float *>(kt_smem);
    float *const bs_base = as_base + GEMM_STAGES * BK * GEMM_LDA;

    const int tx = threadIdx.x; /* 0 .. BN/TN-1 */
    const int ty = threadIdx.y; /* 0 .. BM/TM-1 */
    const int tid = ty * (BN / TN) + tx;
    const long long row0 = (long long)blockIdx.y * BM;
    const long long col0 = (long long)blockIdx.x * BN;
    const long long steps = (K + BK - 1) / BK;

    float a_reg[GEMM_A_LOADS][VEC];
    float b_reg[GEMM_B_LOADS][VEC];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    /* step 0 into stage 0 */
    gemm_load_tiles(A, B, M, N, K, row0, col0, 0, tid, a_reg, b_reg);
    gemm_store_tiles(as_base, bs_base, tid, a_reg, b_reg);
    __syncthreads();

    for (long long s = 0; s < steps; s++) {
        const bool next = s + 1 < steps; /* the same for every thread: barriers stay uniform */
        if constexpr (DBUF != 0) {
            const int cur = (int)(s & 1);
            /* Stage cur^1 was last read by the multiply of step s-1, which the barrier at its end
             * completed: it may be overwritten now. */
            if (next)
                gemm_load_tiles(A, B, M, N, K, row0, col0, (s + 1) * BK, tid, a_reg, b_reg);
            gemm_multiply(as_base + cur * BK * GEMM_LDA, bs_base + cur * BK * GEMM_LDB, tx, ty,
                          acc);
            if (next)
                gemm_store_tiles(as_base + (cur ^ 1) * BK * GEMM_LDA,
                                 bs_base + (cur ^ 1) * BK * GEMM_LDB, tid, a_reg, b_reg);
            __syncthreads();
        } else {
            gemm_multiply(as_base, bs_base, tx, ty, acc);
            __syncthreads(); /* every thread is done reading the stage */
            if (next) {
                gemm_load_tiles(A, B, M, N, K, row0, col0, (s + 1) * BK, tid, a_reg, b_reg);
                gemm_store_tiles(as_base, bs_base, tid, a_reg, b_reg);
                __syncthreads();
            }
        }
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        const long long gr = row0 + ty + i * (BM / TM);
        if (gr < M) {
#pragma unroll
            for (int j = 0; j < TN; j++) {
                const long long gc = col0 + tx + j * (BN / TN);
                if (gc < N)
                    C[gr * N + gc] = acc[i][j];
            }
        }
    }
}
