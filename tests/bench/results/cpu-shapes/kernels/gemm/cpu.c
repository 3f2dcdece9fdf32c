/* gemm (CPU): fp32 C = A·B, row-major (A is M×K, B is K×N, C is M×N), single-threaded, BLIS style.
 *
 * Loops, outer to inner: jc over N in NC-column blocks; pc over K in KC-deep blocks, packing B's
 * KC×NC block into NR-column panels (k-major, zero-padded); ic over M in MC-row blocks, packing A's
 * MC×KC block into MR-row panels (PACK_A=1) or reading A in place (PACK_A=0); then the macro-kernel
 * walks the MR×NR tiles of the block (order: LOOP) and calls the micro-kernel, which keeps an MR×NR
 * tile of C in MR*NR/16 vector accumulators over the KC-long inner product (B: NR/16 vector loads
 * per k step, A: MR broadcasts per k step) and then writes (first K block) or adds (later blocks)
 * the tile to C. Edges: M and N tails run on zero-padded panels (A slivers are copied when A is
 * read in place) and are written back element by element; a last K block shorter than KC runs fewer
 * steps.
 *
 * Parameters (-D defines):
 *   MR      rows of the register tile
 *   NR      columns of the register tile, a multiple of 16
 *   KC      depth of a packed block (k extent of the A and B panels)
 *   MC      rows of A per block (a multiple of MR); with PACK_A=1 the packed A block is MC×KC
 *   NC      columns of the packed B block (a multiple of NR)
 *   UNROLL  k steps per iteration of the micro-kernel's inner loop (>= 1)
 *   PACK_A  1: pack A into MR-row panels; 0: the micro-kernel broadcasts A in place (row stride K)
 *   LOOP    macro-kernel order: 0 = column tiles outer, row tiles inner (a B panel is reused across
 *           the MC/MR row tiles); 1 = row tiles outer, column tiles inner (an A sliver stays in L1
 *           while the KC×NC B block streams from L2) */
#include <stdlib.h>

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
#ifndef PACK_A
#define PACK_A 0
#endif
#ifndef LOOP
#define LOOP 1
#endif

#define VW 16        /* floats per vector */
#define NV (NR / VW) /* vectors per row of the register tile */

#if MR < 1 || NR < VW || NR % VW != 0 || KC < 1 || MC < MR || MC % MR != 0 || NC < NR ||           \
    NC % NR != 0 || UNROLL < 1
#error "gemm: bad MR, NR, KC, MC, NC or UNROLL (see the parameters above)"
#endif

typedef float vf __attribute__((vector_size(64), aligned(64)));
typedef float vfu __attribute__((vector_size(64), aligned(4), may_alias));

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
        for (long j = 0; j < nr; j++)
            p[k * NR + j] = b[k * ldb + j];
        for (long j = nr; j < NR; j++)
            p[k * NR + j] = 0.0f;
    }
}

/* The kc × nc block of B as ceil(nc/NR) panels of kc×NR floats (panel q at p + q*NR*kc), read row
 * by row so the loads stream. */
static void pack_b_block(const float *restrict b, long ldb, long nc, long kc, float *restrict p)
{
    long nfull = nc / NR;
    for (long k = 0; k < kc; k++) {
        const float *src = b + k * ldb;
        for (long q = 0; q < nfull; q++)
#pragma GCC unroll 8
            for (int v = 0; v < NV; v++)
                *(vf *)(p + q * NR * kc + k * NR + v * VW) = *(const vfu *)(src + q * NR + v * VW);
    }
    if (nfull * NR < nc)
        pack_b_edge(b + nfull * NR, ldb, nc - nfull * NR, kc, p + nfull * NR * kc);
}

/* The MR×NR product of an A sliver (element (i, k) at a[i*a_i + k*a_k]) and a packed B panel (row k
 * at b + k*NR, 64-byte aligned) over kc steps, written to (first) or added to the mr × nr valid
 * part of the C tile at c (row stride ldc). */
