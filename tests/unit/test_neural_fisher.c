/* Unit tests of neural/nn_fisher and nn_legality: the Fisher Potential of a one-conv network
 * (dense and grouped) against an independent double-precision computation written here (conv,
 * linear, softmax cross-entropy, dL/dA by hand); determinism and the average over seeds; errors;
 * on the presets with the shipped Fashion-MNIST copy: finite positive scores and the time of one
 * potential at batch 64; the legality cache (a second call is cached with the same numbers, also
 * from two threads at once), thresholds and refused questions.
 * Issue 26: the bounds of nn_cost (the networks, each layer within its limits, refused with
 * the limit, the figure and the layer; nothing allocated for them; the presets' figures; a flatten
 * past INT_MAX refused), and a check stopped by its stop check or deadline (no call after it said
 * stop, nothing cached). */
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
#include "neural/nn_cost.h"
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
        assert_int_equal(nn_fisher_potential(net, &t, &d, &o, NULL, &total, layer, &err), 0);
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
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &a, layer, &err), 0);
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &b, NULL, &err), 0);
    assert_true(a > 0 && a == b); /* deterministic */
    assert_true(fabs(layer[0] + layer[1] - a) <= 1e-12 * a);
    o.seed = 2;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &c, NULL, &err), 0);
    assert_true(c != a);
    /* seeds 2 from seed 1: initialisations 1 and 2 on seed 1's minibatch */
    o.seed = 1;
    o.seeds = 2;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &s2, NULL, &err), 0);
    assert_true(s2 > 0 && s2 != a);
    o.seeds = 1;
    nn_transform per[2] = {{1, 1, 0}, {9, 1, 0}};
    assert_int_equal(nn_fisher_potential(net, per, &d, &o, NULL, &a, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    o.batch = 41;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &a, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    o.batch = 8;
    d.classes = 10;
    assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &a, NULL, &err), -1);
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
        assert_int_equal(nn_fisher_potential(net, NULL, &d, &o, NULL, &total, layer, &err), 0);
        double ms = kt_clock_ms() - t0;
        print_message("%s: fisher %.4e in %.0f ms (batch 64)\n", nn_network_name(net), total, ms);
        assert_true(isfinite(total) && total > 0);
        for (int c = 0; c < nn_network_conv_count(net); c++)
            assert_true(layer[c] > 0);
    }
    nn_dataset_release(&d);
    nn_presets_free(p);
}

/* A network as JSON into buf: input 1x28x28, conv "t" of first_out channels (3x3), a 2x2 max pool
 * when pool, then n convs "c1".."cn" of out channels, kernel, pad; global pooling, linear 10. */
static void chain(char *buf, size_t cap, const char *name, int first_out, int pool, int n, int out,
                  int kernel, int pad)
{
    int used = snprintf(buf, cap,
                        "{\"name\": \"%s\", \"input\": [1, 28, 28], \"classes\": 10, \"layers\": "
                        "[{\"type\": \"conv\", \"name\": \"t\", \"out\": %d}%s",
                        name, first_out, pool ? ", {\"type\": \"maxpool\", \"size\": 2}" : "");
    for (int i = 1; i <= n; i++)
        used += snprintf(buf + used, cap - (size_t)used,
                         ", {\"type\": \"conv\", \"name\": \"c%d\", \"out\": %d, \"kernel\": %d, "
                         "\"pad\": %d}",
                         i, out, kernel, pad);
    used += snprintf(buf + used, cap - (size_t)used,
                     ", {\"type\": \"global_avgpool\"}, {\"type\": \"flatten\"}, {\"type\": "
                     "\"linear\", \"out\": 10}]}");
    assert_true(used < (int)cap);
}

/* n blank 1x28x28 images of 10 classes (the bounds are checked before any image is read). */
static nn_dataset blank28(int n)
{
    nn_dataset d = {n, 1, 28, 28, 10, calloc((size_t)n * 784, sizeof(float)), calloc((size_t)n, 1)};
    assert_non_null(d.images);
    assert_non_null(d.labels);
    return d;
}

