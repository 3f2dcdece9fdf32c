/* neural/nn_train — SGD with momentum (v = momentum * v + g + weight_decay * w on conv and linear
 * weights; w -= lr * v), the learning rate cosine-decayed per step from lr to 0, a seeded shuffle
 * per epoch, batch norm in training mode while training and with running statistics for the test
 * accuracy (nn_train.h). The last partial batch of an epoch is used when it holds at least 2
 * images (batch norm needs 2). */
#include "neural/nn_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rng.h"
#include "neural/nn_model.h"

nn_train_opts nn_train_default_opts(void)
{
    nn_train_opts o;
    memset(&o, 0, sizeof o);
    o.epochs = 3;
    o.batch = 64;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weight_decay = 5e-4;
    o.seed = 1;
    return o;
}

static int check_data(const nn_network *net, const nn_dataset *d, const char *what, kt_error *err)
{
    nn_shape in = nn_network_input(net);
    if (d->n < 2 || d->channels != in.c || d->height != in.h || d->width != in.w ||
        d->classes != nn_network_classes(net))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "train: %s data (%d images %dx%dx%d, %d classes) does not fit network "
                            "\"%s\" (%dx%dx%d, %d classes; at least 2 images)",
                            what, d->n, d->channels, d->height, d->width, d->classes,
                            nn_network_name(net), in.c, in.h, in.w, nn_network_classes(net));
    return 0;
}

/* Fraction of data the model classifies right (running statistics). */
static int evaluate(nn_model *m, const nn_dataset *d, int batch, double *acc, kt_error *err)
{
    long long img = (long long)d->channels * d->height * d->width;
    int right = 0;
    for (int at = 0; at < d->n; at += batch) {
        int n = d->n - at < batch ? d->n - at : batch, c = 0;
        if (nn_model_forward(m, d->images + at * img, n, 0, d->labels + at, NULL, &c, err) < 0)
            return -1;
        right += c;
    }
    *acc = (double)right / d->n;
    return 0;
}

int nn_train(const nn_network *net, const nn_transform *per_conv, const nn_dataset *train,
             const nn_dataset *test, const nn_train_opts *o, nn_train_result *out, kt_error *err)
{
    nn_train_opts opts = o ? *o : nn_train_default_opts();
    nn_model *m = NULL;
    float *v = NULL, *x = NULL;
    unsigned char *labels = NULL;
    int *idx = NULL, rc = -1;
    double t0 = kt_clock_s();
    memset(out, 0, sizeof *out);
    if (opts.epochs < 1 || opts.epochs > 1000 || opts.batch < 2 || opts.batch > 1024 ||
        !(opts.lr > 0) || opts.momentum < 0 || opts.momentum >= 1 || opts.weight_decay < 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "train: epochs 1..1000, batch 2..1024, lr > 0, momentum in [0, 1), "
                     "weight_decay >= 0");
        goto done;
    }
    if (check_data(net, train, "training", err) < 0 || check_data(net, test, "test", err) < 0)
        goto done;
    m = nn_model_new(net, per_conv, opts.batch, err);
    if (!m)
        goto done;
    nn_model_init(m, opts.seed);
    long long np = nn_model_param_count(m),
              img = (long long)train->channels * train->height * train->width;
    v = calloc((size_t)np, sizeof(float));
    x = malloc(sizeof(float) * (size_t)(img * opts.batch));
    labels = malloc((size_t)opts.batch);
    idx = malloc(sizeof(int) * (size_t)train->n);
    if (!v || !x || !labels || !idx) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "train: out of memory");
        goto done;
    }
    for (int i = 0; i < train->n; i++)
        idx[i] = i;
    int per_epoch = train->n / opts.batch + (train->n % opts.batch >= 2);
    long long step = 0, steps = (long long)per_epoch * opts.epochs;
    kt_rng r;
    kt_rng_seed(&r, opts.seed ^ 0x7a3c9e1f2b4d6a85ULL);
    float *p = nn_model_params(m), *g = nn_model_grads(m);
    for (int epoch = 1; epoch <= opts.epochs; epoch++) {
        for (int i = train->n - 1; i > 0; i--) {
            int j = (int)kt_rng_below(&r, (uint64_t)i + 1), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        double loss_sum = 0;
        int batches = 0;
        for (int at = 0; at + 2 <= train->n; at += opts.batch) {
            int n = train->n - at < opts.batch ? train->n - at : opts.batch;
            for (int i = 0; i < n; i++) {
                memcpy(x + i * img, train->images + idx[at + i] * img, sizeof(float) * (size_t)img);
                labels[i] = train->labels[idx[at + i]];
            }
            double loss = 0;
            if (nn_model_forward(m, x, n, 1, labels, &loss, NULL, err) < 0)
                goto done;
            nn_model_backward(m);
            double lr = opts.lr * 0.5 * (1 + cos(M_PI * (double)step / (double)steps));
            for (long long k = 0; k < np; k++) {
                double gk = g[k] + (nn_model_param_decays(m, k) ? opts.weight_decay * p[k] : 0);
                v[k] = (float)(opts.momentum * v[k] + gk);
                p[k] -= (float)(lr * v[k]);
            }
            loss_sum += loss;
            batches++;
            step++;
        }
        out->train_loss = batches ? loss_sum / batches : NAN;
        double acc = NAN;
        if (epoch == opts.epochs) {
            if (evaluate(m, test, opts.batch, &acc, err) < 0)
                goto done;
            out->test_accuracy = acc;
        }
        if (opts.progress)
            opts.progress(opts.progress_arg, epoch, out->train_loss, acc);
    }
    out->params = nn_network_params(net, per_conv);
    rc = 0;
done:
    out->seconds = kt_clock_s() - t0;
    nn_model_free(m);
    free(v);
    free(x);
    free(labels);
    free(idx);
    return rc;
}
