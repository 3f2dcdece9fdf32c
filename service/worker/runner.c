/* The runner thread: claims jobs, drives each with a job_driver, heart-beats this process's jobs
 * and workers, and reaps the jobs and trials of processes that died.
 *
 * Faults: when no connection can be had, or a statement fails, the runner waits (doubling from
 * 100 ms to 2 s: never a spin) and logs once per streak (fault_log.h). After a failure that lost
 * the connection (an outage) its drivers may be stale — a claim whose reply was lost, a job another
 * process took over while this one could not heart-beat — so it re-syncs from the database: closes
 * every driver, lets go of every job it holds (job_store_release_mine) and claims them again, which
 * resumes each by replaying its stored trials. A job whose driver cannot be opened (the database
 * failed in the middle) is let go at once and claimed again after a pause, never left claimed.
 *
 * Fair shares (issue 26): claims take the callers with the fewest running jobs first
 * (job_store_claim), and a runner whose slots are all taken hands one job back when a caller with
 * at least two running jobs more than a waiting one holds it here (job_store_yield, at most once
 * per RUNNER_YIELD_MS), then claims at once: the waiting job gets the slot, the job handed back
 * resumes by replay when a slot frees. Nobody's small job waits for hours behind another's huge
 * ones.
 *
 * Poison jobs (issue 26): a job whose process died or stalled --job-max-start-attempts times (3)
 * while driving it, with no trial of it completed in between (each claim counts; a clean hand-back
 * does not; a completed trial starts the count again), is failed before claiming, never resumed
 * again (job_store_fail_exhausted, sql/015). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/clock.h"
#include "store/fault_store.h"
#include "catalog/catalog_fleet.h"
#include "store/catalog_store.h"
#include "store/model_store.h"
#include "store/worker_store.h"
#include "core/fault_log.h"
#include "worker/job_driver.h"
#include "worker/worker_internal.h"

#define RUNNER_HEARTBEAT_MS 1000
#define RUNNER_REAP_MS      2000
#define RUNNER_TICK_MS      100
#define RUNNER_ACQUIRE_MS   2000
/* After a job could not be opened: no claims for this long (the job is claimed again after it). */
#define RUNNER_OPEN_PAUSE_MS 1000
/* Fair shares: how often a full runner asks whether to hand a job back, and how long a job must
 * have waited first (a runner with a free slot takes it within its tick, RUNNER_TICK_MS). */
#define RUNNER_YIELD_MS     1000
#define RUNNER_YIELD_WAIT_S 1.0

typedef struct runner_state {
    worker_system *w;
    job_driver *jobs;
    int n_jobs;
    long long last_heartbeat, last_reap, last_yield;
    long long claim_after; /* ms: no claims before (a job could not be opened) */
    int resync;            /* the connection was lost: drivers may be stale */
    int failed;            /* something failed in this round */
    char why[KT_ERROR_MESSAGE_MAX + 128];
    fault_log log;
    int fleet_registered; /* this process's devices are in fleet_devices */
    /* Ask/tell rounds (worker_system_job_told): the wakes that were not tells, as last seen, and
     * when the last full round was. */
    unsigned long other_wakes;
    long long last_full;
    long long last_idle; /* the last hand-back of external jobs without a harness */
} runner_state;

/* A job whose trials this process's measurers may claim (an external job's go to its harness). */
static int measured_by_workers(const job_driver *d)
{
    return d->row.target.key.dev.kind != KT_DEVICE_EXTERNAL;
}

static long long now_ms(void)
{
    return (long long)(kt_clock_ns() / 1000000u);
}

/* Records a failure of this round; the fault log reports it once per streak. */
static void round_failed(runner_state *st, const char *what, const kt_error *err)
{
    if (!st->failed)
        snprintf(st->why, sizeof st->why, "%s: %s", what, err->message);
    st->failed = 1;
}

/* Drops every driver and lets go of every job this runner holds: claim_jobs takes them back and
 * reopens them from the database. */
