/* bench/device/bench_device_time — the two clocks of a `ktune bench --device` run, read back: a
 * run's best cost after N evaluations and at T seconds of its modelled tuning clock, and the
 * default time checkpoints. Internal to bench/.
 *
 * The modelled clock of a run (bench_device_impl.h) adds, per evaluation, the compile and
 * measurement time the backend reported when the configuration was measured (kept in the
 * measurement cache), and the searcher's ask and tell time. So a run replayed from the cache (all
 * hits, seconds of wall time) draws the same cost-against-time curve as when it was measured; only
 * the searcher's part (microseconds to milliseconds per step) is timed anew. */
#ifndef KT_BENCH_DEVICE_TIME_H
#define KT_BENCH_DEVICE_TIME_H

#include "bench/device/bench_device_args.h"
#include "bench/device/bench_device_impl.h"

/* The run's best time (ms) after its first n >= 1 evaluations; a run that ended before n carries
 * its final best. INFINITY while nothing ran ok. */
double bench_device_best_at_eval(const bench_device_run_state *r, int n);
/* The run's best time (ms) among the results known at modelled clock t (clock_s <= t); a run that
 * ended before t carries its final best. *reached (may be NULL): 1 when the run's clock got to t
 * (it did not end before). INFINITY while nothing ran ok. */
double bench_device_best_at_time(const bench_device_run_state *r, double t, int *reached);
/* The time checkpoints (seconds, ascending) into out[BENCH_DEVICE_MAX_TIME_CP]: --time-checkpoints
 * when given; else the 1-2-5 steps (1, 2, 5, 10, 20, ... s) up to the longest final clock of the
 * runs, the last 6 of them, then --time-budget when given and not among them. Returns how many
 * (0: no run has a clock of a second). */
int bench_device_time_checkpoints(const bench_device_options *opt,
                                  const bench_device_run_state *runs, int n_runs, double *out);

#endif
