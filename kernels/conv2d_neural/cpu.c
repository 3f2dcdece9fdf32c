/* conv2d_neural (CPU): conv2d's fp32 direct convolution (NCHW, stride 1, no padding,
 * single-threaded) under a neural transformation of the layer (issue 14): grouping by GROUPS,
 * bottlenecking by BOTTLENECK and the paper's composite sequences (SEQ). The computation is exactly
 * service/neural/nn_transform.h's; with P = H-R+1, Q = W-S+1, K' = K/BOTTLENECK, g = GROUPS:
 *   out[n][k][y][x] = sum over c < cnt(k,y), r < R, s < S of
 *                     in[n][first(k,y) + c][y+r][x+s] * w[woff(k) + (c*R + r)*S + s]
 * with in N×C×H×W, out N×K'×P×Q and, per SEQ:
 *   0 (group; g = 1: dense): group of k = k / (K'/g); first = group*C/g, cnt = C/g;
 *     woff(k) = k*(C/g)*R*S.
 *   1 (spatial_group): band(y) = y*g / P; first = band*C/g, cnt = C/g; woff(k) = k*(C/g)*R*S
 *     (the same weights in every band).
 *   2 (unroll_group): group of k = (k % 16) / (16/g) (NN_UNROLL = 16); first = group*C/g,
 *     cnt = C/g; woff(k) = k*(C/g)*R*S.
 *   3 (split_group): k < K'/2: group k / ((K'/2)/g), first = group*C/g, cnt = C/g,
 *     woff(k) = k*(C/g)*R*S; k >= K'/2, k' = k - K'/2: group k' / ((K'/2)/(2g)),
 *     first = group*C/(2g), cnt = C/(2g), woff(k) = (K'/2)*(C/g)*R*S + k'*(C/(2g))*R*S.
 * A configuration whose transformation does not apply (nn_transform.h's "Needs") returns 1.
 * problem = [N, C, K, H, W, R, S, GROUPS, BOTTLENECK, SEQ]: the runner passes the configuration's
 * neural values after the problem's (kernels/README.md, "neural"); they must equal the defines.
 *
 * How: every group (SEQ 0, 2, 3) or band (SEQ 1) is one dense convolution of its output channels
 * over its C/g (or C/(2g)) input channels, run by conv2d's implicit-GEMM tiles (kernels/conv2d/
 * cpu.c: register tile TK channels × NV vectors of VEC extended pixels, channel blocks of CB,
 * ORDER, PACK, PACK_IN, UNROLL as there), so a grouped layer does g× fewer multiply-adds than the
 * dense one. Output channels and weight rows are reached through per-channel pointer tables, which
 * is what lets SEQ 2's interleaved groups and SEQ 3's two halves take the same path. A band (SEQ 1)
 * is the sub-image of its output rows (and their R-1 extra input rows).
 *
 * Parameters (-D defines): TK, NV, VEC, CB, ORDER, PACK, PACK_IN, UNROLL as in conv2d; GROUPS,
 * BOTTLENECK, SEQ: the transformation (identity: 1, 1, 0). */
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
#ifndef GROUPS
#define GROUPS 1
#endif
#ifndef BOTTLENECK
#define BOTTLENECK 1
#endif
#ifndef SEQ
#define SEQ 0
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
    UNROLL < 1 || (PACK_IN != 0 && PACK_IN != 1) || (VEC != 4 && VEC != 8 && VEC != 16) ||         \
    GROUPS < 1 || BOTTLENECK < 1 || SEQ < 0 || SEQ > 3
#error                                                                                             \
    "conv2d_neural: need TK, NV, CB, UNROLL, GROUPS, BOTTLENECK >= 1, ORDER, PACK and PACK_IN 0 or 1, VEC 4, 8 or 16, SEQ 0..3"
#endif

#define NN_UNROLL         16        /* nn_transform.h: Sequence 2's unroll factor */
#define TP                (NV * VL) /* extended pixels per tile */
#define KT_PRAGMA(x)      _Pragma(#x)
#define KT_UNROLL_LOOP(n) KT_PRAGMA(GCC unroll n)

typedef float vf __attribute__((vector_size(4 * VL)));
typedef float vfu __attribute__((vector_size(4 * VL), aligned(4), may_alias));

/* What every tile of one (image, channel block) of a dense part needs. */
typedef struct conv {
    const float *in;          /* input at (n, the part's channel c0, its first row) */
    const float *w;           /* PACK=1: the panels at the block's first step */
    const float *const *wrow; /* PACK=0: each channel's weight row */
    long woff;                /* PACK=0: offset of the block in a weight row (c0*R*S) */
    float *const *orow;       /* each channel's output plane at image 0, the part's first row */
    long ooff;                /* offset of image n in the output planes */
    const int *off;           /* the block's steps: input offset c*H*W + r*W + s */
    long K, W, P, Q;          /* channels of the part, input row pitch, output rows and columns */
    long steps;               /* cn * R * S: steps of the block */
    long wstride;             /* PACK=1: floats per panel */
    long ext;                 /* extended pixels: (P-1)*W + Q */
    int first;                /* first channel block: store instead of add */
} conv;

