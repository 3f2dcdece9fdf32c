#include "core/device_name.h"
#include "worker/worker_internal.h"
#include "worker/validator.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/clock.h"

unsigned long worker_wait(worker_system *w, const unsigned long *gen, unsigned long seen,
                          int timeout_ms)
{
    struct timespec deadline = kt_clock_deadline(timeout_ms);
    pthread_mutex_lock(&w->lock);
    while (*gen == seen && !w->stopping) {
        if (pthread_cond_timedwait(&w->wake, &w->lock, &deadline) == ETIMEDOUT)
            break;
    }
    unsigned long now = *gen;
    pthread_mutex_unlock(&w->lock);
    return now;
}

void worker_bump(worker_system *w, unsigned long *gen)
{
    pthread_mutex_lock(&w->lock);
    (*gen)++;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void worker_bump_job(worker_system *w, long long job_id, int measured)
{
    pthread_mutex_lock(&w->lock);
    if (measured)
        w->queued_gen++;
    w->job_gen[(unsigned long long)job_id % WORKER_JOB_SLOTS]++;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void worker_job_stepped(worker_system *w, long long job_id)
{
    size_t slot = (unsigned long long)job_id % WORKER_JOB_SLOTS;
    pthread_mutex_lock(&w->lock);
    if (w->job_busy[slot]) {
        w->job_busy[slot] = 0;
        pthread_cond_broadcast(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

void worker_system_wait_stepped(worker_system *w, long long job_id, int timeout_ms)
{
    if (!w)
        return;
    size_t slot = (unsigned long long)job_id % WORKER_JOB_SLOTS;
    struct timespec deadline = kt_clock_deadline(timeout_ms);
    pthread_mutex_lock(&w->lock);
    while (w->job_busy[slot] && !w->stopping) {
        if (pthread_cond_timedwait(&w->wake, &w->lock, &deadline) == ETIMEDOUT) {
            w->job_busy[slot] = 0; /* not stepped here (another process drives it): look anyway */
            break;
        }
    }
    pthread_mutex_unlock(&w->lock);
}

int worker_system_job_stepping(worker_system *w, long long job_id)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    int busy = w->job_busy[(unsigned long long)job_id % WORKER_JOB_SLOTS] && !w->stopping;
    pthread_mutex_unlock(&w->lock);
    return busy;
}

void worker_system_job_told(worker_system *w, long long job_id)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->job_busy[(unsigned long long)job_id % WORKER_JOB_SLOTS] = 1;
    int known = 0;
    for (int i = 0; i < w->n_told && !known; i++)
        known = w->told[i] == job_id;
    if (!known && w->n_told < WORKER_TOLD_MAX)
        w->told[w->n_told++] = job_id;
    else if (!known)
        w->told_overflow = 1;
    w->told_gen++;
    w->runner_gen++;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

unsigned long worker_system_job_gen(worker_system *w, long long job_id)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    unsigned long g = w->job_gen[(unsigned long long)job_id % WORKER_JOB_SLOTS];
    pthread_mutex_unlock(&w->lock);
    return g;
}

unsigned long worker_system_wait_job(worker_system *w, long long job_id, unsigned long seen,
                                     int timeout_ms)
{
    if (!w) {
        struct timespec ts = {.tv_sec = timeout_ms / 1000,
                              .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return seen;
    }
    return worker_wait(w, &w->job_gen[(unsigned long long)job_id % WORKER_JOB_SLOTS], seen,
                       timeout_ms);
}

int worker_stopping(worker_system *w)
{
    pthread_mutex_lock(&w->lock);
    int s = w->stopping;
    pthread_mutex_unlock(&w->lock);
    return s;
}

int worker_stale_s(const worker_options *opt)
{
    double l = opt->lease_s > 0 ? opt->lease_s : WORKER_LEASE_DEFAULT_S;
    return l < 1 ? 1 : (int)ceil(l);
}

static int collect_devices(worker_system *w, kt_error *err)
{
    json_t *devs = catalog_devices_json(w->opt.cat);
    size_t n = json_array_size(devs);
    w->devices = calloc(n > 0 ? n : 1, sizeof *w->devices);
    w->classes = calloc(n > 0 ? n : 1, sizeof *w->classes);
    w->toolchains = calloc(n > 0 ? n : 1, sizeof *w->toolchains);
    w->kinds = calloc(n > 0 ? n : 1, sizeof *w->kinds);
    if (!w->devices || !w->classes || !w->toolchains || !w->kinds) {
        json_decref(devs);
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory listing devices");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(devs, i);
        /* Only devices this host can measure on are served by its workers. */
        if (json_is_false(json_object_get(d, "available")))
            continue;
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *klass = json_string_value(json_object_get(d, "class"));
        const char *tool = json_string_value(json_object_get(d, "toolchain"));
        if (!name || !klass)
            continue;
        w->classes[w->n_devices] = strdup(klass);
        w->toolchains[w->n_devices] = strdup(tool ? tool : "");
        w->kinds[w->n_devices] = kt_device_kind_of(name); /* the name parsed once, here */
        w->devices[w->n_devices++] = strdup(name);
    }
    json_decref(devs);
    json_t *arr = json_array();
    for (int i = 0; arr && i < w->n_devices; i++)
        json_array_append_new(arr, json_string(w->classes[i]));
    w->classes_json = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!w->classes_json)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory listing devices");
    return 0;
}

worker_system *worker_system_start(const worker_options *opt, kt_error *err)
{
    worker_system *w = calloc(1, sizeof *w);
    if (!w) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting workers");
        return NULL;
    }
    w->opt = *opt;
    pthread_mutex_init(&w->lock, NULL);
    kt_clock_cond_init(&w->wake); /* worker_wait's deadlines are monotonic */
    if (gethostname(w->host, sizeof w->host) != 0)
        snprintf(w->host, sizeof w->host, "localhost");
    w->host[sizeof w->host - 1] = '\0';
    w->pid = (int)getpid();
    struct timespec ts = kt_clock_wall();
    snprintf(w->id, sizeof w->id, "%s:%d:%lld", w->host, w->pid,
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    w->me.id = w->id;
    w->me.host = w->host;
    w->me.pid = w->pid;
    if (collect_devices(w, err) < 0)
        goto fail;
    w->measurer_threads = calloc((size_t)opt->measurers, sizeof *w->measurer_threads);
    w->measurer_args = calloc((size_t)opt->measurers, sizeof *w->measurer_args);
    /* Drivers hold one entry each, measuring threads one at a time: the rest is room for the
     * targets of jobs driven by other processes. */
    w->targets = target_cache_new(opt->cat, opt->max_jobs + opt->measurers + TARGET_CACHE_SPARE);
    if (!w->measurer_threads || !w->measurer_args || !w->targets) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting workers");
        goto fail;
    }
    if (pthread_create(&w->runner_thread, NULL, runner_main, w) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "cannot start the job runner thread");
        goto fail;
    }
    w->runner_started = 1;
    trainer_options topt = {.db = opt->db,
                            .cat = opt->cat,
                            .me = &w->me,
                            .retrain_after = opt->model_retrain_after,
                            .train_delay_s = opt->model_train_delay_s,
                            .stale_s = worker_stale_s(opt),
                            .classes = w->classes_json};
    w->trainer = trainer_start(&topt, err);
    if (!w->trainer)
        goto fail;
    int real = 0;
    for (int i = 0; i < w->n_devices; i++)
        real |= w->kinds[i] == KT_DEVICE_CPU || w->kinds[i] == KT_DEVICE_CUDA;
    if (real) {
        if (pthread_create(&w->validator_thread, NULL, validator_main, w) != 0) {
            kt_error_set(err, KT_ERR_INTERNAL, "cannot start the kernel validator thread");
            goto fail;
        }
        w->validator_started = 1;
    }
    for (int i = 0; i < opt->measurers; i++) {
        w->measurer_args[i].w = w;
        w->measurer_args[i].index = i;
        if (pthread_create(&w->measurer_threads[i], NULL, measurer_main, &w->measurer_args[i]) !=
            0) {
            kt_error_set(err, KT_ERR_INTERNAL, "cannot start measurement thread %d", i);
            goto fail;
        }
        w->n_measurers_started++;
    }
    log_info("workers started: runner %s, %d measurement threads, %d devices", w->id,
             opt->measurers, w->n_devices);
    return w;
fail:
    worker_system_stop(w);
    return NULL;
}

void worker_system_wake(worker_system *w)
{
    if (w)
        worker_bump(w, &w->runner_gen);
}

void worker_system_wake_trainer(worker_system *w)
{
    if (w)
        trainer_wake(w->trainer);
}

void worker_system_stats(worker_system *w, worker_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    *out = w->stats;
    pthread_mutex_unlock(&w->lock);
    out->targets_cached = w->targets ? target_cache_entries(w->targets) : 0;
}

void worker_system_stop(worker_system *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    trainer_stop(w->trainer); /* a training under way is abandoned, its model let go */
    for (int i = 0; i < w->n_measurers_started; i++)
        pthread_join(w->measurer_threads[i], NULL);
    if (w->runner_started)
        pthread_join(w->runner_thread, NULL);
    if (w->validator_started)
        pthread_join(w->validator_thread, NULL);
    for (int i = 0; i < w->n_devices; i++) {
        free(w->devices[i]);
        free(w->classes[i]);
        free(w->toolchains[i]);
    }
    free(w->devices);
    free(w->classes);
    free(w->toolchains);
    free(w->kinds);
    free(w->classes_json);
    free(w->measurer_threads);
    free(w->measurer_args);
    target_cache_free(w->targets); /* after the threads: no user is left */
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
