/* gemm (CPU): fp32 C = A·B, row-major (A is M×K, B is K×N, C is M×N), single-threaded, BLIS style.
 *
 * Loops, outer to inner: jc over N in NC-column blocks; pc over K in KC-deep blocks, packing B's
 * KC×NC block into NR-column panels (k-major, zero-padded, 4 KiB-aligned; PACK_B=1) or reading B
 * in place (PACK_B=0: only a last narrower panel is packed); ic over M in MC-row blocks, packing
 * A's MC×KC block into MR-row panels (PACK_A=1) or reading A in place (PACK_A=0); then the
 * macro-kernel walks the MR×NR tiles of the block (order: LOOP) and calls the micro-kernel, which
 * keeps an MR×NR tile of C in MR·NR/VW vector registers (explicit intrinsics: AVX-512 with VW = 16
 * floats, AVX2 + FMA with VW = 8; GCC vectors of 4 floats elsewhere) over the KC-long inner product
 * (per k step: NR/VW vector loads of B, MR broadcasts of A, MR·NR/VW FMAs; UNROLL steps per loop
 * iteration, prefetching the B panel PF_B steps and the A sliver PF_A steps ahead) and then writes
 * (first K block) or adds (later blocks) the tile to C. Edges: M and N tails run on zero-padded
 * panels (A slivers are copied when A is read in place) and are written back element by element; a
 * last K block shorter than KC runs fewer steps.
 *
 * Parameters (-D defines):
 *   MR      rows of the register tile
 *   NR      columns of the register tile, a multiple of the vector width VW (16, 8 or 4 floats)
 *   KC      depth of a packed block (k extent of the A and B panels)
 *   MC      rows of A per block, rounded down to a multiple of MR (at least MR)
 *   NC      columns of B per block, rounded down to a multiple of NR (at least NR)
 *   UNROLL  k steps per iteration of the micro-kernel's inner loop (>= 1)
 *   PF_A    prefetch distance of the A sliver in k steps (0: none)
 *   PF_B    prefetch distance of the B panel in k steps (0: none)
 *   PACK_A  1: pack A into MR-row panels; 0: the micro-kernel broadcasts A in place (row stride K)
 *   PACK_B  1: pack B into NR-column panels; 0: the micro-kernel loads B in place (row stride N)
 *   LOOP    macro-kernel order: 0 = column tiles outer, row tiles inner (a B panel is reused across
 *           the MC/MR row tiles); 1 = row tiles outer, column tiles inner (an A sliver stays in L1
 *           while the KC×NC B block streams from L2) */
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#ifndef MR
#define MR 6
#endif
#ifndef NR
#define NR 64
#endif
#ifndef KC
#define KC 512
#endif
#ifndef MC
#define MC 192
#endif
#ifndef NC
#define NC 512
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef PF_A
#define PF_A 0
#endif
#ifndef PF_B
#define PF_B 0
#endif
#ifndef PACK_A
#define PACK_A 0
#endif
#ifndef PACK_B
#define PACK_B 1
#endif
#ifndef LOOP
#define LOOP 1
#endif

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vreg;
#define V_ZERO()       _mm512_setzero_ps()
#define V_LOAD(p)      _mm512_load_ps(p)
#define V_LOADU(p)     _mm512_loadu_ps(p)
#define V_STOREU(p, v) _mm512_storeu_ps(p, v)
#define V_BCAST(p)     _mm512_set1_ps(*(p))
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ADD(a, b)    _mm512_add_ps(a, b)
#elif defined(__AVX2__) && defined(__FMA__)
#define VW             8
typedef __m256 vreg;
#define V_ZERO()       _mm256_setzero_ps()
#define V_LOAD(p)      _mm256_load_ps(p)
#define V_LOADU(p)     _mm256_loadu_ps(p)
#define V_STOREU(p, v) _mm256_storeu_ps(p, v)
#define V_BCAST(p)     _mm256_broadcast_ss(p)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ADD(a, b)    _mm256_add_ps(a, b)
#else /* any other target: GCC/Clang vectors of 4 floats (SSE, NEON, or scalar code) */
#define VW             4
typedef float vreg __attribute__((vector_size(16), aligned(16)));
typedef float vregu __attribute__((vector_size(16), aligned(4), may_alias));
#define V_ZERO()       ((vreg){0})
#define V_LOAD(p)      (*(const vreg *)(p))
#define V_LOADU(p)     ((vreg)(*(const vregu *)(p)))
#define V_STOREU(p, v) (*(vregu *)(p) = (v))
#define V_BCAST(p)     ((vreg){0} + *(p))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_ADD(a, b)    ((a) + (b))
#endif

#define NV  (NR / VW) /* vectors per row of the register tile */
#define MCE (MC / MR * MR)
#define NCE (NC / NR * NR)

#if MR < 1 || NR < VW || NR % VW != 0 || KC < 1 || MC < MR || NC < NR || UNROLL < 1 || PF_A < 0 || \
    PF_B < 0
#error "gemm: bad MR, NR, KC, MC, NC, UNROLL, PF_A or PF_B (see the parameters above)"
#endif

