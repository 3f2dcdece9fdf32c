/* Unit tests of learn/gru: finite-difference check of the gradient of every weight and of the
 * inputs (dense, one-hot and mixed sequences), one-hot steps against dense ones, learning a small
 * sequence task with Adam, determinism for a seed, and the bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/adam.h"
#include "learn/gru.h"

/* Mean softmax cross-entropy of the current sequence's outputs against targets (one per step);
 * when d_out is not NULL it receives the gradient with respect to the outputs. */
static double seq_loss(const learn_gru *g, const int *targets, double *d_out)
{
    double loss = 0;
    int O = g->n_out;
    for (int t = 0; t < g->steps; t++) {
        const double *y = learn_gru_output(g, t);
        double m = y[0], sum = 0;
        for (int k = 1; k < O; k++)
            m = y[k] > m ? y[k] : m;
        for (int k = 0; k < O; k++)
            sum += exp(y[k] - m);
        loss -= y[targets[t]] - m - log(sum);
        for (int k = 0; d_out && k < O; k++)
            d_out[t * O + k] = (exp(y[k] - m) / sum - (k == targets[t])) / g->steps;
    }
    return loss / g->steps;
}

static double rel_err(double a, double b)
{
    double den = fmax(fabs(a), fabs(b));
    return den < 1e-7 ? fabs(a - b) : fabs(a - b) / den;
}

/* Runs a sequence: step t takes the one-hot input hots[t] when hots is given and hots[t] >= 0,
 * else the dense row t of xs. */
static void run_seq(learn_gru *g, const double *xs, const int *hots, int T)
{
    learn_gru_reset(g, NULL);
    for (int t = 0; t < T; t++) {
        if (hots && hots[t] >= 0)
            assert_non_null(learn_gru_step_onehot(g, hots[t]));
        else
            assert_non_null(learn_gru_step(g, xs + t * g->n_in));
    }
}

/* Checks backward against central differences on every weight (and on the dense inputs when no
 * step is one-hot); returns the worst relative error. */
static double check_gradients(const int *hots)
{
    enum { I = 3, H = 5, O = 4, T = 6 };
    kt_rng rng;
    kt_rng_seed(&rng, 42);
    learn_gru *g = learn_gru_new(I, H, O, T, &rng);
    assert_non_null(g);
    assert_int_equal(g->n_params, 3 * H * I + 3 * H + 3 * H * H + 3 * H + O * H + O);
    /* Non-zero biases and larger weights, so that every path of the cell carries gradient. */
    for (size_t i = 0; i < g->n_params; i++)
        g->params[i] = 0.6 * kt_rng_normal(&rng);
    double xs[T * I], d_out[T * O], d_x[T * I];
    int targets[T];
    for (int i = 0; i < T * I; i++)
        xs[i] = kt_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        targets[t] = (int)kt_rng_below(&rng, O);

    run_seq(g, xs, hots, T);
    seq_loss(g, targets, d_out);
    learn_gru_zero_grad(g);
    learn_gru_backward(g, d_out, d_x);

    const double eps = 1e-5;
    double worst = 0;
    for (size_t i = 0; i < g->n_params; i++) {
        double keep = g->params[i];
        g->params[i] = keep + eps;
        run_seq(g, xs, hots, T);
        double lp = seq_loss(g, targets, NULL);
        g->params[i] = keep - eps;
        run_seq(g, xs, hots, T);
        double lm = seq_loss(g, targets, NULL);
        g->params[i] = keep;
        double num = (lp - lm) / (2 * eps), e = rel_err(g->grads[i], num);
        if (e >= 1e-5)
            fail_msg("weight %zu: backprop %.10g, finite differences %.10g", i, g->grads[i], num);
        worst = e > worst ? e : worst;
    }
    for (int i = 0; !hots && i < T * I; i++) {
        double keep = xs[i];
        xs[i] = keep + eps;
        run_seq(g, xs, hots, T);
        double lp = seq_loss(g, targets, NULL);
        xs[i] = keep - eps;
        run_seq(g, xs, hots, T);
        double lm = seq_loss(g, targets, NULL);
        xs[i] = keep;
        double num = (lp - lm) / (2 * eps), e = rel_err(d_x[i], num);
        if (e >= 1e-5)
            fail_msg("input %d: backprop %.10g, finite differences %.10g", i, d_x[i], num);
        worst = e > worst ? e : worst;
    }
    learn_gru_free(g);
    return worst;
}

