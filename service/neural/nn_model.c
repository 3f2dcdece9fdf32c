/* neural/nn_model — parameters, activations and the forward / backward passes of a network
 * (nn_model.h). Layers run in an execution order where a residual layer (the add) comes right after
 * the last layer of its body; every layer reads the output of its source (the previous layer at its
 * level, the block's input for a body's first layer, -1 for the network's input). Convolutions run
 * one image at a time (as nn_conv does inside anyway) so that the stop check is asked between
 * images: the heaviest step of a pass. */
#include "neural/nn_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "neural/nn_ops.h"

typedef struct model_layer {
    nn_layer_kind kind;
    const nn_layer *def;
    nn_shape in, out;
    int src;  /* layer whose output is the input; -1: the network's input */
    int last; /* residual: the body's last layer at its level */
    nn_conv_dims conv;
    long long w, b;     /* parameter offsets (conv/linear weights; bn gamma, linear bias) */
    long long w_size;   /* weights */
    float *y, *dy;      /* output and its gradient: max_batch * out elements */
    float *aux1, *aux2; /* bn: mean, invstd; */
    float *run_mean, *run_var;
    int *arg; /* maxpool */
} model_layer;

struct nn_model {
    const nn_network *net;
    int max_batch, n, nlayers, classes;
    nn_shape input;
    model_layer *layers;
    int *order;
    long long nparams;
    float *params, *grads;
    unsigned char *decays;
    const float *x; /* input of the last forward (borrowed) */
    float *col, *dcol;
    float *dlogits;
    int *conv_layer;
    int nconvs;
    const nn_stop *stop; /* borrowed (nn_model_set_stop); NULL: never stopped */
};

static long long shape_size(nn_shape s)
{
    return (long long)s.c * s.h * s.w;
}

static void *alloc_floats(long long n, int *failed)
{
    void *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p)
        *failed = 1;
    return p;
}

void nn_model_free(nn_model *m)
{
    if (!m)
        return;
    for (int i = 0; m->layers && i < m->nlayers; i++) {
        model_layer *l = &m->layers[i];
        free(l->y);
        free(l->dy);
        free(l->aux1);
        free(l->aux2);
        free(l->run_mean);
        free(l->run_var);
        free(l->arg);
    }
    free(m->layers);
    free(m->order);
    free(m->params);
    free(m->grads);
    free(m->decays);
    free(m->col);
    free(m->dcol);
    free(m->dlogits);
    free(m->conv_layer);
    free(m);
}

/* Sources and the residuals' last layers of layers [i, end) whose level's input is src. */
static void link_level(nn_model *m, int i, int end, int src)
{
    int prev = src;
    while (i < end) {
        model_layer *l = &m->layers[i];
        l->src = prev;
        if (l->kind == NN_LAYER_RESIDUAL) {
            link_level(m, i + 1, i + 1 + l->def->body, prev);
            int j = i + 1, last = i + 1;
            while (j < i + 1 + l->def->body) {
                last = j;
                j += m->layers[j].kind == NN_LAYER_RESIDUAL ? 1 + m->layers[j].def->body : 1;
            }
            l->last = last;
            prev = i;
            i += 1 + l->def->body;
        } else {
            prev = i;
            i++;
        }
    }
}

/* Execution order: every layer, a residual right after the end of its body (innermost first). */
static int build_order(nn_model *m, int i, int end, int at)
{
    while (i < end) {
        if (m->layers[i].kind == NN_LAYER_RESIDUAL) {
            at = build_order(m, i + 1, i + 1 + m->layers[i].def->body, at);
            m->order[at++] = i;
            i += 1 + m->layers[i].def->body;
        } else {
            m->order[at++] = i++;
        }
    }
    return at;
}

/* Layer i of m laid out: its parameters' offsets (m->nparams grows), its activations and the
 * buffers of its kind; returns the largest im2col size so far (col or this conv's). Allocation
 * failures set *failed (checked once by the caller). */
