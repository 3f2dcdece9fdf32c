/* neural/nn_fisher — Fisher Potential at initialisation (nn_fisher.h). A is each conv's output
 * before batch norm (the activation the transformation changes; nn_model_conv_output) and g the
 * gradient of the batch-mean softmax cross-entropy with respect to it, as in BlockSwap's
 * implementation: Δ_c = 0.5 * mean_n (Σ_ij A_nij g_nij)². The minibatch is the first `batch` images
 * of a shuffle of data seeded by o->seed; initialisation s (0 <= s < seeds) uses seed o->seed + s,
 * and the scores are averaged over the initialisations. */
#include "neural/nn_fisher.h"

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "neural/nn_cost.h"
#include "neural/nn_model.h"

#define NN_FISHER_MAX_BATCH 1024
#define NN_FISHER_MAX_SEEDS 16

nn_fisher_opts nn_fisher_default_opts(void)
{
    nn_fisher_opts o = {64, 1, 1};
    return o;
}

/* The first `batch` images (and labels) of a seeded Fisher-Yates shuffle of data. */
static int pick_batch(const nn_dataset *data, int batch, uint64_t seed, float *x,
                      unsigned char *labels)
{
    int *idx = malloc(sizeof(int) * (size_t)data->n);
    if (!idx)
        return -1;
    kt_rng r;
    kt_rng_seed(&r, seed ^ 0x5bd1e995ULL);
    for (int i = 0; i < data->n; i++)
        idx[i] = i;
    long long img = (long long)data->channels * data->height * data->width;
    for (int i = 0; i < batch; i++) {
        int j = i + (int)kt_rng_below(&r, (uint64_t)(data->n - i));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        memcpy(x + i * img, data->images + idx[i] * img, sizeof(float) * (size_t)img);
        labels[i] = data->labels[idx[i]];
    }
    free(idx);
    return 0;
}

int nn_fisher_potential(const nn_network *net, const nn_transform *per_conv, const nn_dataset *data,
                        const nn_fisher_opts *o, const nn_stop *stop, double *total,
                        double *per_layer, kt_error *err)
{
    nn_fisher_opts opts = o ? *o : nn_fisher_default_opts();
    nn_shape in = nn_network_input(net);
    int nconvs = nn_network_conv_count(net), rc = -1;
    nn_model *m = NULL;
    float *x = NULL;
    unsigned char *labels = NULL;
    double *layer = calloc((size_t)nconvs, sizeof(double));
    if (opts.batch < 1 || opts.batch > NN_FISHER_MAX_BATCH || opts.seeds < 1 ||
        opts.seeds > NN_FISHER_MAX_SEEDS) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "fisher: batch %d (1 to %d) or seeds %d (1 to %d) out of range", opts.batch,
                     NN_FISHER_MAX_BATCH, opts.seeds, NN_FISHER_MAX_SEEDS);
        goto done;
    }
    if (data->channels != in.c || data->height != in.h || data->width != in.w ||
        data->classes != nn_network_classes(net)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "fisher: the data's images are %dx%dx%d with %d classes, network \"%s\" takes "
                     "%dx%dx%d with %d",
                     data->channels, data->height, data->width, data->classes, nn_network_name(net),
                     in.c, in.h, in.w, nn_network_classes(net));
        goto done;
    }
    if (data->n < opts.batch) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "fisher: %d images, fewer than the batch (%d)",
                     data->n, opts.batch);
        goto done;
    }
    /* Nothing is allocated for a network beyond the limits (its candidates cost no more). */
    if (nn_cost_check(net, opts.batch, opts.seeds, err) < 0)
        goto done;
    m = nn_model_new(net, per_conv, opts.batch, err);
    if (!m)
        goto done;
    nn_model_set_stop(m, stop);
    long long img = (long long)in.c * in.h * in.w;
    x = malloc(sizeof(float) * (size_t)(img * opts.batch));
    labels = malloc((size_t)opts.batch);
    if (!layer || !x || !labels || pick_batch(data, opts.batch, opts.seed, x, labels) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "fisher: out of memory");
        goto done;
    }
    for (int s = 0; s < opts.seeds; s++) {
        nn_model_init(m, opts.seed + (uint64_t)s);
        int pass = nn_model_forward(m, x, opts.batch, 1, labels, NULL, NULL, err);
        if (pass == NN_RUN)
            pass = nn_model_backward(m);
        if (pass != NN_RUN) {
            if (pass > 0) {
                kt_error_set(err, KT_ERR_CONFLICT, "fisher: %s during initialisation %d of %d",
                             pass == NN_STOPPED ? "stopped" : "out of time", s + 1, opts.seeds);
                rc = pass;
            }
            goto done;
        }
        for (int c = 0; c < nconvs; c++) {
            nn_shape sh;
            const float *A = nn_model_conv_output(m, c, &sh);
            const float *g = nn_model_conv_grad(m, c);
            long long hw = (long long)sh.h * sh.w;
            double sum = 0;
            for (int n = 0; n < opts.batch; n++)
                for (int k = 0; k < sh.c; k++) {
                    const float *a = A + ((long long)n * sh.c + k) * hw;
                    const float *d = g + ((long long)n * sh.c + k) * hw;
                    double v = 0;
                    for (long long j = 0; j < hw; j++)
                        v += (double)a[j] * d[j];
                    sum += v * v;
                }
            layer[c] += sum / (2.0 * opts.batch) / opts.seeds;
        }
    }
    *total = 0;
    for (int c = 0; c < nconvs; c++) {
        *total += layer[c];
        if (per_layer)
            per_layer[c] = layer[c];
    }
    rc = 0;
done:
    nn_model_free(m);
    free(x);
    free(labels);
    free(layer);
    return rc;
}
