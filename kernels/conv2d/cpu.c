/* conv2d (CPU): fp32 direct convolution, NCHW, stride 1, no padding ("valid"), single-threaded:
 *   out[n][k][y][x] = sum over c < C, r < R, s < S of in[n][c][y+r][x+s] * w[k][c][r][s]
 * with in N×C×H×W, w K×C×R×S, out N×K×P×Q, P = H-R+1, Q = W-S+1.
 *
 * As an implicit GEMM over the flattened image: output pixel (y, x) is "extended pixel" p = y*W + x
 * (the input's row pitch), so for every (c, r, s) the inputs of consecutive extended pixels are
 * consecutive floats, in[c][p + r*W + s]: a tile of NV vectors of VEC consecutive extended pixels
 * loads NV vectors per (c, r, s) step, whatever the image width. Extended pixels with x >= Q (S-1
 * per row) are computed and dropped; the extended range is [0, (P-1)*W + Q), and no tile reads past
 * its channel. The register tile is TK output channels × NV vectors (TK*NV accumulators); each step
 * broadcasts TK weights and does TK*NV fused multiply-adds. The steps of a channel block (CB input
 * channels × R × S) run as one flat loop over an offset table (c*H*W + r*W + s), so 1×1 and R×S
 * filters take the same path. Weights are read in place (PACK=0: TK rows C*R*S apart) or packed
 * once per call as [K/TK][C*R*S][TK] (PACK=1). The first channel block writes the outputs, later
 * blocks add. Stores: a vector that lies within one output row goes out whole, one that crosses a
 * row end element by element. Tails: a last tile shorter than NV vectors is the full tile shifted
 * back to end at the last pixel (it stores only the pixels not stored before); images with fewer
 * extended pixels than a tile take one-vector tiles, fewer than a vector a scalar path; a channel
 * tail (K not a multiple of TK) repeats the last channel's weights and stores only the real
 * channels.
 *
 * Vectors: VEC floats, at most the machine's widest (16 with AVX-512F, 8 with AVX, 4 otherwise: GCC
 * vector extensions, so SSE, NEON or scalar code elsewhere); with AVX-512VL 256-bit vectors also
 * have 32 registers. The register budget (restrictions, by vector_bits) is TK*NV accumulators + NV
 * input vectors + 1 broadcast + 1 spare for the compiler <= 32 vector registers (AVX-512) or 16
 * (AVX2 and narrower): with no spare, GCC spills (TK 4 × NV 3 on AVX2 runs at half speed).
 *
 * Parameters (-D defines):
 *   TK      output channels per register tile
 *   NV      vectors per register tile (TK*NV accumulators; a tile is NV*VEC extended pixels)
 *   VEC     floats per vector: 16 (512-bit), 8 (256-bit) or 4 (128-bit), capped at the machine's
 *   CB      input channels per cache block (CB >= C: one block)
 *   ORDER   tile order inside a channel block: 0 = channel tiles outer, pixel tiles inner (a tile's
 *           weights, TK*CB*R*S floats, stay in L1 while it sweeps the image); 1 = pixel tiles
 * outer, channel tiles inner (the input patch of a pixel tile stays in L1 while every channel tile
 * uses it; the block's weights stream from L2) PACK    0: broadcast the weights in place (TK rows
 * C*R*S floats apart); 1: pack them once per call into TK-channel panels [K/TK][C*R*S][TK]
 * (contiguous broadcasts; costs a pass over the weights, which matters when P*Q is small) PACK_IN
 * 0: read the input in place (extended pixels, S-1 wasted columns per row); 1: copy each channel
 * block to im2col rows of P*Q pixels first (no wasted columns, pixel tiles span rows; costs
 * CB*R*S*P*Q floats of memory and a copy per block and image) UNROLL  steps per iteration of the
 * micro-kernel's inner loop (1, 2, 4) */
#include <stdlib.h>

#ifndef TK
#define TK 6
#endif
#ifndef NV
#define NV 2
#endif
#ifndef CB
#define CB 64
#endif
#ifndef ORDER
#define ORDER 1
#endif
#ifndef PACK
#define PACK 0
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef PACK_IN
#define PACK_IN 0
#endif
#ifndef VEC
#define VEC 8
#endif

