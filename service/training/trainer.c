/* training/trainer — the model training thread: claims, trains on a helper thread, evaluates,
 * stores. See trainer.h. */
#include "training/trainer.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/strbuf.h"
#include "model/predictor.h"
#include "core/fault_log.h"
#include "training/trainer_internal.h"
#include "training/trainer_surrogate.h"

#define TRAINER_DEFAULT_TOP 8 /* the predictors' default "top" */

struct trainer {
    trainer_options opt;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    unsigned long gen; /* bumped by trainer_wake */
};

/* A task (trainer_internal.h) on its own thread. Shared by the trainer and the helper thread; the
 * last of the two to let go (refs) frees it, so a trainer that stops may abandon a training under
 * way. */
typedef struct train_job {
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    int refs, done;
    trainer_task task;
    void *result;
    double seconds; /* the task's own time (the testing hold not counted) */
    kt_error err;
} train_job;

static void train_job_unref(train_job *j)
{
    pthread_mutex_lock(&j->lock);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->lock);
    if (!last)
        return;
    if (j->result)
        j->task.free_result(j->result);
    j->task.free_arg(j->task.arg);
    pthread_cond_destroy(&j->done_cv);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

static void *train_main(void *arg)
{
    train_job *j = arg;
    kt_error err;
    kt_error_clear(&err);
    uint64_t t0 = kt_clock_ns();
    void *result = j->task.run(j->task.arg, &err);
    double seconds = (double)kt_clock_since_ns(t0) / 1e9;
    pthread_mutex_lock(&j->lock);
    j->result = result;
    j->seconds = seconds;
    j->err = err;
    j->done = 1;
    pthread_cond_broadcast(&j->done_cv);
    pthread_mutex_unlock(&j->lock);
    train_job_unref(j);
    return NULL;
}

int trainer_stopping(trainer *t)
{
    pthread_mutex_lock(&t->lock);
    int s = t->stopping;
    pthread_mutex_unlock(&t->lock);
    return s;
}

const trainer_options *trainer_opts(const trainer *t)
{
    return &t->opt;
}

void *trainer_run_on_helper(trainer *t, const trainer_task *task, int *abandoned, double *seconds,
                            kt_error *err)
{
    void *result = NULL;
    pthread_attr_t attr;
    pthread_t th;
    train_job *j = calloc(1, sizeof *j);
    *abandoned = 0;
    if (!j) {
        task->free_arg(task->arg);
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting a training");
        return NULL;
    }
    pthread_mutex_init(&j->lock, NULL);
    kt_clock_cond_init(&j->done_cv);
    j->refs = 2;
    j->task = *task;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&th, &attr, train_main, j) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        j->refs = 1;
        kt_error_set(err, KT_ERR_INTERNAL, "cannot start a training thread");
        goto out;
    }
    /* --model-train-delay-s (testing) holds a finished training as if it were still running. */
    uint64_t hold_until = kt_clock_ns() + (uint64_t)(t->opt.train_delay_s * 1e9);
    pthread_mutex_lock(&j->lock);
    while ((!j->done || kt_clock_ns() < hold_until) && !*abandoned) {
        /* Once done nothing signals: the wait is then a 100 ms sleep of the hold. */
        struct timespec deadline = kt_clock_deadline(j->done ? 100 : TRAINER_POLL_MS);
        pthread_cond_timedwait(&j->done_cv, &j->lock, &deadline);
        if (trainer_stopping(t))
            *abandoned = 1;
    }
    if (j->done && !*abandoned) {
        result = j->result;
        j->result = NULL;
        *seconds = j->seconds;
        if (!result)
            *err = j->err;
    }
    pthread_mutex_unlock(&j->lock);
out:
    train_job_unref(j);
    return result;
}

/* One predictor_train: the task's argument (owned by the task). */
typedef struct predictor_task {
    char *kind;
    training_set *ts;
    json_t *hyper;
    uint64_t seed;
} predictor_task;

static void *predictor_task_run(void *arg, kt_error *err)
{
    predictor_task *p = arg;
    return predictor_train(p->kind, p->ts, p->hyper, p->seed, err);
}

static void predictor_task_free(void *arg)
{
    predictor_task *p = arg;
    if (!p)
        return;
    training_set_free(p->ts);
    json_decref(p->hyper);
    free(p->kind);
    free(p);
}

static void predictor_result_free(void *result)
{
    predictor_free(result);
}

