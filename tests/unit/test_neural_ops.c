/* Unit tests of the layer operations (neural/nn_ops.h): the convolution with every kind of
 * transformation against a naive loop written here from the semantics in nn_transform.h (not from
 * its functions), and every backward against central differences of L = sum(coef * y) (coef
 * random), for small sizes. Finite differences run in double over the float operations (eps 1e-2),
 * so the tolerance is 1e-3 absolute + 1e-2 relative. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "neural/nn_ops.h"

#define EPS 1e-2

static float *randv(kt_rng *r, long long n, double scale)
{
    float *v = calloc((size_t)n, sizeof(float));
    for (long long i = 0; i < n; i++)
        v[i] = (float)(scale * kt_rng_normal(r));
    return v;
}

static double dot(const float *a, const float *b, long long n)
{
    double s = 0;
    for (long long i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void check_close(double analytic, double numeric, const char *what, long long i)
{
    if (fabs(analytic - numeric) > 1e-3 + 1e-2 * fmax(fabs(analytic), fabs(numeric)))
        fail_msg("%s[%lld]: analytic %.6g numeric %.6g", what, i, analytic, numeric);
}

/* Input channel range of output (k, y) straight from the header's prose. */
static void naive_inputs(int g, int b, int s, int C, int K, int P, int k, int y, int *first,
                         int *count)
{
    int Kp = K / b;
    if (s == 0) {
        *count = C / g;
        *first = (k / (Kp / g)) * (C / g);
    } else if (s == 1) {
        *count = C / g;
        *first = (y * g / P) * (C / g);
    } else if (s == 2) {
        *count = C / g;
        *first = ((k % 16) / (16 / g)) * (C / g);
    } else if (k < Kp / 2) {
        *count = C / g;
        *first = (k / ((Kp / 2) / g)) * (C / g);
    } else {
        *count = C / (2 * g);
        *first = ((k - Kp / 2) / ((Kp / 2) / (2 * g))) * (C / (2 * g));
    }
}

static long long naive_offset(int g, int b, int s, int C, int K, int R, int S, int k)
{
    int Kp = K / b;
    if (s == 3 && k >= Kp / 2)
        return (long long)(Kp / 2) * (C / g) * R * S +
               (long long)(k - Kp / 2) * (C / (2 * g)) * R * S;
    return (long long)k * (C / g) * R * S;
}

static void conv_matches_naive(void **state)
{
    (void)state;
    static const int cases[][10] = {
        /* C, H, W, K, R, pad, g, b, s, n */
        {3, 6, 5, 4, 3, 1, 1, 1, 0, 2},   {8, 7, 7, 16, 3, 1, 4, 1, 0, 2},
        {8, 5, 6, 16, 3, 0, 2, 2, 0, 1},  {8, 7, 7, 8, 3, 1, 2, 1, 1, 2},
        {6, 9, 4, 4, 1, 0, 3, 1, 1, 1},   {8, 6, 6, 32, 3, 1, 4, 1, 2, 2},
        {4, 5, 5, 32, 3, 1, 2, 2, 2, 1},  {8, 6, 6, 16, 3, 1, 2, 1, 3, 2},
        {8, 5, 5, 32, 3, 1, 2, 2, 3, 1},  {4, 6, 6, 16, 3, 1, 1, 1, 3, 1},
        {16, 8, 8, 32, 3, 1, 8, 1, 2, 1},
    };
    kt_rng r;
    kt_rng_seed(&r, 11);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int *c = cases[ci];
        nn_conv_dims d = {c[0], c[1], c[2], c[3], c[4], c[4], c[5], {c[6], c[7], c[8]}};
        int n = c[9], P = nn_conv_out_h(&d), Q = nn_conv_out_w(&d), Kp = d.K / d.t.bottleneck;
        kt_error err;
        assert_int_equal(nn_transform_valid(&d.t, d.C, d.K, P, &err), 1);
        long long nw = nn_transform_weights(&d.t, d.C, d.K, d.R, d.S);
        float *x = randv(&r, (long long)n * d.C * d.H * d.W, 1);
        float *w = randv(&r, nw, 1);
        float *y = calloc((size_t)n * Kp * P * Q, sizeof(float));
        float *col = calloc((size_t)nn_conv_col_size(&d), sizeof(float));
        nn_conv_forward(&d, x, n, w, y, col);
        long long used = 0;
        for (int img = 0; img < n; img++)
            for (int k = 0; k < Kp; k++)
                for (int yy = 0; yy < P; yy++)
                    for (int xx = 0; xx < Q; xx++) {
                        int first, count;
                        naive_inputs(d.t.groups, d.t.bottleneck, d.t.seq, d.C, d.K, P, k, yy,
                                     &first, &count);
                        long long off = naive_offset(d.t.groups, d.t.bottleneck, d.t.seq, d.C, d.K,
                                                     d.R, d.S, k);
                        if (off + (long long)count * d.R * d.S > used)
                            used = off + (long long)count * d.R * d.S;
                        double s = 0;
                        for (int cc = 0; cc < count; cc++)
                            for (int a = 0; a < d.R; a++)
                                for (int b = 0; b < d.S; b++) {
                                    int iy = yy + a - d.pad, ix = xx + b - d.pad;
                                    if (iy < 0 || iy >= d.H || ix < 0 || ix >= d.W)
                                        continue;
                                    s += (double)w[off + ((long long)cc * d.R + a) * d.S + b] *
                                         x[(((long long)img * d.C + first + cc) * d.H + iy) * d.W +
                                           ix];
                                }
                        double got = y[(((long long)img * Kp + k) * P + yy) * Q + xx];
                        if (fabs(got - s) > 1e-4 * (1 + fabs(s)))
                            fail_msg("case %zu: y[%d][%d][%d][%d] = %g, naive %g", ci, img, k, yy,
                                     xx, got, s);
                    }
        assert_int_equal(used, nw); /* the layout covers exactly the weights */
        free(x);
        free(w);
        free(y);
        free(col);
    }
}

