/* neural/nn_cost — the memory and work of a Fisher check, from a network's shapes (nn_cost.h). The
 * bytes follow nn_model_new's allocations one by one; the operations count GEMMs exactly (2 per
 * multiply-add: a conv's forward, dW and dX, a linear layer's three) and one per value each
 * element-wise step touches (im2col twice and col2im per conv, batch norm's passes, pooling,
 * ReLU, residual adds, flatten). Sums are kept in double: a network that parses may imply more than
 * 2^63 of either. */
#include "neural/nn_cost.h"

#include <stdio.h>
#include <string.h>

static double shape_values(nn_shape s)
{
    return (double)s.c * s.h * s.w;
}

int nn_cost_of(const nn_network *net, int batch, nn_cost *out, kt_error *err)
{
    nn_shape in[NN_MAX_LAYERS], sh[NN_MAX_LAYERS];
    memset(out, 0, sizeof *out);
    out->largest_layer = out->costliest_layer = -1;
    if (batch < 1 || batch > NN_COST_MAX_BATCH)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "cost: batch %d out of range [1, %d]", batch,
                            NN_COST_MAX_BATCH);
    if (nn_network_shapes(net, NULL, in, sh, err) < 0)
        return -1;
    double b = batch, floats = 0, ints = 0, col = 0, flops = 0, largest = -1;
    for (int i = 0; i < nn_network_layer_count(net); i++) {
        const nn_layer *y = nn_network_layer(net, i);
        double nin = shape_values(in[i]), nout = shape_values(sh[i]), ops = 0;
        floats += 2 * b * nout; /* the output and its gradient */
        switch (y->kind) {
        case NN_LAYER_CONV: {
            double pq = (double)sh[i].h * sh[i].w, taps = (double)in[i].c * y->kernel * y->kernel;
            double gemm = 2 * taps * y->out * pq;
            if (taps * pq > col)
                col = taps * pq;
            ops = b * (3 * gemm + 3 * taps * pq);
            break;
        }
        case NN_LAYER_BATCHNORM:
            floats += 4.0 * in[i].c; /* mean, inverse std, running mean and variance */
            ops = b * 12 * nout;
            break;
        case NN_LAYER_MAXPOOL:
            ints += b * nout; /* the index of each maximum */
            ops = b * (2 * nin + nout);
            break;
        case NN_LAYER_AVGPOOL:
        case NN_LAYER_GLOBAL_AVGPOOL:
            ops = b * 2 * (nin + nout);
            break;
        case NN_LAYER_LINEAR:
            ops = b * 3 * 2 * nin * y->out;
            break;
        default: /* ReLU, residual add, flatten */
            ops = b * 3 * nout;
            break;
        }
        flops += ops;
        if (nout > largest) {
            largest = nout;
            out->largest_layer = i;
            out->largest = sh[i];
        }
        if (ops > out->costliest_flops) {
            out->costliest_flops = ops;
            out->costliest_layer = i;
        }
    }
    double params = (double)nn_network_params(net, NULL);
    floats += 2 * params + 2 * col + b * nn_network_classes(net);
    floats += b * shape_values(nn_network_input(net)); /* the minibatch (nn_fisher) */
    double bytes = floats * sizeof(float) + ints * sizeof(int) + params; /* + weight-decay flags */
    out->model_bytes = bytes < 9e18 ? (long long)bytes : (long long)9e18;
    out->pass_flops = flops;
    return 0;
}

/* "15.9 GiB", "512 MiB", "800 KiB" */
static void format_bytes(double bytes, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, cap, bytes < 10 && u > 0 ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* "layer 17 (conv \"c15\")" or "layer 3 (batchnorm)" */
static void describe_layer(const nn_network *net, int i, char *buf, size_t cap)
{
    static const char *const kinds[] = {"conv",           "batchnorm", "relu",
                                        "maxpool",        "avgpool",   "residual",
                                        "global_avgpool", "flatten",   "linear"};
    const nn_layer *y = nn_network_layer(net, i);
    if (!y)
        snprintf(buf, cap, "no layer");
    else if (y->kind == NN_LAYER_CONV)
        snprintf(buf, cap, "layer %d (conv \"%s\")", i, y->name);
    else
        snprintf(buf, cap, "layer %d (%s)", i, kinds[y->kind]);
}

int nn_cost_check(const nn_network *net, int batch, int seeds, kt_error *err)
{
    nn_cost c;
    char figure[32], limit[32], layer[NN_NAME_MAX + 64];
    char memory[KT_ERROR_MESSAGE_MAX] = "", work[KT_ERROR_MESSAGE_MAX] = "";
    if (nn_cost_of(net, batch, &c, err) < 0)
        return -1;
    double total = c.pass_flops * seeds;
    int over_memory = c.model_bytes > NN_COST_MAX_MODEL_BYTES;
    int over_work = total > NN_COST_MAX_CHECK_FLOPS;
    if (!over_memory && !over_work)
        return 0;
    if (over_memory) {
        format_bytes((double)c.model_bytes, figure, sizeof figure);
        format_bytes((double)NN_COST_MAX_MODEL_BYTES, limit, sizeof limit);
        describe_layer(net, c.largest_layer, layer, sizeof layer);
        snprintf(memory, sizeof memory,
                 "%s of memory, more than the limit of %s (%d images at once; the largest output, "
                 "%s's, is %dx%dx%d values an image)",
                 figure, limit, batch, layer, c.largest.c, c.largest.h, c.largest.w);
    }
    if (over_work) {
        describe_layer(net, c.costliest_layer, layer, sizeof layer);
        snprintf(
            work, sizeof work,
            "%.1f GFLOP, more than the limit of %.0f GFLOP (%d passes of %d images forward and "
            "backward; %s alone %.1f GFLOP a pass)",
            total / 1e9, NN_COST_MAX_CHECK_FLOPS / 1e9, seeds, batch, layer,
            c.costliest_flops / 1e9);
    }
    kt_error_set(err, KT_ERR_BAD_REQUEST,
                 "network \"%s\" is too large for a Fisher check: it needs %s%s%s",
                 nn_network_name(net), memory, over_memory && over_work ? " and " : "", work);
    kt_error_hint(err, "%s; the preset networks (GET /v1/networks) need 106 MiB and 17 GFLOP",
                  over_memory
                      ? "make the activations smaller: fewer output channels, less padding "
                        "(a conv with pad p and kernel k grows each side by 2p - k + 1), or "
                        "pool earlier"
                      : "use fewer or narrower convolutions, smaller kernels, or pool earlier");
    return -1;
}