static void gradient_matches_finite_differences(void **state)
{
    (void)state;
    const int all_hot[6] = {0, 2, 1, 1, 0, 2}, mixed[6] = {1, -1, 2, -1, -1, 0};
    double dense = check_gradients(NULL), hot = check_gradients(all_hot);
    double mix = check_gradients(mixed);
    printf("gru gradient check (every weight; inputs too when dense): worst relative error %.2e "
           "dense, %.2e one-hot, %.2e mixed\n",
           dense, hot, mix);
}

/* The loss of learn_gru_backward_seq's check: (when with_out) the outputs' cross-entropy, plus a
 * fixed linear function of every hidden state, sum_t coef_t . h_t, from the initial state h0. */
static double state_loss(learn_gru *g, const double *xs, const double *h0, const int *targets,
                         const double *coef, int with_out, double *d_out)
{
    learn_gru_reset(g, h0);
    for (int t = 0; t < 4; t++)
        assert_non_null(learn_gru_step(g, xs + t * g->n_in));
    double loss = with_out ? seq_loss(g, targets, d_out) : 0.0;
    for (int t = 0; t < g->steps; t++)
        for (int j = 0; j < g->n_hidden; j++)
            loss += coef[t * g->n_hidden + j] * learn_gru_hidden(g, t)[j];
    return loss;
}

/* learn_gru_backward_seq: extra gradients on the hidden states, the gradient of the initial state,
 * and outputs that feed nothing (d_out NULL), against central differences. */
static void backward_seq_matches_finite_differences(void **state)
{
    (void)state;
    enum { I = 3, H = 5, O = 4, T = 4 };
    for (int with_out = 0; with_out <= 1; with_out++) {
        kt_rng rng;
        kt_rng_seed(&rng, 7 + (uint64_t)with_out);
        learn_gru *g = learn_gru_new(I, H, O, T, &rng);
        assert_non_null(g);
        for (size_t i = 0; i < g->n_params; i++)
            g->params[i] = 0.6 * kt_rng_normal(&rng);
        double xs[T * I], h0[H], coef[T * H], d_out[T * O], d_x[T * I], d_h0[H];
        int targets[T];
        for (int i = 0; i < T * I; i++)
            xs[i] = kt_rng_normal(&rng);
        for (int j = 0; j < H; j++)
            h0[j] = 0.5 * kt_rng_normal(&rng);
        for (int i = 0; i < T * H; i++)
            coef[i] = kt_rng_normal(&rng);
        for (int t = 0; t < T; t++)
            targets[t] = (int)kt_rng_below(&rng, O);
        state_loss(g, xs, h0, targets, coef, with_out, d_out);
        learn_gru_zero_grad(g);
        learn_gru_backward_seq(g, with_out ? d_out : NULL, coef, d_x, d_h0);

        const double eps = 1e-5;
        double worst = 0;
        for (size_t i = 0; i < g->n_params + H + T * I; i++) {
            double *w = i < g->n_params       ? &g->params[i]
                        : i < g->n_params + H ? &h0[i - g->n_params]
                                              : &xs[i - g->n_params - H];
            double an = i < g->n_params       ? g->grads[i]
                        : i < g->n_params + H ? d_h0[i - g->n_params]
                                              : d_x[i - g->n_params - H];
            double keep = *w;
            *w = keep + eps;
            double lp = state_loss(g, xs, h0, targets, coef, with_out, NULL);
            *w = keep - eps;
            double lm = state_loss(g, xs, h0, targets, coef, with_out, NULL);
            *w = keep;
            double num = (lp - lm) / (2 * eps), e = rel_err(an, num);
            if (e >= 1e-5)
                fail_msg("with_out %d, index %zu: backprop %.10g, finite differences %.10g",
                         with_out, i, an, num);
            worst = e > worst ? e : worst;
        }
        if (!with_out) /* outputs feed nothing: the head has no gradient */
            for (size_t i = 0; i < (size_t)(O * H + O); i++)
                assert_true(g->dV[i] == 0.0);
        printf("gru backward_seq (state gradients, h0%s): worst relative error %.2e\n",
               with_out ? ", outputs" : "", worst);
        learn_gru_free(g);
    }
}

