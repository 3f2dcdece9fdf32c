/* worker/job_driver — drives one job: its searcher proposes a batch, the batch becomes pending
 * trials, and once every trial of the batch has a final status the results are told back and the
 * next batch is asked for, until the budget is spent or the searcher has nothing left. Opening a
 * job replays its stored trials through a fresh searcher in the same batches, which restores the
 * searcher's state exactly: a job resumed after a crash measures no configuration twice and loses
 * none.
 *
 * When the search of a job with final_remeasure > 0 is over and a trial is ok, the driver queues
 * the final pick's re-measurements (trials numbered after the search's, final_round set: they are
 * not told to the searcher and not counted as evaluations), waits for them like a batch, records
 * the winner by their median (store/pick_store.h) and only then ends the job. A job resumed in
 * that phase replays its search, computes the same candidates from the stored trials, finds its
 * re-measurements stored (inserting them again is harmless) and checks them against the order.
 *
 * Lifecycle: job_driver_open (takes over row) -> job_driver_step* -> job_driver_close. */
#ifndef KT_WORKER_JOB_DRIVER_H
#define KT_WORKER_JOB_DRIVER_H

#include <libpq-fe.h>

#include "catalog/catalog.h"
#include "search/searcher.h"
#include "model/surrogate.h"
#include "store/job_store.h"
#include "worker/final_pick.h"
#include "training/model_cache.h"
#include "worker/target_cache.h"

typedef enum { JOB_DRIVER_WAITING = 0, JOB_DRIVER_QUEUED, JOB_DRIVER_ENDED } job_driver_state;

/* The oracle's argument (searcher_set_oracle), on the heap: drivers move in the runner's array. */
typedef struct job_oracle {
    const catalog *cat;
    const target *target;
} job_oracle;

typedef struct job_driver {
    job_row row;
    target_cache *targets;
    const target *target; /* the job's, from targets (one per job per process) */
    searcher *search;
    job_oracle *oracle;     /* owned: the device's quick validity check for the searcher */
    surrogate *surrogate;   /* owned: the job's surrogate (strategies that need one), else NULL */
    long long surrogate_id; /* its model id (jobs.surrogate_model_id), 0 when none */
    const runner_identity *me;
    long long told; /* trials told to the searcher: seqs 1..told */
    /* The job clock as of the told trials (seqs 1..told): the sum of their charged_seconds as
     * stored (trial_store_load). The database owns the clock (jobs.clock_seconds: the same sum over
     * every finished trial); the driver needs it as of the batch boundary it is at, which differs
     * from the row while a resumed job replays trials past that boundary. */
    double clock_seconds;
    long long told_by_status[TRIAL__STATUS_COUNT]; /* the told trials (seqs 1..told) per status */
    /* A metric objective (core/objective.h): told ok trials with a value of the metric, and ok
     * trials without one (told to the searcher as failures). */
    long long told_valued, told_unvalued;
    config_id *batch; /* the batch asked for and not yet told */
    int batch_n;
    int batch_inserted;
    int ended;
    /* The final pick (worker/final_pick.h): once the search is over, a job with final_remeasure > 0
     * and an ok trial re-measures its candidates before it ends with final_reason. */
    int final_phase;
    const char *final_reason; /* the search's stop reason (a literal) */
    final_candidate cands[FINAL_PICK_MAX_COUNT];
    int n_cand;
} job_driver;

/* Opens the job (row is moved into the driver): its stored target through targets (shared with the
 * measurers, held until job_driver_close), then replays its trials and queues the next batch. A job
 * that ends (budget spent, space exhausted, strategy finished) succeeds when at least one of its
 * trials is ok; with none ok it fails (stop_reason "no_ok_trial", error KT_ERR_MEASURE counting the
 * statuses), never succeeds without a best. A job
 * that cannot be driven (its kernel changed: kernel_changed; its device's toolchain changed:
 * toolchain_changed; its kernel or device vanished: target_unavailable; its strategy options are
 * refused; the replay diverged) is ended as failed in the database and the driver comes back ended.
 * A job with history "auto" opened for the first time gathers its warm start
 * (worker/warm_start.h), with models' prediction for the target when models is not NULL.
 * Every searcher gets the device's quick validity check as its oracle (backend_quick_check on the
 * job's target: the accel cost model's limits; -1, unknown, elsewhere). A strategy that needs a
 * surrogate (searcher_needs_surrogate: mindmap) gets the job's surrogate model
 * (model_store_job_model: the newest ready one of the key, recorded with the job on the first open
 * and the same one on every resume), loaded from its bytes for this driver alone (its scratch is
 * the searcher's); with none ready the job fails (stop_reason "no_model", error no_model with the
 * request that trains one), and one that does not load or fit the space fails as
 * "strategy_refused".
 * Returns -1 only on database errors (the job is left for a later attempt). */
int job_driver_open(job_driver *d, job_row *row, const catalog *cat, target_cache *targets,
                    model_cache *models, const runner_identity *me, PGconn *c, kt_error *err);
/* Advances the job if its batch has finished. Returns a job_driver_state, or -1 on database errors.
 */
int job_driver_step(job_driver *d, PGconn *c, kt_error *err);
void job_driver_close(job_driver *d);

#endif
