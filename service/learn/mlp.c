#include "learn/mlp.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

struct learn_mlp {
    int n_layers;
    int sizes[LEARN_MLP_MAX_LAYERS + 1];
    size_t w_off[LEARN_MLP_MAX_LAYERS]; /* where each layer's W starts in params; b follows W */
    size_t n_params;
    learn_activation activation;
    double *params, *grads;
    /* Per-batch buffers, grown on demand: acts[l] holds the input of layer l (acts[0] the copied x,
     * acts[n_layers] the output), batch rows each. */
    double *acts[LEARN_MLP_MAX_LAYERS + 1];
    double *delta[2]; /* back-propagated d loss / d pre-activation, ping-pong */
    int cap_rows;     /* rows the buffers hold */
    int batch;        /* rows of the last forward; 0 before any */
    int max_width;
};

void learn_mlp_free(learn_mlp *m)
{
    if (!m)
        return;
    free(m->params);
    free(m->grads);
    for (int l = 0; l <= m->n_layers; l++)
        free(m->acts[l]);
    free(m->delta[0]);
    free(m->delta[1]);
    free(m);
}

learn_mlp *learn_mlp_new(int n_layers, const int *sizes, learn_activation act, kt_rng *rng)
{
    learn_mlp *m = NULL;
    if (n_layers < 1 || n_layers > LEARN_MLP_MAX_LAYERS || !sizes || !rng ||
        (act != LEARN_ACT_TANH && act != LEARN_ACT_RELU))
        goto fail;
    for (int l = 0; l <= n_layers; l++) {
        if (sizes[l] < 1 || sizes[l] > LEARN_MLP_MAX_WIDTH)
            goto fail;
    }
    m = calloc(1, sizeof *m);
    if (!m)
        goto fail;
    m->n_layers = n_layers;
    m->activation = act;
    for (int l = 0; l <= n_layers; l++) {
        m->sizes[l] = sizes[l];
        m->max_width = sizes[l] > m->max_width ? sizes[l] : m->max_width;
    }
    for (int l = 0; l < n_layers; l++) {
        m->w_off[l] = m->n_params;
        m->n_params += (size_t)sizes[l] * (size_t)sizes[l + 1] + (size_t)sizes[l + 1];
    }
    m->params = calloc(m->n_params, sizeof *m->params);
    m->grads = calloc(m->n_params, sizeof *m->grads);
    if (!m->params || !m->grads)
        goto fail;
    for (int l = 0; l < n_layers; l++) {
        int in = sizes[l], out = sizes[l + 1];
        /* Glorot keeps tanh units out of saturation; He keeps relu activations' variance. */
        double sd = act == LEARN_ACT_RELU && l + 1 < n_layers ? sqrt(2.0 / in)
                                                              : sqrt(2.0 / (double)(in + out));
        double *w = m->params + m->w_off[l];
        for (size_t i = 0; i < (size_t)in * (size_t)out; i++)
            w[i] = sd * kt_rng_normal(rng);
    }
    return m;
fail:
    learn_mlp_free(m);
    return NULL;
}

int learn_mlp_num_inputs(const learn_mlp *m)
{
    return m->sizes[0];
}

int learn_mlp_num_outputs(const learn_mlp *m)
{
    return m->sizes[m->n_layers];
}

size_t learn_mlp_num_params(const learn_mlp *m)
{
    return m->n_params;
}

double *learn_mlp_params(learn_mlp *m)
{
    return m->params;
}

double *learn_mlp_grads(learn_mlp *m)
{
    return m->grads;
}

void learn_mlp_scale_output(learn_mlp *m, double factor)
{
    int l = m->n_layers - 1;
    double *w = m->params + m->w_off[l];
    size_t n = (size_t)m->sizes[l] * (size_t)m->sizes[l + 1];
    for (size_t i = 0; i < n; i++)
        w[i] *= factor;
}

/* Buffers for rows rows: 0, or -1 out of memory (the old buffers stay valid). */
static int ensure_rows(learn_mlp *m, int rows)
{
    if (rows <= m->cap_rows)
        return 0;
    size_t cap = kt_array_next_cap((size_t)m->cap_rows, (size_t)rows, LEARN_MLP_MAX_BATCH);
    if (cap == 0)
        return -1;
    for (int l = 0; l <= m->n_layers; l++)
        if (kt_array_resize((void **)&m->acts[l], cap, (size_t)m->sizes[l] * sizeof(double)) != 0)
            return -1;
    for (int k = 0; k < 2; k++)
        if (kt_array_resize((void **)&m->delta[k], cap, (size_t)m->max_width * sizeof(double)) != 0)
            return -1;
    m->cap_rows = (int)cap;
    return 0;
}

