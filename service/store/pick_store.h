/* store/pick_store — the final pick's side of the trials and jobs tables (issue 12, sql/012): the
 * re-measurements of a job's fastest configurations are trials with final_round set (1..rounds),
 * numbered by seq after the search's last trial; the pick's outcome is written to the job (its
 * best and jobs.final_pick) and offered to the best table in one transaction. Which trials are
 * re-measured and who wins is decided by worker/final_pick.h; measuring them is the measurers'
 * ordinary claim / complete (store/trial_store.h), which counts a re-measurement in the job's clock
 * but not in trials_done and offers it to no best.
 *
 * Connections come from the caller; arrays returned are malloc'd (the caller frees them). */
#ifndef KT_STORE_PICK_STORE_H
#define KT_STORE_PICK_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "core/trial.h"
#include "space/space.h"
#include "store/job_store.h"

/* The final pick's columns of a jobs row aliased j, for job_store's reads (job_store_get,
 * job_store_list), read by name with pick_store_read_job: how many re-measured and how many
 * rounds, the recorded pick, and while it is not recorded how many re-measurements are done (they
 * are few: at most 8 x 16). */
#define PICK_JOB_COLUMNS                                                                           \
    "j.final_remeasure AS final_remeasure, j.final_rounds AS final_rounds, j.final_pick AS"        \
    " final_pick, CASE WHEN j.final_remeasure > 0 AND j.final_pick IS NULL THEN (SELECT count(*)"  \
    " FROM trials ft WHERE ft.job_id = j.id AND ft.final_round IS NOT NULL AND ft.done_seq IS NOT" \
    " NULL) ELSE 0 END AS final_measured"

/* Fills j's final_* fields from the PICK_JOB_COLUMNS of row r (absent columns leave zeros and
 * NULL); final_pick is a new reference job_info_release drops. */
void pick_store_read_job(const PGresult *r, int row, job_info *j);

/* A trial of a job as the pick reads it. */
typedef struct pick_trial {
    long long id;
    int seq;
    config_id cid;
    int round; /* trials.final_round: 0 for a trial of the search */
    trial_status status;
    double time_ms; /* NAN unless ok */
} pick_trial;

/* The job's trials of the search (remeasures 0) or its re-measurements (1), in seq order. */
int pick_store_load(PGconn *c, long long job_id, int remeasures, pick_trial **out, int *n,
                    kt_error *err);

/* Inserts n re-measurements as pending trials numbered first_seq, first_seq + 1, ... in the order
 * given: cids[i] in round rounds[i] (>= 1), configs[i] its JSON object. Rows that exist already
 * (same job and seq) are left as they are: inserting again after a crash is harmless. */
int pick_store_insert(PGconn *c, long long job_id, const char *device, int first_seq,
                      const config_id *cids, const int *rounds, json_t *const *configs, int n,
                      kt_error *err);

/* Records the pick of a running job driven by me: jobs.final_pick = pick; with a winner
 * (winner_trial_id > 0, a re-measurement of the job) the job's best becomes that trial (its time
 * and config, whatever the best was) and the trial is offered to the best table
 * (best_store_offer: it replaces a measured entry when strictly faster); without one the job's
 * best, if any, is offered instead (what a job without re-measurement would have offered). Returns
 * 1, or 0 when the job is no longer running under me (nothing written). */
int pick_store_record(PGconn *c, const runner_identity *me, long long job_id,
                      long long winner_trial_id, const json_t *pick, kt_error *err);

#endif
