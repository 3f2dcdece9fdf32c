/* store/ask_store — the trials of external jobs (issue 27) leased to a caller's harness: ask
 * leases a job's pending trials (or those whose lease ran out) in seq order, tell records their
 * results through the same completion as measured trials (sql/020's ktune_complete_trial, as
 * trial_store_complete: counters, clock, job best, best table, pg_notify). A leased trial is
 * 'running' under the worker ASK_STORE_WORKER with trials.lease_expires_at set (sql/016); the
 * reaper never requeues it, its lease's end does (the next ask offers it again).
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

/* Leases up to n open trials of job_id for lease_s seconds and records the ask (jobs.last_ask_at,
 * to the second: a job row is written at most once a second by its asks) when the job is
 * external. Returns {"job_status", "device", "trials": [{"id", "seq", "config",
 * "lease_s", "lease_expires_at"}]} (the trials only when the job is on device external and
 * running); KT_ERR_NOT_FOUND when there is no such job. */
json_t *ask_store_lease(PGconn *c, long long job_id, int n, int lease_s, kt_error *err);

/* Records one tell of job_id: the results res[0..n) of trials ids[0..n) (distinct), in one round
 * trip and one transaction (sql/020's ktune_tell). Returns {"job_status", "device", "batch_size",
 * "checks": [[status name or null (no such trial), another job's (true) or null]] (before
 * anything is recorded, in ids' order), "outcomes": ["recorded" | "duplicate" | "lost"] in ids'
 * order, or null when nothing was recorded because the tell is refused (the job is not on device
 * external; a trial is another job's, or, the job running, no trial at all), "open": true when a
 * trial was recorded, the job's batch is larger than 1 and some trial of it is still pending or
 * running (the driver need not step yet)}; KT_ERR_NOT_FOUND when there is no such job. */
json_t *ask_store_tell(PGconn *c, long long job_id, const long long *ids, const trial_result *res,
                       int n, kt_error *err);

#endif
