/* training/trainer — the thread of a ktuned that trains models (store/model_store.h) in the
 * background. Any ktuned sharing the database may train any queued model: models are claimed like
 * jobs (FOR UPDATE SKIP LOCKED, runner = this process's runner id, heartbeats by the runner thread,
 * the reaper's staleness limit, the lease --lease-s (trainer_options.stale_s),
 * a model whose process died is claimed again with attempts + 1, at most MODEL_MAX_ATTEMPTS).
 *
 * Training one model (trainer.c):
 *   1. the catalog must still offer the model's kernel on a device of its class with the same
 *      kernel hash and toolchain, else the model fails as "kernel_changed" / "toolchain_changed"
 *      (or "target_unavailable");
 *   2. model_store_training_data: per problem the `top` (hyper "top", [8]) fastest ok trials;
 *   3. a training_set of the kernel's parameters, split by problem (a held-out quarter);
 *   4. predictor_train(algorithm, train quarters, hyper, seed) on a helper thread, so that a stop
 *      never waits for a long training (an abandoned training finishes and frees itself);
 *   5. predictor_evaluate on the held-out quarter (spaces from catalog_resolve on that device);
 *   6. predictor_save and model_store_finish (bytes, metrics, training summary; older ready models
 *      of the key superseded, one transaction).
 * Every failure ends the model as 'failed' with an error JSON (code, message, hint, reason), never
 * the process.
 *
 * Testing: --model-train-delay-s S holds each training S seconds at least before the model is
 * stored (claimed, heart-beating, no bytes: as a long training looks), so that a kill or a stop
 * during training can be exercised whatever the predictor's speed. 0 (the default) in production.
 *
 * Retrain: every TRAINER_RETRAIN_CHECK_MS, when retrain_after > 0, model_store_queue_retrains
 * queues a new version (reason 'retrain') for keys whose newest ready model has retrain_after new
 * ok trials.
 *
 * Lifecycle: trainer_start -> trainer_wake* -> trainer_stop (joins; a training under way is
 * abandoned and its model let go with model_store_release_mine, for the next start to train). The
 * pool, catalog and identity are borrowed and must outlive the trainer. */
#ifndef KT_TRAINING_TRAINER_H
#define KT_TRAINING_TRAINER_H

#include "catalog/catalog.h"
#include "core/error.h"
#include "store/db.h"
#include "store/job_store.h"

#define TRAINER_POLL_MS          1000 /* a claim attempt at least this often */
#define TRAINER_RETRAIN_CHECK_MS 5000
#define TRAINER_TEST_FRACTION    0.25

typedef struct trainer trainer;

typedef struct trainer_options {
    db_pool *db;
    const catalog *cat;
    const runner_identity *me;
    long long retrain_after; /* --model-retrain-after: new ok trials of a key; 0 = off */
    double train_delay_s;    /* --model-train-delay-s (testing): a training is held this long */
    int stale_s;             /* the lease (--lease-s) in seconds: the reaper's limit */
    const char *classes;     /* JSON array text of the classes this process serves (borrowed; NULL:
                              * any): models of classes others serve are left to them */
} trainer_options;

trainer *trainer_start(const trainer_options *opt, kt_error *err);
/* A model was queued: claim now rather than at the next poll. */
void trainer_wake(trainer *t);
void trainer_stop(trainer *t);

#endif
