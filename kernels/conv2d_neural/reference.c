/* conv2d_neural reference: the transformed layer of service/neural/nn_transform.h as a plain loop
 * nest accumulating in double (the formulas of cpu.c's header, written independently of its
 * tiling): out[n][k][y][x] = sum over c < cnt, r < R, s < S of in[n][first + c][y+r][x+s] *
 * w[woff(k) + (c*R + r)*S + s], where (first, cnt) is the input channel range of output element
 * (k, y) and woff(k) the offset of weight row k, both per nn_transform.h (SEQ 0: group, 1: spatial
 * bands band(y) = y*g/P, 2: unroll-then-group by 16, 3: split halves grouped by g and 2g).
 * problem = [N, C, K, H, W, R, S, GROUPS, BOTTLENECK, SEQ]; out is N×(K/BOTTLENECK)×P×Q,
 * P = H-R+1, Q = W-S+1. Returns 1 when the transformation does not apply (its "Needs"). */

int ktune_reference(float *const *buffers, const long long *problem)
{
    const float *in = buffers[0], *w = buffers[1];
    float *out = buffers[2];
    long long N = problem[0], C = problem[1], K = problem[2], H = problem[3], W = problem[4];
    long long R = problem[5], S = problem[6], g = problem[7], b = problem[8], seq = problem[9];
    if (N < 1 || C < 1 || K < 1 || R < 1 || S < 1 || R > H || S > W || g < 1 || b < 1 || seq < 0 ||
        seq > 3)
        return 1;
    long long P = H - R + 1, Q = W - S + 1, Kp = K / b, half = Kp / 2;
    if (K % b != 0 || C % g != 0)
        return 1;
    if ((seq == 0 && Kp % g != 0) || (seq == 1 && (g < 2 || g > P)) ||
        (seq == 2 && (g < 2 || 16 % g != 0 || Kp % 16 != 0)) ||
        (seq == 3 && (Kp % (4 * g) != 0 || C % (2 * g) != 0)))
        return 1;
    for (long long k = 0; k < Kp; k++) {
        long long first = 0, cnt = C / g, woff = k * (C / g) * R * S;
        for (long long y = 0; y < P; y++) {
            if (seq == 0) {
                first = k / (Kp / g) * (C / g);
            } else if (seq == 1) {
                first = y * g / P * (C / g);
            } else if (seq == 2) {
                first = (k % 16) / (16 / g) * (C / g);
            } else if (k < half) {
                first = k / (half / g) * (C / g);
            } else {
                long long kk = k - half;
                cnt = C / (2 * g);
                first = kk / (half / (2 * g)) * cnt;
                woff = half * (C / g) * R * S + kk * cnt * R * S;
            }
            for (long long n = 0; n < N; n++)
                for (long long x = 0; x < Q; x++) {
                    double sum = 0.0;
                    for (long long c = 0; c < cnt; c++)
                        for (long long r = 0; r < R; r++)
                            for (long long s = 0; s < S; s++)
                                sum += (double)in[((n * C + first + c) * H + y + r) * W + x + s] *
                                       (double)w[woff + (c * R + r) * S + s];
                    out[((n * Kp + k) * P + y) * Q + x] = (float)sum;
                }
        }
    }
    return 0;
}