static void conv_gradients(void **state)
{
    (void)state;
    static const int cases[][9] = {
        {3, 5, 4, 4, 3, 1, 1, 1, 0},  {4, 5, 5, 8, 3, 1, 2, 1, 0},  {4, 6, 5, 4, 3, 1, 2, 1, 1},
        {4, 4, 4, 32, 3, 1, 2, 2, 2}, {4, 4, 4, 16, 3, 0, 1, 1, 3}, {4, 5, 5, 8, 1, 0, 2, 2, 0},
    };
    kt_rng r;
    kt_rng_seed(&r, 12);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int *c = cases[ci];
        nn_conv_dims d = {c[0], c[1], c[2], c[3], c[4], c[4], c[5], {c[6], c[7], c[8]}};
        int n = 2, P = nn_conv_out_h(&d), Q = nn_conv_out_w(&d), Kp = d.K / d.t.bottleneck;
        long long nx = (long long)n * d.C * d.H * d.W, ny = (long long)n * Kp * P * Q;
        long long nw = nn_transform_weights(&d.t, d.C, d.K, d.R, d.S), ncol = nn_conv_col_size(&d);
        float *x = randv(&r, nx, 1), *w = randv(&r, nw, 0.5), *coef = randv(&r, ny, 1);
        float *y = calloc((size_t)ny, sizeof(float)), *col = calloc((size_t)ncol, sizeof(float));
        float *dcol = calloc((size_t)ncol, sizeof(float));
        float *dw = calloc((size_t)nw, sizeof(float)), *dx = calloc((size_t)nx, sizeof(float));
        nn_conv_backward(&d, x, n, w, coef, dw, dx, col, dcol);
        for (long long i = 0; i < nw; i++) {
            float keep = w[i];
            w[i] = keep + (float)EPS;
            nn_conv_forward(&d, x, n, w, y, col);
            double up = dot(coef, y, ny);
            w[i] = keep - (float)EPS;
            nn_conv_forward(&d, x, n, w, y, col);
            double down = dot(coef, y, ny);
            w[i] = keep;
            check_close(dw[i], (up - down) / (2 * EPS), "conv dw", i);
        }
        for (long long i = 0; i < nx; i++) {
            float keep = x[i];
            x[i] = keep + (float)EPS;
            nn_conv_forward(&d, x, n, w, y, col);
            double up = dot(coef, y, ny);
            x[i] = keep - (float)EPS;
            nn_conv_forward(&d, x, n, w, y, col);
            double down = dot(coef, y, ny);
            x[i] = keep;
            check_close(dx[i], (up - down) / (2 * EPS), "conv dx", i);
        }
        free(x);
        free(w);
        free(coef);
        free(y);
        free(col);
        free(dcol);
        free(dw);
        free(dx);
    }
}

static double bn_loss(const float *x, int n, int c, int hw, const float *gm, const float *bt,
                      const float *coef, float *y)
{
    float rm[8] = {0}, rv[8] = {0}, mean[8], is[8];
    nn_bn_forward(x, n, c, hw, gm, bt, 1, rm, rv, mean, is, y);
    return dot(coef, y, (long long)n * c * hw);
}