static long long place_layer(nn_model *m, int i, nn_shape in, nn_shape out,
                             const nn_transform *per_conv, long long col, int *failed)
{
    model_layer *l = &m->layers[i];
    int max_batch = m->max_batch;
    l->def = nn_network_layer(m->net, i);
    l->kind = l->def->kind;
    l->in = in;
    l->out = out;
    long long nin = shape_size(in), nout = shape_size(out);
    switch (l->kind) {
    case NN_LAYER_CONV: {
        nn_conv_dims d = {
            in.c,           in.h,
            in.w,           l->def->out,
            l->def->kernel, l->def->kernel,
            l->def->pad,    per_conv ? per_conv[l->def->conv] : nn_transform_identity()};
        l->conv = d;
        l->w = m->nparams;
        l->w_size = nn_transform_weights(&d.t, d.C, d.K, d.R, d.S);
        m->nparams += l->w_size;
        if (nn_conv_col_size(&d) > col)
            col = nn_conv_col_size(&d);
        m->conv_layer[l->def->conv] = i;
        break;
    }
    case NN_LAYER_BATCHNORM:
        l->w = m->nparams;
        l->b = m->nparams + in.c;
        m->nparams += 2LL * in.c;
        l->aux1 = alloc_floats(in.c, failed);
        l->aux2 = alloc_floats(in.c, failed);
        l->run_mean = alloc_floats(in.c, failed);
        l->run_var = alloc_floats(in.c, failed);
        break;
    case NN_LAYER_LINEAR:
        l->w = m->nparams;
        l->w_size = nin * l->def->out;
        l->b = m->nparams + l->w_size;
        m->nparams += l->w_size + l->def->out;
        break;
    case NN_LAYER_MAXPOOL:
        l->arg = calloc((size_t)(max_batch * nout), sizeof(int));
        *failed |= l->arg == NULL;
        break;
    default:
        break;
    }
    l->y = alloc_floats(max_batch * nout, failed);
    l->dy = alloc_floats(max_batch * nout, failed);
    return col;
}

nn_model *nn_model_new(const nn_network *net, const nn_transform *per_conv, int max_batch,
                       kt_error *err)
{
    nn_model *m = NULL, *ret = NULL;
    nn_shape in[NN_MAX_LAYERS], out[NN_MAX_LAYERS];
    int failed = 0;
    if (max_batch < 1 || max_batch > 4096) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "model: batch %d out of range [1, 4096]", max_batch);
        goto done;
    }
    if (!nn_network_transforms_valid(net, per_conv, err) ||
        nn_network_shapes(net, per_conv, in, out, err) < 0)
        goto done;
    m = calloc(1, sizeof *m);
    if (!m) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "model: out of memory");
        goto done;
    }
    m->net = net;
    m->max_batch = max_batch;
    m->nlayers = nn_network_layer_count(net);
    m->classes = nn_network_classes(net);
    m->input = nn_network_input(net);
    m->nconvs = nn_network_conv_count(net);
    m->layers = calloc((size_t)m->nlayers, sizeof *m->layers);
    m->order = calloc((size_t)m->nlayers, sizeof *m->order);
    m->conv_layer = calloc((size_t)m->nconvs, sizeof *m->conv_layer);
    if (!m->layers || !m->order || !m->conv_layer) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "model: out of memory");
        goto done;
    }
    long long col = 0;
    for (int i = 0; i < m->nlayers; i++)
        col = place_layer(m, i, in[i], out[i], per_conv, col, &failed);
    m->params = alloc_floats(m->nparams, &failed);
    m->grads = alloc_floats(m->nparams, &failed);
    m->decays = calloc((size_t)m->nparams + 1, 1);
    m->col = alloc_floats(col, &failed);
    m->dcol = alloc_floats(col, &failed);
    m->dlogits = alloc_floats((long long)max_batch * m->classes, &failed);
    if (failed || !m->decays) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "model: out of memory (%lld parameters, batch %d)",
                     m->nparams, max_batch);
        goto done;
    }
    for (int i = 0; i < m->nlayers; i++) {
        const model_layer *l = &m->layers[i];
        if (l->kind == NN_LAYER_CONV || l->kind == NN_LAYER_LINEAR)
            memset(m->decays + l->w, 1, (size_t)l->w_size);
    }
    link_level(m, 0, m->nlayers, -1);
    build_order(m, 0, m->nlayers, 0);
    nn_model_init(m, 1);
    ret = m;
    m = NULL;
done:
    nn_model_free(m);
    return ret;
}

