/* Unit tests of learn/mlp: backward agrees with central finite differences on every weight (tanh
 * and relu, through a masked softmax head and a squared-error head), so does the input gradient
 * on every input, Adam fits a small smooth
 * function with it, a seed fixes the network, and bad arguments are refused. */
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
#include "learn/mlp.h"

enum { GC_BATCH = 5, GC_OUT = 5, GC_IN = 3 };

/* The gradient-check problem: per row a target for output 0 (squared error) and, over outputs
 * 1..4, a masked softmax with a chosen action, its advantage and an entropy bonus, the loss an
 * actor-critic uses. */
typedef struct gc_problem {
    double x[GC_BATCH * GC_IN];
    double y[GC_BATCH];
    int action[GC_BATCH];
    double adv[GC_BATCH];
    unsigned char mask[GC_BATCH][GC_OUT - 1];
} gc_problem;

#define ENTROPY_BETA 0.05

/* Loss of the current weights; with dout non-NULL also d loss / d outputs. */
static double gc_loss(learn_mlp *m, const gc_problem *pb, double *dout)
{
    const double *out = learn_mlp_forward(m, pb->x, GC_BATCH);
    assert_non_null(out);
    double loss = 0;
    for (int b = 0; b < GC_BATCH; b++) {
        const double *o = out + b * GC_OUT;
        double p[GC_OUT - 1], dp[GC_OUT - 1];
        double e = o[0] - pb->y[b];
        loss += 0.5 * e * e;
        assert_true(learn_softmax(o + 1, pb->mask[b], GC_OUT - 1, p) > 0);
        double h = 0;
        for (int i = 0; i < GC_OUT - 1; i++)
            h -= p[i] > 0 ? p[i] * log(p[i]) : 0;
        loss += -pb->adv[b] * log(p[pb->action[b]]) - ENTROPY_BETA * h;
        if (!dout)
            continue;
        for (int i = 0; i < GC_OUT - 1; i++)
            dp[i] = pb->mask[b][i] ? ENTROPY_BETA * (log(p[i]) + 1.0) : 0.0;
        dp[pb->action[b]] -= pb->adv[b] / p[pb->action[b]];
        dout[b * GC_OUT] = e;
        learn_softmax_backward(p, dp, GC_OUT - 1, dout + b * GC_OUT + 1);
    }
    return loss;
}

static void gradient_check(learn_activation act, uint64_t seed)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    const int sizes[4] = {GC_IN, 6, 4, GC_OUT};
    learn_mlp *m = learn_mlp_new(3, sizes, act, &rng);
    assert_non_null(m);
    size_t n = learn_mlp_num_params(m);
    assert_int_equal(n, 3 * 6 + 6 + 6 * 4 + 4 + 4 * GC_OUT + GC_OUT);
    double *w = learn_mlp_params(m);
    for (size_t i = 0; i < n; i++) /* biases too, so their gradients are not trivially shaped */
        w[i] = 0.8 * kt_rng_normal(&rng);
    gc_problem pb;
    for (int i = 0; i < GC_BATCH * GC_IN; i++)
        pb.x[i] = 2.0 * kt_rng_uniform(&rng) - 1.0;
    for (int b = 0; b < GC_BATCH; b++) {
        pb.y[b] = kt_rng_normal(&rng);
        pb.adv[b] = kt_rng_normal(&rng);
        for (int i = 0; i < GC_OUT - 1; i++)
            pb.mask[b][i] = (unsigned char)(i != b % (GC_OUT - 1) || b == 0);
        do
            pb.action[b] = (int)kt_rng_below(&rng, GC_OUT - 1);
        while (!pb.mask[b][pb.action[b]]);
    }
    double dout[GC_BATCH * GC_OUT];
    gc_loss(m, &pb, dout);
    assert_int_equal(learn_mlp_backward(m, dout), 0);
    double *g = malloc(n * sizeof *g);
    assert_non_null(g);
    memcpy(g, learn_mlp_grads(m), n * sizeof *g);
    const double h = 1e-5;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double keep = w[i];
        w[i] = keep + h;
        double up = gc_loss(m, &pb, NULL);
        w[i] = keep - h;
        double down = gc_loss(m, &pb, NULL);
        w[i] = keep;
        double fd = (up - down) / (2 * h);
        double rel = fabs(fd - g[i]) / fmax(fabs(fd) + fabs(g[i]), 1e-7);
        if (rel >= 1e-5)
            fail_msg("%s weight %zu: backward %.10g, finite difference %.10g (rel %.3g)",
                     act == LEARN_ACT_TANH ? "tanh" : "relu", i, g[i], fd, rel);
        worst = rel > worst ? rel : worst;
    }
    printf("%s: %zu weights, worst relative error %.2e\n", act == LEARN_ACT_TANH ? "tanh" : "relu",
           n, worst);
    free(g);
    learn_mlp_free(m);
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gradient_check(LEARN_ACT_TANH, seed);
        gradient_check(LEARN_ACT_RELU, seed);
    }
}

