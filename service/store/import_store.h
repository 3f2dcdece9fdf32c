/* store/import_store — results measured elsewhere (a Kernel Tuner cache, a T4 results file, a ktune
 * export) recorded as a finished job: strategy "import", status "succeeded", stop_reason
 * "imported". Its trials are final from the start (no worker ever sees them), count in the job's
 * progress, best and clock like measured ones, and the best of them is offered to the best table.
 *
 * A large file is sent in several requests: the first creates the job, the next ones append to it
 * (job_id given). Each call is one transaction. The trials must already be validated against the
 * target's space by the caller (api/import.c): this room stores, it does not judge.
 *
 * Call order: db_acquire -> import_store_add -> db_release. Nothing is owned across the call. */
#ifndef KT_STORE_IMPORT_STORE_H
#define KT_STORE_IMPORT_STORE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "core/error.h"
#include "core/target_key.h"

/* Where a new import job belongs (ignored when appending). */
typedef struct import_target {
    target_key key;        /* as catalog_resolve gave it (borrowed) */
    const json_t *problem; /* the canonical problem */
    const char *source;    /* "kerneltuner", "t4", ... recorded as strategy_options.source */
    uint64_t space_size;
    int replace_measured; /* the best of these trials may replace a measured best entry (admin) */
    /* A new job only: its trials count as measurements (admin; replace_measured implies it),
     * recorded as "trusted": true in the job's strategy_options. An untrusted import's trials feed
     * nothing but a plain GET /v1/best, where they answer "imported": not source=measured, the
     * nearest fallback, models or warm starts (STORE_MEASURED_JOB, store_util.h). */
    int trusted;
    const json_t *space; /* an external target's inline space (jobs.space, sql/016), else NULL */
} import_target;

typedef struct import_counts {
    long long inserted;   /* trials stored by this call */
    long long duplicates; /* trials skipped: their configuration was already in the job */
} import_counts;

/* trials: JSON array of validated objects {"config_id", "config", "status", "time_ms" (null unless
 * ok), "repeats", "compile_ms", "measure_ms", "noise_cv"}. With *job_id == 0 creates the job
 * (trusted when t->trusted or t->replace_measured) and sets *job_id; else appends to that job,
 * which must be an import job (KT_ERR_NOT_FOUND, KT_ERR_CONFLICT otherwise; KT_ERR_CONFLICT too
 * for replace_measured on a job that is not trusted: its trials must not hide a measurement).
 * A configuration already in the job is skipped and counted. */
int import_store_add(PGconn *c, const import_target *t, const json_t *trials, long long *job_id,
                     import_counts *counts, kt_error *err);

typedef struct import_removed {
    long long trials;        /* the job's trials, removed with it */
    long long best_removed;  /* best entries that named the job */
    long long best_restored; /* of those keys, how many got another job's best trial back */
} import_removed;

/* Removes import job job_id, its trials and its best entries (best_store_forget_job puts back the
 * next best trial of each key), in one transaction. KT_ERR_NOT_FOUND when there is no such job,
 * KT_ERR_CONFLICT when it is a tuning job. */
int import_store_remove(PGconn *c, long long job_id, import_removed *out, kt_error *err);

#endif
