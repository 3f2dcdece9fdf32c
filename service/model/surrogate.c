/* model/surrogate — the surrogate's encoding (problem features, parameters by name, numeric and
 * one-hot), its training data and prediction with the input gradient. Training is in
 * surrogate_train.c, save / load in surrogate_io.c. */
#include "model/surrogate_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double surrogate_slog2(double v)
{
    return v < 0 ? -log2(1.0 - v) : log2(1.0 + v);
}

/* ---- problem features ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int surrogate_problem_features(const json_t *problem, double *out, int cap)
{
    const char *keys[SURROGATE_MAX_PROBLEM_FEATURES + 1];
    const char *key;
    json_t *v;
    int n = 0;
    if (!json_is_object(problem))
        return -1;
    json_object_foreach((json_t *)problem, key, v)
    {
        if (!json_is_number(v) || n >= cap || n >= SURROGATE_MAX_PROBLEM_FEATURES)
            return -1;
        keys[n++] = key;
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_str);
    for (int i = 0; i < n; i++) {
        double x = json_number_value(json_object_get(problem, keys[i]));
        out[i] = x < 0 ? -log1p(-x) : log1p(x);
    }
    return n;
}

/* ---- parameters and values ---- */

int surrogate_value_key(const space *sp, int p, int v, char *buf, size_t cap)
{
    json_t *j = space_param_value_json(sp, p, v);
    int w = -1;
    if (json_is_string(j))
        w = snprintf(buf, cap, "s:%s", json_string_value(j));
    else if (json_is_boolean(j))
        w = snprintf(buf, cap, "b:%s", json_is_true(j) ? "true" : "false");
    else if (json_is_number(j))
        w = snprintf(buf, cap, "n:%.17g", json_number_value(j));
    json_decref(j);
    return w >= 0 && (size_t)w < cap ? 0 : -1;
}

int surrogate_param_find_cat(const surrogate_param *par, const char *key)
{
    for (int c = 0; c < par->n_cats; c++) {
        if (strcmp(par->cats[c], key) == 0)
            return c;
    }
    return -1;
}

int surrogate_params_find(const surrogate_param *params, int n, const char *name, int hint)
{
    if (hint >= 0 && hint < n && strcmp(params[hint].name, name) == 0)
        return hint;
    for (int j = 0; j < n; j++) {
        if (strcmp(params[j].name, name) == 0)
            return j;
    }
    return -1;
}

void surrogate_params_free(surrogate_param *params, int n)
{
    for (int j = 0; params && j < n; j++) {
        free(params[j].name);
        for (int c = 0; c < params[j].n_cats; c++)
            free(params[j].cats[c]);
        free(params[j].cats);
    }
    free(params);
}

/* 1 when every value of sp's parameter p is a number (not a boolean). */
static int param_is_numeric(const space *sp, int p)
{
    int ok = 1;
    for (int v = 0; ok && v < space_param_num_values(sp, p); v++) {
        json_t *j = space_param_value_json(sp, p, v);
        ok = json_is_number(j);
        json_decref(j);
    }
    return ok;
}

/* ---- training data ---- */

surrogate_data *surrogate_data_new(int n_outputs, const double *objective_w, kt_error *err)
{
    surrogate_data *d = NULL;
    if (n_outputs < 1 || n_outputs > SURROGATE_MAX_OUTPUTS || !objective_w) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "a surrogate has 1 to %d outputs, not %d",
                     SURROGATE_MAX_OUTPUTS, n_outputs);
        goto out;
    }
    d = calloc(1, sizeof *d);
    if (!d) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    d->n_out = n_outputs;
    memcpy(d->obj_w, objective_w, (size_t)n_outputs * sizeof *objective_w);
    d->n_pf = -1;
out:
    return d;
}

int surrogate_data_count(const surrogate_data *d)
{
    return d ? (int)d->n : 0;
}

