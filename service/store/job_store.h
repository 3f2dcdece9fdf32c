/* store/job_store — the jobs table: creation and reads for the API, claiming, heart-beating and
 * finishing for the job runner, and the job's own best for the trial stores. Every function takes a
 * connection the caller acquired from the pool and returns -1 / NULL with err set on failure. JSON
 * results are new references the caller decrefs; job_row, job_info and job_page own their fields
 * (job_row_release, job_info_release, job_page_release).
 *
 * The store hands out rows, not API documents: api/job_view.c turns a job_info into the JSON of
 * GET /v1/jobs/{id} (links, progress fraction). Facts kept in the row:
 * - clock_seconds: the job clock, the sum of the charged_seconds of its finished trials, advanced
 * in the transaction that records each trial (trial_store_complete) or recounted (import_store);
 * - best_*: the job's own best trial, replaced only through job_store_offer_best. */
#ifndef KT_STORE_JOB_STORE_H
#define KT_STORE_JOB_STORE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "core/error.h"
#include "core/objective.h"
#include "core/target_key.h"

/* A job's target as stored with the job when it was made: the key the catalog resolved then and the
 * canonical problem. Read back by job_store_claim and job_store_target, so a job is never
 * re-resolved from loose strings: whoever opens it checks the catalog still gives the same key. The
 * key's strings and problem are owned (job_target_release). */
typedef struct job_target {
    target_key key;
    json_t *problem;
    json_t *space; /* an external job's inline space (sql/016, catalog_reopen_space); else NULL */
} job_target;

/* A new job: where it belongs (key and problem as catalog_resolve gave them, borrowed; every key
 * string is required, the toolchain included: the columns are NOT NULL), what searches it and its
 * budget. */
typedef struct job_spec {
    target_key key;
    const json_t *problem;
    const char *strategy;
    const json_t *options; /* object, may be empty */
    uint64_t seed;
    long long budget_evaluations; /* 0 = no limit on evaluations */
    double budget_seconds;        /* 0 = no limit on time */
    int batch_size;
    int parallel; /* "parallel" (sql/009): 1..64, 0 = none (imports) */
    uint64_t space_size;
    const char *finished_as; /* NULL: queued for a runner; else the stop reason of a job that is
                              * made finished ("imported": import_store, its trials come with it) */
    const char *history;     /* "auto" or "none"; NULL is "none" (imports) */
    int final_remeasure;     /* the final pick (sql/012): configurations re-measured, 0 = none */
    int final_rounds;        /* rounds of re-measurement, 0 when final_remeasure is 0 */
    const char *submitter;   /* who queued it (sql/008, api_caller: "token:<id>", "startup",
                              * "anonymous"), NULL for none (imports): its job cap and its share
                              * of the job slots (job_store_claim) */
    const json_t *space;     /* the inline space of an external job (sql/016), NULL otherwise */
    const kt_objective *objective; /* what the job optimises (sql/022); NULL: the time */
} job_spec;

/* What the runner needs to drive a job. */
typedef struct job_row {
    long long id;
    job_target target;
    char *strategy;
    json_t *options;
    uint64_t seed;
    long long budget_evaluations;
    double budget_seconds;
    int batch_size;
    char *history;        /* "auto" or "none" */
    json_t *history_used; /* what the driver seeded the searcher with (sql/006), NULL: not yet */
    int final_remeasure;  /* the final pick (sql/012): configurations re-measured, 0 = none */
    int final_rounds;
    int start_attempts;     /* this claim included (sql/015) */
    kt_objective objective; /* what the job optimises (sql/022) */
} job_row;

/* Identity of the process driving jobs. */
typedef struct runner_identity {
    const char *id; /* "<host>:<pid>:<start>" */
    const char *host;
    int pid;
} runner_identity;

/* One job as stored, for reading (the API). Strings and JSON are owned by the struct; NULL where
 * the column is NULL. Timestamps are ISO 8601 text as PostgreSQL writes them in JSON. */
