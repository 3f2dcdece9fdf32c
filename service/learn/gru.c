/* learn/gru — GRU forward, step by step, and backpropagation through time. Forward uses matrix-
 * vector products (a step's input may depend on the previous output); backward collects each
 * step's gate gradients and then forms the weight gradients of the whole sequence with one matrix
 * product per weight matrix. */
#include "learn/gru.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double a)
{
    return 1.0 / (1.0 + exp(-a));
}

void learn_gru_free(learn_gru *g)
{
    if (!g)
        return;
    free(g->params);
    free(g->grads);
    free(g->x);
    free(g->h);
    free(g->z);
    free(g->r);
    free(g->n);
    free(g->gn);
    free(g->y);
    free(g->hot);
    free(g->da);
    free(g->du);
    free(g->dh);
    free(g->dtmp);
    free(g);
}

/* Points the named blocks of the flat vector v at their places in the layout of gru.h. */
static void gru_views(const learn_gru *g, double *v, double **W, double **bw, double **U,
                      double **bu, double **V, double **c)
{
    size_t H = (size_t)g->n_hidden, NI = (size_t)g->n_in, O = (size_t)g->n_out;
    *W = v;
    *bw = *W + 3 * H * NI;
    *U = *bw + 3 * H;
    *bu = *U + 3 * H * H;
    *V = *bu + 3 * H;
    *c = *V + O * H;
}

learn_gru *learn_gru_new(int n_in, int n_hidden, int n_out, int max_steps, kt_rng *rng)
{
    learn_gru *g = NULL;
    if (n_in < 1 || n_in > LEARN_GRU_MAX_INPUT || n_hidden < 1 || n_hidden > LEARN_GRU_MAX_HIDDEN ||
        n_out < 1 || n_out > LEARN_GRU_MAX_OUTPUT || max_steps < 1 ||
        max_steps > LEARN_GRU_MAX_STEPS || !rng)
        goto fail;
    g = calloc(1, sizeof *g);
    if (!g)
        goto fail;
    g->n_in = n_in;
    g->n_hidden = n_hidden;
    g->n_out = n_out;
    g->max_steps = max_steps;
    size_t H = (size_t)n_hidden, NI = (size_t)n_in, O = (size_t)n_out, T = (size_t)max_steps;
    g->n_params = 3 * H * NI + 3 * H + 3 * H * H + 3 * H + O * H + O;
    g->params = calloc(g->n_params, sizeof *g->params);
    g->grads = calloc(g->n_params, sizeof *g->grads);
    g->x = calloc(T * NI, sizeof *g->x);
    g->h = calloc((T + 1) * H, sizeof *g->h);
    g->z = calloc(T * H, sizeof *g->z);
    g->r = calloc(T * H, sizeof *g->r);
    g->n = calloc(T * H, sizeof *g->n);
    g->gn = calloc(T * H, sizeof *g->gn);
    g->y = calloc(T * O, sizeof *g->y);
    g->hot = calloc(T, sizeof *g->hot);
    g->da = calloc(T * 3 * H, sizeof *g->da);
    g->du = calloc(T * 3 * H, sizeof *g->du);
    g->dh = calloc(H, sizeof *g->dh);
    g->dtmp = calloc(6 * H, sizeof *g->dtmp);
    if (!g->params || !g->grads || !g->x || !g->h || !g->z || !g->r || !g->n || !g->gn || !g->y ||
        !g->hot || !g->da || !g->du || !g->dh || !g->dtmp)
        goto fail;
    gru_views(g, g->params, &g->W, &g->bw, &g->U, &g->bu, &g->V, &g->c);
    gru_views(g, g->grads, &g->dW, &g->dbw, &g->dU, &g->dbu, &g->dV, &g->dc);
    /* PyTorch's default: every weight matrix uniform in +-1/sqrt(H); biases start at zero. */
    double s = 1.0 / sqrt((double)H);
    for (size_t i = 0; i < 3 * H * NI; i++)
        g->W[i] = s * (2.0 * kt_rng_uniform(rng) - 1.0);
    for (size_t i = 0; i < 3 * H * H; i++)
        g->U[i] = s * (2.0 * kt_rng_uniform(rng) - 1.0);
    for (size_t i = 0; i < O * H; i++)
        g->V[i] = s * (2.0 * kt_rng_uniform(rng) - 1.0);
    return g;
fail:
    learn_gru_free(g);
    return NULL;
}

