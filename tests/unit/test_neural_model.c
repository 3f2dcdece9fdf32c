/* Unit tests of neural/nn_model: the gradients of the mean loss (every parameter of a tiny network
 * with a grouped conv, batch norm, ReLU, max and average pooling, a residual block, global pooling
 * and linear; and the conv outputs' gradients) against central differences; per-conv seeded
 * initialisation (a transformation of one conv leaves the others' weights equal); refused inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "neural/nn_model.h"

static const char *TINY =
    "{\"name\": \"tiny\", \"input\": [2, 6, 6], \"classes\": 3, \"layers\": ["
    "{\"type\": \"conv\", \"name\": \"a\", \"out\": 8},"
    "{\"type\": \"batchnorm\"}, {\"type\": \"relu\"}, {\"type\": \"maxpool\"},"
    "{\"type\": \"residual\", \"layers\": [{\"type\": \"conv\", \"name\": \"b\", \"out\": 8},"
    "  {\"type\": \"batchnorm\"}, {\"type\": \"relu\"},"
    "  {\"type\": \"conv\", \"name\": \"c\", \"out\": 8}, {\"type\": \"batchnorm\"}]},"
    "{\"type\": \"relu\"}, {\"type\": \"avgpool\", \"size\": 1},"
    "{\"type\": \"global_avgpool\"}, {\"type\": \"flatten\"}, {\"type\": \"linear\", \"out\": 3}]}";

static nn_network *tiny(void)
{
    json_error_t je;
    json_t *doc = json_loads(TINY, 0, &je);
    kt_error err;
    nn_network *n = nn_network_parse(doc, &err);
    json_decref(doc);
    if (!n)
        fail_msg("%s", err.message);
    return n;
}

static double loss_at(nn_model *m, const float *x, int n, const unsigned char *lab)
{
    double l = 0;
    kt_error err;
    assert_int_equal(nn_model_forward(m, x, n, 1, lab, &l, NULL, &err), 0);
    return l;
}

static void gradients_match_differences(void **state)
{
    (void)state;
    nn_network *net = tiny();
    nn_transform per[3] = {{1, 1, 0}, {2, 2, 0}, {2, 1, 1}};
    for (int variant = 0; variant < 2; variant++) {
        kt_error err;
        nn_model *m = nn_model_new(net, variant ? per : NULL, 4, &err);
        assert_non_null(m);
        nn_model_init(m, 7);
        kt_rng r;
        kt_rng_seed(&r, 5);
        int n = 4;
        float x[4 * 2 * 36];
        for (int i = 0; i < n * 72; i++)
            x[i] = (float)kt_rng_normal(&r);
        unsigned char lab[4] = {0, 2, 1, 2};
        double l0 = loss_at(m, x, n, lab);
        assert_true(l0 > 0 && isfinite(l0));
        nn_model_backward(m);
        long long np = nn_model_param_count(m);
        float *p = nn_model_params(m);
        float *g = malloc(sizeof(float) * (size_t)np);
        memcpy(g, nn_model_grads(m), sizeof(float) * (size_t)np);
        double worst = 0;
        for (long long i = 0; i < np; i++) {
            float keep = p[i];
            double eps = 1e-3; /* larger steps cross ReLU / max kinks */
            p[i] = keep + (float)eps;
            double up = loss_at(m, x, n, lab);
            p[i] = keep - (float)eps;
            double down = loss_at(m, x, n, lab);
            p[i] = keep;
            double num = (up - down) / (2 * eps), e = fabs(num - g[i]);
            if (e > 1e-3 + 2e-2 * fmax(fabs(num), fabs(g[i])))
                fail_msg("variant %d parameter %lld: analytic %.6g numeric %.6g", variant, i, g[i],
                         num);
            if (e > worst)
                worst = e;
        }
        print_message("variant %d: %lld parameters, loss %.4f, worst abs error %.2e\n", variant, np,
                      l0, worst);
        free(g);
        nn_model_free(m);
    }
    nn_network_free(net);
}

/* dL/dA of conv "a" against differences: perturbing A directly is not possible from outside, but
 * A's gradient dotted with the change of A caused by a weight change must equal the loss change. */