typedef struct job_info {
    long long id;
    char *status;
    job_target target; /* kernel, device, device class, kernel hash, toolchain, problem */
    char *strategy;
    json_t *options;
    long long seed;
    long long budget_evaluations; /* 0 = no limit (NULL) */
    double budget_seconds;        /* 0 = no limit (NULL) */
    long long trials_done;        /* trials with a final status */
    long long space_size;
    double clock_seconds; /* the job clock: charged seconds of its finished trials */
    int has_best;         /* best_* are set */
    long long best_trial_id;
    double best_time_ms;
    json_t *best_config;
    kt_objective objective; /* what the job optimises (sql/022) */
    double best_value;      /* a metric job's best metric value (NAN: none, or a time job) */
    char *stop_reason;      /* NULL while it runs */
    json_t *error;          /* {"code","message","hint"} of a failed job, else NULL */
    char *created_at, *started_at, *finished_at;
    double elapsed_seconds;    /* (finished_at or now) - started_at; NAN before it started */
    char *history;             /* "auto" or "none" */
    json_t *history_used;      /* a summary of what was recorded, NULL until the driver recorded it:
                                * {"sources":[...],"seeded":n,"prior_trials":n} */
    long long seeded_measured; /* trials of the seeded (first) configurations with a final status */
    int parallel;              /* "parallel" asked (sql/009); 0 when NULL (older jobs, imports) */
    int final_remeasure;       /* the final pick (sql/012): configurations re-measured, 0 = none */
    int final_rounds;
    json_t *final_pick;       /* jobs.final_pick once recorded (worker/final_pick.h), else NULL */
    long long final_measured; /* re-measurements with a final status while final_pick is NULL */
    /* The harness of an external job (sql/016): its last ask (NULL: never asked), seconds since
     * (-1: never) and the trials it holds under a live lease. */
    char *last_ask_at;
    double since_ask_s;
    long long harness_leased;
    /* Milliseconds its trials held the device measuring (sql/027); NAN (or 0, a row built
     * elsewhere): none recorded (not a real device, or nothing measured yet) */
    double device_busy_ms;
} job_info;

/* A page of jobs, newest first. */
typedef struct job_page {
    job_info *jobs;
    int n;
    long long next_before; /* the id to pass as before for the next page; 0 = this is the last */
} job_page;

int job_store_create(PGconn *c, const job_spec *spec, long long *id_out, kt_error *err);
/* The same, unless a queued or running job of spec's key (kernel, device class, kernel hash,
 * toolchain, problem) exists: then *id_out is that job's id and *created 0. Serialised per key (an
 * advisory lock in one transaction), so concurrent callers queue one job. Must not be called inside
 * a transaction. */
int job_store_create_unless_active(PGconn *c, const job_spec *spec, long long *id_out, int *created,
                                   kt_error *err);
/* Reads one job into *out (job_info_release it); KT_ERR_NOT_FOUND when absent. */
int job_store_get(PGconn *c, long long id, job_info *out, kt_error *err);
void job_info_release(job_info *j);
/* Newest first, ids below before (0 = from the newest), optionally one status (NULL = any), at most
 * limit; job_page_release it. */
int job_store_list(PGconn *c, const char *status, long long before, int limit, job_page *out,
                   kt_error *err);
void job_page_release(job_page *p);
/* Cancels a queued or running job and deletes its pending and running trials (a measurement under
 * way records nothing: trial_store_complete). KT_ERR_NOT_FOUND, or
 * KT_ERR_CONFLICT when the job already ended (message says how). */
int job_store_cancel(PGconn *c, long long id, kt_error *err);
/* {"queued": n, "running": n, ...} with every status present. */
json_t *job_store_status_counts(PGconn *c, kt_error *err);

/* Store side, inside the transaction that records trials (trial_store, import_store): makes the
 * trial the job's best when ktune_improves_best(time_ms, the job's best time) — the one "better
 * than the job's best" condition, defined in sql/003. config_json is the trial's config. A measured
 * trial's completion applies the same rule in SQL (sql/020's ktune_complete_trial). */
int job_store_offer_best(PGconn *c, long long job_id, long long trial_id, double time_ms,
                         const char *config_json, kt_error *err);

/* Records what the driver seeded job id's searcher with (worker/warm_start.c), once: a job whose
 * history_used is set already keeps it (returns 0 either way; *stored says whether this call
 * wrote it). */
int job_store_set_history_used(PGconn *c, long long id, const json_t *used, int *stored,
                               kt_error *err);

/* The target stored with job id (a measurement worker's, an append import's); KT_ERR_NOT_FOUND when
 * there is no such job. The caller releases out with job_target_release. */
int job_store_target(PGconn *c, long long id, job_target *out, kt_error *err);
/* Adds ms (> 0, finite; anything else is ignored) to the job's jobs.device_busy_ms (sql/027: the
 * device's idle share of the job). 0, or -1 with err. */
int job_store_add_device_busy(PGconn *c, long long id, double ms, kt_error *err);
void job_target_release(job_target *t);

/* Poison jobs (sql/015, issue 26): every claim counts a start attempt (jobs.start_attempts); a
 * clean hand-back (job_store_release_mine, job_store_yield, fault_store_release_job) gives it back,
 * and a trial of the job completed (trial_store_complete) brings the count back to 1 (this start):
 * what stays counted are the starts since the job last completed a trial whose process died or
 * stalled (the reaper freed the job). A job at max_attempts (the runner's
 * --job-max-start-attempts, default JOB_MAX_START_ATTEMPTS) is failed instead of resumed. */