#if defined(__AVX512F__)
#define VMAX 16
#elif defined(__AVX__)
#define VMAX 8
#else
#define VMAX 4
#endif
#define VL (VEC < VMAX ? VEC : VMAX) /* floats per vector */

#if TK < 1 || NV < 1 || CB < 1 || (ORDER != 0 && ORDER != 1) || (PACK != 0 && PACK != 1) ||        \
    UNROLL < 1 || (PACK_IN != 0 && PACK_IN != 1) || (VEC != 4 && VEC != 8 && VEC != 16)
#error "conv2d: need TK, NV, CB, UNROLL >= 1, ORDER, PACK and PACK_IN 0 or 1, VEC 4, 8 or 16"
#endif

#define TP                (NV * VL) /* extended pixels per tile */
#define KT_PRAGMA(x)      _Pragma(#x)
#define KT_UNROLL_LOOP(n) KT_PRAGMA(GCC unroll n)

typedef float vf __attribute__((vector_size(4 * VL)));
typedef float vfu __attribute__((vector_size(4 * VL), aligned(4), may_alias));

/* What every tile of one (image, channel block) needs. */
typedef struct conv {
    const float *in; /* input at (n, c0) */
    const float *w;  /* weights at (0, c0): packed panels (PACK=1) or w[k][c0][0][0] (PACK=0) */
    const int *off;  /* the block's steps: input offset c*H*W + r*W + s (c relative to c0) */
    float *out;      /* output at (n, 0) */
    long K, W, P, Q; /* output channels, input width, output rows and columns */
    long steps;      /* cn * R * S: steps of the block */
    long wstride;    /* PACK=0: floats between two channels' weights (C*R*S); PACK=1: per panel */
    long ext;        /* extended pixels: (P-1)*W + Q */
    int first;       /* first channel block: store instead of add */
} conv;

static inline long min_l(long a, long b)
{
    return a < b ? a : b;
}

/* Stores (first block) or adds one vector of extended pixels [p, p+VL) (row y, column x of the
 * extended image) of channel row o, skipping pixels before pstore and pixels with x >= Q. */
static inline __attribute__((always_inline)) void put(const conv *cv, float *o, long p, long y,
                                                      long x, long pstore, vf a)
{
    if (p >= pstore && (x + VL <= cv->Q || cv->W == cv->Q)) { /* W == Q: rows are contiguous */
        vfu *d = (vfu *)(o + y * cv->Q + x);
        if (cv->first)
            *d = a;
        else
            *d += a;
        return;
    }
    for (int j = 0; j < VL; j++, x++) {
        if (x >= cv->W) {
            x -= cv->W;
            y++;
        }
        if (p + j < pstore || x >= cv->Q)
            continue;
        float *d = o + y * cv->Q + x;
        *d = cv->first ? a[j] : *d + a[j];
    }
}

/* The register tile of channel tile kt at extended pixels [p0, p0 + nv*VL); pixels before pstore
 * were stored by an earlier tile. */
static inline __attribute__((always_inline)) void micro(const conv *cv, long kt, long p0,
                                                        long pstore, const int nv)
{
    vf acc[TK][NV];
#pragma GCC unroll 16
    for (int t = 0; t < TK; t++)
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++)
            acc[t][v] = (vf){0};
    const float *in = cv->in + p0;
    const int *off = cv->off;
    const long steps = cv->steps;
#if PACK
    const float *wp = cv->w + kt * cv->wstride;
    KT_UNROLL_LOOP(UNROLL)
    for (long j = 0; j < steps; j++) {
        const float *ip = in + off[j];
        const float *wj = wp + j * TK;
        vf xv[NV];
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            xv[v] = *(const vfu *)(ip + v * VL);
        }
#pragma GCC unroll 16
        for (int t = 0; t < TK; t++) {
            float wv = wj[t];
#pragma GCC unroll 16
            for (int v = 0; v < nv; v++)
                acc[t][v] += wv * xv[v];
        }
    }
#else
    const float *wr[TK];
    const long ws = cv->wstride;
