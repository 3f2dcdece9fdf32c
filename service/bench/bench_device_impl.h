/* bench/bench_device_impl — internal to the device mode of `ktune bench` (no header outside
 * bench/ includes it): the state shared by one bench (the target, backend and measurement cache,
 * all borrowed) and the record of one (strategy, seed) run, which bench_device.c fills and
 * bench_device_summary.c summarises. Types only.
 *
 * Lifecycle of a run record: bench_device.c's run_one fills it (freeing it itself on failure) ->
 * bench_device_summary_json reads it -> freed by bench_device.c. */
#ifndef KT_BENCH_DEVICE_IMPL_H
#define KT_BENCH_DEVICE_IMPL_H

#include <stdio.h>

#include "catalog/catalog.h"
#include "core/trial.h"
#include "measure/backend.h"
#include "bench/bench_mcache.h"

typedef struct bench_device_ctx {
    const target *target;
    backend *backend;
    bench_mcache *cache;
    int budget, batch, progress_every;
    double flops; /* per kernel call, from the spec; 0 when unknown */
    double t0;    /* start of the bench (monotonic seconds) */
    FILE *progress;
} bench_device_ctx;

typedef struct bench_device_run_state {
    int seed;
    int evals;         /* distinct evaluations made */
    int proposals;     /* configurations asked for */
    int stopped_early; /* the searcher had nothing more to propose */
    int measured, cached;
    int statuses[TRIAL__STATUS_COUNT];
    double best_ms; /* INFINITY while nothing ran ok */
    config_id best_id;
    int best_eval;        /* 1-based evaluation that found best_ms */
    double *best_so_far;  /* [budget], carried forward past evals */
    config_id *trial_ids; /* [evals] in evaluation order */
    trial_status *trial_status;
    double *trial_ms; /* NAN unless ok */
    unsigned char *trial_cached;
    double wall_s;          /* the whole run */
    double measure_wall_s;  /* inside backend_measure, for the measurements taken */
    double eval_wall_max_s; /* the longest of those */
    double overhead_s;      /* inside searcher_ask + searcher_tell */
} bench_device_run_state;

#endif
