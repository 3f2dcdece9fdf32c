/* Unit tests of learn/attention: the forward against a direct computation, and the backward (keys
 * and query) against central differences of a loss that is a fixed linear function of the context,
 * for several sizes including a single state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "learn/attention.h"

enum { MAX_S = 7, MAX_H = 6 };

static double rel_err(double a, double b)
{
    double den = fmax(fabs(a), fabs(b));
    return den < 1e-7 ? fabs(a - b) : fabs(a - b) / den;
}

/* loss = coef . ctx */
static double loss_of(const double *keys, int S, int H, const double *q, const double *coef)
{
    double alpha[MAX_S], ctx[MAX_H], loss = 0;
    learn_attention_forward(keys, S, H, q, alpha, ctx);
    for (int j = 0; j < H; j++)
        loss += coef[j] * ctx[j];
    return loss;
}

static void forward_is_softmax_weighted_sum(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 3);
    int S = 5, H = 4;
    double keys[MAX_S * MAX_H], q[MAX_H], alpha[MAX_S], ctx[MAX_H];
    for (int i = 0; i < S * H; i++)
        keys[i] = kt_rng_normal(&rng);
    for (int j = 0; j < H; j++)
        q[j] = kt_rng_normal(&rng);
    learn_attention_forward(keys, S, H, q, alpha, ctx);
    double e[MAX_S], sum = 0, total = 0;
    for (int i = 0; i < S; i++) {
        double s = 0;
        for (int j = 0; j < H; j++)
            s += keys[i * H + j] * q[j];
        e[i] = exp(s);
        sum += e[i];
    }
    for (int i = 0; i < S; i++) {
        assert_true(fabs(alpha[i] - e[i] / sum) < 1e-12);
        total += alpha[i];
    }
    assert_true(fabs(total - 1.0) < 1e-12);
    for (int j = 0; j < H; j++) {
        double c = 0;
        for (int i = 0; i < S; i++)
            c += e[i] / sum * keys[i * H + j];
        assert_true(fabs(ctx[j] - c) < 1e-12);
    }
    /* Huge scores stay finite (stable softmax). */
    for (int j = 0; j < H; j++)
        q[j] = 1e4;
    learn_attention_forward(keys, S, H, q, alpha, ctx);
    for (int i = 0; i < S; i++)
        assert_true(isfinite(alpha[i]));
}

static void backward_matches_finite_differences(void **state)
{
    (void)state;
    static const int sizes[][2] = {{1, 3}, {2, 1}, {4, 5}, {7, 6}};
    double worst = 0;
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        int S = sizes[c][0], H = sizes[c][1];
        kt_rng rng;
        kt_rng_seed(&rng, 11 + c);
        double keys[MAX_S * MAX_H], q[MAX_H], coef[MAX_H], alpha[MAX_S], ctx[MAX_H];
        double d_keys[MAX_S * MAX_H], d_q[MAX_H], scratch[MAX_S];
        for (int i = 0; i < S * H; i++)
            keys[i] = kt_rng_normal(&rng);
        for (int j = 0; j < H; j++) {
            q[j] = kt_rng_normal(&rng);
            coef[j] = kt_rng_normal(&rng);
        }
        learn_attention_forward(keys, S, H, q, alpha, ctx);
        /* accumulates: start from a known offset */
        for (int i = 0; i < S * H; i++)
            d_keys[i] = 1.0;
        for (int j = 0; j < H; j++)
            d_q[j] = -1.0;
        learn_attention_backward(keys, S, H, q, alpha, coef, d_keys, d_q, scratch);
        const double eps = 1e-5;
        for (int i = 0; i < S * H + H; i++) {
            double *w = i < S * H ? &keys[i] : &q[i - S * H];
            double an = i < S * H ? d_keys[i] - 1.0 : d_q[i - S * H] + 1.0;
            double keep = *w;
            *w = keep + eps;
            double lp = loss_of(keys, S, H, q, coef);
            *w = keep - eps;
            double lm = loss_of(keys, S, H, q, coef);
            *w = keep;
            double num = (lp - lm) / (2 * eps), e = rel_err(an, num);
            if (e >= 1e-5)
                fail_msg("S %d H %d index %d: backprop %.10g, finite differences %.10g", S, H, i,
                         an, num);
            worst = e > worst ? e : worst;
        }
        /* NULL outputs are allowed */
        learn_attention_backward(keys, S, H, q, alpha, coef, NULL, NULL, scratch);
    }
    printf("attention gradient check (keys and query): worst relative error %.2e\n", worst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_is_softmax_weighted_sum),
        cmocka_unit_test(backward_matches_finite_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