static void cost_bounds_the_check(void **state)
{
    (void)state;
    static char text[32768];
    kt_error err;
    nn_cost c;
    /* Issue 26, break 1: 15 convs of 1,024 channels, kernel 1, pad 7 after conv t. Each layer is
     * within its limits, so the network parses; a check of it would need ~171 GiB. */
    chain(text, sizeof text, "wide", 16, 0, 15, 1024, 1, 7);
    nn_network *wide = parse(text);
    assert_int_equal(nn_cost_of(wide, 64, &c, &err), 0);
    print_message("issue network 1: %.1f GiB, %.0f GFLOP a pass; largest layer %d %dx%dx%d\n",
                  (double)c.model_bytes / (1 << 30), c.pass_flops / 1e9, c.largest_layer,
                  c.largest.c, c.largest.h, c.largest.w);
    assert_true(c.model_bytes > (100LL << 30));
    assert_int_equal(c.largest_layer, 15);
    assert_true(c.largest.c == 1024 && c.largest.h == 28 + 14 * 15 && c.largest.w == 238);
    assert_int_equal(nn_cost_check(wide, 64, 3, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    print_message("refused: %s (hint: %s)\n", err.message, err.hint);
    assert_non_null(strstr(err.message, "is too large for a Fisher check: it needs 171 GiB of "
                                        "memory, more than the limit of 512 MiB"));
    assert_non_null(strstr(err.message, "layer 15 (conv \"c15\")'s, is 1024x238x238"));
    assert_non_null(strstr(err.message, "GFLOP, more than the limit of 100 GFLOP"));
    assert_true(err.hint[0] != '\0');
    /* nn_fisher_potential refuses it before allocating (the process has no 171 GiB). */
    nn_dataset d = blank28(64);
    nn_fisher_opts o = nn_fisher_default_opts();
    o.seeds = 3;
    double total = -1;
    assert_int_equal(nn_fisher_potential(wide, NULL, &d, &o, NULL, &total, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "limit of 512 MiB"));
    assert_true(total == -1);
    nn_network_free(wide);
    /* Break 2: 120 convs of 32 channels, kernel 15, at 14x14: 6 TFLOP a check. */
    chain(text, sizeof text, "deep", 32, 1, 119, 32, 15, 7);
    nn_network *deep = parse(text);
    assert_int_equal(nn_cost_of(deep, 64, &c, &err), 0);
    print_message("issue network 2: %.0f MiB, %.0f GFLOP a check\n",
                  (double)c.model_bytes / (1 << 20), 3 * c.pass_flops / 1e9);
    assert_true(3 * c.pass_flops > 50 * NN_COST_MAX_CHECK_FLOPS);
    assert_int_equal(nn_cost_check(deep, 64, 3, &err), -1);
    nn_network_free(deep);
    /* Within the memory limit, beyond the work limit: 20 convs of 64 channels at 14x14. */
    chain(text, sizeof text, "long", 64, 1, 20, 64, 3, 1);
    nn_network *lng = parse(text);
    assert_int_equal(nn_cost_of(lng, 64, &c, &err), 0);
    assert_true(c.model_bytes <= NN_COST_MAX_MODEL_BYTES);
    assert_int_equal(nn_cost_check(lng, 64, 3, &err), -1);
    print_message("refused: %s\n", err.message);
    assert_non_null(strstr(err.message, "GFLOP, more than the limit of 100 GFLOP (3 passes of 64"));
    assert_null(strstr(err.message, "memory"));
    assert_int_equal(nn_cost_check(lng, 64, 1, &err), 0); /* one pass fits */
    nn_network_free(lng);
    /* The presets fit with the figures nn_cost.h and the room's README give. */
    nn_presets *p = nn_presets_load(KT_SOURCE_DIR "/networks", &err);
    assert_non_null(p);
    for (int i = 0; i < nn_presets_count(p); i++) {
        const nn_network *net = nn_presets_at(p, i);
        assert_int_equal(nn_cost_of(net, 64, &c, &err), 0);
        print_message("%s: %.1f MiB, %.1f GFLOP a check of 3 passes\n", nn_network_name(net),
                      (double)c.model_bytes / (1 << 20), 3 * c.pass_flops / 1e9);
        assert_true(c.model_bytes < (110LL << 20) && 3 * c.pass_flops < 18e9);
        assert_int_equal(nn_cost_check(net, 64, 3, &err), 0);
    }
    nn_presets_free(p);
    /* A flatten of more values than an int holds (1024 x 1516 x 1516) is refused while parsing. */
    int used = snprintf(text, sizeof text,
                        "{\"name\": \"flat\", \"input\": [1, 256, 256], \"classes\": 10, "
                        "\"layers\": [");
    for (int i = 1; i <= 90; i++)
        used += snprintf(text + used, sizeof text - (size_t)used,
                         "{\"type\": \"conv\", \"name\": \"c%d\", \"out\": 1024, \"kernel\": 1, "
                         "\"pad\": 7}, ",
                         i);
    snprintf(text + used, sizeof text - (size_t)used,
             "{\"type\": \"flatten\"}, {\"type\": \"linear\", \"out\": 10}]}");
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_null(nn_network_parse(doc, &err));
    json_decref(doc);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "flattening 1024x1516x1516"));
    free_data(&d);
}

