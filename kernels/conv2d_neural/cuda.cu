/* conv2d_neural (CUDA): conv2d's direct convolution (kernels/conv2d/cuda.cu: NCHW, stride 1, no
 * padding) under a neural transformation of the layer, exactly service/neural/nn_transform.h's
 * (the formulas are in cpu.c's header): GROUPS g, BOTTLENECK b (K' = K/b output channels) and SEQ
 * (0 channel groups, 1 spatial bands band(y) = y*g/P, 2 unroll-by-16-then-group, 3 split halves
 * grouped by g and 2g). Untested on a GPU in this project (compiled by NVRTC in the tests).
 *
 * As conv2d: a block computes a TH×TW tile of output pixels for BK output channels of one image,
 * staging CB input channels of the patch and the matching weights in shared memory per step; a
 * thread accumulates PK channels × PH rows × PW columns. The transformation only changes which
 * input channels a block reads and where each channel's weight row starts: the restrictions keep a
 * block's BK channels inside one group (SEQ 0: BK divides K'/g; SEQ 2: 16/g; SEQ 3: K'/(4g)), so a
 * block reads one range [first, first + cnt) of C/g (or C/(2g)) input channels, and SEQ 1 tiles
 * each band separately (grid.x = g × the band's tiles), so a block's rows lie in one band. A
 * grouped layer stages and multiplies g× fewer channels.
 *
 * Arguments: in, w, out, then N, C, K, H, W, R, S and the neural values GROUPS, BOTTLENECK, SEQ
 * (equal to the defines; a mismatch stores nothing, and verification fails).
 *
 * Launch: block = (TW/PW, TH/PH, BK/PK); grid = (tiles, ceil(K'/BK), N) with tiles =
 * ceil(Q/TW)*ceil(P/TH) (SEQ 1: g*ceil(Q/TW)*ceil(ceil(P/g)/TH)); dynamic shared memory
 * 4*(CB*(TH+R-1)*(TW+S-1) + BK*CB*R*S) bytes.
 *
 * Parameters (-D defines): TH, TW, BK, PH, PW, PK, CB as in conv2d; GROUPS, BOTTLENECK, SEQ. */

#ifndef TH
#define TH 8
#endif
#ifndef TW
#define TW 16
#endif
#ifndef BK
#define BK 16
#endif
#ifndef PH
#define PH 2
#endif
#ifndef PW
#define PW 1
#endif
#ifndef PK
#define PK 4
#endif
#ifndef CB
#define CB 4
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

#define CV_TX      ((TW) / (PW)) /* block.x */
#define CV_TY      ((TH) / (PH)) /* block.y */
#define CV_TZ      ((BK) / (PK)) /* block.z */
#define CV_THREADS (CV_TX * CV_TY * CV_TZ)
#define NN_UNROLL  16 /* nn_transform.h: Sequence 2's unroll factor */

static_assert(TH % PH == 0 && TW % PW == 0 && BK % PK == 0,
              "TH must be a multiple of PH, TW of PW, BK of PK");
static_assert(CB >= 1 && GROUPS >= 1 && BOTTLENECK >= 1 && SEQ >= 0 && SEQ <= 3,
              "CB, GROUPS, BOTTLENECK >= 1, SEQ 0..3");

/* Offset of weight row k (nn_transform.h's weight layout). */
__device__ static long long weight_offset(long long k, long long C, long long Kp, int rs)
{
    const long long Cg = C / GROUPS;
    if (SEQ != 3 || k < Kp / 2)
        return k * Cg * rs;
    return (Kp / 2) * Cg * rs + (k - Kp / 2) * (C / (2 * GROUPS)) * rs;
}