static uint64_t mix(uint64_t seed, uint64_t salt)
{
    uint64_t z = seed ^ (salt * 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void nn_model_init(nn_model *m, uint64_t seed)
{
    for (int i = 0; i < m->nlayers; i++) {
        model_layer *l = &m->layers[i];
        kt_rng rng;
        if (l->kind == NN_LAYER_CONV) {
            kt_rng_seed(&rng, mix(seed, 1000 + (uint64_t)l->def->conv));
            int Kp = nn_transform_out_channels(&l->conv.t, l->conv.K);
            int P = nn_conv_out_h(&l->conv);
            for (int k = 0; k < Kp; k++) {
                int first, count;
                nn_transform_inputs(&l->conv.t, l->conv.C, l->conv.K, P, k, 0, &first, &count);
                long long fan = (long long)count * l->conv.R * l->conv.S;
                double sd = sqrt(2.0 / (double)fan);
                float *w = m->params + l->w +
                           nn_transform_weight_offset(&l->conv.t, l->conv.C, l->conv.K, l->conv.R,
                                                      l->conv.S, k);
                for (long long j = 0; j < fan; j++)
                    w[j] = (float)(sd * kt_rng_normal(&rng));
            }
        } else if (l->kind == NN_LAYER_LINEAR) {
            kt_rng_seed(&rng, mix(seed, 5000 + (uint64_t)i));
            double sd = sqrt(1.0 / (double)l->in.c);
            for (long long j = 0; j < l->w_size; j++)
                m->params[l->w + j] = (float)(sd * kt_rng_normal(&rng));
            memset(m->params + l->b, 0, sizeof(float) * (size_t)l->def->out);
        } else if (l->kind == NN_LAYER_BATCHNORM) {
            for (int c = 0; c < l->in.c; c++) {
                m->params[l->w + c] = 1.0f;
                m->params[l->b + c] = 0.0f;
                l->run_mean[c] = 0.0f;
                l->run_var[c] = 1.0f;
            }
        }
    }
}

long long nn_model_param_count(const nn_model *m)
{
    return m->nparams;
}

float *nn_model_params(nn_model *m)
{
    return m->params;
}

float *nn_model_grads(nn_model *m)
{
    return m->grads;
}

int nn_model_param_decays(const nn_model *m, long long i)
{
    return i >= 0 && i < m->nparams && m->decays[i];
}

static const float *layer_input(const nn_model *m, const model_layer *l)
{
    return l->src < 0 ? m->x : m->layers[l->src].y;
}

void nn_model_set_stop(nn_model *m, const nn_stop *stop)
{
    m->stop = stop;
}

/* A conv layer's forward over n images, one at a time; the stop check's answer (NN_RUN: done). */
static int conv_forward(const nn_model *m, model_layer *l, const float *xin, int n)
{
    long long xs = shape_size(l->in), ys = shape_size(l->out);
    for (int img = 0; img < n; img++) {
        int s = nn_stop_asked(m->stop);
        if (s != NN_RUN)
            return s;
        nn_conv_forward(&l->conv, xin + img * xs, 1, m->params + l->w, l->y + img * ys, m->col);
    }
    return NN_RUN;
}

/* The same backward: dW accumulates over the images, dx (NULL: the network's input) per image. */
static int conv_backward(nn_model *m, model_layer *l, const float *xin, float *dx, int n)
{
    long long xs = shape_size(l->in), ys = shape_size(l->out);
    for (int img = 0; img < n; img++) {
        int s = nn_stop_asked(m->stop);
        if (s != NN_RUN)
            return s;
        nn_conv_backward(&l->conv, xin + img * xs, 1, m->params + l->w, l->dy + img * ys,
                         m->grads + l->w, dx ? dx + img * xs : NULL, m->col, m->dcol);
    }
    return NN_RUN;
}

int nn_model_forward(nn_model *m, const float *x, int n, int train, const unsigned char *labels,
                     double *loss, int *correct, kt_error *err)
{
    if (n < 1 || n > m->max_batch)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "model: batch of %d images (at most %d)", n,
                            m->max_batch);
    for (int i = 0; labels && i < n; i++)
        if (labels[i] >= m->classes)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "model: label %d of image %d >= %d",
                                labels[i], i, m->classes);
    m->x = x;
    m->n = n;
    for (int o = 0; o < m->nlayers; o++) {
        model_layer *l = &m->layers[m->order[o]];
        const float *xin = layer_input(m, l);
        long long cnt = n * shape_size(l->out);
        int s = l->kind == NN_LAYER_CONV ? conv_forward(m, l, xin, n) : nn_stop_asked(m->stop);
        if (s != NN_RUN) {
            kt_error_set(err, KT_ERR_CONFLICT, "model: the forward pass was %s at layer %d",
                         s == NN_STOPPED ? "stopped" : "out of time", m->order[o]);
            return s;
        }
        switch (l->kind) {
        case NN_LAYER_CONV:
            break;
        case NN_LAYER_BATCHNORM:
            nn_bn_forward(xin, n, l->in.c, l->in.h * l->in.w, m->params + l->w, m->params + l->b,
                          train, l->run_mean, l->run_var, l->aux1, l->aux2, l->y);
            break;
        case NN_LAYER_RELU:
            nn_relu_forward(xin, cnt, l->y);
            break;
        case NN_LAYER_MAXPOOL:
            nn_maxpool_forward(xin, n, l->in.c, l->in.h, l->in.w, l->def->size, l->y, l->arg);
            break;
        case NN_LAYER_AVGPOOL:
            nn_avgpool_forward(xin, n, l->in.c, l->in.h, l->in.w, l->def->size, l->def->size, l->y);
            break;
        case NN_LAYER_GLOBAL_AVGPOOL:
            nn_avgpool_forward(xin, n, l->in.c, l->in.h, l->in.w, l->in.h, l->in.w, l->y);
            break;
        case NN_LAYER_FLATTEN:
            memcpy(l->y, xin, sizeof(float) * (size_t)cnt);
            break;
        case NN_LAYER_LINEAR:
            nn_linear_forward(xin, n, l->in.c, l->def->out, m->params + l->w, m->params + l->b,
                              l->y);
            break;
        case NN_LAYER_RESIDUAL: {
            const float *body = m->layers[l->last].y;
            for (long long j = 0; j < cnt; j++)
                l->y[j] = xin[j] + body[j];
            break;
        }
        }
    }
    if (labels) {
        double v = nn_softmax_ce(nn_model_logits(m), n, m->classes, labels, m->dlogits, correct);
        if (loss)
            *loss = v;
    }
    return 0;
}