void learn_gru_reset(learn_gru *g, const double *h0)
{
    g->steps = 0;
    if (h0)
        memcpy(g->h, h0, (size_t)g->n_hidden * sizeof *g->h);
    else
        memset(g->h, 0, (size_t)g->n_hidden * sizeof *g->h);
}

/* The rest of a step once a = W x + bw is in g->dtmp[0, 3H): gates, candidate, state, output. */
static const double *gru_finish_step(learn_gru *g)
{
    int H = g->n_hidden, O = g->n_out;
    size_t t = (size_t)g->steps;
    double *hp = g->h + t * (size_t)H, *hn = hp + H;
    double *z = g->z + t * (size_t)H, *r = g->r + t * (size_t)H, *n = g->n + t * (size_t)H;
    double *gn = g->gn + t * (size_t)H, *y = g->y + t * (size_t)O;
    double *a = g->dtmp, *u = g->dtmp + 3 * H; /* W x + bw, U h + bu */

    memcpy(u, g->bu, 3 * (size_t)H * sizeof *u);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, 3 * H, H, 1.0, g->U, H, hp, 1, 1.0, u, 1);
    for (int j = 0; j < H; j++) {
        z[j] = sigmoid(a[j] + u[j]);
        r[j] = sigmoid(a[H + j] + u[H + j]);
        gn[j] = u[2 * H + j];
        n[j] = tanh(a[2 * H + j] + r[j] * gn[j]);
        hn[j] = (1.0 - z[j]) * n[j] + z[j] * hp[j];
    }
    memcpy(y, g->c, (size_t)O * sizeof *y);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, O, H, 1.0, g->V, H, hn, 1, 1.0, y, 1);
    g->steps++;
    return y;
}

const double *learn_gru_step(learn_gru *g, const double *x)
{
    if (g->steps >= g->max_steps)
        return NULL;
    int H = g->n_hidden, NI = g->n_in;
    double *xt = g->x + (size_t)g->steps * (size_t)NI, *a = g->dtmp;

    g->hot[g->steps] = -1;
    memcpy(xt, x, (size_t)NI * sizeof *xt);
    memcpy(a, g->bw, 3 * (size_t)H * sizeof *a);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, 3 * H, NI, 1.0, g->W, NI, xt, 1, 1.0, a, 1);
    return gru_finish_step(g);
}

const double *learn_gru_step_onehot(learn_gru *g, int hot)
{
    if (g->steps >= g->max_steps || hot < 0 || hot >= g->n_in)
        return NULL;
    int H = g->n_hidden, NI = g->n_in;
    double *xt = g->x + (size_t)g->steps * (size_t)NI, *a = g->dtmp;

    /* The dense row is kept too, for a backward over a sequence that mixes both kinds. */
    g->hot[g->steps] = hot;
    memset(xt, 0, (size_t)NI * sizeof *xt);
    xt[hot] = 1.0;
    for (int j = 0; j < 3 * H; j++) /* W e_hot: column hot of W */
        a[j] = g->bw[j] + g->W[(size_t)j * (size_t)NI + (size_t)hot];
    return gru_finish_step(g);
}

int learn_gru_forward(learn_gru *g, const double *xs, int T)
{
    if (T < 0 || T > g->max_steps)
        return -1;
    learn_gru_reset(g, NULL);
    for (int t = 0; t < T; t++)
        learn_gru_step(g, xs + (size_t)t * (size_t)g->n_in);
    return 0;
}

const double *learn_gru_output(const learn_gru *g, int t)
{
    return g->y + (size_t)t * (size_t)g->n_out;
}

const double *learn_gru_hidden(const learn_gru *g, int t)
{
    return g->h + ((size_t)t + 1) * (size_t)g->n_hidden;
}