static int resync(runner_state *st, PGconn *c)
{
    kt_error err;
    kt_error_clear(&err);
    if (job_store_release_mine(c, &st->w->me, &err) < 0) {
        round_failed(st, "letting go of jobs to re-sync", &err);
        return -1;
    }
    if (st->n_jobs > 0)
        log_warn("runner: re-syncing %d jobs from the database after a lost connection",
                 st->n_jobs);
    for (int i = 0; i < st->n_jobs; i++)
        job_driver_close(&st->jobs[i]);
    st->n_jobs = 0;
    st->resync = 0;
    st->last_heartbeat = st->last_reap = 0; /* heart-beat and reap at once */
    return 0;
}

/* Registers this process's devices in the fleet (catalog_store.h), so that API processes and the
 * runners of other hosts list and resolve them; retried at every heartbeat until it succeeds. */
static void register_fleet(runner_state *st, PGconn *c)
{
    worker_system *w = st->w;
    kt_error err;
    kt_error_clear(&err);
    json_t *records = catalog_fleet_records_json(w->opt.cat);
    if (records && catalog_store_fleet_register(c, w->host, w->id, records, &err) == 0)
        st->fleet_registered = 1;
    else
        log_warn("registering this host's devices in the fleet failed: %s",
                 records ? err.message : "out of memory");
    json_decref(records);
}

static void housekeeping(runner_state *st, PGconn *c, int force)
{
    worker_system *w = st->w;
    kt_error err;
    kt_error_clear(&err);
    long long t = now_ms();
    if (force || t - st->last_heartbeat >= RUNNER_HEARTBEAT_MS) {
        st->last_heartbeat = t;
        /* The models the trainer thread trains carry the same runner id: one heartbeat for the
         * process's jobs and models, even while a training runs for minutes. */
        if (!st->fleet_registered)
            register_fleet(st, c);
        if (job_store_heartbeat(c, &w->me, &err) < 0 ||
            model_store_heartbeat(c, &w->me, &err) < 0 ||
            worker_store_heartbeat(c, w->host, w->pid, &err) < 0 ||
            catalog_store_fleet_heartbeat(c, w->id, &err) < 0)
            round_failed(st, "heartbeat", &err);
    }
    if (force || t - st->last_reap >= RUNNER_REAP_MS) {
        st->last_reap = t;
        int freed = job_store_release_dead(c, &w->me, WORKER_STALE_S(w), &err);
        int requeued =
            freed < 0 ? -1 : worker_store_reap(c, w->host, w->pid, w->id, WORKER_STALE_S(w), &err);
        if (freed < 0 || requeued < 0)
            round_failed(st, "reaping dead runners and workers", &err);
        else if (freed > 0 || requeued > 0)
            log_info("recovered %d jobs and %d trials from processes that are gone", freed,
                     requeued);
        if (requeued > 0)
            worker_bump(w, &w->queued_gen);
    }
}

static void claim_jobs(runner_state *st, PGconn *c)
{
    worker_system *w = st->w;
    int room = w->opt.max_jobs - st->n_jobs;
    if (room <= 0 || now_ms() < st->claim_after)
        return;
    job_row *rows = calloc((size_t)room, sizeof *rows);
    if (!rows)
        return;
    kt_error err;
    kt_error_clear(&err);
    long long failed[16];
    int attempts =
        w->opt.max_start_attempts > 0 ? w->opt.max_start_attempts : JOB_MAX_START_ATTEMPTS;
    int nf = job_store_fail_exhausted(c, attempts, failed, 16, &err);
    if (nf < 0)
        round_failed(st, "failing jobs out of start attempts", &err);
    for (int i = 0; i < nf && i < 16; i++)
        log_warn("job %lld: failed, not resumed: started %d times since it last completed a trial "
                 "and its process died or stalled each time (stop_reason attempts)",
                 failed[i], attempts);
    kt_error_clear(&err);
    int n = job_store_claim(c, &w->me, room, attempts, rows, &err);
    if (n < 0) {
        round_failed(st, "claiming jobs", &err);
        st->resync = 1; /* the claim may have been stored with its reply lost */
    }
    for (int i = 0; i < n; i++) {
        job_driver *d = &st->jobs[st->n_jobs];
        long long id = rows[i].id;
        int rc =
            job_driver_open(d, &rows[i], w->opt.cat, w->targets, w->opt.models, &w->me, c, &err);
        if (rc < 0) {
            /* Never left claimed and undriven: let it go, claim it again after a pause. */
            char what[64];
            snprintf(what, sizeof what, "opening job %lld", id);
            round_failed(st, what, &err);
            job_driver_close(d);
            st->claim_after = now_ms() + RUNNER_OPEN_PAUSE_MS;
            kt_error_clear(&err);
            if (fault_store_release_job(c, &w->me, id, &err) < 0)
                st->resync = 1;
            continue;
        }
        log_info("job %lld: driving (%s on %s, %s; start attempt %d of %d)", id,
                 d->row.target.key.kernel, d->row.target.key.device, d->row.strategy,
                 d->row.start_attempts, attempts);
        if (rc == JOB_DRIVER_QUEUED)
            worker_bump_job(w, id, measured_by_workers(d));
        st->n_jobs++;
    }
    for (int i = 0; i < room; i++)
        job_row_release(&rows[i]);
    free(rows);
}

