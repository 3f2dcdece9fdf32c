/* A measurement thread: claims pending trials of this process's devices, measures each with the
 * backend of its device and stores the result. Backends are opened per thread; targets come from
 * the process's target cache (target_cache.h), shared with the job runner.
 *
 * Faults: a result that cannot be stored (database down, disk full) is held in memory and stored
 * again, waiting 100 ms doubling to 2 s between attempts, until it is stored or the process stops
 * (then the trial stays claimed by a worker that is gone, and the reaper of the next process hands
 * it back); the thread claims nothing meanwhile, so at most one result per thread is held. A server
 * that answers but refuses the result MEASURER_REFUSALS times (not for space) gets it recorded as
 * runtime_error with the refusal instead, so that no trial waits forever. A claim
 * that failed may have been stored with its reply lost: before its next claim the thread hands
 * back every trial still claimed in its name. Failures are logged once per streak (fault_log.h).
 *
 * Cancel: while a trial is measured, the backend asks measure_should_stop about every 100 ms; it
 * says stop when this process flagged the trial's job as ended (worker_system_job_ended: the cancel
 * handler, or the runner seeing the job end) or, checked every MEASURER_STOP_POLL_S, when the
 * database says the claim is no longer live (the job cancelled or ended by another process, or the
 * trial taken back). A stopped measurement records nothing: the claim is let go
 * (trial_store_release). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/early_stop.h"
#include "core/log.h"
#include "measure/backend.h"
#include "store/fault_store.h"
#include "store/trial_store.h"
#include "store/worker_store.h"
#include "core/fault_log.h"
#include "worker/worker_internal.h"

#define MEASURER_IDLE_MS         200
#define MEASURER_STOP_POLL_S     0.5 /* how often a long measurement asks the database */
#define MEASURER_STOP_ACQUIRE_MS 100 /* a busy pool skips that check rather than waiting */
/* Refusals of one result by a healthy server before it is recorded as runtime_error instead. */
#define MEASURER_REFUSALS 10

typedef struct measurer {
    worker_system *w;
    measurer_arg *slot; /* this thread's job_id / stop, guarded by w->lock */
    char id[448];
    backend **backends; /* one per device of w, opened on first use */
    long long trials_done;
    int requeue;   /* a claim failed: its trial may be claimed in our name with the reply lost */
    fault_log log; /* the database failing for this thread */
    const trial_claim *claim; /* the trial being measured, for measure_should_stop */
    double last_poll;         /* kt_clock_s of the last database check */
} measurer;

/* Whether err is the database being down or unable to write: worth waiting for. */
static int db_fault(const kt_error *err)
{
    return err->code == KT_ERR_DATABASE || err->code == KT_ERR_STORAGE_FULL;
}

/* Waits the retry delay of the current streak; 0, or -1 when the system stops meanwhile. */
static int retry_wait(measurer *m)
{
    const unsigned long never = 0; /* a generation nobody bumps: only stop wakes it */
    worker_wait(m->w, &never, 0, fault_log_retry_ms(&m->log));
    return worker_stopping(m->w) ? -1 : 0;
}

/* The backends' stop check (backend_set_stop); see the top of the file. A database that cannot be
 * reached is no reason to stop. */
static int measure_should_stop(void *arg)
{
    measurer *m = arg;
    pthread_mutex_lock(&m->w->lock);
    int stop = m->slot->stop;
    pthread_mutex_unlock(&m->w->lock);
    if (stop || !m->claim)
        return stop;
    double now = kt_clock_s();
    if (now - m->last_poll < MEASURER_STOP_POLL_S)
        return 0;
    m->last_poll = now;
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(m->w->opt.db, MEASURER_STOP_ACQUIRE_MS, &err);
    if (!c)
        return 0;
    int live = trial_store_claim_live(c, m->claim, m->id, &err);
    db_release(m->w->opt.db, c);
    if (live != 0)
        return 0;
    log_info("trial %lld of job %lld: its job no longer runs; measurement stopped", m->claim->id,
             m->claim->job_id);
    return 1;
}