static inline __attribute__((always_inline)) void
micro_kernel(long kc, const float *restrict a, long a_i, long a_k, const float *restrict b,
             float *restrict c, long ldc, long mr, long nr, int first)
{
    vf acc[MR][NV];
#pragma GCC unroll 64
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            acc[i][v] = (vf){0};
    for (long i = 0; i < mr; i++)
        for (int v = 0; v < NV; v++)
            __builtin_prefetch(c + i * ldc + v * VW, 1, 3);
    long k = 0;
    for (; k + UNROLL <= kc; k += UNROLL) {
#pragma GCC unroll 8
        for (int u = 0; u < UNROLL; u++) {
            const float *bk = b + (k + u) * NR;
            const float *ak = a + (k + u) * a_k;
            vf bv[NV];
#pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                bv[v] = *(const vf *)(bk + v * VW);
#pragma GCC unroll 64
            for (int i = 0; i < MR; i++) {
                float av = ak[i * a_i];
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    acc[i][v] += av * bv[v];
            }
        }
    }
    for (; k < kc; k++) {
        const float *bk = b + k * NR;
        const float *ak = a + k * a_k;
        vf bv[NV];
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            bv[v] = *(const vf *)(bk + v * VW);
#pragma GCC unroll 64
        for (int i = 0; i < MR; i++) {
            float av = ak[i * a_i];
#pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                acc[i][v] += av * bv[v];
        }
    }
    if (mr == MR && nr == NR) {
        if (first) {
#pragma GCC unroll 64
            for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    *(vfu *)(c + i * ldc + v * VW) = acc[i][v];
        } else {
#pragma GCC unroll 64
            for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    *(vfu *)(c + i * ldc + v * VW) += acc[i][v];
        }
        return;
    }
    for (long i = 0; i < mr; i++) {
        const float *t = (const float *)&acc[i][0];
        if (first)
            for (long j = 0; j < nr; j++)
                c[i * ldc + j] = t[j];
        else
            for (long j = 0; j < nr; j++)
                c[i * ldc + j] += t[j];
    }
}

/* One MR×NR tile at (ir, jr) of the current (ic, pc, jc) block. ap: the packed A block (PACK_A=1)
 * or scratch for one sliver (PACK_A=0); a: A at (ic, pc); bp: the packed B block. */
static inline __attribute__((always_inline)) void tile(const float *a, long lda, const float *ap,
                                                       const float *bp, float *c, long ldc, long ir,
                                                       long jr, long mc, long nc, long kc,
                                                       int first)
{
    long mr = min_l(MR, mc - ir), nr = min_l(NR, nc - jr);
    const float *pb = bp + jr * kc;
    float *pc = c + ir * ldc + jr;
#if PACK_A
    (void)a;
    (void)lda;
    micro_kernel(kc, ap + ir * kc, 1, MR, pb, pc, ldc, mr, nr, first);
#else
    (void)ap;
    if (mr == MR)
        micro_kernel(kc, a + ir * lda, lda, 1, pb, pc, ldc, mr, nr, first);
    else
        micro_kernel(kc, ap, 1, MR, pb, pc, ldc, mr, nr, first);
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
    long nc_max = min_l(NC, (N + NR - 1) / NR * NR);
#if PACK_A
    long a_floats = min_l(MC, (M + MR - 1) / MR * MR) * kc_max;
#else
    long a_floats = MR * kc_max;
#endif
    long a_alloc = (a_floats + 1023) / 1024 * 1024; /* keeps the B block 4 KiB-aligned */
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t bytes = ((size_t)(a_alloc + nc_max * kc_max) * sizeof(float) + 4095) / 4096 * 4096;
    float *ap = aligned_alloc(4096, bytes);
    if (!ap)
        return 2;
    float *bp = ap + a_alloc;

    for (long jc = 0; jc < N; jc += NC) {
        long nc = min_l(NC, N - jc);
        for (long pc = 0; pc < K; pc += KC) {
            long kc = min_l(KC, K - pc);
            int first = pc == 0;
            pack_b_block(B + pc * N + jc, N, nc, kc, bp);
            for (long ic = 0; ic < M; ic += MC) {
                long mc = min_l(MC, M - ic);
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
                        tile(a, K, ap, bp, c, N, ir, jr, mc, nc, kc, first);
                }
#else
                for (long ir = 0; ir < mc; ir += MR) {
#if !PACK_A
                    if (mc - ir < MR)
                        pack_a_panel(a + ir * K, K, mc - ir, kc, ap);
#endif
                    for (long jr = 0; jr < nc; jr += NR)
                        tile(a, K, ap, bp, c, N, ir, jr, mc, nc, kc, first);
                }
#endif
            }
        }
    }
    free(ap);
    return 0;
}