static inline long min_l(long a, long b)
{
    return a < b ? a : b;
}

/* Stores (first block) or adds one vector of extended pixels [p, p+VL) (row y, column x of the
 * extended image) of channel plane o, skipping pixels before pstore and pixels with x >= Q. */
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
#pragma GCC unroll 16
    for (int t = 0; t < TK; t++)
        wr[t] = cv->wrow[min_l(kt * TK + t, cv->K - 1)] + cv->woff;
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
    long kvalid = min_l(TK, cv->K - kt * TK);
    long ys[NV], xs[NV];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
        ys[v] = (p0 + v * VL) / cv->W;
        xs[v] = p0 + v * VL - ys[v] * cv->W;
    }
    for (long t = 0; t < kvalid; t++) {
        float *o = cv->orow[kt * TK + t] + cv->ooff;
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++)
            if (p0 + (v + 1) * VL > pstore)
                put(cv, o, p0 + v * VL, ys[v], xs[v], pstore, acc[t][v]);
    }
}

/* Scalar path for extended pixels [p0, p1) (images with fewer extended pixels than a vector). */
static void tile_scalar(const conv *cv, long kt, long p0, long p1)
{
    long kvalid = min_l(TK, cv->K - kt * TK);
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
                sum += cv->in[p + cv->off[j]] * cv->wrow[kt * TK + t][cv->woff + j];
#endif
            float *o = cv->orow[kt * TK + t] + cv->ooff + y * cv->Q + x;
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

/* The layer as the kernel was called. */
typedef struct layer {
    long N, C, K, H, W, R, S; /* K: the transformed layer's output channels K' */
    long P, Q;
} layer;

/* The runner's scratch block (buffers[3], kernels/README.md "Scratch": mapped and touched before
 * the first call, so that no timed call allocates), cut for the largest dense part: the row
 * tables, the packed weights, the im2col rows and the offsets, each 64-byte aligned. */
typedef struct scratch {
    const float **wrow;
    float **orow;
    float *wp, *col;
    int *off;
} scratch;

/* The block's size for the problem (0 for one the kernel refuses, -1 for an im2col copy too large
 * to index), and with base the pointers into it. */
static long long scratch_layout(const long long *problem, char *base, scratch *sc)
{
    long N = (long)problem[0], C = (long)problem[1], K = (long)problem[2], H = (long)problem[3];
    long W = (long)problem[4], R = (long)problem[5], S = (long)problem[6];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W || BOTTLENECK < 1)
        return 0;
    /* every part has at most K' outputs, C inputs and P rows */
    long long Kp = K / BOTTLENECK, RS = R * S, cbn = min_l(CB, C), at = 0;
    long long rows = (Kp > 0 ? Kp : 1) * (long long)sizeof(float *);
    long long wp = PACK ? (Kp + TK - 1) / TK * TK * C * RS * 4 : 0, col = 0;
    if (PACK_IN) {
        long long elems = cbn * RS * (H - R + 1) * (W - S + 1);
        if (elems > 0x7fffffffLL)
            return -1;
        col = elems * 4;
    }
    long long at_orow = (rows + 63) / 64 * 64, at_wp = at_orow + (rows + 63) / 64 * 64;
    long long at_col = at_wp + (wp + 63) / 64 * 64, at_off = at_col + (col + 63) / 64 * 64;
    if (base) {
        sc->wrow = (const float **)(base + at);
        sc->orow = (float **)(base + at_orow);
        sc->wp = (float *)(base + at_wp);
        sc->col = (float *)(base + at_col);
        sc->off = (int *)(base + at_off);
    }
    return at_off + cbn * RS * (long long)sizeof(int);
}

long long ktune_scratch_bytes(const long long *problem)
{
    return scratch_layout(problem, NULL, NULL);
}

/* One dense part of the layer, for every image: Kn output channels (weight rows wrow[i] of Cn*R*S
 * floats, output planes orow[i] at image 0 and the part's first output row y0) over Cn input
 * channels starting at in0 (image 0, the part's first channel, row y0), P output rows; packed
 * weights, im2col rows and offsets in sc. Returns 0. */