/* Marks the trial this thread starts (claim) or ends (NULL) measuring. */
static void measuring(measurer *m, const trial_claim *claim)
{
    pthread_mutex_lock(&m->w->lock);
    m->slot->job_id = claim ? claim->job_id : 0;
    m->slot->stop = 0;
    pthread_mutex_unlock(&m->w->lock);
    m->claim = claim;
    m->last_poll = kt_clock_s();
}

void worker_system_job_ended(worker_system *w, long long job_id)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    /* Every slot, started or not (a slot not started holds job 0): the count of started threads
     * is written by worker_system_start without the lock. */
    for (int i = 0; i < w->opt.measurers; i++) {
        if (job_id > 0 && w->measurer_args[i].job_id == job_id)
            w->measurer_args[i].stop = 1;
    }
    w->runner_gen++;
    if (job_id > 0) /* its harness's ask (ask/tell) sees it ended */
        w->job_gen[(unsigned long long)job_id % WORKER_JOB_SLOTS]++;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

/* A stopped measurement: the claim is let go (the trial deleted when its job no longer runs, else
 * handed back as pending); nothing is recorded. */
static void let_go(measurer *m, const trial_claim *claim)
{
    kt_error err;
    kt_error_clear(&err);
    int done = -1;
    PGconn *c = db_acquire(m->w->opt.db, 30000, &err);
    if (c) {
        done = trial_store_release(c, claim, m->id, &err);
        db_release(m->w->opt.db, c);
    }
    if (done < 0)
        log_warn("trial %lld: letting go of the claim failed (the reaper will): %s", claim->id,
                 err.message);
}