/* Trains on a helper thread (trainer_run_on_helper). Takes ts. */
static predictor *train_on_helper(trainer *t, const char *kind, training_set *ts,
                                  const json_t *hyper, uint64_t seed, int *abandoned,
                                  double *seconds, kt_error *err)
{
    predictor_task *p = calloc(1, sizeof *p);
    *abandoned = 0;
    if (!p || !(p->kind = strdup(kind))) {
        free(p);
        training_set_free(ts);
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting a training");
        return NULL;
    }
    p->ts = ts;
    p->hyper = hyper ? json_deep_copy(hyper) : NULL;
    p->seed = seed;
    trainer_task task = {.run = predictor_task_run,
                         .free_arg = predictor_task_free,
                         .free_result = predictor_result_free,
                         .arg = p};
    return trainer_run_on_helper(t, &task, abandoned, seconds, err);
}

void trainer_fail_model(trainer *t, const model_claim *m, const kt_error *why, const char *reason,
                        const json_t *training)
{
    kt_error err;
    kt_error_clear(&err);
    log_warn("model %lld (%s of %s on %s) failed: %s: %s", m->id, m->algorithm, m->kernel,
             m->device_class, reason, why->message);
    PGconn *c = db_acquire(t->opt.db, 10000, &err);
    if (!c || model_store_fail(c, t->opt.me, m->id, why, reason, training, &err) < 0)
        log_warn("model %lld: storing the failure failed: %s", m->id, err.message);
    if (c)
        db_release(t->opt.db, c);
}

/* "top" of the hyper when it is an integer in range, else the predictors' default (a bad value is
 * refused by predictor_train, with its message). */
static int hyper_top(const json_t *hyper)
{
    json_t *v = json_object_get(hyper, "top");
    json_int_t top = json_is_integer(v) ? json_integer_value(v) : TRAINER_DEFAULT_TOP;
    return top >= 1 && top <= MODEL_MAX_TOP ? (int)top : TRAINER_DEFAULT_TOP;
}

/* Reads the training data (one connection, released before training). */
static int read_data(trainer *t, const model_claim *m, model_training_data *data, kt_error *err)
{
    PGconn *c = db_acquire(t->opt.db, 10000, err);
    if (!c)
        return -1;
    int rc = model_store_training_data(c, m->kernel, m->device_class, m->kernel_hash, m->toolchain,
                                       hyper_top(m->hyper), MODEL_MAX_PROBLEMS, data, err);
    db_release(t->opt.db, c);
    return rc;
}

/* Evaluates p on test (NULL or empty: nothing held out) into metrics; NULL with err. */
static json_t *evaluate(predictor *p, const training_set *test, trainer_target *tt, kt_error *err)
{
    if (!test || training_set_num_problems(test) == 0)
        return json_pack("{s:i, s:[], s:s}", "problems", 0, "heldout", "note",
                         "too few problems to hold any out: not evaluated");
    return predictor_evaluate(p, test, trainer_space_for, tt, err);
}

static int store_model(trainer *t, const model_claim *m, predictor *p, json_t *metrics,
                       const json_t *training, kt_error *err)
{
    int rc = -1;
    PGconn *c = NULL;
    strbuf bytes;
    strbuf_init(&bytes, MODEL_MAX_BYTES);
    json_t *hyper = predictor_hyper_json(p);
    if (predictor_save(p, &bytes, err) < 0)
        goto out;
    c = db_acquire(t->opt.db, 10000, err);
    if (!c)
        goto out;
    rc = model_store_finish(c, t->opt.me, m->id, (const unsigned char *)strbuf_str(&bytes),
                            bytes.len, PREDICTOR_FORMAT_VERSION, metrics, training, hyper, err);
    if (rc == 0)
        log_info("model %lld ready: %s of %s on %s, version %d, %zu bytes", m->id, m->algorithm,
                 m->kernel, m->device_class, m->version, bytes.len);
out:
    if (c)
        db_release(t->opt.db, c);
    json_decref(hyper);
    strbuf_release(&bytes);
    return rc;
}

/* The model's target: from the catalog, or for an external key (issue 27) from the space stored
 * with its newest job. */
static int open_target(trainer *t, const model_claim *m, trainer_target *tt, const char **reason,
                       kt_error *err)
{
    if (strcmp(m->toolchain, CATALOG_EXTERNAL_TOOLCHAIN) != 0)
        return trainer_open_target(t->opt.cat, m, tt, reason, err);
    json_t *space = NULL, *problem = NULL;
    PGconn *c = db_acquire(t->opt.db, 10000, err);
    int found = c ? model_store_key_space(c, m->kernel, m->device_class, m->kernel_hash,
                                          m->toolchain, &space, &problem, err)
                  : -1;
    if (c)
        db_release(t->opt.db, c);
    int rc = found < 0 ? -1 : 0;
    if (found == 0) {
        *reason = "target_unavailable";
        rc =
            kt_error_set(err, KT_ERR_NOT_FOUND,
                         "no job of kernel %s on external, class %s, version %s has a stored space",
                         m->kernel, m->device_class, m->kernel_hash);
    }
    if (found == 1)
        rc = trainer_open_external(m, space, problem, tt, reason, err);
    json_decref(space);
    json_decref(problem);
    return rc;
}