#if PACK_B
#define B_LOAD V_LOAD /* packed panels are 64-byte aligned */
#else
#define B_LOAD V_LOADU
#endif

static inline long min_l(long a, long b)
{
    return a < b ? a : b;
}

/* One MR-row panel from rows [0, mr) × k [0, kc) of A (row stride lda): p[k*MR + i], rows mr..MR-1
 * zero. */
static void pack_a_panel(const float *restrict a, long lda, long mr, long kc, float *restrict p)
{
    if (mr < MR) {
        for (long k = 0; k < kc; k++) {
            for (long i = 0; i < mr; i++)
                p[k * MR + i] = a[i * lda + k];
            for (long i = mr; i < MR; i++)
                p[k * MR + i] = 0.0f;
        }
        return;
    }
    long k0 = 0;
    for (; k0 + 16 <= kc; k0 += 16) {
#pragma GCC unroll 32
        for (int i = 0; i < MR; i++) {
            const float *src = a + i * lda + k0;
            float *dst = p + k0 * MR + i;
            if (k0 + 64 < kc)
                __builtin_prefetch(src + 64, 0, 3);
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++)
                dst[k * MR] = src[k];
        }
    }
    for (; k0 < kc; k0++)
        for (int i = 0; i < MR; i++)
            p[k0 * MR + i] = a[i * lda + k0];
}

/* One NR-column panel from k [0, kc) × columns [0, nr) of B (row stride ldb): p[k*NR + j], columns
 * nr..NR-1 zero. */
static void pack_b_edge(const float *restrict b, long ldb, long nr, long kc, float *restrict p)
{
    for (long k = 0; k < kc; k++) {
        memcpy(p + k * NR, b + k * ldb, (size_t)nr * sizeof(float));
        memset(p + k * NR + nr, 0, (size_t)(NR - nr) * sizeof(float));
    }
}

/* The kc × nc block of B as ceil(nc/NR) panels of kc×NR floats (panel q at p + q*NR*kc), read row
 * by row so the loads stream; with PACK_B=0 only the last, narrower panel (at p). */
static void pack_b_block(const float *restrict b, long ldb, long nc, long kc, float *restrict p)
{
    long nfull = nc / NR;
#if PACK_B
    for (long k = 0; k < kc; k++) {
        const float *src = b + k * ldb;
        if (k + 4 < kc)
            for (long j = 0; j < nfull * NR; j += 16)
                __builtin_prefetch(src + 4 * ldb + j, 0, 3);
        for (long q = 0; q < nfull; q++)
#pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                V_STOREU(p + q * NR * kc + k * NR + v * VW, V_LOADU(src + q * NR + v * VW));
    }
    if (nfull * NR < nc)
        pack_b_edge(b + nfull * NR, ldb, nc - nfull * NR, kc, p + nfull * NR * kc);
#else
    if (nfull * NR < nc)
        pack_b_edge(b + nfull * NR, ldb, nc - nfull * NR, kc, p);
#endif
}

/* One k step of the micro-kernel: B row at bk (NV vectors), A column at ak (MR values, stride
 * a_i). */
#define K_STEP(bk, ak)                                                                             \
    do {                                                                                           \
        vreg bv[NV];                                                                               \
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) bv[v] = B_LOAD((bk) + v * VW);       \
        _Pragma("GCC unroll 64") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            vreg av = V_BCAST((ak) + i * a_i);                                                     \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[i][v] =                      \
                V_FMA(av, bv[v], acc[i][v]);                                                       \
        }                                                                                          \
    } while (0)

/* The MR×NR product of an A sliver (element (i, k) at a[i*a_i + k*a_k]) and a B panel (row k at
 * b + k*ldb) over kc steps, written to (first) or added to the mr × nr valid part of the C tile at
 * c (row stride ldc). */
static inline __attribute__((always_inline)) void
micro_kernel(long kc, const float *restrict a, long a_i, long a_k, const float *restrict b,
             long ldb, float *restrict c, long ldc, long mr, long nr, int first)
{
    vreg acc[MR][NV];
#pragma GCC unroll 64
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            acc[i][v] = V_ZERO();
    for (long i = 0; i < mr; i++)
        for (long j = 0; j < nr; j += 16)
            __builtin_prefetch(c + i * ldc + j, 1, 3);
    long k = 0;
    for (; k + UNROLL <= kc; k += UNROLL) {
#if PF_A
        if (a_k == 1) { /* A in place: one line of each row per 16 k steps */
            if ((k & 15) < UNROLL)
#pragma GCC unroll 64
                for (int i = 0; i < MR; i++)
                    __builtin_prefetch(a + i * a_i + k + PF_A, 0, 3);
        } else {
#pragma GCC unroll 8
            for (int u = 0; u < (UNROLL * MR + 15) / 16; u++)
                __builtin_prefetch(a + (k + PF_A) * a_k + u * 16, 0, 3);
        }
#endif
#pragma GCC unroll 8
        for (int u = 0; u < UNROLL; u++) {
#if PF_B
#pragma GCC unroll 16
            for (int j = 0; j < NR; j += 16)
                __builtin_prefetch(b + (k + u + PF_B) * ldb + j, 0, 3);
#endif
            K_STEP(b + (k + u) * ldb, a + (k + u) * a_k);
        }
    }
    for (; k < kc; k++)
        K_STEP(b + k * ldb, a + k * a_k);
    if (mr == MR && nr == NR) {
        if (first) {
#pragma GCC unroll 64
            for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    V_STOREU(c + i * ldc + v * VW, acc[i][v]);
        } else {
#pragma GCC unroll 64
            for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    V_STOREU(c + i * ldc + v * VW, V_ADD(V_LOADU(c + i * ldc + v * VW), acc[i][v]));
        }
        return;
    }
    float t[MR][NR] __attribute__((aligned(64))); /* constant indices keep acc in registers */
#pragma GCC unroll 64
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            V_STOREU(&t[i][v * VW], acc[i][v]);
    for (long i = 0; i < mr; i++) {
        if (first)
            for (long j = 0; j < nr; j++)
                c[i * ldc + j] = t[i][j];
        else
            for (long j = 0; j < nr; j++)
                c[i * ldc + j] += t[i][j];
    }
}

