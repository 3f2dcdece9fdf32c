/* bench/bench_cutoff — issue 30: the cut-offs of `ktune bench --device` belong to one run (one seed
 * of one row), never to the bench. A real backend gives up on a configuration when one kernel call
 * takes longer than slow_factor x the best time known (the call limit) and when no reply comes
 * before a deadline that also scales from the best time (measure/backend.h). The bench gives the
 * backend each run's own best before every measurement (backend_set_best: none at a run's start),
 * so a run's limits never come from another run; and the measurement cache keeps what a
 * measurement found, not a verdict: a completed measurement keeps its time, which each run judges
 * by its own limits (bench_cutoff_verdict); a measurement that was cut off keeps the limit it was
 * cut at, and a run whose limit is higher measures it again, the cache then keeping that result
 * (bench_cutoff_supersedes). A run's verdicts therefore do not depend on which runs came before
 * it, up to the noise of measuring a configuration anew.
 *
 * Pure functions on trial results (core/trial.h): no state, nothing allocated but out's extras. */
#ifndef KT_BENCH_CUTOFF_H
#define KT_BENCH_CUTOFF_H

#include "core/trial.h"

/* The limits of one run at one evaluation (backend_limits after backend_set_best). */
typedef struct bench_cutoff {
    double call_limit_s; /* one kernel call may take this long, s; 0: no limit */
    double deadline_s;   /* the reply must come this soon, s; 0: no deadline known */
} bench_cutoff;

typedef enum bench_cut_kind {
    BENCH_CUT_NONE,     /* a completed measurement, or a status no limit decided */
    BENCH_CUT_CALL,     /* a timeout at the call limit: extras.call_limit_s */
    BENCH_CUT_DEADLINE, /* a timeout at the reply's deadline: extras.deadline_s */
} bench_cut_kind;

/* How r was cut off, with the limit in *at_s (0 for BENCH_CUT_NONE). */
bench_cut_kind bench_cutoff_kind(const trial_result *r, double *at_s);

/* 1 when fresh should replace stored as the cache's entry of a configuration: stored was cut off
 * and fresh was not, or fresh was cut off by a larger limit of the same kind; else 0 (the first
 * measurement stays). */
int bench_cutoff_supersedes(const trial_result *stored, const trial_result *fresh);

/* The result that a run with the limits *run gives the cached entry: 1 with out filled (a copy
 * with its own extras: the caller releases it), or 0 (out untouched) when the entry was cut off
 * by a limit lower than the run's, or the run has no such limit: the run measures it again.
 * - ok with time T ms: as cached; but when the run has a call limit L and T > L, a timeout as the
 *   runner's limit gives it (extras call_limit_s L, cut_from_time_ms T), costing the compile time
 *   plus L: what measuring it would have cost, one call given up at L. T is the slowest timed call
 *   (extras.max_ms) when the entry has it, as the runner gives up on any one call past L; else the
 *   median time_ms (entries of older runners).
 * - cut at a call limit C: for a run's limit L in (0, C] the timeout, its cost less the C - L s
 *   the run would not have waited (at least L), extras.call_limit_s L; else 0.
 * - cut at a deadline D: for a run's deadline in (0, D] as cached; else 0.
 * - every other status (compile or runtime error, wrong result, invalid): as cached.
 * A completed measurement is never judged against the run's deadline: the call limit bounds
 * every call well below it (bench/README.md). */
int bench_cutoff_verdict(const trial_result *entry, const bench_cutoff *run, trial_result *out);

#endif