/* A stop check that says stop at its stop_at-th call and counts every call. */
typedef struct stop_counter {
    int calls, stop_at;
    double said_at; /* kt_clock_s when it said stop */
} stop_counter;

static int stop_after(void *arg)
{
    stop_counter *k = arg;
    if (++k->calls < k->stop_at)
        return 0;
    k->said_at = kt_clock_s();
    return 1;
}

static void stop_and_deadline(void **state)
{
    (void)state;
    kt_error err;
    nn_presets *p = nn_presets_load(KT_SOURCE_DIR "/networks", &err);
    assert_non_null(p);
    const nn_network *vgg = nn_presets_find(p, "vgg_fm");
    nn_dataset_paths paths = {"/nonexistent", SMALL_DIR};
    nn_dataset d;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 256, &paths, &d, &err), 0);
    nn_fisher_opts o = nn_fisher_default_opts();
    o.seeds = 3;
    double total = -1;
    /* How often a whole potential asks: every layer and every image of each conv, both ways. */
    stop_counter all = {0, 1 << 30, 0};
    nn_stop s = {stop_after, &all, 0};
    double t0 = kt_clock_s();
    assert_int_equal(nn_fisher_potential(vgg, NULL, &d, &o, &s, &total, NULL, &err), 0);
    double full = kt_clock_s() - t0;
    print_message("a potential of vgg_fm (3 passes): %.2f s, the stop check asked %d times\n", full,
                  all.calls);
    assert_true(all.calls >= 3 * 2 * 6 * 64); /* passes x (forward, backward) x convs x images */
    /* Stopped in its first pass: returns at once, nothing asked after the stop. */
    stop_counter k = {0, 100, 0};
    s.arg = &k;
    assert_int_equal(nn_fisher_potential(vgg, NULL, &d, &o, &s, &total, NULL, &err), NN_STOPPED);
    double late = kt_clock_s() - k.said_at;
    print_message("stopped: returned %.4f s after the stop check said stop (%s)\n", late,
                  err.message);
    assert_int_equal(k.calls, 100);
    assert_non_null(strstr(err.message, "stopped"));
    /* A deadline already passed. */
    nn_stop past = {NULL, NULL, kt_clock_s() - 1};
    assert_int_equal(nn_fisher_potential(vgg, NULL, &d, &o, &past, &total, NULL, &err),
                     NN_TIMED_OUT);
    assert_non_null(strstr(err.message, "out of time"));
    /* Through the legality check: a stopped verdict caches nothing; the next one computes. */
    nn_legality *l = nn_legality_new(&paths, &o, &err);
    assert_non_null(l);
    nn_transform t = {2, 1, 0};
    nn_verdict v;
    stop_counter k2 = {0, 10, 0};
    s.arg = &k2;
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, &s, &v, &err),
                     NN_STOPPED);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, &past, &v, &err),
                     NN_TIMED_OUT);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, NULL, &v, &err),
                     0);
    assert_int_equal(v.cached, 0);
    assert_true(v.fisher > 0 && v.fisher_original > 0);
    /* nn_legality_fits: the presets fit, the network does not. */
    assert_int_equal(nn_legality_fits(l, vgg, &err), 0);
    static char text[8192];
    chain(text, sizeof text, "wide", 16, 0, 15, 1024, 1, 7);
    nn_network *wide = parse(text);
    assert_int_equal(nn_legality_fits(l, wide, &err), -1);
    assert_int_equal(nn_legality_check(l, wide, 1, &t, "fashion-mnist-small", 1.0, NULL, &v, &err),
                     -1);
    assert_non_null(strstr(err.message, "limit of 512 MiB"));
    nn_network_free(wide);
    nn_legality_free(l);
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
    a->rc = nn_legality_check(a->l, a->net, 3, &t, "fashion-mnist-small", 1.0, NULL, &a->v, &err);
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
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, NULL, &v1, &err),
                     0);
    assert_int_equal(v1.cached, 0);
    assert_true(v1.seconds > 0);
    assert_true(v1.fisher > 0 && v1.fisher_original > 0);
    assert_true(fabs(v1.ratio - v1.fisher / v1.fisher_original) < 1e-12);
    assert_int_equal(v1.legal, v1.ratio >= 1.0);
    print_message("vgg_fm conv4 group 2: ratio %.3f (%s), %.3f s\n", v1.ratio,
                  v1.legal ? "legal" : "illegal", v1.seconds);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1.0, NULL, &v2, &err),
                     0);
    assert_int_equal(v2.cached, 1);
    assert_true(v2.seconds == 0);
    assert_true(v2.fisher == v1.fisher && v2.fisher_original == v1.fisher_original);
    /* thresholds only change the verdict */
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 0.0, NULL, &v3, &err),
                     0);
    assert_int_equal(v3.legal, 1);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "fashion-mnist-small", 1e9, NULL, &v3, &err),
                     0);
    assert_int_equal(v3.legal, 0);
    /* the same computation through nn_fisher_potential */
    nn_dataset d;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 256, &paths, &d, &err), 0);
    nn_transform per[6] = {{1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {2, 1, 0}, {1, 1, 0}, {1, 1, 0}};
    double direct;
    assert_int_equal(nn_fisher_potential(vgg, per, &d, &o, NULL, &direct, NULL, &err), 0);
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
    assert_int_equal(nn_legality_check(l, vgg, 3, &id, "fashion-mnist-small", 1, NULL, &v3, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 3, &bad, "fashion-mnist-small", 1, NULL, &v3, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 9, &t, "fashion-mnist-small", 1, NULL, &v3, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_int_equal(nn_legality_check(l, vgg, 3, &t, "cifar", 1, NULL, &v3, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    const nn_network *res = nn_presets_find(p, "resnet_fm");
    assert_int_equal(nn_legality_check(l, res, nn_network_find_conv(res, "res1_conv2"), &bott,
                                       "fashion-mnist-small", 1, NULL, &v3, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    nn_legality_free(l);
    nn_presets_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_conv_against_reference), cmocka_unit_test(options_and_errors),
        cmocka_unit_test(presets_on_fashion_mnist),   cmocka_unit_test(legality_cache),
        cmocka_unit_test(cost_bounds_the_check),      cmocka_unit_test(stop_and_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