#pragma GCC unroll 16
    for (int t = 0; t < TK; t++)
        wr[t] = cv->w + min_l(kt * TK + t, cv->K - 1) * ws;
    KT_UNROLL_LOOP(UNROLL)
    for (long j = 0; j < steps; j++) {
        const float *ip = in + off[j];
        vf xv[NV];
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            xv[v] = *(const vfu *)(ip + v * VL);
        }
#pragma GCC unroll 16
        for (int t = 0; t < TK; t++) {
            float wv = wr[t][j];
#pragma GCC unroll 16
            for (int v = 0; v < nv; v++)
                acc[t][v] += wv * xv[v];
        }
    }
#endif
    long kvalid = min_l(TK, cv->K - kt * TK), PQ = cv->P * cv->Q;
    long ys[NV], xs[NV];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
        ys[v] = (p0 + v * VL) / cv->W;
        xs[v] = p0 + v * VL - ys[v] * cv->W;
    }
    for (long t = 0; t < kvalid; t++) {
        float *o = cv->out + (kt * TK + t) * PQ;
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++)
            if (p0 + (v + 1) * VL > pstore)
                put(cv, o, p0 + v * VL, ys[v], xs[v], pstore, acc[t][v]);
    }
}

/* Scalar path for extended pixels [p0, p1) (images with fewer extended pixels than a vector). */
static void tile_scalar(const conv *cv, long kt, long p0, long p1)
{
    long kvalid = min_l(TK, cv->K - kt * TK), PQ = cv->P * cv->Q;
    for (long t = 0; t < kvalid; t++)
        for (long p = p0; p < p1; p++) {
            long y = p / cv->W, x = p - y * cv->W;
            if (x >= cv->Q)
                continue;
            float sum = 0.0f;
            for (long j = 0; j < cv->steps; j++)
#if PACK
                sum += cv->in[p + cv->off[j]] * cv->w[kt * cv->wstride + j * TK + t];
#else
                sum += cv->in[p + cv->off[j]] * cv->w[(kt * TK + t) * cv->wstride + j];
#endif
            float *o = cv->out + (kt * TK + t) * PQ + y * cv->Q + x;
            *o = cv->first ? sum : *o + sum;
        }
}

/* The tiles of pixel tile position p0 (kind: 0 full, 1 one vector, 2 scalar up to p1) for channel
 * tiles [kt0, kt1). */
static void tiles(const conv *cv, long kt0, long kt1, long p0, long pstore, int kind, long p1)
{
    for (long kt = kt0; kt < kt1; kt++) {
        if (kind == 0)
            micro(cv, kt, p0, pstore, NV);
        else if (kind == 1)
            micro(cv, kt, p0, pstore, 1);
        else
            tile_scalar(cv, kt, p0, p1);
    }
}

/* Every pixel tile of the block for channel tiles [kt0, kt1). */
static void sweep(const conv *cv, long kt0, long kt1)
{
    const long E = cv->ext;
    long p = 0;
    for (; p + TP <= E; p += TP)
        tiles(cv, kt0, kt1, p, p, 0, 0);
    if (p >= E)
        return;
    if (E >= TP) { /* the full tile shifted back to end at E */
        tiles(cv, kt0, kt1, E - TP, p, 0, 0);
        return;
    }
    while (p < E) {
        if (E >= VL) {
            long pp = min_l(p, E - VL);
            tiles(cv, kt0, kt1, pp, p, 1, 0);
            p = pp + VL;
        } else {
            tiles(cv, kt0, kt1, p, p, 2, E);
            p = E;
        }
    }
}

/* Where the packed weights, the im2col rows and the offsets lie in the runner's scratch block
 * (buffers[3], kernels/README.md "Scratch": mapped and touched before the first call, so that no
 * timed call allocates): byte offsets, each 64-byte aligned; the block's size, 0 for a problem
 * the kernel refuses, -1 for an im2col copy too large to index. */
