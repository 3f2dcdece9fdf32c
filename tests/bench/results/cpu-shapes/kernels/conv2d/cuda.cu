/* conv2d (CUDA): fp32 direct convolution, NCHW, stride 1, no padding ("valid"):
 *   out[n][k][y][x] = sum over c < C, r < R, s < S of in[n][c][y+r][x+s] * w[k][c][r][s]
 * with in N×C×H×W, w K×C×R×S, out N×K×P×Q where P = H-R+1, Q = W-S+1.
 *
 * Each block computes a TH×TW tile of output pixels for BK output channels of one image. It walks
 * the input channels CB at a time: the block stages the input patch those pixels need
 * (CB × (TH+R-1) × (TW+S-1)) and the matching weights (BK × CB × R × S) in shared memory, then
 * every thread accumulates its PK channels × PH rows × PW columns of outputs in registers. Thread
 * (tx, ty, tz) owns channels k0 + tz + a*(BK/PK) (a < PK), rows y0 + ty + i*(TH/PH) (i < PH) and
 * columns x0 + tx + j*(TW/PW) (j < PW): strided, so neighbouring threads read neighbouring shared
 * words and write neighbouring output columns. Patch elements outside the input, and channels
 * beyond C or K, are staged as 0; outputs outside P×Q or beyond K are not stored.
 *
 * Launch: block = (TW/PW, TH/PH, BK/PK), grid = (ceil(Q/TW) * ceil(P/TH), ceil(K/BK), N), dynamic
 * shared memory 4*(CB*(TH+R-1)*(TW+S-1) + BK*CB*R*S) bytes (R and S are run-time arguments).
 *
 * Parameters (-D defines):
 *   TH, TW  output rows and columns per block (the spatial tile)
 *   BK      output channels per block
 *   PH, PW  output rows and columns per thread
 *   PK      output channels per thread
 *   CB      input channels staged in shared memory per step */

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

#define CV_TX      ((TW) / (PW)) /* block.x */
#define CV_TY      ((TH) / (PH)) /* block.y */
#define CV_TZ      ((BK) / (PK)) /* block.z */
#define CV_THREADS (CV_TX * CV_TY * CV_TZ)

static_assert(TH % PH == 0 && TW % PW == 0 && BK % PK == 0,
              "TH must be a multiple of PH, TW of PW, BK of PK");
static_assert(CB >= 1, "CB must be >= 1");

extern "C" __global__ void __launch_bounds__(CV_THREADS)
    conv2d_kernel(float *in, float *w, float *out, long long N, long long C, long long K,
                  long long H, long long W, long long R, long long S)
{
    extern __shared__ float4 kt_smem[];
    const int ih = TH + (int)R - 1; /* staged patch rows */
    const int iw = TW + (int)S - 1; /* staged patch columns */
    const int rs = (int)(R * S);
    float *const patch = reinterpret_cast<float *>(kt_smem); /* [CB][ih][iw] */
    float *const wts = patch + CB * ih * iw;                 /* [BK][CB][R*S] */

    const long long P = H - R + 1, Q = W - S + 1;
    const long long tiles_x = (Q + TW - 1) / TW;
    const long long x0 = (blockIdx.x % tiles_x) * TW;
    const long long y0 = (blockIdx.x / tiles_x) * TH;
    const long long kbase = (long long)blockIdx.y * BK;
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

    for (long long c0 = 0; c0 < C; c0 += CB) {
        __syncthreads(); /* the previous step's reads of the shared tiles are done */
        const int patch_elems = CB * ih * iw;
        for (int e = tid; e < patch_elems; e += CV_THREADS) {
            const int cc = e / (ih * iw);
            const int rem = e - cc * (ih * iw);
            const int py = rem / iw, px = rem - py * iw;
            const long long c = c0 + cc, gy = y0 + py, gx = x0 + px;
            patch[e] = (c < C && gy < H && gx < W) ? in[((n * C + c) * H + gy) * W + gx] : 0.0f;
        }
        const int w_elems = BK * CB * rs;
        for (int e = tid; e < w_elems; e += CV_THREADS) {
            const int kk = e / (CB * rs);
            const int rem = e - kk * (CB * rs);
            const int cc = rem / rs, f = rem - cc * rs;
            const long long k = kbase + kk, c = c0 + cc;
            wts[e] = (k < K && c < C) ? w[(k * C + c) * rs + f] : 0.0f;
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
        if (k >= K)
            continue;
#pragma unroll
        for (int i = 0; i < PH; i++) {
            const long long y = y0 + ty + i * CV_TY;
            if (y >= P)
                continue;
#pragma unroll
            for (int j = 0; j < PW; j++) {
                const long long x = x0 + tx + j * CV_TX;
                if (x < Q)
                    out[((n * K + k) * P + y) * Q + x] = acc[a][i][j];
            }
        }
    }
}
