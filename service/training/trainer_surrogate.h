/* training/trainer_surrogate — the models of kind "surrogate" (algorithm "mlp"): Mind Mappings'
 * differentiable cost model of an accel device (model/surrogate.h), trained by the trainer thread
 * (training/trainer.c hands it the claimed model) and searched through by `mindmap` jobs
 * (worker/job_driver.c loads the job's surrogate).
 *
 * A surrogate learns a device's cost model, not tuned trials: the training data is drawn here.
 *   1. the model's kernel on a device of its class (the same checks as a predictor: kernel hash,
 *      toolchain);
 *   2. `problems` random problems of the kernel's training distribution (catalog_sample_problem),
 *      each resolved (catalog_resolve: its mapping space);
 *   3. per problem, random configurations (space_sample) until samples / problems valid ones are
 *      kept (at most TRAINER_SURROGATE_TRIES_PER_SAMPLE draws each); validity and the
 *      meta-statistics come from the cost model (catalog_accel_meta), so invalid mappings (a tile
 *      that does not fit its buffer) are counted, not learned;
 *   4. surrogate_train on a helper thread (a stop of the trainer never waits for it), with what is
 *      left of max_seconds (sampling may take at most half of it);
 *   5. surrogate_save, and model_store_finish with the bytes, the training's metrics and
 *      training = {"problems","samples","valid_fraction","seconds","draws","attempt",...}.
 * Sampling runs on the trainer thread and stops early when the trainer stops (the model is let
 * go for the next start) or when its share of max_seconds is spent (training goes on with what was
 * drawn, at least TRAINER_SURROGATE_MIN_SAMPLES). Every failure ends the model as 'failed' with a
 * reason: "target_unavailable", "kernel_changed", "toolchain_changed", "bad_hyper", "no_data",
 * "train_failed", "store_failed".
 *
 * Hyper-parameters (POST /v1/models checks them with trainer_surrogate_plan_parse; the trainer
 * parses them again and stores the values used, defaults filled):
 *   samples      valid (problem, mapping) samples  [60000]  100 .. 2000000
 *   problems     problems sampled                  [200]    2 .. 100000
 *   epochs                                         [40]     1 .. 1000
 *   hidden       hidden layer widths   [[256, 256, 128]]   1 .. 7 layers of 1 .. 1024
 *   batch                                          [128]    1 .. 65536
 *   lr           Adam's learning rate              [0.001]  (0, 1]
 *   seed         any integer >= 0  [derived from the model's id and version]
 *   max_seconds  sampling and training together    [600]    1 .. 86400 */
#ifndef KT_TRAINING_TRAINER_SURROGATE_H
#define KT_TRAINING_TRAINER_SURROGATE_H

#include <jansson.h>

#include "core/error.h"
#include "model/surrogate.h"

#define TRAINER_SURROGATE_ALGORITHM "mlp"
/* models.format_version of a surrogate's bytes (surrogate_save checks its own version inside). */
#define TRAINER_SURROGATE_FORMAT 1

#define TRAINER_SURROGATE_MIN_SAMPLES      100
#define TRAINER_SURROGATE_MAX_SAMPLES      2000000
#define TRAINER_SURROGATE_MAX_PROBLEMS     100000
#define TRAINER_SURROGATE_MAX_EPOCHS       1000
#define TRAINER_SURROGATE_MAX_WIDTH        1024
#define TRAINER_SURROGATE_MAX_LAYERS       (SURROGATE_MAX_HIDDEN - 1) /* surrogate_train's limit */
#define TRAINER_SURROGATE_MAX_SECONDS      86400
#define TRAINER_SURROGATE_TRIES_PER_SAMPLE 50 /* random draws per valid sample wanted, at most */

/* What one training does: the parsed hyper-parameters. has_seed 0: the trainer derives one. */
typedef struct trainer_surrogate_plan {
    long long samples;
    int problems;
    double max_seconds;
    int has_seed;
    surrogate_options train; /* hidden, n_hidden, epochs, batch, lr, seed; the rest defaults */
} trainer_surrogate_plan;

/* Parses and checks hyper (NULL or an object; unknown keys refused). 0, or -1 with err
 * (KT_ERR_WRONG_TYPE, KT_ERR_OUT_OF_RANGE, KT_ERR_BAD_OPTION for an unknown key, each naming the
 * key and its range). */
int trainer_surrogate_plan_parse(const json_t *hyper, trainer_surrogate_plan *out, kt_error *err);
/* The hyper-parameters of a plan, every key (the seed when has_seed). New reference. */
json_t *trainer_surrogate_plan_json(const trainer_surrogate_plan *p);

#endif