void surrogate_data_free(surrogate_data *d)
{
    if (!d)
        return;
    surrogate_params_free(d->params, d->n_params);
    free(d->pf);
    free(d->cfg);
    free(d->meta);
    free(d->prob);
    free(d);
}

/* The first sample fixes names, kinds and the problem width. */
static int data_init_params(surrogate_data *d, const space *sp, int n_pf, kt_error *err)
{
    int P = space_num_params(sp);
    if (P < 1 || P > SURROGATE_MAX_PARAMS)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "a surrogate takes 1 to %d parameters, not %d",
                            SURROGATE_MAX_PARAMS, P);
    d->params = calloc((size_t)P, sizeof *d->params);
    if (!d->params)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    d->n_params = P;
    for (int p = 0; p < P; p++) {
        d->params[p].name = strdup(space_param_name(sp, p));
        if (!d->params[p].name)
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        d->params[p].numeric = param_is_numeric(sp, p);
    }
    d->n_pf = n_pf;
    return 0;
}

static int data_grow(surrogate_data *d)
{
    if (d->n < d->cap)
        return 0;
    size_t cap = d->cap ? d->cap * 2 : 1024;
    double *pf = realloc(d->pf, cap * (size_t)(d->n_pf > 0 ? d->n_pf : 1) * sizeof *pf);
    if (pf)
        d->pf = pf;
    double *cfg = realloc(d->cfg, cap * (size_t)d->n_params * sizeof *cfg);
    if (cfg)
        d->cfg = cfg;
    double *meta = realloc(d->meta, cap * (size_t)d->n_out * sizeof *meta);
    if (meta)
        d->meta = meta;
    int *prob = realloc(d->prob, cap * sizeof *prob);
    if (prob)
        d->prob = prob;
    if (!pf || !cfg || !meta || !prob)
        return -1;
    d->cap = cap;
    return 0;
}

/* Category index of key in par, added when new; -1 when the list is full or out of memory. */
static int add_cat(surrogate_param *par, const char *key)
{
    int c = surrogate_param_find_cat(par, key);
    if (c >= 0)
        return c;
    if (par->n_cats >= SURROGATE_MAX_CATEGORIES)
        return -1;
    if (par->n_cats == par->cap_cats) {
        int cap = par->cap_cats ? par->cap_cats * 2 : 8;
        char **cats = realloc(par->cats, (size_t)cap * sizeof *cats);
        if (!cats)
            return -1;
        par->cats = cats;
        par->cap_cats = cap;
    }
    par->cats[par->n_cats] = strdup(key);
    if (!par->cats[par->n_cats])
        return -1;
    return par->n_cats++;
}

