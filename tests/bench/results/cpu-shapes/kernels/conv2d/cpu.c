/* conv2d (CPU): fp32 direct convolution, NCHW, stride 1, no padding ("valid"), single-threaded:
 *   out[n][k][y][x] = sum over c < C, r < R, s < S of in[n][c][y+r][x+s] * w[k][c][r][s]
 * with in N×C×H×W, w K×C×R×S, out N×K×P×Q, P = H-R+1, Q = W-S+1.
 *
 * The weights are first repacked as [K/TK][C][R][S][TK] (zero-padded in k). The register tile is TK
 * output channels × TY output rows × TX output columns (TX/VEC vectors of VEC floats along x: the
 * input row segment at x+s is loaded as vectors, each weight is broadcast). Input channels are
 * taken CB at a time (the input patch of a channel block stays in cache while the tiles sweep); the
 * first block writes the outputs, later ones add. Tails: a last column tile narrower than TX is
 * covered by VEC-wide tiles, the very last one shifted left to end at Q, and a last row tile by a
 * tile shifted up to end at P; shifted tiles store only the outputs not already covered. Images
 * narrower than VEC columns (or fewer than TY rows) take narrower paths (scalar columns, single
 * rows).
 *
 * Parameters (-D defines):
 *   TK     output channels per register tile
 *   TY     output rows per register tile
 *   TX     output columns per register tile, a multiple of VEC
 *   VEC    floats per vector along x (8: 256-bit vectors, 16: 512-bit vectors)
 *   CB     input channels per cache block (CB >= C: one block)
 *   ORDER  tile loop order inside a channel block: 0 = channel tiles outer, then rows, then columns
 *          (a tile's weights stay in L1 while it sweeps the image); 1 = rows, columns, then channel
 *          tiles innermost (the input patch stays in L1 while all channel tiles use it); 2 = rows,
 *          then channel tiles, then columns (a row band of the input stays in L2) */
#include <stdlib.h>

#ifndef TK
#define TK 8
#endif
#ifndef TY
#define TY 1
#endif
#ifndef TX
#define TX 24
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef CB
#define CB 64
#endif
#ifndef ORDER
#define ORDER 2
#endif

#define TXV (TX / VEC) /* vectors per tile row */

#if TK < 1 || TY < 1 || CB < 1 || (VEC != 4 && VEC != 8 && VEC != 16) || TX < VEC || TX % VEC != 0
#error "conv2d: need TK, TY, CB >= 1, VEC 4, 8 or 16, and TX a multiple of VEC"
#endif

typedef float vf __attribute__((vector_size(4 * VEC)));
typedef float vfu __attribute__((vector_size(4 * VEC), aligned(4), may_alias));

/* What every tile of one (image, channel block) needs. */
typedef struct conv {
    const float *in; /* input at (n, c0) */
    const float *wp; /* packed weights */
    float *out;      /* output at (n, 0) */
    long C, K, H, W, R, S, P, Q;
    long c0, cn; /* channel block */
    int first;   /* first channel block: store instead of add */
} conv;

static inline long min_l(long a, long b)
{
    return a < b ? a : b;
}

/* The register tile at output channel tile kt, rows [yy, yy+tyn), columns [xx, xx+txvn*VEC): rows
 * before yy+yskip and columns before xx+xskip are computed but not stored. */
static inline __attribute__((always_inline)) void micro(const conv *cv, long kt, long yy,
                                                        long yskip, long xx, long xskip,
                                                        const int tyn, const int txvn)
{
    const long H = cv->H, W = cv->W, R = cv->R, S = cv->S, RS = R * S;
    vf acc[TK][TY][TXV];
#pragma GCC unroll 16
    for (int t = 0; t < TK; t++)
#pragma GCC unroll 16
        for (int y = 0; y < tyn; y++)
#pragma GCC unroll 16
            for (int v = 0; v < txvn; v++)
                acc[t][y][v] = (vf){0};
    for (long c = 0; c < cv->cn; c++) {
        const float *ic = cv->in + (c * H + yy) * W + xx;
        const float *wc = cv->wp + ((kt * cv->C + cv->c0 + c) * RS) * TK;
        for (long r = 0; r < R; r++) {
            for (long s = 0; s < S; s++) {
                const float *wrs = wc + (r * S + s) * TK;
                vf xv[TY][TXV];
#pragma GCC unroll 16
                for (int y = 0; y < tyn; y++)
#pragma GCC unroll 16
                    for (int v = 0; v < txvn; v++)
                        xv[y][v] = *(const vfu *)(ic + (y + r) * W + s + v * VEC);
#pragma GCC unroll 16
                for (int t = 0; t < TK; t++) {
                    float wv = wrs[t];
#pragma GCC unroll 16
                    for (int y = 0; y < tyn; y++)
#pragma GCC unroll 16
                        for (int v = 0; v < txvn; v++)
                            acc[t][y][v] += wv * xv[y][v];
                }
            }
        }
    }
    long kvalid = min_l(TK, cv->K - kt * TK), PQ = cv->P * cv->Q;
    for (long t = 0; t < kvalid; t++) {
        for (int y = (int)yskip; y < tyn; y++) {
            float *o = cv->out + (kt * TK + t) * PQ + (yy + y) * cv->Q + xx;
            for (int v = 0; v < txvn; v++) {
                if ((v + 1) * VEC <= xskip)
                    continue;
                if (v * VEC >= xskip) {
                    if (cv->first)
                        *(vfu *)(o + v * VEC) = acc[t][y][v];
                    else
                        *(vfu *)(o + v * VEC) += acc[t][y][v];
                } else {
                    for (long j = xskip; j < (v + 1) * VEC; j++)
                        o[j] = (cv->first ? 0.0f : o[j]) + acc[t][y][v][j - v * VEC];
                }
            }
        }
    }
}

