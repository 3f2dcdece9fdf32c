/* Unit tests of neural/nn_fisher and nn_legality: the Fisher Potential of a one-conv network
 * (dense and grouped) against an independent double-precision computation written here (conv,
 * linear, softmax cross-entropy, dL/dA by hand); determinism and the average over seeds; errors;
 * on the presets with the shipped Fashion-MNIST copy: finite positive scores and the time of one
 * potential at batch 64; the legality cache (a second call is cached with the same numbers, also
 * from two threads at once), thresholds and refused questions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rng.h"
#include "neural/nn_fisher.h"
#include "neural/nn_legality.h"
#include "neural/nn_model.h"

#define SMALL_DIR KT_SOURCE_DIR "/networks/data/fashion-mnist-small"

static nn_network *parse(const char *text)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    kt_error err;
    nn_network *n = nn_network_parse(doc, &err);
    json_decref(doc);
    if (!n)
        fail_msg("%s", err.message);
    return n;
}

/* N synthetic images 2x5x5 with labels 0..2. */
static nn_dataset synthetic(int N, uint64_t seed)
{
    nn_dataset d = {N, 2, 5, 5, 3, calloc((size_t)N * 50, sizeof(float)), calloc((size_t)N, 1)};
    kt_rng r;
    kt_rng_seed(&r, seed);
    for (int i = 0; i < N * 50; i++)
        d.images[i] = (float)kt_rng_normal(&r);
    for (int i = 0; i < N; i++)
        d.labels[i] = (unsigned char)(i % 3);
    return d;
}

static void free_data(nn_dataset *d)
{
    free(d->images);
    free(d->labels);
}

/* conv (C=2 -> K=4, 3x3, pad 1, groups g) -> flatten -> linear 100 -> 3, in double. */
static void reference_fisher(const float *params, int g, const nn_dataset *d, double *delta)
{
    int C = 2, K = 4, H = 5, Wd = 5, N = d->n, cg = C / g;
    const float *w = params, *wl = params + K * cg * 9, *bl = wl + 3 * K * H * Wd;
    memset(delta, 0, sizeof(double) * (size_t)K);
    for (int n = 0; n < N; n++) {
        double A[4][5][5] = {{{0}}}, z[3], p[3], dz[3], s = 0, mx = -1e300;
        const float *x = d->images + n * C * H * Wd;
        for (int k = 0; k < K; k++)
            for (int y = 0; y < H; y++)
                for (int xx = 0; xx < Wd; xx++)
                    for (int c = 0; c < cg; c++)
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++) {
                                int iy = y + a - 1, ix = xx + b - 1, ci = (k / (K / g)) * cg + c;
                                if (iy >= 0 && iy < H && ix >= 0 && ix < Wd)
                                    A[k][y][xx] += (double)w[((k * cg + c) * 3 + a) * 3 + b] *
                                                   x[(ci * H + iy) * Wd + ix];
                            }
        for (int o = 0; o < 3; o++) {
            z[o] = bl[o];
            for (int j = 0; j < K * H * Wd; j++)
                z[o] += (double)wl[o * K * H * Wd + j] * (&A[0][0][0])[j];
            mx = fmax(mx, z[o]);
        }
        for (int o = 0; o < 3; o++)
            s += p[o] = exp(z[o] - mx);
        for (int o = 0; o < 3; o++)
            dz[o] = (p[o] / s - (o == d->labels[n])) / N;
        for (int k = 0; k < K; k++) {
            double v = 0;
            for (int j = 0; j < H * Wd; j++) {
                double dA = 0;
                for (int o = 0; o < 3; o++)
                    dA += wl[o * K * H * Wd + k * H * Wd + j] * dz[o];
                v += (&A[k][0][0])[j] * dA;
            }
            delta[k] += v * v / (2.0 * N);
        }
    }
}

