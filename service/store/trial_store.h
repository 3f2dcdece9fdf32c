/* store/trial_store — the trials table: the runner inserts proposed configurations as pending
 * trials and reads a job's trials back (for resume); measurement workers claim pending trials with
 * FOR UPDATE SKIP LOCKED and complete them in one transaction that also advances the job's counters
 * and offers an improving result to the best table. Connections come from the caller; rows the
 * caller owns are released with trial_row_release. */
#ifndef KT_STORE_TRIAL_STORE_H
#define KT_STORE_TRIAL_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "core/trial.h"
#include "space/space.h"

typedef struct trial_row {
    int seq;
    config_id cid;
    trial_result result; /* status pending/running while unfinished */
    double
        charged_seconds; /* as stored when it finished (trial_cost_seconds); 0 while unfinished */
} trial_row;

/* A trial a worker holds. */
typedef struct trial_claim {
    long long id;
    long long job_id;
    config_id cid;
    char device[256];
    /* When it was claimed (issue 32, early stop): its job's best time, that best trial's fastest
     * repeat (extras.min_ms) and noise_cv (each NAN: none yet, a metric job's, or not recorded),
     * and whether the trial is a final pick's re-measurement (never cut short). */
    double job_best_ms, job_best_min_ms, job_best_cv;
    int final_round;
} trial_claim;

/* Inserts configs as pending trials numbered first_seq, first_seq+1, ...; rows that already exist
 * (same job and seq) are left as they are, so re-inserting a batch after a crash is harmless.
 * configs[i] is the JSON object of ids[i]. */
int trial_store_insert_batch(PGconn *c, long long job_id, const char *device, int first_seq,
                             const config_id *ids, json_t *const *configs, int n, kt_error *err);
/* Trials of the job's search (not the final pick's re-measurements: store/pick_store.h) with
 * seq > after_seq in seq order; *out is malloc'd (release each row, then free). */
int trial_store_load(PGconn *c, long long job_id, int after_seq, trial_row **out, int *n,
                     kt_error *err);
/* The driver's step (worker/job_driver.c): job_store_status, job_store_is_mine and trial_store_load
 * in one statement and one snapshot (a round trip less per step, which the ask/tell round trip of
 * issue 27 feels): status (cap bytes) and mine (jobs.runner = runner) of the job, and its search's
 * trials with seq > after_seq as trial_store_load gives them. KT_ERR_NOT_FOUND when there is no
 * such job. */
int trial_store_load_driving(PGconn *c, long long job_id, const char *runner, int after_seq,
                             char *status, size_t cap, int *mine, trial_row **out, int *n,
                             kt_error *err);
void trial_row_release(trial_row *r);

/* The devices a worker serves: names[i] of class classes[i] built by toolchains[i] (borrowed). */
typedef struct trial_claim_devices {
    const char *const *names;
    const char *const *classes;
    const char *const *toolchains;
    int n;
} trial_claim_devices;

/* Worker side: claims the oldest pending trial whose job's (device, device_class, toolchain) is
 * one of devices'; returns 1 (claimed), 0 (none). The claim carries the job's best as it stands
 * (a time job's: best_time_ms, and its trial's extras.min_ms and noise_cv) in the same statement.
 */
int trial_store_claim(PGconn *c, const char *worker, const trial_claim_devices *devices,
                      trial_claim *out, kt_error *err);
/* Stores the result of a claimed trial with its charge (trial_cost_seconds, computed here once),
 * in one round trip (sql/020's ktune_complete_trial as sql/023 wrote it again, its own
 * transaction); in the same transaction counts it in its job (trials_done, and the charge added to
 * the job's clock), offers it to the job's best and to the best table (the rules of
 * job_store_offer_best and of best_store_offer for a measurement, written again in SQL there:
 * change them together; a job with final_remeasure > 0 offers the best table only its final pick,
 * and a re-measurement, trials.final_round set, is added to the clock only: not to trials_done, to
 * no best; the /v1/best cache hears of a change through sql/007's trigger on the best table).
 * Returns 1, or 0 when the claim was lost: the trial was requeued meanwhile, or its job no longer
 * runs (cancelled or ended; the trial deleted by job_store_cancel / job_store_finish, or deleted
 * here): then nothing is recorded, the job's counters, clock and best are unchanged. The claim
 * holds only while the trial is 'running' under worker, the id that claimed it: a worker whose
 * lease ran out (the trial handed back, perhaps claimed and measured by another) records nothing
 * and counts nothing. */
int trial_store_complete(PGconn *c, const trial_claim *claim, const char *worker,
                         const trial_result *r, kt_error *err);
/* A long measurement's check: 1 while the trial is still running under worker and its job running,
 * 0 when not (the job cancelled or ended, the trial requeued or deleted), -1 on a database error.
 */
int trial_store_claim_live(PGconn *c, const trial_claim *claim, const char *worker, kt_error *err);
/* Lets go of a claimed trial whose measurement was given up: deleted when its job no longer runs,
 * else handed back as pending (another measurement takes it). Nothing is recorded in the job.
 * Returns 1 when the trial was deleted or handed back, 0 when the claim was already lost. */
int trial_store_release(PGconn *c, const trial_claim *claim, const char *worker, kt_error *err);

/* API: {"trials":[...], "next_after": N, "job_status": s} — finished trials with done_seq > after,
 * in finishing order, at most limit. KT_ERR_NOT_FOUND when the job does not exist. */
json_t *trial_store_list_json(PGconn *c, long long job_id, long long after, int limit,
                              kt_error *err);
/* API (?trial=ID, issue 31: a best entry's link opens the trial that measured it): the same page
 * holding the job's finished trial of that id, or none ("trials" [], next_after 0). */
json_t *trial_store_get_json(PGconn *c, long long job_id, long long trial_id, kt_error *err);
/* API, compact (?format=compact): the same page as trial_store_list_json as JSON text
 * {"job_id", "job_status", "format": "compact", "fields": [...], "rows": [[seq, done_seq,
 * config_id, status, time_ms, compile_ms, measure_ms, finished_at, config, metrics, final_round,
 * gflops], ...], "next_after"} with finished_at in Unix seconds and time_ms null unless ok;
 * metrics is extras.metrics, final_round null for the search's trials, gflops the runner's
 * extras.gflops (null unless a number). Written straight from the query's
 * text cells, without a JSON tree, so a 100,000-row page costs one pass. A page stops early at
 * TRIAL_PAGE_MAX_BYTES; next_after then points after the last row it holds. *text is malloc'd
 * (the caller frees); KT_ERR_NOT_FOUND when the job does not exist. */
#define TRIAL_PAGE_MAX_BYTES (48 * 1024 * 1024)
int trial_store_list_compact(PGconn *c, long long job_id, long long after, int limit, char **text,
                             kt_error *err);
/* {"measured": n, "measure_seconds": s} over all finished trials (for /metrics): s sums their
 * charged_seconds. */
json_t *trial_store_totals(PGconn *c, kt_error *err);

#endif
