/* model/surrogate_train — surrogate_train: problems split into training and held-out sets (every
 * sample of a problem on one side), inputs and outputs whitened with the training side's means and
 * deviations (a constant feature keeps deviation 1), a relu MLP fitted with the Huber loss on
 * whitened outputs by Adam on shuffled mini-batches (learning rate x0.1 at 50% and x0.01 at 75% of
 * the epochs), then the metrics on the held-out problems. Deterministic for a seed (the shuffles
 * and the initial weights come from it), unless max_seconds stops it early. */
#include "model/surrogate_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "learn/adam.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

typedef struct train_ctx {
    const surrogate_data *d;
    surrogate *s;
    int *train, *test; /* sample indices */
    int n_train, n_test, n_probs, n_test_probs;
    double *x, *y, *dy; /* batch scratch */
    int cap_rows;
} train_ctx;

/* Splits the problems: a shuffled list of the distinct indices, the first test_fraction of them
 * held out (at least one and at most all but one when there are two or more). */
static int split_problems(train_ctx *c, double test_fraction, kt_rng *rng)
{
    const surrogate_data *d = c->d;
    int *probs = malloc(d->n * sizeof *probs), rc = -1;
    int *held = NULL;
    if (!probs)
        goto out;
    memcpy(probs, d->prob, d->n * sizeof *probs);
    qsort(probs, d->n, sizeof *probs, cmp_int);
    int n = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (n == 0 || probs[n - 1] != probs[i])
            probs[n++] = probs[i];
    }
    c->n_probs = n;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)kt_rng_below(rng, (uint64_t)i + 1), t = probs[i];
        probs[i] = probs[j];
        probs[j] = t;
    }
    int k = (int)lround(test_fraction * n);
    if (n >= 2 && test_fraction > 0)
        k = k < 1 ? 1 : k > n - 1 ? n - 1 : k;
    else
        k = 0;
    c->n_test_probs = k;
    held = malloc((size_t)(k > 0 ? k : 1) * sizeof *held);
    c->train = malloc(d->n * sizeof *c->train);
    c->test = malloc(d->n * sizeof *c->test);
    if (!held || !c->train || !c->test)
        goto out;
    memcpy(held, probs, (size_t)k * sizeof *held);
    qsort(held, (size_t)k, sizeof *held, cmp_int);
    for (size_t i = 0; i < d->n; i++) {
        if (k > 0 && bsearch(&d->prob[i], held, (size_t)k, sizeof *held, cmp_int))
            c->test[c->n_test++] = (int)i;
        else
            c->train[c->n_train++] = (int)i;
    }
    rc = 0;
out:
    free(probs);
    free(held);
    return rc;
}

/* Means and deviations of the inputs (raw problem features, config features) and the outputs
 * over the training samples. */
static void whitening(train_ctx *c)
{
    const surrogate_data *d = c->d;
    surrogate *s = c->s;
    int n_in = s->n_in, n = c->n_train;
    double *sum = s->in_mean, *sq = s->in_sd; /* accumulate in place */
    double osum[SURROGATE_MAX_OUTPUTS] = {0}, osq[SURROGATE_MAX_OUTPUTS] = {0}, fsum = 0, fsq = 0;
    memset(sum, 0, (size_t)n_in * sizeof *sum);
    memset(sq, 0, (size_t)n_in * sizeof *sq);
    for (int t = 0; t < n; t++) {
        size_t i = (size_t)c->train[t];
        const double *pf = d->pf + i * (size_t)d->n_pf, *cfg = d->cfg + i * (size_t)d->n_params;
        for (int k = 0; k < s->n_pf; k++) {
            sum[k] += pf[k];
            sq[k] += pf[k] * pf[k];
        }
        for (int j = 0; j < s->n_params; j++) {
            const surrogate_param *par = &s->params[j];
            int f = s->n_pf + par->off;
            if (!par->numeric)
                f += (int)cfg[j];
            double v = par->numeric ? cfg[j] : 1.0;
            sum[f] += v;
            sq[f] += v * v;
        }
        const double *m = d->meta + i * (size_t)d->n_out;
        double f = 0;
        for (int k = 0; k < s->n_out; k++) {
            osum[k] += m[k];
            osq[k] += m[k] * m[k];
            f += s->obj_w[k] * m[k];
        }
        fsum += f;
        fsq += f * f;
    }
    double fmean = fsum / n, fvar = fsq / n - fmean * fmean;
    s->obj_sd = fvar > 1e-18 ? sqrt(fvar) : 1.0;
    for (int k = 0; k < n_in; k++) {
        double mean = sum[k] / n, var = sq[k] / n - mean * mean;
        s->in_mean[k] = mean;
        s->in_sd[k] = var > 1e-18 ? sqrt(var) : 1.0;
    }
    for (int k = 0; k < s->n_out; k++) {
        double mean = osum[k] / n, var = osq[k] / n - mean * mean;
        s->out_mean[k] = mean;
        s->out_sd[k] = var > 1e-18 ? sqrt(var) : 1.0;
    }
}

