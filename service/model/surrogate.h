/* model/surrogate — Mind Mappings' differentiable surrogate (issue 13): an MLP from (problem,
 * configuration) to a backend's normalised meta-statistics, trained offline across many problems of
 * one kernel and device class, then frozen; `mindmap` descends its gradient with respect to the
 * configuration. Generic over spaces: a configuration is encoded per parameter by name, so spaces
 * of different problems (different value lists) share one encoding: numeric parameter -> one
 * feature, log2(1 + |v|) with v's sign; string / boolean parameter -> one-hot over the values seen
 * in training (an unseen value: zeros). A problem is encoded by surrogate_problem_features (numeric
 * arguments in name order, ln(1 + v)). Inputs and outputs are whitened with the training set's
 * means and deviations; the loss is Huber. The objective is a weighted sum of the (unwhitened)
 * outputs, weights given with the data (for accel: ln(edp / minimum edp) = ln energy + ln cycles
 * entries).
 *
 * Lifecycle: surrogate_data_new -> surrogate_data_add* -> surrogate_train -> surrogate_save /
 * surrogate_predict / surrogate_encode -> surrogate_free; or surrogate_load -> ... -> free.
 * A trained surrogate is read-only except for its scratch buffers: one per thread (load a copy). */
#ifndef KT_MODEL_SURROGATE_H
#define KT_MODEL_SURROGATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "space/space.h"

#define SURROGATE_MAX_PROBLEM_FEATURES 16
#define SURROGATE_MAX_OUTPUTS          32
#define SURROGATE_MAX_HIDDEN           8

typedef struct surrogate surrogate;
typedef struct surrogate_data surrogate_data;

/* ln(1 + v) of the numeric members of a canonical problem object, in name order; returns the
 * count (<= cap) or -1 when a member is not a number. */
int surrogate_problem_features(const json_t *problem, double *out, int cap);

/* n_outputs meta-statistics per sample; objective_w[n_outputs] as described above (copied). */
surrogate_data *surrogate_data_new(int n_outputs, const double *objective_w, kt_error *err);
/* One sample: the problem's features, a configuration of sp (a space of that problem), its
 * meta-statistics, and the problem's index (samples of one problem stay on one side of the
 * held-out split). The first call fixes the parameter names; a space with other names is
 * KT_ERR_BAD_REQUEST. Copies what it needs. */
int surrogate_data_add(surrogate_data *d, const double *problem_feat, int n_problem_feat,
                       const space *sp, config_id id, const double *meta, int problem_index,
                       kt_error *err);
int surrogate_data_count(const surrogate_data *d);
void surrogate_data_free(surrogate_data *d);

typedef struct surrogate_options {
    int hidden[SURROGATE_MAX_HIDDEN]; /* hidden layer widths; n_hidden 0 = {256, 256, 128} */
    int n_hidden;
    int epochs;           /* [40] */
    int batch;            /* [128] */
    double lr;            /* Adam [1e-3], x0.1 at 50% and 75% of the epochs */
    double huber_delta;   /* [1.0], on whitened outputs */
    double test_fraction; /* [0.2] of the problems held out */
    double max_seconds;   /* [0 = none] stop early (metrics say so) */
    uint64_t seed;
} surrogate_options;

/* Trains; *metrics (new reference) = {"samples","problems","train_huber","test_huber",
 * "test_objective_rmse" (ln units), "test_objective_spearman", "epochs","seconds","parameters"}. */
surrogate *surrogate_train(const surrogate_data *d, const surrogate_options *o, json_t **metrics,
                           kt_error *err);
void surrogate_free(surrogate *s);

/* Serialised bytes (versioned, little-endian doubles) and back; load checks every size. */
int surrogate_save(const surrogate *s, strbuf *out, kt_error *err);
surrogate *surrogate_load(const void *bytes, size_t n, kt_error *err);

/* Input width and the slice of it a configuration occupies ([off, off + n)). */
int surrogate_num_inputs(const surrogate *s);
int surrogate_config_offset(const surrogate *s);
int surrogate_config_width(const surrogate *s);
/* Encodes configuration id of sp into x[surrogate_config_width]; -1 when sp's parameters are not
 * the surrogate's (KT_ERR_BAD_REQUEST). */
int surrogate_encode(const surrogate *s, const space *sp, config_id id, double *x, kt_error *err);
/* Encoding of value v of parameter p of sp into x (its slice of the config features), for
 * projection: the distance of a continuous point to each candidate value. */
int surrogate_param_slice(const surrogate *s, const space *sp, int p, int *off, int *width);
void surrogate_encode_value(const surrogate *s, const space *sp, int p, int v, double *slice);
/* Predicted objective (ln units) at problem features pf and config features x; when grad is not
 * NULL it receives d objective / d x (config features only). Uses the surrogate's scratch. */
double surrogate_predict(surrogate *s, const double *pf, const double *x, double *grad);
/* All outputs (unwhitened meta-statistics) into out[n_outputs]. */
int surrogate_predict_meta(surrogate *s, const double *pf, const double *x, double *out);
int surrogate_num_outputs(const surrogate *s);

/* Additions (helper C): */
/* Problem features the surrogate was trained with (surrogate_problem_features' count). */
int surrogate_num_problem_features(const surrogate *s);
/* 0 when every parameter of sp is one of the surrogate's (by name) with a value kind it encodes
 * (numeric parameter: every value a number), and sp has every parameter of the surrogate; else
 * -1 with KT_ERR_BAD_REQUEST naming the first mismatch. */
int surrogate_check_space(const surrogate *s, const space *sp, kt_error *err);
/* The training set's mean and deviation of each config feature (surrogate_config_width entries,
 * owned by the surrogate): the whitening that gradient steps and projection distances are
 * measured in. */
const double *surrogate_config_mean(const surrogate *s);
const double *surrogate_config_sd(const surrogate *s);
/* Predicted objectives of n configurations (x: n rows of config features) of one problem, in
 * blocks through the batched forward. Returns 0, or -1 out of memory. */
/* Deviation of the objective (ln units) over the training samples: mindmap's gradient steps
 * measure the objective in it, as the outputs are whitened. */
double surrogate_objective_sd(const surrogate *s);
int surrogate_predict_batch(surrogate *s, const double *pf, const double *x, int n, double *out);

#endif
