/* api/job_view — a job as the API shows it (GET /v1/jobs/{id}, the pages of GET /v1/jobs, the
 * replies of POST /v1/tune, DELETE /v1/jobs/{id} and POST /v1/imports): the row the store reads
 * (store/job_store.h job_info) plus what is presentation — the budget and progress objects, the
 * progress fraction, the best as an object or null, and the /v1/jobs/{id} links. Numbers keep the
 * JSON types the replies have always had (an integral double such as 30.0 is written 30, as
 * PostgreSQL wrote it when the store built this document). Internal to api/.
 *
 * Every function returns a new reference (the caller decrefs) or NULL with err set. */
#ifndef KT_API_JOB_VIEW_H
#define KT_API_JOB_VIEW_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "store/job_store.h"

/* The job document of j. */
json_t *job_view_json(const job_info *j, kt_error *err);
/* The share of the job's wall time (elapsed_seconds: started_at to finished_at or now) in which
 * its device measured none of its trials (issue 32): 1 - device_busy_ms / wall time, clamped to
 * 0..1 (a job measured by two hosts' devices at once could exceed its wall time); NAN when the
 * job has no busy time recorded (not a real device, nothing measured) or has not started. The
 * document's timings.device_idle_share. */
double job_view_idle_share(const job_info *j);
/* {"jobs": [...], "next_before": id or null}. */
json_t *job_view_page_json(const job_page *p, kt_error *err);
/* job_store_get then job_view_json; KT_ERR_NOT_FOUND when the job does not exist. */
json_t *job_view_get(PGconn *c, long long id, kt_error *err);

#endif