/* Trains one claimed predictor to 'ready' or 'failed'. */
static void train_predictor(trainer *t, const model_claim *m)
{
    kt_error err;
    kt_error_clear(&err);
    trainer_target tt;
    model_training_data data = {0};
    training_set *ts = NULL, *train = NULL, *test = NULL;
    predictor *p = NULL;
    json_t *training = NULL, *metrics = NULL;
    const char *reason = "train_failed";
    int added = 0, abandoned = 0;
    log_info("model %lld: training %s of %s on %s (version %d, attempt %d, %s)", m->id,
             m->algorithm, m->kernel, m->device_class, m->version, m->attempts, m->reason);
    if (open_target(t, m, &tt, &reason, &err) < 0) {
        trainer_fail_model(t, m, &err, reason, NULL);
        return;
    }
    reason = "train_failed";
    if (!json_is_object(m->hyper)) {
        kt_error_set(&err, KT_ERR_BAD_OPTION, "model %lld: hyper is not a JSON object", m->id);
        kt_error_hint(&err, "hyper-parameters are an object such as {\"top\": 8}");
        goto fail;
    }
    if (read_data(t, m, &data, &err) < 0)
        goto fail;
    training = json_deep_copy(data.summary);
    ts = trainer_training_set(&tt, m, &data, &added, &err);
    if (!ts)
        goto fail;
    if (training_set_num_problems(ts) == 0 || added == 0) {
        reason = "no_data";
        kt_error_set(&err, KT_ERR_BAD_REQUEST,
                     "no ok trial of kernel %s on device class %s with kernel hash %s is stored",
                     m->kernel, m->device_class, m->kernel_hash);
        kt_error_hint(&err, "tune a few problems of the kernel on such a device first");
        goto fail;
    }
    uint64_t seed = (uint64_t)m->id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)m->version;
    if (training_set_split(ts, TRAINER_TEST_FRACTION, seed, &train, &test, &err) < 0)
        goto fail;
    int n_train = training_set_num_problems(train), n_test = training_set_num_problems(test);
    json_object_set_new(training, "train_problems", json_integer(n_train));
    json_object_set_new(training, "test_problems", json_integer(n_test));
    json_object_set_new(training, "attempt", json_integer(m->attempts));
    /* The problems it learns from, for each prediction's distance to the nearest of them (issue
     * 31; training/model_confidence.h). At most the training data's problems (10,000). */
    json_t *trained_on = json_array();
    for (int i = 0; trained_on && i < n_train; i++)
        json_array_append(trained_on, (json_t *)training_set_problem(train, i));
    json_object_set_new(training, "trained_on", trained_on);
    double train_s = 0;
    p = train_on_helper(t, m->algorithm, train, m->hyper, seed, &abandoned, &train_s, &err);
    train = NULL; /* taken by train_on_helper */
    if (abandoned) {
        log_info("model %lld: training abandoned (stopping); the next trainer starts it again",
                 m->id);
        goto out;
    }
    if (!p)
        goto fail;
    uint64_t t1 = kt_clock_ns();
    metrics = evaluate(p, test, &tt, &err);
    if (!metrics) {
        reason = "evaluate_failed";
        goto fail;
    }
    json_object_set_new(metrics, "train_seconds", json_real(train_s));
    json_object_set_new(metrics, "evaluate_seconds",
                        json_real((double)kt_clock_since_ns(t1) / 1e9));
    if (store_model(t, m, p, metrics, training, &err) == 0)
        goto out;
    reason = err.code == KT_ERR_CONFLICT ? NULL : "store_failed";
    if (!reason) {
        log_warn("model %lld: %s", m->id, err.message); /* not ours any more: leave it be */
        goto out;
    }
fail:
    trainer_fail_model(t, m, &err, reason, training);
out:
    json_decref(metrics);
    predictor_free(p);
    training_set_free(train);
    training_set_free(test);
    training_set_free(ts);
    json_decref(training);
    model_training_data_release(&data);
    trainer_target_release(&tt);
}