/* With every slot taken, hands back a job of a caller that holds more than its share while
 * another waits, and claims the slot it frees (job_store_yield). */
static void yield_jobs(runner_state *st, PGconn *c)
{
    worker_system *w = st->w;
    long long t = now_ms();
    if (st->n_jobs < w->opt.max_jobs || t - st->last_yield < RUNNER_YIELD_MS)
        return;
    st->last_yield = t;
    kt_error err;
    kt_error_clear(&err);
    long long id = 0;
    if (job_store_yield(c, &w->me, RUNNER_YIELD_WAIT_S, &id, &err) < 0) {
        round_failed(st, "sharing job slots", &err);
        st->resync = 1; /* the hand-back may have been stored with its reply lost */
        return;
    }
    for (int i = 0; id && i < st->n_jobs; i++) {
        if (st->jobs[i].row.id != id)
            continue;
        /* Its trials under way finish and are recorded (the job still runs); the next claim of it
         * replays them. */
        job_driver_close(&st->jobs[i]);
        st->jobs[i] = st->jobs[--st->n_jobs];
        log_info("job %lld: handed back (fair share: another caller's job waits for a slot)", id);
        claim_jobs(st, c);
        return;
    }
}

/* only: the jobs to step (n_only of them), or NULL for every job. */
/* Hands back the external jobs whose harness is away (job_store_release_idle_external), at most
 * once a second, and closes their drivers: an ask brings them back. */
static void release_idle_external(runner_state *st, PGconn *c)
{
    long long ids[16];
    kt_error err;
    kt_error_clear(&err);
    long long t = now_ms();
    if (t - st->last_idle < RUNNER_HEARTBEAT_MS)
        return;
    st->last_idle = t;
    int n = job_store_release_idle_external(c, &st->w->me, ids, 16, &err);
    if (n < 0) {
        round_failed(st, "handing back external jobs without a harness", &err);
        st->resync = 1;
        return;
    }
    for (int k = 0; k < n && k < 16; k++) {
        for (int i = 0; i < st->n_jobs; i++) {
            if (st->jobs[i].row.id != ids[k])
                continue;
            job_driver_close(&st->jobs[i]);
            st->jobs[i] = st->jobs[--st->n_jobs];
            log_info("job %lld: handed back, its harness has not asked for %d s (an ask resumes "
                     "it)",
                     ids[k], JOB_EXTERNAL_IDLE_S);
            break;
        }
    }
    if (n > 16) /* the rest were handed back too: a re-sync closes their drivers */
        st->resync = 1;
}

static void step_jobs(runner_state *st, PGconn *c, const long long *only, int n_only)
{
    kt_error err;
    kt_error_clear(&err);
    for (int i = 0; i < st->n_jobs;) {
        job_driver *d = &st->jobs[i];
        int wanted = !only;
        for (int k = 0; only && k < n_only && !wanted; k++)
            wanted = only[k] == d->row.id;
        if (!wanted) {
            i++;
            continue;
        }
        int rc = job_driver_step(d, c, &err);
        if (rc < 0) {
            char what[64];
            snprintf(what, sizeof what, "job %lld: step", d->row.id);
            round_failed(st, what, &err);
        }
        if (rc == JOB_DRIVER_QUEUED || rc == JOB_DRIVER_ENDED)
            worker_bump_job(st->w, d->row.id, measured_by_workers(d)); /* measurers, asks */
        worker_job_stepped(st->w, d->row.id);
        if (rc == JOB_DRIVER_ENDED) {
            worker_system_job_ended(st->w, d->row.id); /* a measurement of it under way stops */
            job_driver_close(d);
            st->jobs[i] = st->jobs[--st->n_jobs];
            continue;
        }
        i++;
    }
}

