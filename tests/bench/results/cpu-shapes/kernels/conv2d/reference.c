/* conv2d reference: fp32 direct convolution, NCHW, stride 1, no padding ("valid"), a plain loop
 * nest accumulating in double: out[n][k][y][x] = sum over c < C, r < R, s < S of in[n][c][y+r][x+s]
 * * w[k][c][r][s] with in N×C×H×W, w K×C×R×S, out N×K×P×Q, P = H-R+1, Q = W-S+1. */

int ktune_reference(float *const *buffers, const long long *problem)
{
    const float *in = buffers[0], *w = buffers[1];
    float *out = buffers[2];
    long long N = problem[0], C = problem[1], K = problem[2], H = problem[3], W = problem[4];
    long long R = problem[5], S = problem[6];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W)
        return 1;
    long long P = H - R + 1, Q = W - S + 1;
    for (long long n = 0; n < N; n++)
        for (long long k = 0; k < K; k++)
            for (long long y = 0; y < P; y++)
                for (long long x = 0; x < Q; x++) {
                    double sum = 0.0;
                    for (long long c = 0; c < C; c++)
                        for (long long r = 0; r < R; r++)
                            for (long long s = 0; s < S; s++)
                                sum += (double)in[((n * C + c) * H + y + r) * W + x + s] *
                                       (double)w[((k * C + c) * R + r) * S + s];
                    out[((n * K + k) * P + y) * Q + x] = (float)sum;
                }
    return 0;
}