/* A one-hot step computes what the dense step on e_hot computes. */
static void onehot_step_matches_dense(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    learn_gru *g = learn_gru_new(4, 6, 3, 2, &rng);
    assert_non_null(g);
    for (size_t i = 0; i < g->n_params; i++)
        g->params[i] = kt_rng_normal(&rng);
    double e2[4] = {0, 0, 1, 0}, dense[2][3];
    learn_gru_reset(g, NULL);
    memcpy(dense[0], learn_gru_step(g, e2), sizeof dense[0]);
    memcpy(dense[1], learn_gru_step(g, e2), sizeof dense[1]);
    learn_gru_reset(g, NULL);
    const double *y0 = learn_gru_step_onehot(g, 2);
    for (int k = 0; k < 3; k++)
        assert_true(fabs(y0[k] - dense[0][k]) < 1e-12);
    const double *y1 = learn_gru_step_onehot(g, 2);
    for (int k = 0; k < 3; k++)
        assert_true(fabs(y1[k] - dense[1][k]) < 1e-12);
    learn_gru_reset(g, NULL);
    assert_null(learn_gru_step_onehot(g, 4));
    assert_null(learn_gru_step_onehot(g, -1));
    learn_gru_free(g);
}

/* Task: symbols 0..2, one-hot in; the target at step t is (x_t + x_{t-1}) mod 3 (x_{-1} = 0),
 * which needs one step of memory. */
enum { TASK_SYM = 3, TASK_T = 8, TASK_H = 16 };

static void task_sequence(kt_rng *rng, double *xs, int *targets)
{
    int prev = 0;
    memset(xs, 0, sizeof(double) * TASK_T * TASK_SYM);
    for (int t = 0; t < TASK_T; t++) {
        int s = (int)kt_rng_below(rng, TASK_SYM);
        xs[t * TASK_SYM + s] = 1.0;
        targets[t] = (s + prev) % TASK_SYM;
        prev = s;
    }
}

static double task_eval(learn_gru *g, uint64_t seed)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    double xs[TASK_T * TASK_SYM], sum = 0;
    int targets[TASK_T];
    for (int k = 0; k < 64; k++) {
        task_sequence(&rng, xs, targets);
        learn_gru_forward(g, xs, TASK_T);
        sum += seq_loss(g, targets, NULL);
    }
    return sum / 64;
}

/* Trains on `iters` batches of 8 sequences; returns the held-out loss after. */
static double task_train(learn_gru *g, learn_adam *adam, kt_rng *rng, int iters)
{
    double xs[TASK_T * TASK_SYM], d_out[TASK_T * TASK_SYM];
    int targets[TASK_T];
    for (int it = 0; it < iters; it++) {
        learn_gru_zero_grad(g);
        for (int b = 0; b < 8; b++) {
            task_sequence(rng, xs, targets);
            learn_gru_forward(g, xs, TASK_T);
            seq_loss(g, targets, d_out);
            learn_gru_backward(g, d_out, NULL);
        }
        for (size_t i = 0; i < g->n_params; i++)
            g->grads[i] /= 8;
        learn_adam_step(adam, g->params, g->grads);
    }
    return task_eval(g, 999);
}