static void one_conv_against_reference(void **state)
{
    (void)state;
    nn_network *net = parse("{\"name\": \"one\", \"input\": [2, 5, 5], \"classes\": 3, \"layers\": "
                            "[{\"type\": \"conv\", \"name\": \"c\", \"out\": 4}, {\"type\": "
                            "\"flatten\"}, {\"type\": \"linear\", \"out\": 3}]}");
    nn_dataset d = synthetic(12, 4);
    for (int g = 1; g <= 2; g++) {
        nn_transform t = {g, 1, 0};
        nn_fisher_opts o = {12, 1, 77}; /* the whole set: the shuffle does not matter */
        double total = 0, layer[1], delta[4];
        kt_error err;
        assert_int_equal(nn_fisher_potential(net, &t, &d, &o, &total, layer, &err), 0);
        nn_model *m = nn_model_new(net, &t, 12, &err);
        nn_model_init(m, 77);
        reference_fisher(nn_model_params(m), g, &d, delta);
        double expect = delta[0] + delta[1] + delta[2] + delta[3];
        print_message("groups %d: fisher %.6e, reference %.6e\n", g, total, expect);
        assert_true(expect > 0);
        assert_true(fabs(total - expect) <= 1e-4 * expect);
        assert_true(fabs(layer[0] - total) <= 1e-12 * total);
        nn_model_free(m);
    }
    free_data(&d);
    nn_network_free(net);
}

static void options_and_errors(void **state)
{
    (void)state;
    nn_network *net = parse("{\"name\": \"two\", \"input\": [2, 5, 5], \"classes\": 3, \"layers\": "
                            "[{\"type\": \"conv\", \"name\": \"a\", \"out\": 8}, {\"type\": "
                            "\"batchnorm\"}, {\"type\": \"relu\"}, {\"type\": \"conv\", \"name\": "
                            "\"b\", \"out\": 8}, {\"type\": \"batchnorm\"}, {\"type\": \"relu\"}, "
                            "{\"type\": \"global_avgpool\"}, {\"type\": \"flatten\"}, {\"type\": "
                            "\"linear\", \"out\": 3}]}");
    nn_dataset d = synthetic(40, 5);
    kt_error err;
    nn_fisher_opts o = nn_fisher_default_opts();
    assert_int_equal(o.batch, 64);
    o.batch = 16;
    double a, b, c, s2, layer[2];
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &a, layer, &err), 0);
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &b, NULL, &err), 0);
    assert_true(a > 0 && a == b); /* deterministic */
    assert_true(fabs(layer[0] + layer[1] - a) <= 1e-12 * a);
    o.seed = 2;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &c, NULL, &err), 0);
    assert_true(c != a);
    /* seeds 2 from seed 1: initialisations 1 and 2 on seed 1's minibatch */
    o.seed = 1;
    o.seeds = 2;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &s2, NULL, &err), 0);
    assert_true(s2 > 0 && s2 != a);
    o.seeds = 1;
    nn_transform per[2] = {{1, 1, 0}, {9, 1, 0}};
    assert_int_equal(nn_fisher_potential(net, per, &d, &o, &a, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    o.batch = 41;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &a, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    o.batch = 8;
    d.classes = 10;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &a, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    free_data(&d);
    nn_network_free(net);
}

static void presets_on_fashion_mnist(void **state)
{
    (void)state;
    kt_error err;
    nn_presets *p = nn_presets_load(KT_SOURCE_DIR "/networks", &err);
    assert_non_null(p);
    nn_dataset_paths paths = {"/nonexistent", SMALL_DIR};
    nn_dataset d;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 256, &paths, &d, &err), 0);
    for (int i = 0; i < nn_presets_count(p); i++) {
        const nn_network *net = nn_presets_at(p, i);
        double total = 0, layer[NN_MAX_LAYERS];
        nn_fisher_opts o = nn_fisher_default_opts();
        double t0 = kt_clock_ms();
        assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, &total, layer, &err), 0);
        double ms = kt_clock_ms() - t0;
        print_message("%s: fisher %.4e in %.0f ms (batch 64)\n", nn_network_name(net), total, ms);
        assert_true(isfinite(total) && total > 0);
        for (int c = 0; c < nn_network_conv_count(net); c++)
            assert_true(layer[c] > 0);
    }
    nn_dataset_release(&d);
    nn_presets_free(p);
}