static backend *backend_for(measurer *m, const char *device, kt_error *err)
{
    for (int i = 0; i < m->w->n_devices; i++) {
        if (strcmp(m->w->devices[i], device) != 0)
            continue;
        if (!m->backends[i]) {
            m->backends[i] = backend_open(m->w->opt.cat, device, err);
            backend_set_stop(m->backends[i], measure_should_stop, m);
        }
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
    t = target_cache_open(m->w->targets, job_id, &stored.key, stored.problem, stored.space, err);
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

/* A recorded trial's time on the device (extras.device_busy_ms, a real backend's) counted in its
 * job (jobs.device_busy_ms, sql/027: the job's idle share). A failure only loses that count. */
static void add_busy(measurer *m, PGconn *c, const trial_claim *claim, const trial_result *r)
{
    const json_t *busy = json_object_get(r->extras, "device_busy_ms");
    kt_error err;
    kt_error_clear(&err);
    if (json_is_number(busy) &&
        job_store_add_device_busy(c, claim->job_id, json_number_value(busy), &err) < 0)
        log_warn("worker %s: job %lld: device busy time not counted: %s", m->id, claim->job_id,
                 err.message);
}

/* Measures one claimed trial; every failure becomes the trial's status, never the thread's end. No
 * database connection is held while measuring. A measurement stopped because its job no longer runs
 * stores nothing (let_go). */
static void measure_claim(measurer *m, const trial_claim *claim)
{
    kt_error err;
    kt_error_clear(&err);
    trial_result r;
    trial_result_init(&r);
    const target *t = NULL;
    for (;;) {
        PGconn *c = db_acquire(m->w->opt.db, 30000, &err);
        if (c) {
            t = target_for(m, c, claim->job_id, &err);
            db_release(m->w->opt.db, c);
        }
        if (t || !db_fault(&err))
            break;
        fault_log_fail(&m->log, m->id, err.message);
        if (retry_wait(m) < 0)
            break; /* stopping: the trial is handed back when this process is gone */
        kt_error_clear(&err);
    }
    if (!t && db_fault(&err))
        goto out;
    backend *b = t ? backend_for(m, claim->device, &err) : NULL;
    /* issue 32: a search trial clearly slower than its job's best stops timing early; the final
     * pick's re-measurements always run the full count */
    double spread =
        kt_early_stop_spread(claim->job_best_ms, claim->job_best_min_ms, claim->job_best_cv);
    backend_set_early_stop(
        b, claim->final_round ? 0 : kt_early_stop_above_ms(claim->job_best_ms, spread));
    measuring(m, claim);
    int measured = b ? backend_measure(b, t, claim->cid, &r, &err) : -1;
    measuring(m, NULL);
    if (measured == BACKEND_STOPPED) {
        target_cache_release(m->w->targets, t);
        let_go(m, claim); /* nothing to store */
        goto out;
    }
    if (measured < 0) {
        trial_result_release(&r);
        trial_result_init(&r);
        r.status = TRIAL_RUNTIME_ERROR;
        r.extras =
            json_pack("{s:s,s:s}", "error", kt_error_code_name(err.code), "message", err.message);
        log_warn("trial %lld of job %lld: %s", claim->id, claim->job_id, err.message);
    }
    target_cache_release(m->w->targets, t);
    int stored = -1, refused = 0;
    /* The result is held until it is stored: never dropped because the database is away. */
    for (;;) {
        kt_error_clear(&err);
        PGconn *c = db_acquire(m->w->opt.db, 30000, &err);
        int healthy = 0;
        if (c) {
            stored = trial_store_complete(c, claim, m->id, &r, &err);
            healthy = PQstatus(c) == CONNECTION_OK;
            if (stored == 1)
                add_busy(m, c, claim, &r);
            db_release(m->w->opt.db, c);
        }
        if (stored >= 0)
            break;
        /* A server that answers and keeps refusing this result (not for space): record the
         * refusal as the trial's result rather than hold the trial forever. */
        if (healthy && err.code == KT_ERR_DATABASE && ++refused == MEASURER_REFUSALS) {
            log_warn("trial %lld: the database refused its result %d times (%s); recording it as "
                     "runtime_error",
                     claim->id, refused, err.message);
            trial_result_release(&r);
            trial_result_init(&r);
            r.status = TRIAL_RUNTIME_ERROR;
            r.extras = json_pack("{s:s,s:s}", "error", "database", "message", err.message);
        }
        char what[sizeof m->id + 64];
        snprintf(what, sizeof what, "worker %s: storing trial %lld", m->id, claim->id);
        fault_log_fail(&m->log, what, err.message);
        if (retry_wait(m) < 0) {
            log_warn("trial %lld: result not stored before shutdown (%s); the trial is handed "
                     "back when this process is gone",
                     claim->id, err.message);
            break;
        }
    }
    if (stored >= 0)
        fault_log_ok(&m->log, m->id);
    if (stored == 1) {
        m->trials_done++;
        pthread_mutex_lock(&m->w->lock);
        m->w->stats.trials_measured++;
        m->w->stats.measure_seconds += trial_cost_seconds(&r);
        pthread_mutex_unlock(&m->w->lock);
    }
out:
    trial_result_release(&r);
}

void *measurer_main(void *arg)
{
    measurer_arg *a = arg;
    worker_system *w = a->w;
    measurer m = {.w = w, .slot = a};
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
        trial_claim claim;
        int got = -1;
        if (c && m.requeue) {
            int n = fault_store_requeue_claims(c, m.id, &err);
            if (n > 0)
                log_warn("worker %s: handed back %d trials claimed while the database failed", m.id,
                         n);
            m.requeue = n < 0;
        }
        if (c && !m.requeue) {
            trial_claim_devices devs = {.names = (const char *const *)w->devices,
                                        .classes = (const char *const *)w->classes,
                                        .toolchains = (const char *const *)w->toolchains,
                                        .n = w->n_devices};
            got = trial_store_claim(c, m.id, &devs, &claim, &err);
            m.requeue = got < 0 && PQstatus(c) != CONNECTION_OK;
        }
        if (c)
            db_release(w->opt.db, c);
        if (got < 0) {
            fault_log_fail(&m.log, m.id, err.message);
            if (retry_wait(&m) == 0)
                seen = worker_wait(w, &w->queued_gen, seen, 0);
            continue;
        }
        fault_log_ok(&m.log, m.id);
        if (got == 0) {
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
