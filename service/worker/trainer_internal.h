/* worker/trainer_internal — the trainer's helpers for one model (trainer_data.c): the device and
 * default target of the model's key, the training set built from the stored rows, and the held-out
 * spaces for predictor_evaluate. Internal to worker/. */
#ifndef KT_WORKER_TRAINER_INTERNAL_H
#define KT_WORKER_TRAINER_INTERNAL_H

#include <stdlib.h>

#include "catalog/catalog.h"
#include "model/training_set.h"
#include "store/model_store.h"
#include "worker/trainer.h"

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
void trainer_target_release(trainer_target *t);
/* A training set of t's parameters holding data's rows (rows the set refuses are skipped and
 * logged); *added: trials added. NULL with err. */
training_set *trainer_training_set(const trainer_target *t, const model_claim *m,
                                   const model_training_data *data, int *added, kt_error *err);
/* predictor_space_fn over a trainer_target (ctx): the problem's space on t's device; a problem the
 * catalog refuses is skipped (NULL, err untouched). */
const space *trainer_space_for(void *ctx, const json_t *problem, kt_error *err);

#endif
