/* A measurement thread: claims pending trials of this process's devices, measures each with the
 * backend of its device and stores the result. Backends are opened per thread; targets come from
 * the process's target cache (target_cache.h), shared with the job runner.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "measure/backend.h"
#include "store/trial_store.h"
#include "store/worker_store.h"
#include "worker/worker_internal.h"

#define MEASURER_IDLE_MS 200

typedef struct measurer {
    worker_system *w;
    char id[448];
    backend **backends; /* one per device of w, opened on first use */
    long long trials_done;
} measurer;

static backend *backend_for(measurer *m, const char *device, kt_error *err)
{
    for (int i = 0; i < m->w->n_devices; i++) {
        if (strcmp(m->w->devices[i], device) != 0)
            continue;
        if (!m->backends[i])
            m->backends[i] = backend_open(m->w->opt.cat, device, err);
        return m->backends[i];
    }
    kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device %s is not served by this process", device);
    return NULL;
}

/* The job's target from the process's cache, or reopened from the target stored with the job (a job
 * driven by another process). The caller releases it to the cache. */
static const target *target_for(measurer *m, PGconn *c, long long job_id, kt_error *err)
{
    const target *t = target_cache_find(m->w->targets, job_id);
    if (t)
        return t;
    job_target stored;
    if (job_store_target(c, job_id, &stored, err) < 0)
        return NULL;
    t = target_cache_open(m->w->targets, job_id, &stored.key, stored.problem, err);
    job_target_release(&stored);
    return t;
}

static void set_state(measurer *m, const char *status, long long trial)
{
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(m->w->opt.db, 5000, &err);
    if (c) {
        if (worker_store_set_state(c, m->id, status, trial, m->trials_done, &err) < 0)
            c = (db_release(m->w->opt.db, c), NULL);
        else
            db_release(m->w->opt.db, c);
    }
    if (!c)
        log_debug("worker %s: state update failed: %s", m->id, err.message);
}

/* Measures one claimed trial; every failure becomes the trial's status, never the thread's end. No
 * database connection is held while measuring. */
static void measure_claim(measurer *m, const trial_claim *claim)
{
    kt_error err;
    kt_error_clear(&err);
    trial_result r;
    trial_result_init(&r);
    const target *t = NULL;
    PGconn *c = db_acquire(m->w->opt.db, 30000, &err);
    if (c) {
        t = target_for(m, c, claim->job_id, &err);
        db_release(m->w->opt.db, c);
    }
    backend *b = t ? backend_for(m, claim->device, &err) : NULL;
    if (!b || backend_measure(b, t, claim->cid, &r, &err) < 0) {
        trial_result_release(&r);
        trial_result_init(&r);
        r.status = TRIAL_RUNTIME_ERROR;
        r.extras =
            json_pack("{s:s,s:s}", "error", kt_error_code_name(err.code), "message", err.message);
        log_warn("trial %lld of job %lld: %s", claim->id, claim->job_id, err.message);
    }
    target_cache_release(m->w->targets, t);
    kt_error_clear(&err);
    int stored = -1;
    c = db_acquire(m->w->opt.db, 30000, &err);
    if (c) {
        stored = trial_store_complete(c, claim, m->id, &r, &err);
        db_release(m->w->opt.db, c);
    }
    if (stored < 0)
        log_warn("trial %lld: storing the result failed: %s", claim->id, err.message);
    if (stored == 1) {
        m->trials_done++;
        pthread_mutex_lock(&m->w->lock);
        m->w->stats.trials_measured++;
        m->w->stats.measure_seconds += trial_cost_seconds(&r);
        pthread_mutex_unlock(&m->w->lock);
    }
    trial_result_release(&r);
}

void *measurer_main(void *arg)
{
    const measurer_arg *a = arg;
    worker_system *w = a->w;
    measurer m = {.w = w};
    snprintf(m.id, sizeof m.id, "%s/%d", w->id, a->index);
    m.backends = calloc((size_t)(w->n_devices > 0 ? w->n_devices : 1), sizeof *m.backends);
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(w->opt.db, 5000, &err);
    if (!c || worker_store_register(c, m.id, w->host, w->pid, (const char *const *)w->devices,
                                    w->n_devices, &err) < 0)
        log_warn("worker %s: registration failed: %s", m.id, err.message);
    if (c)
        db_release(w->opt.db, c);
    unsigned long seen = 0;
    while (!worker_stopping(w) && m.backends) {
        kt_error_clear(&err);
        c = db_acquire(w->opt.db, 5000, &err);
        if (!c) {
            seen = worker_wait(w, &w->queued_gen, seen, MEASURER_IDLE_MS);
            continue;
        }
        trial_claim claim;
        trial_claim_devices devs = {.names = (const char *const *)w->devices,
                                    .classes = (const char *const *)w->classes,
                                    .toolchains = (const char *const *)w->toolchains,
                                    .n = w->n_devices};
        int got = trial_store_claim(c, m.id, &devs, &claim, &err);
        db_release(w->opt.db, c);
        if (got <= 0) {
            if (got < 0)
                log_warn("worker %s: claim failed: %s", m.id, err.message);
            seen = worker_wait(w, &w->queued_gen, seen, MEASURER_IDLE_MS);
            continue;
        }
        set_state(&m, "measuring", claim.id);
        measure_claim(&m, &claim);
        worker_bump(w, &w->runner_gen);
        set_state(&m, "idle", 0);
    }
    set_state(&m, "stopped", 0);
    for (int i = 0; i < w->n_devices && m.backends; i++)
        backend_close(m.backends[i]);
    free(m.backends);
    return NULL;
}