/* L = sum over rows and outputs of c_k * out_k (c fixed): learn_mlp_input_grad against central
 * differences on every input of a 4-row batch, through 3 dense layers; the weights' gradient
 * vector is left untouched. */
static void input_grad_check(learn_activation act, uint64_t seed)
{
    enum { B = 4, IN = 6, OUT = 3 };
    const int sizes[] = {IN, 9, 7, OUT};
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    learn_mlp *m = learn_mlp_new(3, sizes, act, &rng);
    assert_non_null(m);
    double x[B * IN], dout[B * OUT], dx[B * IN], c[OUT] = {0.7, -1.3, 0.4};
    for (int i = 0; i < B * IN; i++)
        x[i] = 2.0 * kt_rng_uniform(&rng) - 1.0;
    for (int i = 0; i < B * OUT; i++)
        dout[i] = c[i % OUT];
    double *g = learn_mlp_grads(m);
    for (size_t i = 0; i < learn_mlp_num_params(m); i++)
        g[i] = 12345.0;
    assert_non_null(learn_mlp_forward(m, x, B));
    assert_int_equal(learn_mlp_input_grad(m, dout, dx), 0);
    for (size_t i = 0; i < learn_mlp_num_params(m); i++)
        assert_true(g[i] == 12345.0);
    double worst = 0;
    for (int i = 0; i < B * IN; i++) {
        double keep = x[i], lo = 0, hi = 0, h = 1e-6;
        x[i] = keep + h;
        const double *o = learn_mlp_forward(m, x, B);
        for (int k = 0; k < B * OUT; k++)
            hi += c[k % OUT] * o[k];
        x[i] = keep - h;
        o = learn_mlp_forward(m, x, B);
        for (int k = 0; k < B * OUT; k++)
            lo += c[k % OUT] * o[k];
        x[i] = keep;
        double fd = (hi - lo) / (2 * h);
        double rel = fabs(fd - dx[i]) / fmax(1e-3, fabs(fd) + fabs(dx[i]));
        if (rel >= 1e-5)
            fail_msg("input %d: input_grad %.10g, finite difference %.10g", i, dx[i], fd);
        worst = rel > worst ? rel : worst;
    }
    printf("%s: input gradient, worst relative error %.2e\n",
           act == LEARN_ACT_TANH ? "tanh" : "relu", worst);
    learn_mlp_free(m);
}

static void input_gradient_matches_finite_differences(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 1);
    const int sizes[] = {2, 3, 1};
    learn_mlp *m = learn_mlp_new(2, sizes, LEARN_ACT_TANH, &rng);
    double dout[1] = {1}, dx[2];
    assert_int_equal(learn_mlp_input_grad(m, dout, dx), -1); /* no forward yet */
    learn_mlp_free(m);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        input_grad_check(LEARN_ACT_TANH, seed);
        input_grad_check(LEARN_ACT_RELU, seed);
    }
}

/* Mean squared error of m on the set; with train, one Adam step on it first. */
static double fit_epoch(learn_mlp *m, learn_adam *opt, const double *x, const double *y, int n,
                        int train)
{
    const double *out = learn_mlp_forward(m, x, n);
    assert_non_null(out);
    double dout[256], mse = 0;
    for (int i = 0; i < n; i++) {
        double e = out[i] - y[i];
        mse += e * e / n;
        dout[i] = 2.0 * e / n;
    }
    if (train) {
        assert_int_equal(learn_mlp_backward(m, dout), 0);
        learn_adam_step(opt, learn_mlp_params(m), learn_mlp_grads(m));
    }
    return mse;
}

/* y = sin(2 x0) cos(x1) + 0.5 x0 x1 on 128 points of [-1, 1]^2: full-batch Adam brings the mean
 * squared error down by a large factor, with either activation. */
static void learns_smooth_function(void **state)
{
    (void)state;
    enum { N = 128 };
    double x[2 * N], y[N];
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    for (int i = 0; i < N; i++) {
        x[2 * i] = 2.0 * kt_rng_uniform(&rng) - 1.0;
        x[2 * i + 1] = 2.0 * kt_rng_uniform(&rng) - 1.0;
        y[i] = sin(2.0 * x[2 * i]) * cos(x[2 * i + 1]) + 0.5 * x[2 * i] * x[2 * i + 1];
    }
    for (int a = 0; a < 2; a++) {
        learn_activation act = a ? LEARN_ACT_RELU : LEARN_ACT_TANH;
        const int sizes[4] = {2, 24, 24, 1};
        learn_mlp *m = learn_mlp_new(3, sizes, act, &rng);
        assert_non_null(m);
        learn_adam opt;
        assert_int_equal(learn_adam_init(&opt, learn_mlp_num_params(m), 0.01), 0);
        double before = fit_epoch(m, &opt, x, y, N, 0);
        for (int step = 0; step < 3000; step++)
            fit_epoch(m, &opt, x, y, N, 1);
        double after = fit_epoch(m, &opt, x, y, N, 0);
        printf("%s: mse %.4g -> %.4g (x%.0f)\n", a ? "relu" : "tanh", before, after,
               before / after);
        assert_true(after < before / 100);
        assert_true(after < 2e-3);
        learn_adam_release(&opt);
        learn_mlp_free(m);
    }
}