const double *learn_mlp_forward(learn_mlp *m, const double *x, int batch)
{
    if (batch < 1 || batch > LEARN_MLP_MAX_BATCH || ensure_rows(m, batch) < 0)
        return NULL;
    memcpy(m->acts[0], x, (size_t)batch * (size_t)m->sizes[0] * sizeof *x);
    for (int l = 0; l < m->n_layers; l++) {
        int in = m->sizes[l], out = m->sizes[l + 1];
        const double *w = m->params + m->w_off[l];
        const double *b = w + (size_t)in * (size_t)out;
        double *z = m->acts[l + 1];
        for (int r = 0; r < batch; r++)
            memcpy(z + (size_t)r * (size_t)out, b, (size_t)out * sizeof *b);
        /* Z = A W + 1 b^T (one row: z = W^T a + b, a matrix-vector product) */
        if (batch == 1)
            cblas_dgemv(CblasRowMajor, CblasTrans, in, out, 1.0, w, out, m->acts[l], 1, 1.0, z, 1);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, out, in, 1.0, m->acts[l],
                        in, w, out, 1.0, z, out);
        if (l + 1 == m->n_layers)
            break; /* linear output */
        size_t n = (size_t)batch * (size_t)out;
        if (m->activation == LEARN_ACT_TANH) {
            for (size_t i = 0; i < n; i++)
                z[i] = tanh(z[i]);
        } else {
            for (size_t i = 0; i < n; i++)
                z[i] = z[i] > 0 ? z[i] : 0;
        }
    }
    m->batch = batch;
    return m->acts[m->n_layers];
}

/* Through the hidden activation: d *= act'(Z) for the n values a = act(Z) of a layer. */
static void act_backward(const learn_mlp *m, const double *a, size_t n, double *d)
{
    if (m->activation == LEARN_ACT_TANH) {
        for (size_t i = 0; i < n; i++)
            d[i] *= 1.0 - a[i] * a[i];
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > 0 ? d[i] : 0;
    }
}

/* The parameters' gradients of one layer l from its output's gradient d: dW = A^T D, db = column
 * sums of D. */
static void layer_grads(learn_mlp *m, int l, const double *d)
{
    int batch = m->batch, in = m->sizes[l], out = m->sizes[l + 1];
    double *gw = m->grads + m->w_off[l];
    double *gb = gw + (size_t)in * (size_t)out;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, batch, 1.0, m->acts[l], in, d,
                out, 0.0, gw, out);
    for (int j = 0; j < out; j++)
        gb[j] = 0;
    for (int r = 0; r < batch; r++) {
        const double *row = d + (size_t)r * (size_t)out;
        for (int j = 0; j < out; j++)
            gb[j] += row[j];
    }
}

/* Back-propagates dout from the output down: the parameters' gradients when dx is NULL, else the
 * input's gradient into dx (the parameters' gradients untouched). */
static int backprop(learn_mlp *m, const double *dout, double *dx)
{
    int batch = m->batch;
    if (batch < 1)
        return -1;
    int top = m->n_layers;
    double *d = m->delta[0], *dprev = m->delta[1];
    memcpy(d, dout, (size_t)batch * (size_t)m->sizes[top] * sizeof *d);
    for (int l = top - 1; l >= 0; l--) {
        int in = m->sizes[l], out = m->sizes[l + 1];
        const double *w = m->params + m->w_off[l];
        if (!dx) {
            layer_grads(m, l, d);
            if (l == 0)
                break;
        }
        /* D_prev = D W^T, then (below the first layer) times act'(A), where A = act(Z) is what the
         * layer below produced; one row of the input's gradient: W d */
        double *to = l == 0 ? dx : dprev;
        if (dx && batch == 1)
            cblas_dgemv(CblasRowMajor, CblasNoTrans, in, out, 1.0, w, out, d, 1, 0.0, to, 1);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, in, out, 1.0, d, out, w,
                        out, 0.0, to, in);
        if (l == 0)
            break;
        act_backward(m, m->acts[l], (size_t)batch * (size_t)in, dprev);
        double *t = d;
        d = dprev;
        dprev = t;
    }
    return 0;
}

int learn_mlp_backward(learn_mlp *m, const double *dout)
{
    return backprop(m, dout, NULL);
}

int learn_mlp_input_grad(learn_mlp *m, const double *dout, double *dx)
{
    return backprop(m, dout, dx);
}

int learn_softmax(const double *z, const unsigned char *mask, int n, double *p)
{
    double zmax = -INFINITY;
    int allowed = 0;
    for (int i = 0; i < n; i++) {
        if (mask && !mask[i])
            continue;
        allowed++;
        zmax = z[i] > zmax ? z[i] : zmax;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        p[i] = mask && !mask[i] ? 0.0 : exp(z[i] - zmax); /* shifted: exp never overflows */
        sum += p[i];
    }
    if (allowed == 0 || !(sum > 0) || !isfinite(sum)) {
        for (int i = 0; i < n; i++)
            p[i] = 0;
        return 0;
    }
    for (int i = 0; i < n; i++)
        p[i] /= sum;
    return allowed;
}

void learn_softmax_backward(const double *p, const double *dp, int n, double *dz)
{
    double dot = 0;
    for (int i = 0; i < n; i++)
        dot += p[i] * dp[i];
    for (int i = 0; i < n; i++)
        dz[i] = p[i] * (dp[i] - dot);
}