typedef struct thread_arg {
    nn_legality *l;
    const nn_network *net;
    nn_verdict v;
    int rc;
} thread_arg;

static void *check_thread(void *arg)
{
    thread_arg *a = arg;
    nn_transform t = {4, 1, 0};
    kt_error err;
    a->rc = nn_legality_check(a->l, a->net, 3, &t, "fashion-mnist-small", 1.0, &a->v, &err);
    return NULL;
}

static void legality_cache(void **state)
{
    (void)state;
    kt_error err;
    nn_presets *p = nn_presets_load(KT_SOURCE_DIR "/networks", &err);
    const nn_network *vgg = nn_presets_find(p, "vgg_fm");
    nn_dataset_paths paths = {"/nonexistent", SMALL_DIR};
    nn_fisher_opts o = {32, 1, 1};
    nn_legality *l = nn_legality_new(&paths, &o, &err);
    assert_non_null(l);
    nn_transform t = {2, 1, 0};
    nn_verdict v1, v2, v3;
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, &v1, &err), 0);
    assert_int_equal(v1.cached, 0);
    assert_true(v1.seconds > 0);
    assert_true(v1.fisher > 0 && v1.fisher_original > 0);
    assert_true(fabs(v1.ratio - v1.fisher / v1.fisher_original) < 1e-12);
    assert_int_equal(v1.legal, v1.ratio >= 1.0);
    print_message("vgg_fm conv4 group 2: ratio %.3f (%s), %.3f s\n", v1.ratio,
                  v1.legal ? "legal" : "illegal", v1.seconds);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, &v2, &err), 0);
    assert_int_equal(v2.cached, 1);
    assert_true(v2.seconds == 0);
    assert_true(v2.fisher == v1.fisher && v2.fisher_original == v1.fisher_original);
    /* thresholds only change the verdict */
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 0.0, &v3, &err), 0);
    assert_int_equal(v3.legal, 1);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1e9, &v3, &err), 0);
    assert_int_equal(v3.legal, 0);
    /* the same computation through nn_fisher_potential */
    nn_dataset d;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 256, &paths, &d, &err), 0);
    nn_transform per[6] = {{1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {2, 1, 0}, {1, 1, 0}, {1, 1, 0}};
    double direct;
    assert_int_equal(nn_fisher_potential(vgg, per, &d, &o, &direct, NULL, &err), 0);
    assert_true(direct == v1.fisher);
    nn_dataset_release(&d);
    /* two threads on a new key: both succeed with the same numbers */
    thread_arg a = {l, vgg, {0}, -1}, b = {l, vgg, {0}, -1};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, check_thread, &a);
    pthread_create(&tb, NULL, check_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_true(a.v.fisher == b.v.fisher && a.v.fisher_original == v1.fisher_original);
    /* refused */
    nn_transform id = nn_transform_identity(), bad = {3, 1, 0}, bott = {1, 2, 0};
    assert_int_equal(nn_legality_check(l, vgg, 3, &id, "fashion-mnist-small", 1, &v3, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 3, &bad, "fashion-mnist-small", 1, &v3, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 9, &t, "fashion-mnist-small", 1, &v3, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "cifar", 1, &v3, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    const nn_network *res = nn_presets_find(p, "resnet_fm");
    assert_int_equal(nn_legality_check(l, res, nn_network_find_conv(res, "res1_conv2"), &bott,
                                       "fashion-mnist-small", 1, &v3, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    nn_legality_free(l);
    nn_presets_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_conv_against_reference),
        cmocka_unit_test(options_and_errors),
        cmocka_unit_test(presets_on_fashion_mnist),
        cmocka_unit_test(legality_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
