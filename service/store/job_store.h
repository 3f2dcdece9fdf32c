/* store/job_store — the jobs table: creation and reads for the API, claiming, heart-beating and
 * finishing for the job runner. Every function takes a connection the caller acquired from the pool
 * and returns -1 / NULL with err set on failure. JSON results are new references the caller
 * decrefs; job_row fields are owned by the row (job_row_release). */
#ifndef KT_STORE_JOB_STORE_H
#define KT_STORE_JOB_STORE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "core/error.h"

typedef struct job_spec {
    const char *kernel, *device, *device_class, *kernel_hash;
    const json_t *problem;
    const char *problem_key;
    const char *strategy;
    const json_t *options; /* object, may be empty */
    uint64_t seed;
    long long budget_evaluations; /* 0 = no limit on evaluations */
    double budget_seconds;        /* 0 = no limit on time */
    int batch_size;
    uint64_t space_size;
} job_spec;

/* What the runner needs to drive a job. */
typedef struct job_row {
    long long id;
    char *kernel, *device, *kernel_hash, *strategy;
    json_t *problem, *options;
    uint64_t seed;
    long long budget_evaluations;
    double budget_seconds;
    int batch_size;
} job_row;

/* Identity of the process driving jobs. */
typedef struct runner_identity {
    const char *id; /* "<host>:<pid>:<start>" */
    const char *host;
    int pid;
} runner_identity;

int job_store_create(PGconn *c, const job_spec *spec, long long *id_out, kt_error *err);
/* The API's view of one job; KT_ERR_NOT_FOUND when absent. */
json_t *job_store_get_json(PGconn *c, long long id, kt_error *err);
/* {"jobs":[...], "next_before": id or null}: newest first, ids below before (0 = from the newest),
 * optionally one status. */
json_t *job_store_list_json(PGconn *c, const char *status, long long before, int limit,
                            kt_error *err);
/* Cancels a queued or running job and deletes its pending trials. KT_ERR_NOT_FOUND, or
 * KT_ERR_CONFLICT when the job already ended (message says how). */
int job_store_cancel(PGconn *c, long long id, kt_error *err);
/* {"queued": n, "running": n, ...} with every status present. */
json_t *job_store_status_counts(PGconn *c, kt_error *err);

/* What a measurement worker needs to know of a job: kernel, device and problem (new reference). */
int job_store_target(PGconn *c, long long id, char *kernel, size_t kcap, char *device, size_t dcap,
                     json_t **problem, kt_error *err);

/* Runner side. Claims up to max jobs that are queued, or running without a live runner; fills rows
 * (caller releases each) and returns how many. */
int job_store_claim(PGconn *c, const runner_identity *me, int max, job_row *rows, kt_error *err);
void job_row_release(job_row *r);
/* "running" while this runner drives it; anything else means stop driving it. */
int job_store_status(PGconn *c, long long id, char *status, size_t cap, kt_error *err);
/* Ends a running job driven by me: status "succeeded" or "failed" (error may be NULL). */
int job_store_finish(PGconn *c, const runner_identity *me, long long id, const char *status,
                     const char *stop_reason, const kt_error *error, kt_error *err);
/* Lets go of every running job I drive (clean shutdown): another runner, or my successor, resumes
 * it. */
int job_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err);
int job_store_heartbeat(PGconn *c, const runner_identity *me, kt_error *err);
/* Frees running jobs whose runner is gone: stale heartbeat (older than stale_s), or a runner on my
 * host whose pid is not alive. Returns how many were freed. */
int job_store_release_dead(PGconn *c, const runner_identity *me, int stale_s, kt_error *err);

#endif