extern "C" __global__ void __launch_bounds__(CV_THREADS)
    conv2d_neural_kernel(float *in, float *w, float *out, long long N, long long C, long long K,
                         long long H, long long W, long long R, long long S, long long g_arg,
                         long long b_arg, long long seq_arg)
{
    if (g_arg != GROUPS || b_arg != BOTTLENECK || seq_arg != SEQ)
        return;
    extern __shared__ float4 kt_smem[];
    const int ih = TH + (int)R - 1; /* staged patch rows */
    const int iw = TW + (int)S - 1; /* staged patch columns */
    const int rs = (int)(R * S);
    float *const patch = reinterpret_cast<float *>(kt_smem); /* [CB][ih][iw] */
    float *const wts = patch + CB * ih * iw;                 /* [BK][CB][R*S] */

    const long long P = H - R + 1, Q = W - S + 1, Kp = K / BOTTLENECK, g = GROUPS;
    const long long Cg = C / g;
    const long long tiles_x = (Q + TW - 1) / TW;
    long long tile = blockIdx.x, ylo = 0, yhi = P; /* the rows the block's band spans */
    long long first = 0, cnt = Cg;                 /* the block's input channels */
    const long long kbase = (long long)blockIdx.y * BK;
#if SEQ == 1
    const long long band_tiles = tiles_x * (((P + g - 1) / g + TH - 1) / TH);
    const long long band = tile / band_tiles;
    tile -= band * band_tiles;
    ylo = (band * P + g - 1) / g;
    yhi = ((band + 1) * P + g - 1) / g;
    first = band * Cg;
#elif SEQ == 0
    first = kbase / (Kp / g) * Cg;
#elif SEQ == 2
    first = (kbase % NN_UNROLL) / (NN_UNROLL / g) * Cg;
#else
    if (kbase < Kp / 2) {
        first = kbase / ((Kp / 2) / g) * Cg;
    } else {
        cnt = C / (2 * g);
        first = (kbase - Kp / 2) / ((Kp / 2) / (2 * g)) * cnt;
    }
#endif
    const long long x0 = (tile % tiles_x) * TW;
    const long long y0 = ylo + (tile / tiles_x) * TH;
    const long long n = blockIdx.z;
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const int tid = (tz * CV_TY + ty) * CV_TX + tx;

    float acc[PK][PH][PW];
#pragma unroll
    for (int a = 0; a < PK; a++)
#pragma unroll
        for (int i = 0; i < PH; i++)
#pragma unroll
            for (int j = 0; j < PW; j++)
                acc[a][i][j] = 0.0f;

    for (long long c0 = 0; c0 < cnt; c0 += CB) {
        __syncthreads(); /* the previous step's reads of the shared tiles are done */
        const int patch_elems = CB * ih * iw;
        for (int e = tid; e < patch_elems; e += CV_THREADS) {
            const int cc = e / (ih * iw);
            const int rem = e - cc * (ih * iw);
            const int py = rem / iw, px = rem - py * iw;
            const long long c = c0 + cc, gy = y0 + py, gx = x0 + px;
            patch[e] = (c < cnt && gy < H && gx < W) ? in[((n * C + first + c) * H + gy) * W + gx]
                                                     : 0.0f;
        }
        const int w_elems = BK * CB * rs;
        for (int e = tid; e < w_elems; e += CV_THREADS) {
            const int kk = e / (CB * rs);
            const int rem = e - kk * (CB * rs);
            const int cc = rem / rs, f = rem - cc * rs;
            const long long k = kbase + kk, c = c0 + cc;
            wts[e] = (k < Kp && c < cnt) ? w[weight_offset(k, C, Kp, rs) + c * rs + f] : 0.0f;
        }
        __syncthreads(); /* the step's tiles are staged */
        for (int cc = 0; cc < CB; cc++) {
            for (int r = 0; r < (int)R; r++) {
                for (int s = 0; s < (int)S; s++) {
                    float wv[PK];
#pragma unroll
                    for (int a = 0; a < PK; a++)
                        wv[a] = wts[((tz + a * CV_TZ) * CB + cc) * rs + r * (int)S + s];
#pragma unroll
                    for (int i = 0; i < PH; i++) {
                        const float *row = patch + (cc * ih + ty + i * CV_TY + r) * iw + tx + s;
#pragma unroll
                        for (int j = 0; j < PW; j++) {
                            const float v = row[j * CV_TX];
#pragma unroll
                            for (int a = 0; a < PK; a++)
                                acc[a][i][j] = fmaf(v, wv[a], acc[a][i][j]);
                        }
                    }
                }
            }
        }
    }

#pragma unroll
    for (int a = 0; a < PK; a++) {
        const long long k = kbase + tz + a * CV_TZ;
        if (k >= Kp)
            continue;
#pragma unroll
        for (int i = 0; i < PH; i++) {
            const long long y = y0 + ty + i * CV_TY;
            if (y >= yhi)
                continue;
#pragma unroll
            for (int j = 0; j < PW; j++) {
                const long long x = x0 + tx + j * CV_TX;
                if (x < Q)
                    out[((n * Kp + k) * P + y) * Q + x] = acc[a][i][j];
            }
        }
    }
}