static long long scratch_layout(const long long *problem, long long *wp_at, long long *col_at,
                                long long *off_at)
{
    long N = (long)problem[0], C = (long)problem[1], K = (long)problem[2], H = (long)problem[3];
    long W = (long)problem[4], R = (long)problem[5], S = (long)problem[6];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W || C * H * W > 0x7fffffffL)
        return 0;
    long long KT = (K + TK - 1) / TK, RS = R * S, CRS = C * RS, cbn = min_l(CB, C);
    long long wp = PACK ? KT * TK * CRS * 4 : 0, col = 0;
    if (PACK_IN) {
        long long elems = cbn * RS * (H - R + 1) * (W - S + 1);
        if (elems > 0x7fffffffLL)
            return -1;
        col = elems * 4;
    }
    *wp_at = 0;
    *col_at = (wp + 63) / 64 * 64;
    *off_at = (*col_at + col + 63) / 64 * 64;
    return *off_at + cbn * RS * (long long)sizeof(int);
}

long long ktune_scratch_bytes(const long long *problem)
{
    long long wp_at, col_at, off_at;
    return scratch_layout(problem, &wp_at, &col_at, &off_at);
}

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *in = buffers[0], *w = buffers[1];
    float *out = buffers[2];
    long N = (long)problem[0], C = (long)problem[1], K = (long)problem[2], H = (long)problem[3];
    long W = (long)problem[4], R = (long)problem[5], S = (long)problem[6];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W || C * H * W > 0x7fffffffL)
        return 1;
    long KT = (K + TK - 1) / TK, RS = R * S, CRS = C * RS;
    long long wp_at, col_at, off_at;
    char *scratch = (char *)buffers[3];
    if (!scratch || scratch_layout(problem, &wp_at, &col_at, &off_at) <= 0)
        return 2;
    int *off = (int *)(scratch + off_at);
    float *wp = (float *)(scratch + wp_at), *col = (float *)(scratch + col_at);
    (void)wp;
    (void)col;
#if PACK
    /* panels [kt][c][r][s][t]; channels past K repeat channel K-1 (computed, never stored) */
    for (long kt = 0; kt < KT; kt++) {
        float *panel = wp + kt * TK * CRS;
        const float *row[TK];
        for (long t = 0; t < TK; t++)
            row[t] = w + min_l(kt * TK + t, K - 1) * CRS;
        for (long j = 0; j < CRS; j++)
#pragma GCC unroll 16
            for (long t = 0; t < TK; t++)
                panel[j * TK + t] = row[t][j];
    }
#endif
    conv cv = {.K = K, .W = W, .P = H - R + 1, .Q = W - S + 1};
    const long P = cv.P, Q = cv.Q;
    cv.ext = (P - 1) * W + Q;
    cv.off = off;
#if PACK_IN
    /* im2col of a channel block: rows (c, r, s) of P*Q pixels, read with pitch Q */
    cv.W = Q;
    cv.ext = P * Q;
#endif
    for (long c0 = 0; c0 < C; c0 += CB) {
        long cn = min_l(CB, C - c0);
        for (long c = 0; c < cn; c++)
            for (long r = 0; r < R; r++)
                for (long s = 0; s < S; s++)
#if PACK_IN
                    off[(c * R + r) * S + s] = (int)(((c * R + r) * S + s) * P * Q);
#else
                    off[(c * R + r) * S + s] = (int)(c * H * W + r * W + s);
#endif
        cv.steps = cn * RS;
        cv.first = c0 == 0;
#if PACK
        cv.w = wp + c0 * RS * TK;
        cv.wstride = TK * CRS;
#else
        cv.w = w + c0 * RS;
        cv.wstride = CRS;
#endif
        for (long n = 0; n < N; n++) {
#if PACK_IN
            for (long c = 0; c < cn; c++) {
                const float *ic = in + (n * C + c0 + c) * H * W;
                for (long r = 0; r < R; r++)
                    for (long s = 0; s < S; s++) {
                        float *d = col + ((c * R + r) * S + s) * P * Q;
                        for (long y = 0; y < P; y++)
                            for (long x = 0; x < Q; x++)
                                d[y * Q + x] = ic[(y + r) * W + x + s];
                    }
            }
            cv.in = col;
#else
            cv.in = in + (n * C + c0) * H * W;
#endif
            cv.out = out + n * K * cv.P * cv.Q;
#if ORDER == 0
            for (long kt = 0; kt < KT; kt++)
                sweep(&cv, kt, kt + 1);
#else
            sweep(&cv, 0, KT);
#endif
        }
    }
    return 0;
}