/* Whitened inputs and targets of samples idx[0..rows) into the scratch. */
static void load_rows(train_ctx *c, const int *idx, int rows)
{
    const surrogate_data *d = c->d;
    surrogate *s = c->s;
    for (int r = 0; r < rows; r++) {
        size_t i = (size_t)idx[r];
        surrogate_whiten_row(s, d->pf + i * (size_t)d->n_pf, d->cfg + i * (size_t)d->n_params,
                             c->x + (size_t)r * (size_t)s->n_in);
        const double *m = d->meta + i * (size_t)d->n_out;
        for (int k = 0; k < s->n_out; k++)
            c->y[(size_t)r * (size_t)s->n_out + (size_t)k] = (m[k] - s->out_mean[k]) / s->out_sd[k];
    }
}

/* Huber loss summed over rows x outputs of out against c->y; with grad, dy = d mean / d out. */
static double huber(train_ctx *c, const double *out, int rows, double delta, int grad)
{
    size_t n = (size_t)rows * (size_t)c->s->n_out;
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        double e = out[i] - c->y[i], a = fabs(e);
        loss += a <= delta ? 0.5 * e * e : delta * (a - 0.5 * delta);
        if (grad)
            c->dy[i] = (a <= delta ? e : (e > 0 ? delta : -delta)) / (double)n;
    }
    return loss;
}

/* Ranks (ties share their mean rank) of v into r; vi is scratch of n pairs. */
typedef struct vi_pair {
    double v;
    int i;
} vi_pair;

static int cmp_pair(const void *a, const void *b)
{
    const vi_pair *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : (x->i > y->i) - (x->i < y->i);
}

static void ranks(const double *v, int n, vi_pair *vi, double *r)
{
    for (int i = 0; i < n; i++) {
        vi[i].v = v[i];
        vi[i].i = i;
    }
    qsort(vi, (size_t)n, sizeof *vi, cmp_pair);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && vi[j + 1].v == vi[i].v)
            j++;
        for (int k = i; k <= j; k++)
            r[vi[k].i] = 0.5 * (i + j);
        i = j + 1;
    }
}

static double pearson(const double *a, const double *b, int n)
{
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        ma += a[i] / n;
        mb += b[i] / n;
    }
    for (int i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0.0;
}

/* Held-out metrics: the mean Huber loss, and the objective's RMSE and Spearman correlation. */
static int test_metrics(train_ctx *c, int batch, double delta, double *test_huber, double *rmse,
                        double *spearman)
{
    surrogate *s = c->s;
    int n = c->n_test, rc = -1;
    double *pred = malloc((size_t)n * sizeof *pred), *truth = malloc((size_t)n * sizeof *truth);
    double *ra = malloc((size_t)n * sizeof *ra), *rb = malloc((size_t)n * sizeof *rb);
    vi_pair *idx = malloc((size_t)n * sizeof *idx);
    double loss = 0, se = 0;
    if (!pred || !truth || !ra || !rb || !idx)
        goto out;
    for (int at = 0; at < n; at += batch) {
        int rows = n - at < batch ? n - at : batch;
        load_rows(c, c->test + at, rows);
        const double *out = learn_mlp_forward(s->mlp, c->x, rows);
        if (!out)
            goto out;
        loss += huber(c, out, rows, delta, 0);
        for (int r = 0; r < rows; r++) {
            double fp = 0, ft = 0;
            for (int k = 0; k < s->n_out; k++) {
                size_t e = (size_t)r * (size_t)s->n_out + (size_t)k;
                fp += s->obj_w[k] * (out[e] * s->out_sd[k] + s->out_mean[k]);
                ft += s->obj_w[k] * (c->y[e] * s->out_sd[k] + s->out_mean[k]);
            }
            pred[at + r] = fp;
            truth[at + r] = ft;
            se += (fp - ft) * (fp - ft);
        }
    }
    *test_huber = loss / ((double)n * s->n_out);
    *rmse = sqrt(se / n);
    ranks(pred, n, idx, ra);
    ranks(truth, n, idx, rb);
    *spearman = pearson(ra, rb, n);
    rc = 0;
out:
    free(pred);
    free(truth);
    free(ra);
    free(rb);
    free(idx);
    return rc;
}