int surrogate_data_add(surrogate_data *d, const double *problem_feat, int n_problem_feat,
                       const space *sp, config_id id, const double *meta, int problem_index,
                       kt_error *err)
{
    int idx[SURROGATE_MAX_PARAMS];
    double row[SURROGATE_MAX_PARAMS];
    char key[SURROGATE_MAX_KEY];

    if (!d || !sp || !meta || n_problem_feat < 0 ||
        n_problem_feat > SURROGATE_MAX_PROBLEM_FEATURES || (n_problem_feat > 0 && !problem_feat))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "surrogate_data_add: bad arguments");
    if (d->n_pf < 0 && data_init_params(d, sp, n_problem_feat, err) < 0)
        return -1;
    if (n_problem_feat != d->n_pf)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "the problem has %d features, the surrogate's data %d", n_problem_feat,
                            d->n_pf);
    if (space_num_params(sp) != d->n_params)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "the space has %d parameters, the surrogate's data %d",
                            space_num_params(sp), d->n_params);
    if (space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "configuration %llu is not in the space",
                            (unsigned long long)id);
    for (int k = 0; k < d->n_out; k++) {
        if (!isfinite(meta[k]))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "meta-statistic %d is not finite", k);
    }
    for (int p = 0; p < d->n_params; p++) {
        int j = surrogate_params_find(d->params, d->n_params, space_param_name(sp, p), p);
        if (j < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "parameter '%.100s' is not one of the surrogate's",
                                space_param_name(sp, p));
        surrogate_param *par = &d->params[j];
        if (par->numeric) {
            double v = space_param_value_number(sp, p, idx[p]);
            if (!isfinite(v))
                return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                    "parameter '%.100s' is numeric in the surrogate's data, not "
                                    "in this space",
                                    par->name);
            row[j] = surrogate_slog2(v);
        } else {
            int c =
                surrogate_value_key(sp, p, idx[p], key, sizeof key) < 0 ? -1 : add_cat(par, key);
            if (c < 0)
                return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                    "parameter '%.100s': more than %d distinct values or out of "
                                    "memory",
                                    par->name, SURROGATE_MAX_CATEGORIES);
            row[j] = c;
        }
    }
    if (data_grow(d) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    if (d->n_pf > 0)
        memcpy(d->pf + d->n * (size_t)d->n_pf, problem_feat, (size_t)d->n_pf * sizeof(double));
    memcpy(d->cfg + d->n * (size_t)d->n_params, row, (size_t)d->n_params * sizeof(double));
    memcpy(d->meta + d->n * (size_t)d->n_out, meta, (size_t)d->n_out * sizeof(double));
    d->prob[d->n] = problem_index;
    d->n++;
    return 0;
}

/* ---- the surrogate ---- */

void surrogate_free(surrogate *s)
{
    if (!s)
        return;
    surrogate_params_free(s->params, s->n_params);
    free(s->in_mean);
    free(s->in_sd);
    learn_mlp_free(s->mlp);
    free(s->rows);
    free(s->dx);
    free(s);
}

int surrogate_finish(surrogate *s, uint64_t seed, kt_error *err)
{
    int sizes[SURROGATE_MAX_HIDDEN + 2];
    s->cfg_width = 0;
    for (int j = 0; j < s->n_params; j++) {
        s->params[j].off = s->cfg_width;
        s->cfg_width += s->params[j].numeric ? 1 : s->params[j].n_cats;
    }
    s->n_in = s->n_pf + s->cfg_width;
    if (s->n_in < 1)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "the surrogate has no input features");
    sizes[0] = s->n_in;
    for (int l = 0; l < s->n_hidden; l++)
        sizes[l + 1] = s->hidden[l];
    sizes[s->n_hidden + 1] = s->n_out;
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    s->mlp = learn_mlp_new(s->n_hidden + 1, sizes, s->act, &rng);
    s->in_mean = calloc((size_t)s->n_in, sizeof *s->in_mean);
    s->in_sd = calloc((size_t)s->n_in, sizeof *s->in_sd);
    s->rows = calloc((size_t)SURROGATE_PREDICT_BLOCK * (size_t)s->n_in, sizeof *s->rows);
    s->dx = calloc((size_t)s->n_in, sizeof *s->dx);
    if (!s->mlp || !s->in_mean || !s->in_sd || !s->rows || !s->dx)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "the surrogate's network (%d inputs)", s->n_in);
    for (int i = 0; i < s->n_in; i++)
        s->in_sd[i] = 1;
    for (int k = 0; k < s->n_out; k++)
        s->out_sd[k] = 1;
    s->obj_sd = 1;
    return 0;
}

static int copy_params(surrogate *s, const surrogate_param *src, int n)
{
    s->params = calloc((size_t)n, sizeof *s->params);
    if (!s->params)
        return -1;
    s->n_params = n;
    for (int j = 0; j < n; j++) {
        surrogate_param *par = &s->params[j];
        par->name = strdup(src[j].name);
        par->numeric = src[j].numeric;
        if (!par->name)
            return -1;
        if (src[j].n_cats > 0) {
            par->cats = calloc((size_t)src[j].n_cats, sizeof *par->cats);
            if (!par->cats)
                return -1;
            par->cap_cats = src[j].n_cats;
            for (int c = 0; c < src[j].n_cats; c++) {
                par->cats[c] = strdup(src[j].cats[c]);
                if (!par->cats[c])
                    return -1;
                par->n_cats++;
            }
        }
    }
    return 0;
}

