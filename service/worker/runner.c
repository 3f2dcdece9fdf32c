/* The runner thread: claims jobs, drives each with a job_driver, heart-beats this process's jobs
 * and workers, and reaps the jobs and trials of processes that died. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/clock.h"
#include "store/model_store.h"
#include "store/worker_store.h"
#include "worker/job_driver.h"
#include "worker/worker_internal.h"

#define RUNNER_HEARTBEAT_MS 1000
#define RUNNER_REAP_MS      2000
#define RUNNER_TICK_MS      100

typedef struct runner_state {
    worker_system *w;
    job_driver *jobs;
    int n_jobs;
    long long last_heartbeat, last_reap;
} runner_state;

static void housekeeping(runner_state *st, PGconn *c, int force)
{
    worker_system *w = st->w;
    kt_error err;
    kt_error_clear(&err);
    long long t = (long long)(kt_clock_ns() / 1000000u);
    if (force || t - st->last_heartbeat >= RUNNER_HEARTBEAT_MS) {
        st->last_heartbeat = t;
        /* The models the trainer thread trains carry the same runner id: one heartbeat for the
         * process's jobs and models, even while a training runs for minutes. */
        if (job_store_heartbeat(c, &w->me, &err) < 0 ||
            model_store_heartbeat(c, &w->me, &err) < 0 ||
            worker_store_heartbeat(c, w->host, w->pid, &err) < 0)
            log_warn("heartbeat failed: %s", err.message);
    }
    if (force || t - st->last_reap >= RUNNER_REAP_MS) {
        st->last_reap = t;
        int freed = job_store_release_dead(c, &w->me, WORKER_STALE_S, &err);
        int requeued =
            freed < 0 ? -1 : worker_store_reap(c, w->host, w->pid, w->id, WORKER_STALE_S, &err);
        if (freed < 0 || requeued < 0)
            log_warn("reaping dead runners and workers failed: %s", err.message);
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
    if (room <= 0)
        return;
    job_row *rows = calloc((size_t)room, sizeof *rows);
    if (!rows)
        return;
    kt_error err;
    kt_error_clear(&err);
    int n = job_store_claim(c, &w->me, room, rows, &err);
    if (n < 0)
        log_warn("claiming jobs failed: %s", err.message);
    for (int i = 0; i < n; i++) {
        job_driver *d = &st->jobs[st->n_jobs];
        long long id = rows[i].id;
        int rc = job_driver_open(d, &rows[i], w->targets, w->opt.models, &w->me, c, &err);
        if (rc < 0) {
            log_warn("job %lld could not be opened: %s", id, err.message);
            job_driver_close(d);
            continue;
        }
        log_info("job %lld: driving (%s on %s, %s)", id, d->row.target.key.kernel,
                 d->row.target.key.device, d->row.strategy);
        if (rc == JOB_DRIVER_QUEUED)
            worker_bump(w, &w->queued_gen);
        st->n_jobs++;
    }
    for (int i = 0; i < room; i++)
        job_row_release(&rows[i]);
    free(rows);
}

static void step_jobs(runner_state *st, PGconn *c)
{
    kt_error err;
    kt_error_clear(&err);
    for (int i = 0; i < st->n_jobs;) {
        job_driver *d = &st->jobs[i];
        int rc = job_driver_step(d, c, &err);
        if (rc < 0)
            log_warn("job %lld: step failed: %s", d->row.id, err.message);
        if (rc == JOB_DRIVER_QUEUED)
            worker_bump(st->w, &st->w->queued_gen);
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
        PGconn *c = db_acquire(w->opt.db, 5000, &err);
        if (!c) {
            log_warn("runner: %s", err.message);
            worker_wait(w, &w->runner_gen, seen_runner, 1000);
            continue;
        }
        housekeeping(&st, c, first);
        first = 0;
        claim_jobs(&st, c);
        step_jobs(&st, c);
        db_release(w->opt.db, c);
        pthread_mutex_lock(&w->lock);
        w->stats.active_jobs = st.n_jobs;
        pthread_mutex_unlock(&w->lock);
        /* Sleep until a trial finishes or a job is queued; the timeout covers other processes. */
        seen_runner = worker_wait(w, &w->runner_gen, seen_runner, RUNNER_TICK_MS);
    }
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(w->opt.db, 5000, &err);
    if (c) {
        if (job_store_release_mine(c, &w->me, &err) < 0)
            log_warn("runner: letting go of jobs failed: %s", err.message);
        db_release(w->opt.db, c);
    }
    for (int i = 0; i < st.n_jobs; i++)
        job_driver_close(&st.jobs[i]);
    free(st.jobs);
    return NULL;
}