/* One MR×NR tile at (ir, jr) of the current (ic, pc, jc) block. ap: the packed A block (PACK_A=1)
 * or scratch for one sliver (PACK_A=0); a: A at (ic, pc); bp: the packed B block (or its packed
 * edge panel when PACK_B=0); b: B at (pc, jc). */
static inline __attribute__((always_inline)) void tile(const float *a, long lda, const float *ap,
                                                       const float *b, long ldb, const float *bp,
                                                       float *c, long ldc, long ir, long jr,
                                                       long mc, long nc, long kc, int first)
{
    long mr = min_l(MR, mc - ir), nr = min_l(NR, nc - jr);
    float *pc = c + ir * ldc + jr;
#if PACK_B
    (void)b;
    (void)ldb;
    const float *pb = bp + jr * kc;
    long pld = NR;
#else
    const float *pb = nr == NR ? b + jr : bp;
    long pld = nr == NR ? ldb : NR;
#endif
#if PACK_A
    (void)a;
    (void)lda;
    micro_kernel(kc, ap + ir * kc, 1, MR, pb, pld, pc, ldc, mr, nr, first);
#else
    if (mr == MR)
        micro_kernel(kc, a + ir * lda, lda, 1, pb, pld, pc, ldc, mr, nr, first);
    else
        micro_kernel(kc, ap, 1, MR, pb, pld, pc, ldc, mr, nr, first);
#endif
}

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *A = buffers[0], *B = buffers[1];
    float *C = buffers[2];
    long M = (long)problem[0], N = (long)problem[1], K = (long)problem[2];
    if (M < 1 || N < 1 || K < 1)
        return 1;
    long kc_max = min_l(KC, K);
    long nc_max = min_l(NCE, (N + NR - 1) / NR * NR);
#if PACK_A
    long a_floats = min_l(MCE, (M + MR - 1) / MR * MR) * kc_max;
#else
    long a_floats = MR * kc_max;
#endif
#if !PACK_B
    nc_max = NR; /* only the edge panel is packed */
#endif
    long a_alloc = (a_floats + 1023) / 1024 * 1024; /* keeps the B block 4 KiB-aligned */
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t bytes = ((size_t)(a_alloc + nc_max * kc_max) * sizeof(float) + 4095) / 4096 * 4096;
    float *ap = aligned_alloc(4096, bytes);
    if (!ap)
        return 2;
    float *bp = ap + a_alloc;

    for (long jc = 0; jc < N; jc += NCE) {
        long nc = min_l(NCE, N - jc);
        for (long pc = 0; pc < K; pc += KC) {
            long kc = min_l(KC, K - pc);
            int first = pc == 0;
            const float *b = B + pc * N + jc;
            pack_b_block(b, N, nc, kc, bp);
            for (long ic = 0; ic < M; ic += MCE) {
                long mc = min_l(MCE, M - ic);
                const float *a = A + ic * K + pc;
                float *c = C + ic * N + jc;
#if PACK_A
                for (long ir = 0; ir < mc; ir += MR)
                    pack_a_panel(a + ir * K, K, min_l(MR, mc - ir), kc, ap + ir * kc);
#endif
#if LOOP == 0
#if !PACK_A
                if (mc % MR)
                    pack_a_panel(a + (mc - mc % MR) * K, K, mc % MR, kc, ap);
#endif
                for (long jr = 0; jr < nc; jr += NR) {
                    for (long ir = 0; ir < mc; ir += MR)
                        tile(a, K, ap, b, N, bp, c, N, ir, jr, mc, nc, kc, first);
                }
#else
                for (long ir = 0; ir < mc; ir += MR) {
#if !PACK_A
                    if (mc - ir < MR)
                        pack_a_panel(a + ir * K, K, mc - ir, kc, ap);
#endif
                    for (long jr = 0; jr < nc; jr += NR)
                        tile(a, K, ap, b, N, bp, c, N, ir, jr, mc, nc, kc, first);
                }
#endif
            }
        }
    }
    free(ap);
    return 0;
}
