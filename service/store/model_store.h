/* store/model_store — the models table (sql/005): learned models kept as data. The API queues a
 * model (model_store_create) and reads models as JSON (get, list; never the bytes); a trainer
 * thread of any ktuned claims a queued model, reads its training data, and finishes or fails it;
 * the model cache reads the newest ready model of a key with its bytes (model_store_latest_ready).
 *
 * A model's key is (kind, kernel, device_class, kernel_hash, toolchain); its version counts per
 * key. At most one model of a key is 'training' at a time. Claiming follows the jobs' rule: a
 * 'training' model with no runner, or whose runner's heartbeat is older than stale_s, or whose
 * runner was a process on this host that is gone (model_store_release_dead), is claimed with
 * attempts + 1; one claimed MODEL_MAX_ATTEMPTS times already becomes 'failed' instead.
 *
 * Trainer call order: model_store_release_dead -> model_store_claim -> model_store_training_data
 * -> (model_store_heartbeat while training) -> model_store_finish | model_store_fail; on a clean
 * shutdown model_store_release_mine. model_store_queue_retrains runs now and then.
 *
 * Every function takes a connection the caller acquired and returns -1 / NULL with err set on
 * failure. JSON results are new references; structs own their fields (their _release frees them).
 * The toolchain is a plain string ('' when the key has none). */
#ifndef KT_STORE_MODEL_STORE_H
#define KT_STORE_MODEL_STORE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "core/error.h"
#include "store/job_store.h"

/* The kinds of a models row (its kind column): a predictor of best configurations
 * (model/predictor.h) or Mind Mappings' surrogate (model/surrogate.h). */
#define MODEL_KIND_PREDICTOR "predictor"
#define MODEL_KIND_SURROGATE "surrogate"
/* A model claimed this many times without finishing is failed by the next claim. */
#define MODEL_MAX_ATTEMPTS 3
/* Serialised models larger than this are refused (model_store_finish). */
#define MODEL_MAX_BYTES (64u << 20)
/* model_store_training_data: bounds on what one training reads. */
#define MODEL_MAX_PROBLEMS 10000
#define MODEL_MAX_TOP      100

/* A model's key and algorithm; strings borrowed. */
typedef struct model_key {
    const char *kind, *algorithm, *kernel, *device_class, *kernel_hash, *toolchain;
} model_key;

/* Queues a model (status 'training', no runner); version = 1 + the highest of that key. hyper may
 * be NULL ({}), reason 'requested' or 'retrain'. KT_ERR_CONFLICT (409) when one of the key is
 * already training (its id in the message). */
int model_store_create(PGconn *c, const model_key *k, const json_t *hyper, const char *reason,
                       long long *id_out, kt_error *err);
/* {"id","kind","algorithm","kernel","device_class","kernel_hash","toolchain","version","status",
 *  "training","hyper","metrics","error","size_bytes","format_version","reason","attempts",
 *  "created_at","started_at","finished_at"} (never the bytes); KT_ERR_NOT_FOUND. A jsonb column
 *  this service cannot read back (a number beyond 64 bits, such as a hyper of 1e300 stored before
 *  POST /v1/models checked it) is null, and "unreadable" lists such columns: the row is still
 *  served (and can be deleted). */
json_t *model_store_get_json(PGconn *c, long long id, kt_error *err);
/* {"models":[...]} newest first, at most limit (1..1000); filters may be NULL. Each row as
 * model_store_get_json, less training.trained_on (issue 31: thousands of problems per model): one
 * unreadable row never fails the list. */
json_t *model_store_list_json(PGconn *c, const char *kernel, const char *device_class,
                              const char *status, int limit, kt_error *err);