surrogate *surrogate_new_from(const surrogate_data *d, const int *hidden, int n_hidden,
                              learn_activation act, uint64_t seed, kt_error *err)
{
    surrogate *s = calloc(1, sizeof *s);
    if (!s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    s->n_pf = d->n_pf;
    s->n_out = d->n_out;
    s->n_hidden = n_hidden;
    s->act = act;
    memcpy(s->hidden, hidden, (size_t)n_hidden * sizeof *hidden);
    memcpy(s->obj_w, d->obj_w, sizeof s->obj_w);
    if (copy_params(s, d->params, d->n_params) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    if (surrogate_finish(s, seed, err) < 0)
        goto fail;
    return s;
fail:
    surrogate_free(s);
    return NULL;
}

void surrogate_whiten_row(const surrogate *s, const double *pf, const double *cfg, double *row)
{
    for (int i = 0; i < s->n_pf; i++)
        row[i] = (pf[i] - s->in_mean[i]) / s->in_sd[i];
    double *x = row + s->n_pf;
    const double *m = s->in_mean + s->n_pf, *sd = s->in_sd + s->n_pf;
    for (int j = 0; j < s->n_params; j++) {
        const surrogate_param *par = &s->params[j];
        int o = par->off;
        if (par->numeric) {
            x[o] = (cfg[j] - m[o]) / sd[o];
            continue;
        }
        int c = (int)cfg[j];
        for (int k = 0; k < par->n_cats; k++)
            x[o + k] = ((k == c ? 1.0 : 0.0) - m[o + k]) / sd[o + k];
    }
}

int surrogate_num_inputs(const surrogate *s)
{
    return s->n_in;
}

int surrogate_config_offset(const surrogate *s)
{
    return s->n_pf;
}

int surrogate_config_width(const surrogate *s)
{
    return s->cfg_width;
}

int surrogate_num_outputs(const surrogate *s)
{
    return s->n_out;
}

int surrogate_num_problem_features(const surrogate *s)
{
    return s->n_pf;
}

double surrogate_objective_sd(const surrogate *s)
{
    return s->obj_sd;
}

const double *surrogate_config_mean(const surrogate *s)
{
    return s->in_mean + s->n_pf;
}

const double *surrogate_config_sd(const surrogate *s)
{
    return s->in_sd + s->n_pf;
}

int surrogate_check_space(const surrogate *s, const space *sp, kt_error *err)
{
    if (space_num_params(sp) != s->n_params)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "the space has %d parameters, the surrogate %d", space_num_params(sp),
                            s->n_params);
    for (int p = 0; p < s->n_params; p++) {
        int j = surrogate_params_find(s->params, s->n_params, space_param_name(sp, p), p);
        if (j < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "parameter '%.100s' is not one of the surrogate's",
                                space_param_name(sp, p));
        if (s->params[j].numeric && !param_is_numeric(sp, p))
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "parameter '%.100s' is numeric for the surrogate, not in the space",
                                s->params[j].name);
    }
    return 0;
}

int surrogate_param_slice(const surrogate *s, const space *sp, int p, int *off, int *width)
{
    int j = p >= 0 && p < space_num_params(sp)
                ? surrogate_params_find(s->params, s->n_params, space_param_name(sp, p), p)
                : -1;
    if (j < 0)
        return -1;
    *off = s->params[j].off;
    *width = s->params[j].numeric ? 1 : s->params[j].n_cats;
    return 0;
}

