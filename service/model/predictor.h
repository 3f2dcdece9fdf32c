/* model/predictor — the facade the worker, the API and the bench use to predict the best
 * configurations of a kernel for a problem never tuned, from a training_set of tuned problems.
 * Four algorithms (predictor_kinds):
 *   "seq2seq"  seed 001's model: GRU encoder over the problem tokens (problem_tokens.h), GRU
 *              decoder with attention emitting one parameter value per step (model/seq2seq.h),
 *              decoded with the constrained beam (model/beam.h);
 *   "nearest"  the tuned problem nearest in log2-argument distance (Kernel Launcher's rule): its
 *              fastest configurations valid in the given space, then the next-nearest problem's;
 *   "common"   the configurations most often among the top `top` of the training problems
 *              (Kernel Tuner's fallback), ties by mean rank;
 *   "xgb"      one XGBoost multi-class classifier per parameter on the problem features,
 *              decoded with the constrained beam.
 * Learned kinds train on each problem's best configuration (weight 1) and its next-best ones
 * (the i-th next-best weighs next_weight^i), `top` rows per problem.
 *
 * Lifecycle: predictor_train or predictor_load -> predictor_predict / predictor_decode /
 * predictor_save / predictor_evaluate (one caller at a time) -> predictor_free. The predictor owns
 * copies of the parameters and argument names; it keeps no pointer into the training set or the
 * spaces it is given. */
#ifndef KT_MODEL_PREDICTOR_H
#define KT_MODEL_PREDICTOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "model/training_set.h"
#include "space/space.h"

#define PREDICTOR_MAX_K 100 /* candidates of one prediction */

typedef struct predictor predictor;
typedef struct predictor_candidate {
    json_t *config; /* {"param": value}, owned (predictor_candidates_release) */
    config_id id;   /* its id in the space given to predict */
    double score;   /* higher is better (log-probability for seq2seq and xgb) */
} predictor_candidate;

/* "seq2seq, nearest, common, xgb, local, ensemble" */
const char *predictor_kinds(void);
/* The one that wins the report (service/bench/README.md, "--predict"). */
const char *predictor_default_kind(void);
int predictor_kind_exists(const char *kind);
/* hyper: JSON object or NULL; unknown keys or bad values are KT_ERR_BAD_OPTION. Common keys:
 * "top" (trials per problem used, [8]), "next_weight" ([0.5]: weight of the i-th next-best is
 * next_weight^i), "beam" (beam width, [32]); seq2seq: "hidden", "epochs", "lr"; xgb: "rounds",
 * "depth"; local: "neighbours" ([4]), "tol" ([0.10]); ensemble: all of those (passed to its
 * members) and "w_seq2seq", "w_nearest", "w_xgb", "w_local" (member weights [1]), "w_common"
 * ([0.5]) (0 leaves the member out), "fuse_c" ([10]), "list" ([20]), "diverse" ([1])
 * (model/predictor_ensemble.c). A training set with no problem (or no trial) is KT_ERR_BAD_REQUEST;
 * an unknown kind KT_ERR_BAD_OPTION. Deterministic for a seed. */
predictor *predictor_train(const char *kind, const training_set *ts, const json_t *hyper,
                           uint64_t seed, kt_error *err);
/* The check predictor_train makes of hyper for kind (NULL: the default kind), without training:
 * 0, or -1 with err (KT_ERR_BAD_OPTION: an unknown kind or key, a value out of its range). So a
 * request is refused before its row is stored (issue 26: a 1e300 stored once broke GET
 * /v1/models). */
int predictor_hyper_check(const char *kind, const json_t *hyper, kt_error *err);
void predictor_free(predictor *p);
const char *predictor_kind(const predictor *p);
json_t *predictor_hyper_json(const predictor *p); /* new reference, defaults filled */
/* The top k (1..100) valid configurations of sp for problem (an object of arguments), best first,
 * each valid in sp. sp must have the model's parameters (same names, order and values), else
 * KT_ERR_BAD_REQUEST. Returns how many (0: none), -1 with err. NOT thread-safe: one caller at a
 * time per predictor (callers lock). out entries are the caller's (predictor_candidates_release).
 */
int predictor_predict(predictor *p, const json_t *problem, const space *sp, int k,
                      predictor_candidate *out, kt_error *err);
void predictor_candidates_release(predictor_candidate *c, int n);

/* How a decoding may treat the space (the report's comparison, seed 001): GREEDY one sequence,
 * most likely value per step, no constraint; FREE the beam without the constraint; CONSTRAINED the
 * beam keeping only prefixes that can still be valid in sp (predictor_predict's). For nearest and
 * common, GREEDY and FREE list their ranking without checking validity. */
typedef enum { PREDICT_GREEDY, PREDICT_FREE, PREDICT_CONSTRAINED } predict_mode;
/* Up to k (1..100) value-index rows (the model's parameter order; rows: k * num_params) with their
 * scores, best first. sp: the problem's space (required for CONSTRAINED, may be NULL else). width:
 * beam width (0: the hyper's "beam"; at least k is used). Returns how many, -1 with err. */
int predictor_decode(predictor *p, const json_t *problem, const space *sp, predict_mode mode,
                     int width, int k, int *rows, double *score, kt_error *err);
int predictor_num_params(const predictor *p);

/* Bytes with a format header ("ktune-model", format version, kind) that predictor_load reads back;
 * a buffer of a format version outside [MIN, VERSION] is KT_ERR_BAD_REQUEST "model format N, this
 * build reads M".
 * Layout: "ktune-model <version> <kind>\n", the hyper JSON line, a meta JSON line (parameters,
 * argument names, the kind's small data), then the kind's binary payload. */
#define PREDICTOR_FORMAT_VERSION 2
/* The oldest version predictor_load reads: format 1 is format 2 without derived features (its meta
 * line has no "derived"), so its models load and predict as they did. Format 2's meta line may
 * hold "derived" (the training set's derived-feature description, re-evaluated per problem at
 * predict time: the caller gives only the problem's arguments). */
#define PREDICTOR_FORMAT_VERSION_MIN 1
int predictor_save(const predictor *p, strbuf *out, kt_error *err);
predictor *predictor_load(const unsigned char *buf, size_t len, kt_error *err);

/* Held-out metrics: for each problem of test, the top-1 prediction (space from space_for; NULL
 * with err->code KT_OK skips the problem, NULL with an error fails the evaluation) against its
 * measured trials. Returns {"problems":n, "param_accuracy":..., "perfect":...,
 * "top1_ratio_median":x|null, "top1_within_1_10":x|null, "measured":n,
 * "heldout":[{"problem":{...},"config":{...}|null,"predicted_time_ms":x|null,"best_time_ms":y}]}
 * where predicted_time_ms is the measured time of the predicted top-1 when that configuration was
 * measured for the problem, else null; the ratios are over the measured ones. param_accuracy is
 * the mean share of parameters equal to the best measured configuration's, perfect the share of
 * problems where all are. New reference, NULL with err. */
typedef const space *(*predictor_space_fn)(void *ctx, const json_t *problem, kt_error *err);
json_t *predictor_evaluate(predictor *p, const training_set *test, predictor_space_fn space_for,
                           void *ctx, kt_error *err);

#endif
