/* measure/backend — measures configurations of a tuning target on one device. One backend per
 * measuring thread (not shared between threads). backend_measure never crashes the caller: every
 * failure of a kernel is a trial status; only a failure of the backend itself (not of the kernel)
 * returns -1.
 *
 * Accel devices ("accel:<name>") are evaluated in process by the cost model: status ok with time_ms
 * the objective (energy-delay product over the algorithmic minimum, >= 1; not milliseconds), or
 * invalid with extras.reason; extras of an ok trial carry the model's statistics and "meta",
 * "meta_objective", "meta_names" (measure/README.md).
 *
 * Lifecycle: backend_open -> [backend_set_stop] -> ([backend_set_best] [backend_limits]
 * [backend_set_early_stop] backend_measure)* -> backend_close. The catalog
 * must outlive the backend. */
#ifndef KT_MEASURE_BACKEND_H
#define KT_MEASURE_BACKEND_H

#include "core/error.h"
#include "core/trial.h"
#include "catalog/catalog.h"

typedef struct backend backend;

/* backend_measure's return when its stop check said stop (see backend_set_stop). */
#define BACKEND_STOPPED 1

/* A stop check: non-zero when the measurement under way is no longer wanted (its job was
 * cancelled). Asked on the measuring thread, about every 100 ms while a measurement waits; it must
 * be quick. */
typedef int (*backend_stop_fn)(void *arg);

/* device: a catalog device name. Errors: KT_ERR_UNKNOWN_DEVICE (hint lists devices),
 * KT_ERR_NOT_IMPLEMENTED for a kind that is planned but not built ("cpu", "cuda:0", "hip:0",
 * "opencl:0"). */
backend *backend_open(const catalog *c, const char *device, kt_error *err);
/* Fills out (caller releases it with trial_result_release). Returns 0, or -1 with err set when the
 * backend itself failed (the trial should then be retried or failed by the caller).
 * The seconds a trial costs are (compile_ms + measure_ms) / 1000; the caller sums them into the
 * job's clock. For replay these are the costs recorded on the dataset's GPU (compile_time, and
 * verification_time + benchmark_time), so a budget in seconds means what it would have meant there;
 * with catalog_options.replay_speed > 0 the call also sleeps speed x that time (at most 10 s). */
int backend_measure(backend *b, const target *t, config_id id, trial_result *out, kt_error *err);
/* Sets (fn NULL: clears) the stop check asked by the following measures; arg is borrowed. When it
 * says stop, backend_measure gives up within about 100 ms (a real backend kills its runner's
 * process group; replay stops sleeping) and returns BACKEND_STOPPED with out empty (status pending,
 * nothing to record). */
void backend_set_stop(backend *b, backend_stop_fn fn, void *arg);
/* A real backend remembers the best time it measured per target (the last 32 targets) and scales
 * from it the limits of the following measures of that target: with catalog_real_options's
 * slow_factor on cpu, one kernel call of at most max(slow_factor x best, 0.1 s), and the deadline
 * of a reply (compile timeout + 20 x best x (max_repeats + 2) clamped to 5-60 s + max seconds).
 * backend_set_best replaces that best time by the caller's (ms; 0 or not finite: none, so no call
 * limit and the run timeout): `ktune bench --device` gives each (strategy, seed) run its own best
 * (issue 30), where ktuned's jobs share the backend's. Replay and accel backends ignore it. */
void backend_set_best(backend *b, const target *t, double best_ms);
/* The limits a measure of t would run under now: *call_limit_s (0: none) and *deadline_s (s).
 * 0, or -1 (both 0) when the backend has no such limits (replay, accel) or t is not a target it
 * measures. */
int backend_limits(backend *b, const target *t, double *call_limit_s, double *deadline_s);
/* Issue 32, "measure only as long as a decision needs": the next backend_measure (that one only)
 * may stop timing once, after catalog_real_options.early_stop_after repeats, even its fastest
 * repeat is above above_ms (kt_early_stop_above_ms of the job's best; 0: the full count). Its
 * result then has fewer repeats and extras.early_stopped true (and early_stop_above_ms). The
 * measurer gives it for a time job's search trials, never for the final pick's re-measurements.
 * Real backends only (cpu, cuda); replay and accel ignore it. */
void backend_set_early_stop(backend *b, double above_ms);
void backend_close(backend *b);

/* Cheap validity check without measuring: 1 valid, 0 invalid, -1 the device has no such check
 * (cpu, cuda, replay) or t is not a target of c's. accel: accel_evaluate's limits (the PEs used,
 * every tile fitting its buffer allocation), the same answer backend_measure's status gives. Any
 * thread; no backend needed. */
int backend_quick_check(const catalog *c, const target *t, config_id id);

#endif