void surrogate_encode_value(const surrogate *s, const space *sp, int p, int v, double *slice)
{
    char key[SURROGATE_MAX_KEY];
    int j = surrogate_params_find(s->params, s->n_params, space_param_name(sp, p), p);
    if (j < 0)
        return;
    const surrogate_param *par = &s->params[j];
    if (par->numeric) {
        double x = space_param_value_number(sp, p, v);
        slice[0] = isfinite(x) ? surrogate_slog2(x) : 0.0;
        return;
    }
    for (int k = 0; k < par->n_cats; k++)
        slice[k] = 0;
    int c = surrogate_value_key(sp, p, v, key, sizeof key) < 0 ? -1
                                                               : surrogate_param_find_cat(par, key);
    if (c >= 0)
        slice[c] = 1;
}

int surrogate_encode(const surrogate *s, const space *sp, config_id id, double *x, kt_error *err)
{
    int idx[SURROGATE_MAX_PARAMS], off, width;
    if (surrogate_check_space(s, sp, err) < 0)
        return -1;
    if (space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "configuration %llu is not in the space",
                            (unsigned long long)id);
    for (int p = 0; p < s->n_params; p++) {
        if (surrogate_param_slice(s, sp, p, &off, &width) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "parameter %d is not the surrogate's", p);
        surrogate_encode_value(s, sp, p, idx[p], x + off);
    }
    return 0;
}

/* Whitened input row from raw pf and raw config features x. */
static void whiten_features(const surrogate *s, const double *pf, const double *x, double *row)
{
    for (int i = 0; i < s->n_pf; i++)
        row[i] = (pf[i] - s->in_mean[i]) / s->in_sd[i];
    for (int i = 0; i < s->cfg_width; i++)
        row[s->n_pf + i] = (x[i] - s->in_mean[s->n_pf + i]) / s->in_sd[s->n_pf + i];
}

static double objective_of(const surrogate *s, const double *y)
{
    double f = 0;
    for (int k = 0; k < s->n_out; k++)
        f += s->obj_w[k] * (y[k] * s->out_sd[k] + s->out_mean[k]);
    return f;
}

double surrogate_predict(surrogate *s, const double *pf, const double *x, double *grad)
{
    double dout[SURROGATE_MAX_OUTPUTS];
    whiten_features(s, pf, x, s->rows);
    const double *y = learn_mlp_forward(s->mlp, s->rows, 1);
    if (!y)
        return NAN;
    double f = objective_of(s, y);
    if (grad) {
        for (int k = 0; k < s->n_out; k++)
            dout[k] = s->obj_w[k] * s->out_sd[k];
        if (learn_mlp_input_grad(s->mlp, dout, s->dx) < 0)
            return NAN;
        for (int i = 0; i < s->cfg_width; i++)
            grad[i] = s->dx[s->n_pf + i] / s->in_sd[s->n_pf + i];
    }
    return f;
}

int surrogate_predict_meta(surrogate *s, const double *pf, const double *x, double *out)
{
    whiten_features(s, pf, x, s->rows);
    const double *y = learn_mlp_forward(s->mlp, s->rows, 1);
    if (!y)
        return -1;
    for (int k = 0; k < s->n_out; k++)
        out[k] = y[k] * s->out_sd[k] + s->out_mean[k];
    return 0;
}

int surrogate_predict_batch(surrogate *s, const double *pf, const double *x, int n, double *out)
{
    for (int at = 0; at < n; at += SURROGATE_PREDICT_BLOCK) {
        int rows = n - at < SURROGATE_PREDICT_BLOCK ? n - at : SURROGATE_PREDICT_BLOCK;
        for (int r = 0; r < rows; r++)
            whiten_features(s, pf, x + (size_t)(at + r) * (size_t)s->cfg_width,
                            s->rows + (size_t)r * (size_t)s->n_in);
        const double *y = learn_mlp_forward(s->mlp, s->rows, rows);
        if (!y)
            return -1;
        for (int r = 0; r < rows; r++)
            out[at + r] = objective_of(s, y + (size_t)r * (size_t)s->n_out);
    }
    return 0;
}
