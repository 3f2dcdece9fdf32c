/* store/ask_store — the trials of external jobs (issue 27) leased to a caller's harness: ask
 * leases a job's pending trials (or those whose lease ran out) in seq order, tell records their
 * results through the same completion as measured trials (trial_store_complete: counters, clock,
 * job best, best table, pg_notify). A leased trial is 'running' under the worker ASK_STORE_WORKER
 * with trials.lease_expires_at set (sql/016); the reaper never requeues it, its lease's end does
 * (the next ask offers it again).
 *
 * Tell semantics (documented in api/README.md): a trial's first result wins, whoever holds its
 * lease now (a tell names only the trial id, so the holder before an expiry and the one after are
 * the same to the store): a result for a trial that is running or was handed back to pending by an
 * expired lease is recorded; one for a trial already final is a duplicate (nothing changes); one
 * for a job that no longer runs is lost (nothing recorded).
 *
 * Connections come from the caller; JSON is a new reference the caller decrefs. */
#ifndef KT_STORE_ASK_STORE_H
#define KT_STORE_ASK_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "core/trial.h"

#define ASK_STORE_WORKER "harness" /* trials.worker of a leased trial */

/* Leases up to n open trials of job_id for lease_s seconds and records the ask (jobs.last_ask_at)
 * when the job is external. Returns {"job_status", "device", "trials": [{"id", "seq", "config",
 * "lease_s", "lease_expires_at"}]} (the trials only when the job is on device external and
 * running); KT_ERR_NOT_FOUND when there is no such job. */
json_t *ask_store_lease(PGconn *c, long long job_id, int n, int lease_s, kt_error *err);

typedef enum { ASK_TOLD_RECORDED = 0, ASK_TOLD_DUPLICATE, ASK_TOLD_LOST } ask_told;

/* The state of trials ids[0..n) of job_id, before anything is recorded: status[i] the trial's
 * status name (caller's buffers of 16 bytes), "" when there is no such trial; other_job[i] 1 when
 * it belongs to another job. job_status and device (ASK_STORE_TEXT bytes each) the job's;
 * KT_ERR_NOT_FOUND when there is no such job. */
#define ASK_STORE_TEXT 256
int ask_store_check(PGconn *c, long long job_id, const long long *ids, int n, char (*status)[16],
                    int *other_job, char *job_status, char *device, kt_error *err);
/* Records the result r of trial id of job_id (checked by ask_store_check: a trial of that job;
 * pending: it was pending then, its lease ran out). Returns an ask_told, or -1 with err. */
int ask_store_tell(PGconn *c, long long job_id, long long id, int pending, const trial_result *r,
                   kt_error *err);

#endif