/* What model_store_delete removed. */
typedef struct model_deleted {
    char status[16];         /* the status it had: training, ready, failed or superseded */
    char kind[16];           /* predictor or surrogate */
    long long jobs_unlinked; /* ended jobs that had recorded it as their surrogate */
} model_deleted;
/* Deletes model id in one transaction, whatever its status (DELETE /v1/models/{id}):
 * - training (queued, or being trained): the row goes; a trainer training it finds it gone when it
 *   stores its result (model_store_finish: KT_ERR_CONFLICT, the result dropped);
 * - ready: predictions and warm starts of its key stop using it at once (the newest *ready* model
 *   is asked each time; superseded versions stay superseded), and the models trigger of sql/007
 *   tells every process's /v1/best cache;
 * - a surrogate recorded by a queued or running job (jobs.surrogate_model_id): KT_ERR_CONFLICT
 *   naming the job (its resume replays through that model); recorded only by ended jobs: their
 *   reference is cleared (jobs_unlinked).
 * KT_ERR_NOT_FOUND when there is no such model. */
int model_store_delete(PGconn *c, long long id, model_deleted *out, kt_error *err);

/* The newest 'ready' model of kind (e.g. "predictor") for (kernel, device_class, kernel_hash,
 * toolchain): 1 found (id, algorithm, version; bytes when want_bytes: malloc'd, caller frees, or
 * model_ready_release), 0 none (out zeroed). */
typedef struct model_ready {
    long long id;
    char algorithm[32];
    int version;
    unsigned char *bytes;
    size_t len;
} model_ready;
int model_store_latest_ready(PGconn *c, const char *kind, const char *kernel,
                             const char *device_class, const char *kernel_hash,
                             const char *toolchain, int want_bytes, model_ready *out,
                             kt_error *err);
void model_ready_release(model_ready *r);

/* The model of kind a job searches through (jobs.surrogate_model_id, sql/013): the one recorded
 * with job_id when there is one, else the newest ready model of kind for the key (kernel,
 * device_class, kernel_hash, toolchain), recorded now in the same statement, so that every later
 * call (a resume by replay) gets the same model even after a newer one superseded it. 1 found
 * (out filled, bytes included), 0 none ready and none recorded (out zeroed). KT_ERR_INTERNAL when
 * the recorded model has no bytes. */
int model_store_job_model(PGconn *c, long long job_id, const char *kind, const char *kernel,
                          const char *device_class, const char *kernel_hash, const char *toolchain,
                          model_ready *out, kt_error *err);

/* --- trainer side ------------------------------------------------------------------------------
 */

/* A claimed model: what to train. Owned (model_claim_release). */
typedef struct model_claim {
    long long id;
    int version;
    int attempts; /* including this one */
    char *kind, *algorithm, *kernel, *device_class, *kernel_hash, *toolchain, *reason;
    json_t
        *hyper; /* as stored (an object unless the row was written by hand); NULL if unparsable */
} model_claim;
void model_claim_release(model_claim *m);

/* Claims the oldest claimable 'training' model for me (see the top of this file): 1 claimed (out
 * filled), 0 none. Models past MODEL_MAX_ATTEMPTS met on the way are failed with
 * {"code":"internal","reason":"attempts",...}. */
int model_store_claim(PGconn *c, const runner_identity *me, int stale_s, model_claim *out,
                      kt_error *err);
/* The same for a process serving the device classes of classes (a JSON array text; NULL: any):
 * a model of another class that a live process of the fleet serves (fleet_devices, sql/009) is
 * left to it; one of a class nobody serves is claimed (and fails as target_unavailable). */
int model_store_claim_served(PGconn *c, const runner_identity *me, int stale_s, const char *classes,
                             model_claim *out, kt_error *err);
/* Heartbeat of every model I train. */
int model_store_heartbeat(PGconn *c, const runner_identity *me, kt_error *err);
/* Frees 'training' models whose runner is gone: stale heartbeat (older than stale_s), or a runner
 * of this host whose pid is not alive (or is mine under another id: a previous incarnation).
 * Returns how many were freed. */