static int check_options(const surrogate_data *d, surrogate_options *o, kt_error *err)
{
    if (!d || d->n < 2)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "a surrogate needs at least 2 samples, not %d",
                            d ? (int)d->n : 0);
    if (o->n_hidden == 0) {
        o->n_hidden = 3;
        o->hidden[0] = 256;
        o->hidden[1] = 256;
        o->hidden[2] = 128;
    }
    if (o->n_hidden < 0 || o->n_hidden > SURROGATE_MAX_HIDDEN - 1)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "a surrogate has 1 to %d hidden layers",
                            SURROGATE_MAX_HIDDEN - 1);
    for (int l = 0; l < o->n_hidden; l++) {
        if (o->hidden[l] < 1 || o->hidden[l] > 4096)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "hidden layer %d has %d units (1 to 4096)",
                                l, o->hidden[l]);
    }
    o->epochs = o->epochs > 0 ? o->epochs : 40;
    o->batch = o->batch > 0 ? o->batch : 128;
    o->lr = o->lr > 0 ? o->lr : 1e-3;
    o->huber_delta = o->huber_delta > 0 ? o->huber_delta : 1.0;
    o->test_fraction = o->test_fraction > 0 ? o->test_fraction : 0.2;
    if (o->epochs > 100000 || o->batch > 65536 || !(o->test_fraction < 1) || !isfinite(o->lr) ||
        !isfinite(o->huber_delta) || o->max_seconds < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "surrogate options out of range (epochs %d, batch %d, "
                            "test_fraction %g, max_seconds %g)",
                            o->epochs, o->batch, o->test_fraction, o->max_seconds);
    return 0;
}

surrogate *surrogate_train(const surrogate_data *d, const surrogate_options *opts, json_t **metrics,
                           kt_error *err)
{
    surrogate_options o = opts ? *opts : (surrogate_options){0};
    train_ctx c = {0};
    learn_adam adam = {0};
    surrogate *s = NULL;
    kt_rng rng;
    double t0 = kt_clock_s(), last_loss = 0;
    int epochs_done = 0, stopped = 0, adam_ok = 0;

    if (metrics)
        *metrics = NULL;
    if (check_options(d, &o, err) < 0)
        goto fail;
    kt_rng_seed(&rng, o.seed);
    c.d = d;
    if (split_problems(&c, o.test_fraction, &rng) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    s = surrogate_new_from(d, o.hidden, o.n_hidden, LEARN_ACT_RELU, kt_rng_next(&rng), err);
    if (!s)
        goto fail;
    c.s = s;
    c.cap_rows = o.batch > 1024 ? o.batch : 1024;
    c.x = malloc((size_t)c.cap_rows * (size_t)s->n_in * sizeof *c.x);
    c.y = malloc((size_t)c.cap_rows * (size_t)s->n_out * sizeof *c.y);
    c.dy = malloc((size_t)c.cap_rows * (size_t)s->n_out * sizeof *c.dy);
    if (!c.x || !c.y || !c.dy || learn_adam_init(&adam, learn_mlp_num_params(s->mlp), o.lr) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    adam_ok = 1;
    whitening(&c);
    for (int e = 0; e < o.epochs && !stopped; e++) {
        adam.lr = o.lr * (e >= (3 * o.epochs) / 4 ? 0.01 : e >= o.epochs / 2 ? 0.1 : 1.0);
        for (int i = c.n_train - 1; i > 0; i--) {
            int j = (int)kt_rng_below(&rng, (uint64_t)i + 1), t = c.train[i];
            c.train[i] = c.train[j];
            c.train[j] = t;
        }
        double sum = 0;
        for (int at = 0; at < c.n_train; at += o.batch) {
            int rows = c.n_train - at < o.batch ? c.n_train - at : o.batch;
            load_rows(&c, c.train + at, rows);
            const double *out = learn_mlp_forward(s->mlp, c.x, rows);
            if (!out) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto fail;
            }
            sum += huber(&c, out, rows, o.huber_delta, 1);
            learn_mlp_backward(s->mlp, c.dy);
            learn_adam_step(&adam, learn_mlp_params(s->mlp), learn_mlp_grads(s->mlp));
            if (o.max_seconds > 0 && kt_clock_s() - t0 > o.max_seconds) {
                stopped = 1;
                break;
            }
        }
        last_loss = sum / ((double)c.n_train * s->n_out);
        epochs_done = e + 1;
    }
    if (metrics) {
        double th = NAN, rmse = NAN, rho = NAN;
        if (c.n_test > 0 && test_metrics(&c, c.cap_rows, o.huber_delta, &th, &rmse, &rho) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto fail;
        }
        json_t *m =
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:o, s:o, s:o, s:I, s:b, s:f, s:I}",
                      "samples", (json_int_t)d->n, "problems", (json_int_t)c.n_probs,
                      "test_problems", (json_int_t)c.n_test_probs, "train_samples",
                      (json_int_t)c.n_train, "test_samples", (json_int_t)c.n_test, "train_huber",
                      last_loss, "test_huber", isfinite(th) ? json_real(th) : json_null(),
                      "test_objective_rmse", isfinite(rmse) ? json_real(rmse) : json_null(),
                      "test_objective_spearman", isfinite(rho) ? json_real(rho) : json_null(),
                      "epochs", (json_int_t)epochs_done, "stopped_early", stopped, "seconds",
                      kt_clock_s() - t0, "parameters", (json_int_t)learn_mlp_num_params(s->mlp));
        if (!m) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto fail;
        }
        *metrics = m;
    }
    goto out;
fail:
    surrogate_free(s);
    s = NULL;
out:
    if (adam_ok)
        learn_adam_release(&adam);
    free(c.train);
    free(c.test);
    free(c.x);
    free(c.y);
    free(c.dy);
    return s;
}