#define JOB_MAX_START_ATTEMPTS 3

/* Runner side, before claiming: fails every running job without a runner that used up its
 * max_attempts start attempts (status failed, stop_reason "attempts", error internal with the
 * count and a hint; its pending and running trials deleted). ids (may be NULL) receives up to
 * max_ids of their ids. Returns how many were failed. */
int job_store_fail_exhausted(PGconn *c, int max_attempts, long long *ids, int max_ids,
                             kt_error *err);
/* Claims up to max jobs that are queued, or running without a live runner and with fewer than
 * max_attempts start attempts, counting a start attempt of each; fills rows (caller releases
 * each) and returns how many.
 *
 * Fair shares (issue 26): job slots are shared between callers (jobs.submitter; NULL, jobs made
 * before sql/008, counts as one more caller), across every runner of the database. A caller's turn
 * for its k-th waiting job (oldest first) is k plus the jobs of it that runners drive now (status
 * running with a runner), and the lowest turns are claimed first: the caller with the fewest
 * running jobs goes first, and one caller's many jobs never keep another's first one waiting
 * behind them. */
int job_store_claim(PGconn *c, const runner_identity *me, int max, int max_attempts, job_row *rows,
                    kt_error *err);
/* When a slot is already taken by a caller that holds more of them than one that waits: hands
 * back (runner cleared, status still running, its start attempt given back: the next claim
 * resumes it by replay, like a re-sync) the newest job I drive of the caller that runners drive
 * the most jobs of, when that caller drives at least two more than the caller with the fewest
 * running jobs among those with a job waiting for at least wait_s seconds (a runner with a free
 * slot claims it before). *yielded = the job's id, or 0 when nothing needs to move. Call only with
 * no free slot of mine; the caller closes that job's driver. */
int job_store_yield(PGconn *c, const runner_identity *me, double wait_s, long long *yielded,
                    kt_error *err);
void job_row_release(job_row *r);
/* "running" while this runner drives it; anything else means stop driving it. */
int job_store_status(PGconn *c, long long id, char *status, size_t cap, kt_error *err);
/* 1 when job id is driven by me (jobs.runner = me->id), 0 when not: my lease ran out (a pause
 * longer than --lease-s) and the job was released, maybe claimed by another process; -1 on error.
 */
int job_store_is_mine(PGconn *c, long long id, const runner_identity *me, kt_error *err);
/* Ends a running job driven by me: status "succeeded" or "failed" (error may be NULL); its pending
 * and running trials, if any, are deleted with it. */
int job_store_finish(PGconn *c, const runner_identity *me, long long id, const char *status,
                     const char *stop_reason, const kt_error *error, kt_error *err);
/* External jobs (issue 27) whose harness is away: a running job on device external I drive whose
 * last ask (or start, when it was never asked) is older than JOB_EXTERNAL_IDLE_S is handed back
 * (runner cleared, still running, its start attempt given back) and claimed again only once its
 * harness asks (job_store_claim): an absent harness does not hold a runner's job slot. ids (may be
 * NULL) receives up to max_ids of their ids; returns how many. */
#define JOB_EXTERNAL_IDLE_S     30
#define JOB_EXTERNAL_IDLE_S_SQL "30"
int job_store_release_idle_external(PGconn *c, const runner_identity *me, long long *ids,
                                    int max_ids, kt_error *err);
/* Lets go of every running job I drive (clean shutdown, re-sync): another runner, or my successor,
 * resumes it; the start attempt of each is given back. */
int job_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err);
int job_store_heartbeat(PGconn *c, const runner_identity *me, kt_error *err);
/* Frees running jobs whose runner is gone: stale heartbeat (older than stale_s), or a runner on my
 * host whose pid is not alive. Returns how many were freed. */
int job_store_release_dead(PGconn *c, const runner_identity *me, int stale_s, kt_error *err);

/* The load of the queue, for admission (api/tune.c): jobs queued, and the evaluations queued
 * and running jobs may still make: the smaller of budget and space size, less trials done; a job
 * with only a seconds budget counts as JOB_SECONDS_ONLY_EVALUATIONS (at most its space size). */
#define JOB_SECONDS_ONLY_EVALUATIONS     1000
#define JOB_SECONDS_ONLY_EVALUATIONS_SQL "1000"
int job_store_queue_load(PGconn *c, long long *queued_jobs, long long *pending_evaluations,
                         kt_error *err);

#endif
