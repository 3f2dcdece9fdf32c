/* bench/device/bench_device_impl — internal to the device mode of `ktune bench` (no header outside
 * bench/ includes it): the state shared by one bench (the target, backend and measurement cache,
 * all borrowed) and the record of one (strategy, seed) run, which bench_device.c fills and
 * bench_device_summary.c summarises. Types only.
 *
 * Lifecycle of a run record: bench_device.c's run_one fills it (freeing it itself on failure) ->
 * bench_device_summary_json reads it -> freed by bench_device.c. */
#ifndef KT_BENCH_DEVICE_IMPL_H
#define KT_BENCH_DEVICE_IMPL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "catalog/catalog.h"
#include "core/trial.h"
#include "measure/backend.h"
#include "bench/bench_mcache.h"

/* One row of the report: a strategy with its options (resolved: "start": "default" replaced by
 * the variant's default configuration). Plain --strategies rows have options NULL. */
typedef struct bench_device_row {
    const char *label;    /* borrowed from the options */
    const char *strategy; /* borrowed from the options */
    json_t *options;      /* owned; NULL: the strategy's defaults */
} bench_device_row;

typedef struct bench_device_ctx {
    const target *target;
    backend *backend;
    bench_mcache *cache;
    const bench_device_row *rows; /* [n_rows]: strategies, then variants */
    int n_rows, seeds;
    int budget, batch, progress_every;
    double time_budget_s; /* 0: none */
    double flops;         /* per kernel call, from the spec; 0 when unknown */
    double t0;            /* start of the bench (monotonic seconds) */
    FILE *progress;
} bench_device_ctx;

/* One evaluation of a run. Times are seconds since the run's start: wall_s on this run's real
 * clock, clock_s on the modelled tuning clock (the cost_s of every evaluation so far plus the
 * searcher's ask and tell time), when the result was known. */
typedef struct bench_device_trial {
    config_id id;
    trial_status status;
    int cached;
    double ms;      /* NAN unless ok */
    double best_ms; /* the run's best so far, this one included; INFINITY before the first ok */
    double wall_s, clock_s;
    double cost_s; /* compile + measurement time the backend reported when it was measured */
} bench_device_trial;

typedef struct bench_device_run_state {
    int seed;
    int evals;           /* distinct evaluations made */
    int proposals;       /* configurations asked for */
    int stopped_early;   /* the searcher had nothing more to propose */
    int stopped_by_time; /* the modelled clock passed --time-budget */
    int measured, cached;
    int statuses[TRIAL__STATUS_COUNT];
    double best_ms; /* INFINITY while nothing ran ok */
    config_id best_id;
    int best_eval;              /* 1-based evaluation that found best_ms */
    bench_device_trial *trials; /* [evals] in evaluation order */
    size_t trials_cap;
    double wall_s;          /* the whole run */
    double clock_s;         /* the modelled clock at the end: clock_measure_s + overhead_s */
    double clock_measure_s; /* the sum of the evaluations' cost_s */
    double measure_wall_s;  /* inside backend_measure, for the measurements taken */
    double eval_wall_max_s; /* the longest of those */
    double overhead_s;      /* inside searcher_ask + searcher_tell */
} bench_device_run_state;

#endif