void learn_gru_zero_grad(learn_gru *g)
{
    memset(g->grads, 0, g->n_params * sizeof *g->grads);
}

void learn_gru_backward(learn_gru *g, const double *d_out, double *d_x)
{
    learn_gru_backward_seq(g, d_out, NULL, d_x, NULL);
}

void learn_gru_backward_seq(learn_gru *g, const double *d_out, const double *d_h, double *d_x,
                            double *d_h0)
{
    int H = g->n_hidden, NI = g->n_in, O = g->n_out, T = g->steps;
    double *dh = g->dh; /* dL/dh_t, carried back from step t+1 */

    memset(dh, 0, (size_t)H * sizeof *dh);
    if (T == 0)
        goto out;
    for (int t = T - 1; t >= 0; t--) {
        size_t th = (size_t)t * (size_t)H;
        const double *z = g->z + th, *r = g->r + th, *n = g->n + th, *gn = g->gn + th;
        const double *hp = g->h + th;
        double *da = g->da + 3 * th, *du = g->du + 3 * th;

        /* dh += V^T dy_t: the output's share, on top of what step t+1 sent back. */
        if (d_out)
            cblas_dgemv(CblasRowMajor, CblasTrans, O, H, 1.0, g->V, H,
                        d_out + (size_t)t * (size_t)O, 1, 1.0, dh, 1);
        if (d_h)
            for (int j = 0; j < H; j++)
                dh[j] += d_h[th + (size_t)j];
        for (int j = 0; j < H; j++) {
            double dn = dh[j] * (1.0 - z[j]);
            double dz = dh[j] * (hp[j] - n[j]);
            double dan = dn * (1.0 - n[j] * n[j]);
            double dr = dan * gn[j];
            da[j] = du[j] = dz * z[j] * (1.0 - z[j]);
            da[H + j] = du[H + j] = dr * r[j] * (1.0 - r[j]);
            da[2 * H + j] = dan;
            du[2 * H + j] = dan * r[j];
            dh[j] *= z[j]; /* the direct path h_{t-1} -> h_t */
        }
        cblas_dgemv(CblasRowMajor, CblasTrans, 3 * H, H, 1.0, g->U, H, du, 1, 1.0, dh, 1);
        if (d_x) /* W^T da_t */
            cblas_dgemv(CblasRowMajor, CblasTrans, 3 * H, NI, 1.0, g->W, NI, da, 1, 0.0,
                        d_x + (size_t)t * (size_t)NI, 1);
    }
    /* Weight gradients of the whole sequence: dW += DA^T X, dU += DU^T H_prev, dV += DY^T H. */
    int all_hot = 1;
    for (int t = 0; t < T && all_hot; t++)
        all_hot = g->hot[t] >= 0;
    if (all_hot) { /* DA^T X with one-hot rows: column hot_t of dW gains da_t */
        for (int t = 0; t < T; t++) {
            const double *da = g->da + (size_t)t * 3 * (size_t)H;
            for (int j = 0; j < 3 * H; j++)
                g->dW[(size_t)j * (size_t)NI + (size_t)g->hot[t]] += da[j];
        }
    } else {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 3 * H, NI, T, 1.0, g->da, 3 * H, g->x,
                    NI, 1.0, g->dW, NI);
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 3 * H, H, T, 1.0, g->du, 3 * H, g->h, H,
                1.0, g->dU, H);
    if (d_out)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, H, T, 1.0, d_out, O, g->h + H, H,
                    1.0, g->dV, H);
    for (int t = 0; t < T; t++) {
        size_t t3 = (size_t)t * 3 * (size_t)H;
        for (int j = 0; j < 3 * H; j++) {
            g->dbw[j] += g->da[t3 + (size_t)j];
            g->dbu[j] += g->du[t3 + (size_t)j];
        }
        for (int k = 0; d_out && k < O; k++)
            g->dc[k] += d_out[(size_t)t * (size_t)O + (size_t)k];
    }
out: /* after the loop, dh is dL/dh_0 */
    if (d_h0)
        memcpy(d_h0, dh, (size_t)H * sizeof *d_h0);
}