int model_store_release_dead(PGconn *c, const runner_identity *me, int stale_s, kt_error *err);
/* Lets go of the models I train (clean shutdown; the attempt is not counted). */
int model_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err);

/* One training example: an ok trial of the key, its problem (the job's canonical problem) and
 * configuration ({"param": value}). Only trials that count as measurements are read: a tuning
 * job's or a trusted import's, never an untrusted import's (STORE_MEASURED_JOB, issue 26); the
 * same holds for model_store_new_trials and model_store_queue_retrains. */
typedef struct model_trial_row {
    long long trial_id;
    json_t *problem, *config; /* owned */
    double time_ms;
} model_trial_row;
/* The training data of a key: per problem its `top` fastest ok trials (one per configuration),
 * fastest first, of at most max_problems problems (the most recently measured ones), among ok
 * trials with id <= summary.max_trial_id. summary: {"problems","trials","ok_trials","max_trial_id",
 * "from","to"} (what was read; from/to: the oldest and newest finish time of the rows). Owned
 * (model_training_data_release). */
typedef struct model_training_data {
    model_trial_row *rows;
    int n;
    json_t *summary;
} model_training_data;
int model_store_training_data(PGconn *c, const char *kernel, const char *device_class,
                              const char *kernel_hash, const char *toolchain, int top,
                              int max_problems, model_training_data *out, kt_error *err);
void model_training_data_release(model_training_data *d);
/* The space stored with the newest job of an external key (issue 27: jobs.space, sql/016) and that
 * job's problem, new references: what the trainer builds an external kernel's space from. 1 found,
 * 0 no job of the key has a space, -1 err. */
/* The kernel_hash of the newest job of (kernel, device_class, toolchain "external") that has a
 * stored space (POST /v1/models on an external key without kernel_version). 1 with out filled, 0
 * none, -1 err. */
int model_store_newest_external_version(PGconn *c, const char *kernel, const char *device_class,
                                        char *out, size_t cap, kt_error *err);
int model_store_key_space(PGconn *c, const char *kernel, const char *device_class,
                          const char *kernel_hash, const char *toolchain, json_t **space,
                          json_t **problem, kt_error *err);

/* Finishes model id trained by me: bytes + format_version + metrics + training summary + the hyper
 * actually used, status 'ready', and the older ready models of the same key and kind
 * 'superseded', in one transaction. KT_ERR_CONFLICT when the model is no longer mine (reclaimed
 * after my heartbeat went stale), KT_ERR_OUT_OF_RANGE when len > MODEL_MAX_BYTES. */
int model_store_finish(PGconn *c, const runner_identity *me, long long id,
                       const unsigned char *bytes, size_t len, int format_version,
                       const json_t *metrics, const json_t *training, const json_t *hyper,
                       kt_error *err);
/* Fails model id trained by me: status 'failed', error = {"code","message","hint","reason"}
 * (reason: a word such as "kernel_changed", "no_data", "train_failed"). training may be NULL. */
int model_store_fail(PGconn *c, const runner_identity *me, long long id, const kt_error *why,
                     const char *reason, const json_t *training, kt_error *err);

/* The number of ok trials of the key (kernel, device_class, kernel_hash, toolchain) with an id
 * above the newest ready model's training.max_trial_id (every ok trial when there is none). */
long long model_store_new_trials(PGconn *c, const char *kind, const char *kernel,
                                 const char *device_class, const char *kernel_hash,
                                 const char *toolchain, kt_error *err);
/* Queues a retrain (reason 'retrain', the newest ready model's algorithm and hyper) for every key
 * whose newest ready model has at least threshold new ok trials (as model_store_new_trials counts),
 * unless a model of the key is training or a retrain queued after that ready model failed (no
 * retrain loop: the next one waits for a requested model to be ready). Returns how many were
 * queued. */
int model_store_queue_retrains(PGconn *c, long long threshold, kt_error *err);

#endif