void *runner_main(void *arg)
{
    worker_system *w = arg;
    runner_state st = {.w = w};
    st.jobs = calloc((size_t)w->opt.max_jobs, sizeof *st.jobs);
    if (!st.jobs) {
        log_error("runner: out of memory");
        return NULL;
    }
    unsigned long seen_runner = 0;
    int first = 1;
    while (!worker_stopping(w)) {
        kt_error err;
        kt_error_clear(&err);
        st.failed = 0;
        PGconn *c = db_acquire(w->opt.db, RUNNER_ACQUIRE_MS, &err);
        if (!c) {
            round_failed(&st, "no database connection", &err);
            if (db_pool_down(w->opt.db))
                st.resync = 1; /* an outage, not a busy pool */
        } else {
            /* A round woken only by tells (ask/tell) steps the told jobs alone; anything else,
             * a full tick since the last full round, or a failure, makes a full round. */
            long long told[WORKER_TOLD_MAX];
            int n_told = 0, full = 1;
            pthread_mutex_lock(&w->lock);
            unsigned long other = w->runner_gen - w->told_gen;
            if (other == st.other_wakes && !w->told_overflow &&
                now_ms() - st.last_full < RUNNER_TICK_MS && !first && !st.resync) {
                full = 0;
                n_told = w->n_told;
                memcpy(told, w->told, (size_t)n_told * sizeof *told);
            }
            /* A told job not driven here (handed back while its harness was away): a full round,
             * whose claim takes it back. */
            for (int k = 0; !full && k < n_told; k++) {
                int driven = 0;
                for (int i = 0; i < st.n_jobs && !driven; i++)
                    driven = st.jobs[i].row.id == told[k];
                full = !driven;
            }
            st.other_wakes = other;
            w->n_told = 0;
            w->told_overflow = 0;
            pthread_mutex_unlock(&w->lock);
            if (!st.resync || resync(&st, c) == 0) {
                housekeeping(&st, c, first);
                first = 0;
                if (full) {
                    st.last_full = now_ms();
                    release_idle_external(&st, c);
                    claim_jobs(&st, c);
                    yield_jobs(&st, c);
                }
                step_jobs(&st, c, full ? NULL : told, n_told);
            }
            if (PQstatus(c) != CONNECTION_OK)
                st.resync = 1; /* lost in the middle: what was written is unknown */
            db_release(w->opt.db, c);
        }
        pthread_mutex_lock(&w->lock);
        w->stats.active_jobs = st.n_jobs;
        pthread_mutex_unlock(&w->lock);
        int tick = RUNNER_TICK_MS;
        if (st.failed) {
            fault_log_fail(&st.log, "runner", st.why);
            tick = fault_log_retry_ms(&st.log);
        } else {
            fault_log_ok(&st.log, "runner");
        }
        /* Sleep until a trial finishes or a job is queued; the timeout covers other processes.
         * While failing, wake-ups are ignored: the wait is the retry delay (no spin). */
        if (st.failed) {
            const unsigned long never = 0; /* a generation nobody bumps: only stop wakes it */
            worker_wait(w, &never, 0, tick);
            seen_runner = worker_wait(w, &w->runner_gen, seen_runner, 0);
        } else {
            seen_runner = worker_wait(w, &w->runner_gen, seen_runner, tick);
        }
    }
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(w->opt.db, 5000, &err);
    if (c) {
        if (job_store_release_mine(c, &w->me, &err) < 0 ||
            catalog_store_fleet_leave(c, w->id, &err) < 0)
            log_warn("runner: letting go of jobs and devices failed: %s", err.message);
        db_release(w->opt.db, c);
    }
    for (int i = 0; i < st.n_jobs; i++)
        job_driver_close(&st.jobs[i]);
    free(st.jobs);
    return NULL;
}