static void learns_a_sequence_task(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 3);
    learn_gru *g = learn_gru_new(TASK_SYM, TASK_H, TASK_SYM, TASK_T, &rng);
    assert_non_null(g);
    learn_adam adam;
    assert_int_equal(learn_adam_init(&adam, g->n_params, 0.02), 0);
    double before = task_eval(g, 999);
    double after = task_train(g, &adam, &rng, 600);
    printf("gru sequence task: held-out loss %.4f -> %.4f (%.0fx lower)\n", before, after,
           before / after);
    assert_true(before > 0.9); /* about log 3 untrained */
    assert_true(after < before / 20);
    learn_adam_release(&adam);
    learn_gru_free(g);
}

static void deterministic_for_a_seed(void **state)
{
    (void)state;
    kt_rng r1, r2, r3;
    kt_rng_seed(&r1, 11);
    kt_rng_seed(&r2, 11);
    kt_rng_seed(&r3, 12);
    learn_gru *a = learn_gru_new(TASK_SYM, TASK_H, TASK_SYM, TASK_T, &r1);
    learn_gru *b = learn_gru_new(TASK_SYM, TASK_H, TASK_SYM, TASK_T, &r2);
    learn_gru *c = learn_gru_new(TASK_SYM, TASK_H, TASK_SYM, TASK_T, &r3);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_memory_equal(a->params, b->params, a->n_params * sizeof(double));
    assert_memory_not_equal(a->params, c->params, a->n_params * sizeof(double));
    learn_adam adam_a, adam_b;
    assert_int_equal(learn_adam_init(&adam_a, a->n_params, 0.02), 0);
    assert_int_equal(learn_adam_init(&adam_b, b->n_params, 0.02), 0);
    task_train(a, &adam_a, &r1, 20);
    task_train(b, &adam_b, &r2, 20);
    assert_memory_equal(a->params, b->params, a->n_params * sizeof(double));
    assert_memory_equal(a->y, b->y, (size_t)a->steps * TASK_SYM * sizeof(double));
    learn_adam_release(&adam_a);
    learn_adam_release(&adam_b);
    learn_gru_free(a);
    learn_gru_free(b);
    learn_gru_free(c);
}

static void sizes_are_bounded(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 1);
    assert_null(learn_gru_new(0, 4, 2, 3, &rng));
    assert_null(learn_gru_new(2, 0, 2, 3, &rng));
    assert_null(learn_gru_new(2, 4, 0, 3, &rng));
    assert_null(learn_gru_new(2, 4, 2, 0, &rng));
    assert_null(learn_gru_new(2, LEARN_GRU_MAX_HIDDEN + 1, 2, 3, &rng));
    assert_null(learn_gru_new(2, 4, 2, 3, NULL));
    learn_gru *g = learn_gru_new(2, 4, 2, 3, &rng);
    assert_non_null(g);
    double x[2] = {1, -1}, xs[8] = {0};
    learn_gru_reset(g, NULL);
    for (int t = 0; t < 3; t++)
        assert_non_null(learn_gru_step(g, x));
    assert_null(learn_gru_step(g, x)); /* max_steps reached */
    assert_int_equal(g->steps, 3);
    assert_int_equal(learn_gru_forward(g, xs, 4), -1);
    /* A given initial state is used: the first hidden state differs from the zero-state one. */
    double h0[4] = {0.5, -0.5, 0.25, 1}, first[4];
    learn_gru_reset(g, NULL);
    learn_gru_step(g, x);
    memcpy(first, learn_gru_hidden(g, 0), sizeof first);
    learn_gru_reset(g, h0);
    learn_gru_step(g, x);
    assert_memory_not_equal(first, learn_gru_hidden(g, 0), sizeof first);
    learn_gru_free(g);
    learn_gru_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradient_matches_finite_differences),
        cmocka_unit_test(backward_seq_matches_finite_differences),
        cmocka_unit_test(onehot_step_matches_dense),
        cmocka_unit_test(learns_a_sequence_task),
        cmocka_unit_test(deterministic_for_a_seed),
        cmocka_unit_test(sizes_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