static void conv_output_gradient(void **state)
{
    (void)state;
    nn_network *net = tiny();
    kt_error err;
    nn_model *m = nn_model_new(net, NULL, 3, &err);
    nn_model *m2 = nn_model_new(net, NULL, 3, &err);
    nn_model_init(m, 3);
    nn_model_init(m2, 3);
    kt_rng r;
    kt_rng_seed(&r, 9);
    float x[3 * 72];
    for (int i = 0; i < 3 * 72; i++)
        x[i] = (float)kt_rng_normal(&r);
    unsigned char lab[3] = {1, 0, 2};
    double l0 = loss_at(m, x, 3, lab);
    nn_model_backward(m);
    nn_shape s;
    for (int conv = 0; conv < 3; conv++) {
        const float *A = nn_model_conv_output(m, conv, &s);
        const float *dA = nn_model_conv_grad(m, conv);
        long long cnt = 3LL * s.c * s.h * s.w;
        float *A0 = malloc(sizeof(float) * (size_t)cnt);
        memcpy(A0, A, sizeof(float) * (size_t)cnt);
        /* a small random change of this conv's weights */
        float *p2 = nn_model_params(m2);
        memcpy(p2, nn_model_params(m), sizeof(float) * (size_t)nn_model_param_count(m));
        long long off = 0;
        for (int c = 0; c < conv; c++) {
            nn_conv_shape cs;
            nn_network_conv(net, c, &cs);
            off += (long long)cs.C * cs.K * cs.R * cs.S + 2LL * cs.K;
        }
        nn_conv_shape cs;
        nn_network_conv(net, conv, &cs);
        for (long long i = 0; i < (long long)cs.C * cs.K * 9; i++)
            p2[off + i] += (float)(1e-3 * kt_rng_normal(&r));
        double l1 = loss_at(m2, x, 3, lab);
        const float *A1 = nn_model_conv_output(m2, conv, NULL);
        double pred = 0;
        for (long long i = 0; i < cnt; i++)
            pred += (double)dA[i] * (A1[i] - A0[i]);
        if (fabs(pred - (l1 - l0)) > 1e-5 + 0.05 * fabs(l1 - l0))
            fail_msg("conv %d: dA . dA-change %.6g, loss change %.6g", conv, pred, l1 - l0);
        free(A0);
    }
    nn_model_free(m);
    nn_model_free(m2);
    nn_network_free(net);
}

static void seeded_per_conv(void **state)
{
    (void)state;
    nn_network *net = tiny();
    kt_error err;
    nn_transform per[3] = {{1, 1, 0}, {1, 1, 0}, {2, 1, 0}};
    nn_model *a = nn_model_new(net, NULL, 2, &err), *b = nn_model_new(net, per, 2, &err);
    nn_model_init(a, 42);
    nn_model_init(b, 42);
    /* convs a and b (and their batch norms) come first: identical */
    long long same = 2 * 8 * 9 + 16 + 8 * 8 * 9 + 16;
    assert_memory_equal(nn_model_params(a), nn_model_params(b), sizeof(float) * (size_t)same);
    assert_int_equal(nn_model_param_count(b), nn_model_param_count(a) - 8 * 4 * 9);
    nn_model_init(b, 43);
    assert_memory_not_equal(nn_model_params(a), nn_model_params(b), sizeof(float) * 16);
    /* Kaiming: the first conv's weights have variance about 2/fan_in = 2/18 */
    double s2 = 0;
    for (int i = 0; i < 144; i++)
        s2 += (double)nn_model_params(a)[i] * nn_model_params(a)[i];
    assert_true(s2 / 144 > 0.05 && s2 / 144 < 0.2);
    assert_int_equal(nn_model_param_decays(a, 0), 1);
    assert_int_equal(nn_model_param_decays(a, 144), 0); /* batch norm scale */
    float x[2 * 72] = {0};
    unsigned char bad[2] = {0, 3};
    assert_int_equal(nn_model_forward(a, x, 2, 1, bad, NULL, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(nn_model_forward(a, x, 3, 1, NULL, NULL, NULL, &err), -1);
    nn_transform wrong[3] = {{3, 1, 0}, {1, 1, 0}, {1, 1, 0}};
    assert_null(nn_model_new(net, wrong, 2, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    nn_model_free(a);
    nn_model_free(b);
    nn_network_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_match_differences),
        cmocka_unit_test(conv_output_gradient),
        cmocka_unit_test(seeded_per_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