static void batchnorm_gradients(void **state)
{
    (void)state;
    kt_rng r;
    kt_rng_seed(&r, 13);
    int n = 3, c = 4, hw = 5;
    long long cnt = (long long)n * c * hw;
    float *x = randv(&r, cnt, 1), *coef = randv(&r, cnt, 1), *y = calloc((size_t)cnt, 4);
    float *dx = calloc((size_t)cnt, 4), gm[4], bt[4], dg[4] = {0}, db[4] = {0};
    for (int i = 0; i < c; i++) {
        gm[i] = (float)(1 + 0.3 * kt_rng_normal(&r));
        bt[i] = (float)(0.3 * kt_rng_normal(&r));
    }
    float rm[4] = {0}, rv[4] = {1, 1, 1, 1}, mean[4], is[4];
    nn_bn_forward(x, n, c, hw, gm, bt, 1, rm, rv, mean, is, y);
    /* the normalised output has mean beta and variance gamma^2 per channel */
    for (int ch = 0; ch < c; ch++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++)
                s += y[(i * c + ch) * hw + j];
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++)
                s2 += pow(y[(i * c + ch) * hw + j] - s / (n * hw), 2);
        assert_true(fabs(s / (n * hw) - bt[ch]) < 1e-5);
        assert_true(fabs(s2 / (n * hw) - (double)gm[ch] * gm[ch]) < 1e-3);
        assert_true(fabs(rm[ch] - 0.1 * mean[ch]) < 1e-6);
    }
    nn_bn_backward(x, n, c, hw, gm, mean, is, coef, dg, db, dx);
    for (long long i = 0; i < cnt; i++) {
        float keep = x[i];
        x[i] = keep + (float)EPS;
        double up = bn_loss(x, n, c, hw, gm, bt, coef, y);
        x[i] = keep - (float)EPS;
        double down = bn_loss(x, n, c, hw, gm, bt, coef, y);
        x[i] = keep;
        check_close(dx[i], (up - down) / (2 * EPS), "bn dx", i);
    }
    for (int i = 0; i < c; i++) {
        float keep = gm[i];
        gm[i] = keep + (float)EPS;
        double up = bn_loss(x, n, c, hw, gm, bt, coef, y);
        gm[i] = keep - (float)EPS;
        double down = bn_loss(x, n, c, hw, gm, bt, coef, y);
        gm[i] = keep;
        check_close(dg[i], (up - down) / (2 * EPS), "bn dgamma", i);
        keep = bt[i];
        bt[i] = keep + (float)EPS;
        up = bn_loss(x, n, c, hw, gm, bt, coef, y);
        bt[i] = keep - (float)EPS;
        down = bn_loss(x, n, c, hw, gm, bt, coef, y);
        bt[i] = keep;
        check_close(db[i], (up - down) / (2 * EPS), "bn dbeta", i);
    }
    /* evaluation mode uses the running statistics */
    float rm2[4] = {0.5f, 0, 0, 0}, rv2[4] = {4, 1, 1, 1};
    nn_bn_forward(x, n, c, hw, gm, bt, 0, rm2, rv2, mean, is, y);
    assert_true(fabs(y[0] - (gm[0] * (x[0] - 0.5) / sqrt(4 + NN_BN_EPS) + bt[0])) < 1e-5);
    free(x);
    free(coef);
    free(y);
    free(dx);
}

