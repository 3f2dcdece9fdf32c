/* model/surrogate_impl — internal to model/: the structs behind surrogate.h shared by
 * surrogate.c (encoding, data, prediction), surrogate_io.c (save / load) and surrogate_train.c
 * (whitening, Huber loss, Adam, metrics). A configuration is stored per parameter as one double: a
 * numeric parameter's encoded value (sign(v) log2(1 + |v|)), a categorical parameter's category
 * index
 * (-1: a value the surrogate never saw). */
#ifndef KT_MODEL_SURROGATE_IMPL_H
#define KT_MODEL_SURROGATE_IMPL_H

#include "learn/mlp.h"
#include "model/surrogate.h"

#define SURROGATE_MAX_PARAMS     256
#define SURROGATE_MAX_CATEGORIES 256 /* distinct values of one string / boolean parameter */
#define SURROGATE_MAX_KEY        280 /* a category key: "s:" + a 256-byte string value */
#define SURROGATE_MAX_NAME       128
#define SURROGATE_PREDICT_BLOCK  256 /* rows per batched forward in predictions */

typedef struct surrogate_param {
    char *name;
    int numeric; /* 1: one feature; 0: one-hot over cats */
    int n_cats, cap_cats;
    char **cats; /* category keys, in first-seen order */
    int off;     /* offset of the parameter's slice in the config features */
} surrogate_param;

struct surrogate_data {
    int n_out;
    double obj_w[SURROGATE_MAX_OUTPUTS];
    int n_pf; /* -1 until the first sample */
    int n_params;
    surrogate_param *params;
    size_t n, cap;
    double *pf, *cfg, *meta; /* n x n_pf, n x n_params, n x n_out */
    int *prob;
};

struct surrogate {
    int n_pf, n_params, cfg_width, n_in, n_out;
    int n_hidden, hidden[SURROGATE_MAX_HIDDEN];
    learn_activation act;
    surrogate_param *params;
    double *in_mean, *in_sd; /* n_in each */
    double out_mean[SURROGATE_MAX_OUTPUTS], out_sd[SURROGATE_MAX_OUTPUTS];
    double obj_w[SURROGATE_MAX_OUTPUTS];
    double obj_sd; /* deviation of the objective over the training samples (1 if constant) */
    learn_mlp *mlp;
    double *rows; /* SURROGATE_PREDICT_BLOCK x n_in scratch */
    double *dx;   /* n_in */
};

/* surrogate.c */
/* sign(v) log2(1 + |v|). */
double surrogate_slog2(double v);
/* Key of value v of sp's parameter p ("s:text", "b:true", "n:%.17g"); 0 or -1 if it does not fit.
 */
int surrogate_value_key(const space *sp, int p, int v, char *buf, size_t cap);
/* Index of key among par's categories, or -1. */
int surrogate_param_find_cat(const surrogate_param *par, const char *key);
/* Index of name among params, trying `hint` first (the same order is the common case), or -1. */
int surrogate_params_find(const surrogate_param *params, int n, const char *name, int hint);
void surrogate_params_free(surrogate_param *params, int n);
/* Writes the whitened input row of a sample (pf raw, cfg as stored) into row[s->n_in]. */
void surrogate_whiten_row(const surrogate *s, const double *pf, const double *cfg, double *row);
/* Widths and offsets from s's parameters, the buffers and the network (weights from seed, whitening
 * the identity): 0, or -1 with err. */
int surrogate_finish(surrogate *s, uint64_t seed, kt_error *err);
/* An untrained surrogate with the data's encoding (parameters copied, widths set) and the given
 * layer widths; weights from the seed. NULL with err. */
surrogate *surrogate_new_from(const surrogate_data *d, const int *hidden, int n_hidden,
                              learn_activation act, uint64_t seed, kt_error *err);

#endif
