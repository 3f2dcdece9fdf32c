/* training/trainer_internal — the trainer's helpers for one model (trainer_data.c): the device and
 * default target of the model's key, the training set built from the stored rows, and the held-out
 * spaces for predictor_evaluate. Internal to worker/. */
#ifndef KT_TRAINING_TRAINER_INTERNAL_H
#define KT_TRAINING_TRAINER_INTERNAL_H

#include <stdlib.h>

#include "catalog/catalog.h"
#include "model/training_set.h"
#include "store/model_store.h"
#include "training/trainer.h"

/* The model's kernel on a device of its class: the default problem's target (its space gives the
 * parameters) and the targets resolved for held-out problems (kept until release, as
 * predictor_evaluate may hold a space while it scores). Owned (trainer_target_release). */
typedef struct trainer_target {
    const catalog *cat;
    char device[256];
    target def;
    target *held;
    int n_held;
} trainer_target;

/* 0, or -1 with err and *reason "target_unavailable" (no device of the class offers the kernel
 * here), "kernel_changed" (the catalog's kernel hash differs from the model's) or
 * "toolchain_changed" (the device's toolchain differs from the model's). */
int trainer_open_target(const catalog *cat, const model_claim *m, trainer_target *out,
                        const char **reason, kt_error *err);
/* The same for a model of an external key (issue 27; toolchain "external"): the space stored with
 * the key's newest job and that job's problem (model_store_key_space); held-out problems are then
 * built from that space. -1 with *reason "target_unavailable" when it does not build. */
int trainer_open_external(const model_claim *m, const json_t *space, const json_t *problem,
                          trainer_target *out, const char **reason, kt_error *err);
void trainer_target_release(trainer_target *t);
/* A training set of t's parameters holding data's rows (rows the set refuses are skipped and
 * logged); *added: trials added. NULL with err. */
training_set *trainer_training_set(const trainer_target *t, const model_claim *m,
                                   const model_training_data *data, int *added, kt_error *err);
/* predictor_space_fn over a trainer_target (ctx): the problem's space on t's device; a problem the
 * catalog refuses is skipped (NULL, err untouched). */
const space *trainer_space_for(void *ctx, const json_t *problem, kt_error *err);

/* --- shared by trainer.c and trainer_surrogate.c -------------------------------------------- */

const trainer_options *trainer_opts(const trainer *t);
/* 1 once trainer_stop was called: a training under way lets go of its model. */
int trainer_stopping(trainer *t);
/* Ends the model as failed (logged) with why and reason; training (may be NULL) is stored with
 * it. The store call's own failure is only logged. */
void trainer_fail_model(trainer *t, const model_claim *m, const kt_error *why, const char *reason,
                        const json_t *training);

/* Work for a helper thread: run(arg, err) gives the result, or NULL with err. arg is freed with
 * free_arg, and a result nobody took with free_result, by whichever thread lets go last. */
typedef struct trainer_task {
    void *(*run)(void *arg, kt_error *err);
    void (*free_arg)(void *arg);
    void (*free_result)(void *result);
    void *arg;
} trainer_task;
/* Runs task on a helper thread and waits for it, checking for a stop each second (and holding a
 * finished one --model-train-delay-s, testing). Returns the result (the caller's), NULL with err
 * when the task failed, or NULL with *abandoned when the trainer is stopping (the helper finishes
 * alone and frees what it holds). *seconds: the task's own time. Takes task->arg. */
void *trainer_run_on_helper(trainer *t, const trainer_task *task, int *abandoned, double *seconds,
                            kt_error *err);

/* Trains a claimed model of kind "surrogate" to 'ready' or 'failed' (trainer_surrogate.c; see
 * training/trainer_surrogate.h). */
void trainer_surrogate_train(trainer *t, const model_claim *m);

#endif