/* Scalar path for columns [x0, x1) of rows [yy+yskip, yy+tyn) (images narrower than a vector). */
static void tile_scalar(const conv *cv, long kt, long yy, long yskip, long tyn, long x0, long x1)
{
    const long H = cv->H, W = cv->W, R = cv->R, S = cv->S, RS = R * S;
    long kvalid = min_l(TK, cv->K - kt * TK), PQ = cv->P * cv->Q;
    for (long t = 0; t < kvalid; t++)
        for (long y = yy + yskip; y < yy + tyn; y++)
            for (long x = x0; x < x1; x++) {
                float sum = 0.0f;
                for (long c = 0; c < cv->cn; c++) {
                    const float *ic = cv->in + (c * H + y) * W + x;
                    const float *wc = cv->wp + ((kt * cv->C + cv->c0 + c) * RS) * TK + t;
                    for (long r = 0; r < R; r++)
                        for (long s = 0; s < S; s++)
                            sum += ic[r * W + s] * wc[(r * S + s) * TK];
                }
                float *o = cv->out + (kt * TK + t) * PQ + y * cv->Q + x;
                *o = cv->first ? sum : *o + sum;
            }
}

/* One tile: txvn is TXV (a full tile) or 1 (a VEC-wide tail tile); tyn is TY or 1. */
static void tile(const conv *cv, long kt, long yy, long yskip, int tyn, long xx, long xskip,
                 int txvn)
{
    if (tyn == TY && txvn == TXV)
        micro(cv, kt, yy, yskip, xx, xskip, TY, TXV);
    else if (tyn == TY)
        micro(cv, kt, yy, yskip, xx, xskip, TY, 1);
    else if (txvn == TXV)
        micro(cv, kt, yy, yskip, xx, xskip, 1, TXV);
    else
        micro(cv, kt, yy, yskip, xx, xskip, 1, 1);
}

/* All tiles of the row band [yy, yy+tyn) (storing from row yy+yskip) for channel tiles [kt0, kt1):
 * kinner: channel tiles inside the column walk, else outside. */
static void band(const conv *cv, long yy, long yskip, int tyn, long kt0, long kt1, int kinner)
{
    const long Q = cv->Q;
    for (long ko = kt0; ko < (kinner ? kt0 + 1 : kt1); ko++) {
        long x0 = 0;
        for (; x0 + TX <= Q; x0 += TX)
            for (long kt = kinner ? kt0 : ko; kt < (kinner ? kt1 : ko + 1); kt++)
                tile(cv, kt, yy, yskip, tyn, x0, 0, TXV);
        while (x0 < Q) {
            if (Q >= VEC) {
                long xx = min_l(x0, Q - VEC);
                for (long kt = kinner ? kt0 : ko; kt < (kinner ? kt1 : ko + 1); kt++)
                    tile(cv, kt, yy, yskip, tyn, xx, x0 - xx, 1);
                x0 = xx + VEC;
            } else {
                for (long kt = kinner ? kt0 : ko; kt < (kinner ? kt1 : ko + 1); kt++)
                    tile_scalar(cv, kt, yy, yskip, tyn, x0, Q);
                x0 = Q;
            }
        }
    }
}

/* Every row band of the output for channel tiles [kt0, kt1). */
static void rows(const conv *cv, long kt0, long kt1, int kinner)
{
    const long P = cv->P;
    long y0 = 0;
    for (; y0 + TY <= P; y0 += TY)
        band(cv, y0, 0, TY, kt0, kt1, kinner);
    if (y0 < P) {
        if (P >= TY)
            band(cv, P - TY, y0 - (P - TY), TY, kt0, kt1, kinner);
        else
            for (; y0 < P; y0++)
                band(cv, y0, 0, 1, kt0, kt1, kinner);
    }
}

int ktune_kernel(float *const *buffers, const long long *problem)
{
    const float *in = buffers[0], *w = buffers[1];
    float *out = buffers[2];
    long N = (long)problem[0], C = (long)problem[1], K = (long)problem[2], H = (long)problem[3];
    long W = (long)problem[4], R = (long)problem[5], S = (long)problem[6];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W)
        return 1;
    long KT = (K + TK - 1) / TK, RS = R * S;
    float *wp = malloc(sizeof(float) * (size_t)(KT * TK * C * RS));
    if (!wp)
        return 2;
    for (long kt = 0; kt < KT; kt++)
        for (long c = 0; c < C; c++)
            for (long rs = 0; rs < RS; rs++)
                for (long t = 0; t < TK; t++) {
                    long k = kt * TK + t;
                    wp[((kt * C + c) * RS + rs) * TK + t] = k < K ? w[(k * C + c) * RS + rs] : 0.0f;
                }
    conv cv = {.wp = wp, .C = C, .K = K, .H = H, .W = W, .R = R, .S = S};
    cv.P = H - R + 1;
    cv.Q = W - S + 1;
    for (long n = 0; n < N; n++) {
        cv.out = out + n * K * cv.P * cv.Q;
        for (long c0 = 0; c0 < C; c0 += CB) {
            cv.in = in + (n * C + c0) * H * W;
            cv.c0 = c0;
            cv.cn = min_l(CB, C - c0);
            cv.first = c0 == 0;
#if ORDER == 0
            for (long kt = 0; kt < KT; kt++)
                rows(&cv, kt, kt + 1, 0);
#elif ORDER == 1
            rows(&cv, 0, KT, 1);
#else
            rows(&cv, 0, KT, 0);
#endif
        }
    }
    free(wp);
    return 0;
}