int nn_model_backward(nn_model *m)
{
    int n = m->n;
    memset(m->grads, 0, sizeof(float) * (size_t)m->nparams);
    for (int i = 0; i < m->nlayers; i++)
        memset(m->layers[i].dy, 0, sizeof(float) * (size_t)(n * shape_size(m->layers[i].out)));
    model_layer *top = &m->layers[m->order[m->nlayers - 1]];
    memcpy(top->dy, m->dlogits, sizeof(float) * (size_t)n * (size_t)m->classes);
    for (int o = m->nlayers - 1; o >= 0; o--) {
        model_layer *l = &m->layers[m->order[o]];
        const float *xin = layer_input(m, l);
        float *dx = l->src < 0 ? NULL : m->layers[l->src].dy;
        long long cnt = n * shape_size(l->out);
        int s = l->kind == NN_LAYER_CONV ? conv_backward(m, l, xin, dx, n) : nn_stop_asked(m->stop);
        if (s != NN_RUN)
            return s;
        switch (l->kind) {
        case NN_LAYER_CONV:
            break;
        case NN_LAYER_BATCHNORM:
            nn_bn_backward(xin, n, l->in.c, l->in.h * l->in.w, m->params + l->w, l->aux1, l->aux2,
                           l->dy, m->grads + l->w, m->grads + l->b, dx);
            break;
        case NN_LAYER_RELU:
            if (dx)
                nn_relu_backward(l->y, cnt, l->dy, dx);
            break;
        case NN_LAYER_MAXPOOL:
            if (dx)
                nn_maxpool_backward(n, l->in.c, l->in.h, l->in.w, l->def->size, l->arg, l->dy, dx);
            break;
        case NN_LAYER_AVGPOOL:
            if (dx)
                nn_avgpool_backward(n, l->in.c, l->in.h, l->in.w, l->def->size, l->def->size, l->dy,
                                    dx);
            break;
        case NN_LAYER_GLOBAL_AVGPOOL:
            if (dx)
                nn_avgpool_backward(n, l->in.c, l->in.h, l->in.w, l->in.h, l->in.w, l->dy, dx);
            break;
        case NN_LAYER_FLATTEN:
            for (long long j = 0; dx && j < cnt; j++)
                dx[j] += l->dy[j];
            break;
        case NN_LAYER_LINEAR:
            nn_linear_backward(xin, n, l->in.c, l->def->out, m->params + l->w, l->dy,
                               m->grads + l->w, m->grads + l->b, dx);
            break;
        case NN_LAYER_RESIDUAL: {
            float *body = m->layers[l->last].dy;
            for (long long j = 0; j < cnt; j++) {
                body[j] += l->dy[j];
                if (dx)
                    dx[j] += l->dy[j];
            }
            break;
        }
        }
    }
    return NN_RUN;
}

const float *nn_model_logits(const nn_model *m)
{
    return m->layers[m->order[m->nlayers - 1]].y;
}

const float *nn_model_conv_output(const nn_model *m, int conv, nn_shape *shape)
{
    if (conv < 0 || conv >= m->nconvs)
        return NULL;
    const model_layer *l = &m->layers[m->conv_layer[conv]];
    if (shape)
        *shape = l->out;
    return l->y;
}

const float *nn_model_conv_grad(const nn_model *m, int conv)
{
    if (conv < 0 || conv >= m->nconvs)
        return NULL;
    return m->layers[m->conv_layer[conv]].dy;
}