/* Same seed: same weights, outputs and training; another seed: other weights. */
static void deterministic_for_a_seed(void **state)
{
    (void)state;
    const int sizes[3] = {4, 8, 3};
    learn_mlp *nets[3];
    for (int k = 0; k < 3; k++) {
        kt_rng rng;
        kt_rng_seed(&rng, k == 2 ? 43 : 42);
        nets[k] = learn_mlp_new(2, sizes, LEARN_ACT_TANH, &rng);
        assert_non_null(nets[k]);
    }
    size_t n = learn_mlp_num_params(nets[0]);
    assert_memory_equal(learn_mlp_params(nets[0]), learn_mlp_params(nets[1]), n * sizeof(double));
    assert_memory_not_equal(learn_mlp_params(nets[0]), learn_mlp_params(nets[2]),
                            n * sizeof(double));
    double x[8] = {0.1, -0.2, 0.3, 0.9, -1, 0.5, 0.25, 0}, dout[6] = {1, -1, 0.5, 2, 0, -3};
    double out[2][6];
    for (int k = 0; k < 2; k++) {
        learn_adam opt;
        assert_int_equal(learn_adam_init(&opt, n, 0.01), 0);
        for (int step = 0; step < 20; step++) {
            assert_non_null(learn_mlp_forward(nets[k], x, 2));
            assert_int_equal(learn_mlp_backward(nets[k], dout), 0);
            learn_adam_step(&opt, learn_mlp_params(nets[k]), learn_mlp_grads(nets[k]));
        }
        memcpy(out[k], learn_mlp_forward(nets[k], x, 2), sizeof out[k]);
        learn_adam_release(&opt);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    assert_memory_equal(learn_mlp_params(nets[0]), learn_mlp_params(nets[1]), n * sizeof(double));
    /* A row's output does not depend on the rows batched with it. */
    const double *one = learn_mlp_forward(nets[0], x + 4, 1);
    assert_non_null(one);
    for (int j = 0; j < 3; j++)
        assert_true(fabs(one[j] - out[0][3 + j]) < 1e-12);
    for (int k = 0; k < 3; k++)
        learn_mlp_free(nets[k]);
}

static void bad_arguments_refused(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 1);
    const int ok[3] = {2, 3, 1}, zero[3] = {2, 0, 1};
    assert_null(learn_mlp_new(0, ok, LEARN_ACT_TANH, &rng));
    assert_null(learn_mlp_new(LEARN_MLP_MAX_LAYERS + 1, ok, LEARN_ACT_TANH, &rng));
    assert_null(learn_mlp_new(2, zero, LEARN_ACT_TANH, &rng));
    assert_null(learn_mlp_new(2, ok, (learn_activation)7, &rng));
    learn_mlp *m = learn_mlp_new(2, ok, LEARN_ACT_RELU, &rng);
    assert_non_null(m);
    assert_int_equal(learn_mlp_num_inputs(m), 2);
    assert_int_equal(learn_mlp_num_outputs(m), 1);
    double d[1] = {1}, x[2] = {0.5, 0.5};
    assert_int_equal(learn_mlp_backward(m, d), -1); /* no forward yet */
    assert_null(learn_mlp_forward(m, x, 0));
    assert_null(learn_mlp_forward(m, x, LEARN_MLP_MAX_BATCH + 1));
    /* A scaled output layer scales the output of a zero-bias network. */
    const double *o = learn_mlp_forward(m, x, 1);
    double before = o[0];
    learn_mlp_scale_output(m, 0.5);
    assert_true(fabs(learn_mlp_forward(m, x, 1)[0] - 0.5 * before) < 1e-12);
    learn_mlp_free(m);
    learn_mlp_free(NULL);

    /* Softmax: masked entries get 0, the rest sum to 1; nothing allowed gives all zeros. */
    double z[4] = {1000, 1, 2, -3}, p[4];
    unsigned char mask[4] = {0, 1, 1, 0}, none[4] = {0};
    assert_int_equal(learn_softmax(z, mask, 4, p), 2);
    assert_true(p[0] == 0 && p[3] == 0);
    assert_true(fabs(p[1] + p[2] - 1) < 1e-12 && p[2] > p[1]);
    assert_int_equal(learn_softmax(z, NULL, 4, p), 4);
    assert_true(fabs(p[0] - 1) < 1e-12);
    assert_int_equal(learn_softmax(z, none, 4, p), 0);
    assert_true(p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0);
    z[1] = NAN;
    assert_int_equal(learn_softmax(z, mask, 4, p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(input_gradient_matches_finite_differences),
        cmocka_unit_test(learns_smooth_function),
        cmocka_unit_test(deterministic_for_a_seed),
        cmocka_unit_test(bad_arguments_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