static int dense(const layer *L, const float *in0, const float *const *wrow, float *const *orow,
                 long Kn, long Cn, long P, const scratch *sc)
{
    const long H = L->H, W = L->W, R = L->R, S = L->S, Q = L->Q;
    long KT = (Kn + TK - 1) / TK, RS = R * S, CRS = Cn * RS;
    (void)CRS;
    int *off = sc->off;
    float *wp = sc->wp, *col = sc->col;
    (void)wp;
    (void)col;
#if PACK
    /* panels [kt][c][r][s][t]; channels past Kn repeat channel Kn-1 (computed, never stored) */
    for (long kt = 0; kt < KT; kt++) {
        float *panel = wp + kt * TK * CRS;
        const float *row[TK];
        for (long t = 0; t < TK; t++)
            row[t] = wrow[min_l(kt * TK + t, Kn - 1)];
        for (long j = 0; j < CRS; j++)
#pragma GCC unroll 16
            for (long t = 0; t < TK; t++)
                panel[j * TK + t] = row[t][j];
    }
#endif
    conv cv = {.K = Kn, .W = W, .P = P, .Q = Q, .wrow = wrow, .orow = orow};
    cv.ext = (P - 1) * W + Q;
    cv.off = off;
#if PACK_IN
    /* im2col of a channel block: rows (c, r, s) of P*Q pixels, read with pitch Q */
    cv.W = Q;
    cv.ext = P * Q;
#endif
    for (long c0 = 0; c0 < Cn; c0 += CB) {
        long cn = min_l(CB, Cn - c0);
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
        cv.woff = c0 * RS;
#endif
        for (long n = 0; n < L->N; n++) {
            const float *in = in0 + n * L->C * H * W + c0 * H * W;
#if PACK_IN
            for (long c = 0; c < cn; c++) {
                const float *ic = in + c * H * W;
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
            cv.in = in;
#endif
            cv.ooff = n * L->K * L->P * Q;
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

/* nn_transform.h's "Needs": 1 when (GROUPS, BOTTLENECK, SEQ) applies to C, K, P. */
static int applies(long C, long K, long P)
{
    const long g = GROUPS, Kp = K / BOTTLENECK;
    if (K % BOTTLENECK != 0 || C % g != 0)
        return 0;
    switch (SEQ) {
    case 0:
        return Kp % g == 0;
    case 1:
        return g >= 2 && g <= P;
    case 2:
        return g >= 2 && NN_UNROLL % g == 0 && Kp % NN_UNROLL == 0;
    default:
        return Kp % (4 * g) == 0 && C % (2 * g) == 0;
    }
}

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *in = buffers[0], *w = buffers[1];
    float *out = buffers[2];
    long N = (long)problem[0], C = (long)problem[1], K = (long)problem[2], H = (long)problem[3];
    long W = (long)problem[4], R = (long)problem[5], S = (long)problem[6];
    if (problem[7] != GROUPS || problem[8] != BOTTLENECK || problem[9] != SEQ)
        return 1; /* the buffers were sized for another transformation */
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W || C * H * W > 0x7fffffffL)
        return 1;
    layer L = {.N = N, .C = C, .K = K / BOTTLENECK, .H = H, .W = W, .R = R, .S = S};
    L.P = H - R + 1;
    L.Q = W - S + 1;
    if (!applies(C, K, L.P))
        return 1;
    const long g = GROUPS, Kp = L.K, RS = R * S, HW = H * W, PQ = L.P * L.Q, Cg = C / g;
    scratch sc;
    if (!buffers[3] || scratch_layout(problem, (char *)buffers[3], &sc) <= 0)
        return 2;
    const float **wrow = sc.wrow;
    float **orow = sc.orow;
    int rc = 0;
#if SEQ == 0
    for (long grp = 0; grp < g && rc == 0; grp++) {
        const long Kg = Kp / g;
        for (long i = 0; i < Kg; i++) {
            long k = grp * Kg + i;
            wrow[i] = w + k * Cg * RS;
            orow[i] = out + k * PQ;
        }
        rc = dense(&L, in + grp * Cg * HW, wrow, orow, Kg, Cg, L.P, &sc);
    }
#elif SEQ == 1
    for (long band = 0; band < g && rc == 0; band++) {
        const long y0 = (band * L.P + g - 1) / g, y1 = ((band + 1) * L.P + g - 1) / g;
        for (long k = 0; k < Kp; k++) {
            wrow[k] = w + k * Cg * RS;
            orow[k] = out + k * PQ + y0 * L.Q;
        }
        rc = dense(&L, in + band * Cg * HW + y0 * W, wrow, orow, Kp, Cg, y1 - y0, &sc);
    }
#elif SEQ == 2
    for (long grp = 0; grp < g && rc == 0; grp++) {
        const long run = NN_UNROLL / g;
        long i = 0;
        for (long blk = 0; blk < Kp / NN_UNROLL; blk++)
            for (long t = 0; t < run; t++, i++) {
                long k = blk * NN_UNROLL + grp * run + t;
                wrow[i] = w + k * Cg * RS;
                orow[i] = out + k * PQ;
            }
        rc = dense(&L, in + grp * Cg * HW, wrow, orow, i, Cg, L.P, &sc);
    }
#else
    const long half = Kp / 2;
    for (long part = 0; part < 2; part++) {
        const long gp = part ? 2 * g : g, Cp = C / gp, Kg = half / gp;
        const float *wbase = w + part * half * Cg * RS;
        for (long grp = 0; grp < gp && rc == 0; grp++) {
            for (long i = 0; i < Kg; i++) {
                long kk = grp * Kg + i; /* within the half */
                wrow[i] = wbase + kk * Cp * RS;
                orow[i] = out + (part * half + kk) * PQ;
            }
            rc = dense(&L, in + grp * Cp * HW, wrow, orow, Kg, Cp, L.P, &sc);
        }
    }
#endif
    return rc;
}