/* Trains one claimed model of any kind to 'ready' or 'failed'. */
static void train_one(trainer *t, const model_claim *m)
{
    if (strcmp(m->kind, MODEL_KIND_SURROGATE) == 0) {
        trainer_surrogate_train(t, m);
        return;
    }
    if (strcmp(m->kind, MODEL_KIND_PREDICTOR) == 0) {
        train_predictor(t, m);
        return;
    }
    kt_error err;
    kt_error_set(&err, KT_ERR_BAD_REQUEST, "model %lld is of kind '%s', which nothing trains",
                 m->id, m->kind);
    kt_error_hint(&err, "kinds: predictor, surrogate (POST /v1/models)");
    trainer_fail_model(t, m, &err, "unknown_kind", NULL);
}

/* Frees the models of dead processes, claims one and trains it; 1 when one was trained. */
static int claim_and_train(trainer *t, PGconn **c, fault_log *db_log)
{
    kt_error err;
    kt_error_clear(&err);
    model_claim m;
    int freed = model_store_release_dead(*c, t->opt.me, t->opt.stale_s, &err);
    if (freed > 0)
        log_info("recovered %d models from trainers that are gone", freed);
    int got = freed < 0 ? -1
                        : model_store_claim_served(*c, t->opt.me, t->opt.stale_s, t->opt.classes,
                                                   &m, &err);
    if (got < 0)
        fault_log_fail(db_log, "trainer: claiming models", err.message);
    else
        fault_log_ok(db_log, "trainer");
    if (got <= 0)
        return 0;
    /* No connection is held while training. */
    db_release(t->opt.db, *c);
    *c = NULL;
    train_one(t, &m);
    model_claim_release(&m);
    return 1;
}

static void *trainer_main(void *arg)
{
    trainer *t = arg;
    unsigned long seen = 0;
    long long last_retrain = 0;
    fault_log db_log = {0}; /* the database away: one line per outage, not one per poll */
    int lost_claim = 0; /* a model may be claimed in my name that nothing trains (a lost reply) */
    while (!trainer_stopping(t)) {
        kt_error err;
        kt_error_clear(&err);
        PGconn *c = db_acquire(t->opt.db, 5000, &err);
        int trained = 0;
        if (!c) {
            fault_log_fail(&db_log, "trainer", err.message);
        } else {
            long long now = (long long)(kt_clock_ns() / 1000000u);
            if (t->opt.retrain_after > 0 && now - last_retrain >= TRAINER_RETRAIN_CHECK_MS) {
                last_retrain = now;
                int queued = model_store_queue_retrains(c, t->opt.retrain_after, &err);
                if (queued < 0)
                    log_warn("trainer: retrain check failed: %s", err.message);
                else if (queued > 0)
                    log_info("trainer: %d models queued for retraining", queued);
            }
            /* Nothing trains now: a model still claimed in my name is one whose claim's reply
             * was lost; let it go for the next claim. */
            if (lost_claim && model_store_release_mine(c, t->opt.me, &err) >= 0)
                lost_claim = 0;
            trained = lost_claim ? 0 : claim_and_train(t, &c, &db_log);
            if (c && PQstatus(c) != CONNECTION_OK)
                lost_claim = 1;
            if (c)
                db_release(t->opt.db, c);
        }
        if (trained) {
            /* Its result or failure may not have been stored (the database away): then the model
             * is still claimed in my name, and is let go before the next claim. */
            lost_claim = 1;
            continue; /* another one may be waiting */
        }
        pthread_mutex_lock(&t->lock);
        struct timespec deadline = kt_clock_deadline(TRAINER_POLL_MS);
        while (t->gen == seen && !t->stopping) {
            if (pthread_cond_timedwait(&t->wake, &t->lock, &deadline) == ETIMEDOUT)
                break;
        }
        seen = t->gen;
        pthread_mutex_unlock(&t->lock);
    }
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(t->opt.db, 5000, &err);
    if (!c || model_store_release_mine(c, t->opt.me, &err) < 0)
        log_warn("trainer: letting go of models failed: %s", err.message);
    if (c)
        db_release(t->opt.db, c);
    return NULL;
}

trainer *trainer_start(const trainer_options *opt, kt_error *err)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting the trainer");
        return NULL;
    }
    t->opt = *opt;
    pthread_mutex_init(&t->lock, NULL);
    kt_clock_cond_init(&t->wake);
    if (pthread_create(&t->thread, NULL, trainer_main, t) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "cannot start the model trainer thread");
        trainer_stop(t);
        return NULL;
    }
    t->started = 1;
    return t;
}

void trainer_wake(trainer *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->gen++;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
}

void trainer_stop(trainer *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopping = 1;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    if (t->started)
        pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
