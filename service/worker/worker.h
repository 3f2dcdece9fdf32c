/* worker/worker — the threads that do the tuning inside ktuned: one runner thread that drives jobs
 * (asks searchers for batches, inserts them as pending trials, tells results back, ends jobs), N
 * measurement threads that claim pending trials, measure them with a backend and store the results,
 * and one model trainer thread (training/trainer.h) that trains queued models.
 * They meet only through the database, so any number of processes on any hosts can share the work,
 * and a job resumes after a crash by replaying its stored trials.
 *
 * Lifecycle: worker_system_start -> worker_system_wake* -> worker_system_stop (joins, frees). The
 * pool and catalog are borrowed and must outlive the system. */
#ifndef KT_WORKER_WORKER_H
#define KT_WORKER_WORKER_H

#include "catalog/catalog.h"
#include "core/error.h"
#include "store/db.h"
#include "training/model_cache.h"

typedef struct worker_system worker_system;

typedef struct worker_options {
    db_pool *db;
    const catalog *cat;
    int measurers;                 /* measurement threads */
    int max_jobs;                  /* jobs the runner drives at once */
    long long model_retrain_after; /* --model-retrain-after (training/trainer.h); 0 = off */
    double model_train_delay_s; /* --model-train-delay-s (testing, training/trainer.h); 0 = none */
    model_cache *models;        /* borrowed, may be NULL: the predictor's top-k in warm starts */
    double lease_s; /* --lease-s: a process silent this long loses its jobs, trials, models and
                     * devices to the others (the reaper's limit); 0 = WORKER_LEASE_DEFAULT_S */
    int max_start_attempts; /* --job-max-start-attempts: a job whose process died this many times
                             * since its last completed trial is failed, not resumed (issue 26);
                             * 0 = JOB_MAX_START_ATTEMPTS */
} worker_options;

#define WORKER_LEASE_DEFAULT_S 10

/* Counters of this process, for /metrics. */
typedef struct worker_stats {
    long long trials_measured;
    double measure_seconds; /* charged (recorded, for replay) seconds of the measured trials */
    int active_jobs;
    int targets_cached; /* entries of the process's target cache (worker/target_cache.h) */
} worker_stats;

worker_system *worker_system_start(const worker_options *opt, kt_error *err);
/* Tells the runner that a job was queued (it also polls, for jobs queued by other processes). */
void worker_system_wake(worker_system *w);
/* Tells the measurement threads that job_id no longer runs (cancelled, or ended): a measurement of
 * one of its trials under way is given up within about 100 ms (its runner killed) and records
 * nothing. Measurements of jobs ended by another process are given up too, seen by a query every
 * 500 ms. Also wakes the runner. Any thread. */
void worker_system_job_ended(worker_system *w, long long job_id);
/* Ask/tell (api/ask_tell.c): a harness told results of job_id; the runner steps that job at once
 * (only that job, when nothing else woke it: a tell does not cost a round over every job and a
 * claim; the full round still comes every tick). Any thread; w NULL: nothing. */
void worker_system_job_told(worker_system *w, long long job_id);
/* Ask/tell: waits (at most timeout_ms) while a tell of job_id woke this process's runner and it has
 * not stepped that job since. Returns at once when none is pending, or w is NULL. */
void worker_system_wait_stepped(worker_system *w, long long job_id, int timeout_ms);
/* Ask/tell: 1 while such a step is pending (wait_stepped would wait), else 0 (also for w NULL). */
int worker_system_job_stepping(worker_system *w, long long job_id);
/* Ask/tell (api/ask_tell.c): job_id's generation, bumped when this process's runner queued
 * trials of the job or the job ended here; wait_job waits until it differs from seen, the system
 * stops, or timeout_ms pass, and returns it. With w NULL (an API process) the generation is 0 and
 * the wait sleeps timeout_ms: the caller looks at the database again. Any thread. */
unsigned long worker_system_job_gen(worker_system *w, long long job_id);
unsigned long worker_system_wait_job(worker_system *w, long long job_id, unsigned long seen,
                                     int timeout_ms);
/* Tells the model trainer (training/trainer.h) that a model was queued (it also polls). */
void worker_system_wake_trainer(worker_system *w);
/* w may be NULL (an API process, --role api, has no workers): the wakes do nothing and the stats
 * are zeros; the workers of other processes poll the database. */
void worker_system_stats(worker_system *w, worker_stats *out);
/* Stops the threads: measurements under way finish and are stored, jobs are let go (still running,
 * to be resumed by the next runner). Frees w. */
void worker_system_stop(worker_system *w);

#endif
