/* worker/final_pick — the final pick of a job on a real device (issue 12), as pure functions: which
 * configurations are re-measured, in which order, and which one wins. No database, no clock: the
 * driver (worker/job_driver.c) loads the trials and stores the outcome (store/pick_store.h).
 *
 * Why: a search keeps the configuration whose one measurement was fastest, and under noise the
 * fastest of many single measurements is biased low (the winner's curse): the job would report a
 * lucky time and perhaps a lucky configuration. So once the budget is spent, the `count` fastest
 * distinct ok configurations are measured again, interleaved (round r measures them all, each
 * round in a rotated order: A B C, B C A, C A B, ... so that no configuration always comes first
 * after another kernel), and the winner is the one whose re-measurements have the lowest median.
 * The search's own times are not used for the choice: they are the biased sample.
 *
 * Rules (final_pick_choose):
 * - a candidate qualifies only when every one of its re-measurements is ok: a configuration that
 *   failed once when measured again (timeout, runtime_error, wrong_result...) is not served;
 * - its median is the lower median of its times (the ceil(n/2)-th smallest), so it is always one
 *   measured trial's time, and that trial becomes the job's best (time and trial agree);
 * - the lowest median wins; equal medians go to the candidate ranked first by the search (the
 *   faster search time, then the earlier trial);
 * - no candidate qualifies: no winner (the job keeps the search's best).
 * A search trial stopped early (issue 32: clearly slower than the job's best, fewer repeats,
 * extras.early_stopped) may be a candidate when the job has few ok trials; its re-measurements run
 * the full count (the measurer sends no early stop for a final round), so the winner's time is
 * always a full measurement, and an early-stopped trial is never the search's best.
 *
 * Ownership: every array is the caller's; nothing is allocated here but final_pick_json's result
 * (a new reference the caller decrefs). */
#ifndef KT_WORKER_FINAL_PICK_H
#define KT_WORKER_FINAL_PICK_H

#include <jansson.h>

#include "core/trial.h"
#include "space/space.h"

#define FINAL_PICK_MAX_COUNT      8  /* "final_remeasure" of POST /v1/tune: 0..8 */
#define FINAL_PICK_MAX_ROUNDS     16 /* "final_rounds": 1..16 */
#define FINAL_PICK_DEFAULT_COUNT  3  /* on cpu and cuda devices; replay devices: 0 */
#define FINAL_PICK_DEFAULT_ROUNDS 5

/* A search trial, as the pick sees it. */
typedef struct final_trial {
    long long trial_id;
    int seq;
    config_id cid;
    trial_status status;
    double time_ms;
} final_trial;

/* A configuration chosen for re-measurement: its search trial. */
typedef struct final_candidate {
    long long search_trial_id;
    int search_seq;
    config_id cid;
    double search_ms;
} final_candidate;

/* A re-measurement: of candidate (an index into the candidates), in round 1..rounds. */
typedef struct final_sample {
    int candidate;
    int round;
    long long trial_id;
    trial_status status;
    double time_ms;
} final_sample;

/* Per candidate, what its re-measurements said. */
typedef struct final_score {
    int measured;                     /* re-measurements with a final status */
    int ok;                           /* of them ok with a finite time */
    int qualified;                    /* ok == rounds */
    double median_ms, min_ms, max_ms; /* over the ok times; NAN when none */
    long long median_trial_id;        /* the trial whose time is median_ms; 0 when none */
} final_score;

typedef struct final_outcome {
    int winner; /* index of the winning candidate, -1 when none qualified */
    final_score scores[FINAL_PICK_MAX_COUNT];
} final_outcome;

/* The up to max fastest ok trials (finite time) of rows (n, any order), fastest first; ties by seq.
 * Returns how many were written to out (capacity max, max <= FINAL_PICK_MAX_COUNT). Trials are
 * distinct configurations (a job measures each once in its search). */
int final_pick_candidates(const final_trial *rows, int n, int max, final_candidate *out);

/* The re-measurement order for n_cand candidates over rounds rounds: n_cand * rounds entries,
 * round-major; entry k is candidate order_cand[k] in round order_round[k]. Round r (1-based) starts
 * at candidate (r - 1) mod n_cand. The driver inserts the re-measurements in this order, and
 * measurement threads claim pending trials oldest first, so they run in it. */
void final_pick_order(int n_cand, int rounds, int *order_cand, int *order_round);

/* Chooses the winner (rules above) from the samples (n_s, any order, unfinished ones allowed and
 * counted as not measured) of n_cand candidates re-measured rounds times. Returns the winner index
 * or -1; out is filled either way. */
int final_pick_choose(const final_candidate *cands, int n_cand, const final_sample *samples,
                      int n_s, int rounds, final_outcome *out);

/* The record stored in jobs.final_pick and shown by GET /v1/jobs/{id}: {"rounds", "candidates":
 * [{"config_id", "search_trial_id", "search_ms", "times_ms": [by round, null when not ok],
 * "statuses": [...], "ok", "median_ms", "min_ms", "max_ms", "spread", "qualified"}], "winner":
 * index or null, "winner_trial_id", "winner_config_id"}. spread = (max - min) / median. NULL when
 * out of memory. */
json_t *final_pick_json(const final_candidate *cands, int n_cand, const final_sample *samples,
                        int n_s, int rounds, const final_outcome *o);

#endif