/* Inputs spaced apart (a shuffled ramp) so that no max or kink is within EPS. */
static float *ramp(kt_rng *r, long long n)
{
    float *v = calloc((size_t)n, sizeof(float));
    for (long long i = 0; i < n; i++)
        v[i] = (float)(0.1 * (double)(i - n / 2) + 0.05);
    for (long long i = n - 1; i > 0; i--) {
        long long j = (long long)kt_rng_below(r, (uint64_t)i + 1);
        float t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
    return v;
}

enum { OP_RELU, OP_MAX, OP_AVG, OP_GAVG };

static void simple_forward(int op, const float *x, float *y, int *arg, int n, int c, int h, int w)
{
    if (op == OP_RELU)
        nn_relu_forward(x, (long long)n * c * h * w, y);
    else if (op == OP_MAX)
        nn_maxpool_forward(x, n, c, h, w, 2, y, arg);
    else if (op == OP_AVG)
        nn_avgpool_forward(x, n, c, h, w, 2, 2, y);
    else
        nn_avgpool_forward(x, n, c, h, w, h, w, y);
}

static void relu_pool_gradients(void **state)
{
    (void)state;
    kt_rng r;
    kt_rng_seed(&r, 14);
    int n = 2, c = 3, h = 5, w = 4;
    long long nx = (long long)n * c * h * w;
    for (int op = OP_RELU; op <= OP_GAVG; op++) {
        long long ny = op == OP_RELU   ? nx
                       : op == OP_GAVG ? n * c
                                       : (long long)n * c * (h / 2) * (w / 2);
        float *x = ramp(&r, nx), *coef = randv(&r, ny, 1), *y = calloc((size_t)ny, 4);
        float *dx = calloc((size_t)nx, 4);
        int *arg = calloc((size_t)ny, sizeof(int));
        simple_forward(op, x, y, arg, n, c, h, w);
        if (op == OP_RELU)
            nn_relu_backward(y, nx, coef, dx);
        else if (op == OP_MAX)
            nn_maxpool_backward(n, c, h, w, 2, arg, coef, dx);
        else if (op == OP_AVG)
            nn_avgpool_backward(n, c, h, w, 2, 2, coef, dx);
        else
            nn_avgpool_backward(n, c, h, w, h, w, coef, dx);
        for (long long i = 0; i < nx; i++) {
            float keep = x[i];
            x[i] = keep + (float)EPS;
            simple_forward(op, x, y, arg, n, c, h, w);
            double up = dot(coef, y, ny);
            x[i] = keep - (float)EPS;
            simple_forward(op, x, y, arg, n, c, h, w);
            double down = dot(coef, y, ny);
            x[i] = keep;
            check_close(dx[i], (up - down) / (2 * EPS), "relu/pool dx", op * 1000 + i);
        }
        free(x);
        free(coef);
        free(y);
        free(dx);
        free(arg);
    }
}

static void linear_and_loss_gradients(void **state)
{
    (void)state;
    kt_rng r;
    kt_rng_seed(&r, 15);
    int n = 3, in = 5, out = 4;
    float *x = randv(&r, n * in, 1), *w = randv(&r, out * in, 0.5), *b = randv(&r, out, 0.5);
    float *coef = randv(&r, n * out, 1), y[12], dw[20] = {0}, db[4] = {0}, dx[15] = {0};
    nn_linear_forward(x, n, in, out, w, b, y);
    assert_true(fabs(y[5] - (dot(x + in, w + in, in) + b[1])) < 1e-5);
    nn_linear_backward(x, n, in, out, w, coef, dw, db, dx);
    float *ps[3] = {x, w, b}, *gs[3] = {dx, dw, db};
    int sizes[3] = {n * in, out * in, out};
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < sizes[p]; i++) {
            float keep = ps[p][i];
            ps[p][i] = keep + (float)EPS;
            nn_linear_forward(x, n, in, out, w, b, y);
            double up = dot(coef, y, n * out);
            ps[p][i] = keep - (float)EPS;
            nn_linear_forward(x, n, in, out, w, b, y);
            double down = dot(coef, y, n * out);
            ps[p][i] = keep;
            check_close(gs[p][i], (up - down) / (2 * EPS), "linear", p * 100 + i);
        }
    /* softmax cross-entropy: value against a direct computation, gradient against differences */
    unsigned char labels[3] = {2, 0, 3};
    float dz[12];
    int correct = -1;
    double l = nn_softmax_ce(y, n, out, labels, dz, &correct);
    double expect = 0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        int best = 0;
        for (int k = 0; k < out; k++) {
            s += exp(y[i * out + k]);
            if (y[i * out + k] > y[i * out + best])
                best = k;
        }
        expect += (log(s) - y[i * out + labels[i]]) / n;
        right += best == labels[i];
    }
    assert_true(fabs(l - expect) < 1e-6);
    assert_int_equal(correct, right);
    for (int i = 0; i < n * out; i++) {
        float keep = y[i];
        y[i] = keep + 1e-3f;
        double up = nn_softmax_ce(y, n, out, labels, NULL, NULL);
        y[i] = keep - 1e-3f;
        double down = nn_softmax_ce(y, n, out, labels, NULL, NULL);
        y[i] = keep;
        check_close(dz[i], (up - down) / 2e-3, "softmax_ce", i);
    }
    free(x);
    free(w);
    free(b);
    free(coef);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_matches_naive),        cmocka_unit_test(conv_gradients),
        cmocka_unit_test(batchnorm_gradients),       cmocka_unit_test(relu_pool_gradients),
        cmocka_unit_test(linear_and_loss_gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
