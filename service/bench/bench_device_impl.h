/* cli/bench_device_impl — internal to the device mode of `ktune bench`: the state shared by one
 * bench (the target, backend and measurement cache, all borrowed) and the record of one
 * (strategy, seed) run, which bench_device.c fills and bench_device_report.c summarises.
 *
 * Lifecycle of a run record: bench_device_run_one fills it (freeing it itself on failure) ->
 * bench_device_report_json reads it -> bench_device_run_free. */
#ifndef KT_CLI_BENCH_DEVICE_IMPL_H
#define KT_CLI_BENCH_DEVICE_IMPL_H

#include <stdio.h>

#include "../catalog/catalog.h"
#include "../core/trial.h"
#include "../measure/backend.h"
#include "bench_device.h"
#include "bench_mcache.h"

typedef struct bench_device_ctx {
    const tune_target *target;
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

double bench_device_now_s(void);
/* --problem text -> JSON object (new reference); NULL with err (KT_ERR_BAD_PROBLEM). */
json_t *bench_device_problem_json(const char *text, kt_error *err);
/* One (strategy, seed) run. Returns 0, or -1 with err set (run freed). */
int bench_device_run_one(bench_device_ctx *ctx, const char *strategy, int seed,
                         bench_device_run_state *run, kt_error *err);
void bench_device_run_free(bench_device_run_state *r);

/* The "strategies" member of the result: per strategy the checkpoint figures over seeds (relative
 * to the reference strategy), the best configuration and the runs. runs[s * seeds + k] is strategy
 * s, seed k. New reference, NULL when out of memory. */
json_t *bench_device_report_json(const bench_device_ctx *ctx, const bench_device_options *opt,
                                 const bench_device_run_state *runs, const int *checkpoints,
                                 int n_checkpoints, const char *reference);

#endif
