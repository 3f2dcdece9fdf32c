/* core/objective — what a job optimises (issue 27): the measured time (the default: time_ms, least
 * is best) or a user metric an ok trial reports in extras.metrics (a kernel spec's "metrics",
 * computed by the backend, or the numbers an ask/tell harness tells), to maximise or minimise; and
 * the one transform from a trial's result to the scalar cost every searcher minimises.
 *
 * The transform (kt_objective_cost) keeps what strategies assume of a time: a positive, finite
 * cost, less is better, so that models on the log of the cost (auto, mindmap) and every other
 * strategy work unchanged:
 *   time:             cost = time_ms
 *   metric, goal min: cost = value
 *   metric, goal max: cost = 1 / value   (a throughput's reciprocal is a time per unit of work)
 * An objective value must be a finite number > 0 (GFLOP/s, GB/s, joules...). An ok trial whose
 * metric is absent, not a number or not > 0 has no objective value: the searcher is told it as a
 * failure (kt_objective_told: status invalid) and it can never be the job's best; the stored trial
 * keeps its real status. The SQL of sql/022 (ktune_objective_value) applies the same rule to the
 * job's best.
 *
 * Plain values (no allocation but kt_objective_json's result, a new reference the caller decrefs).
 * Call order: kt_objective_parse (a request) or kt_objective_set (stored columns), then any of the
 * readers. */
#ifndef KT_CORE_OBJECTIVE_H
#define KT_CORE_OBJECTIVE_H

#include <jansson.h>

#include "core/error.h"
#include "core/trial.h"

#define KT_OBJECTIVE_TIME       "time_ms" /* the name of the default objective */
#define KT_OBJECTIVE_METRIC_MAX 64        /* a metric name: 1-64 characters, as a tell allows */

typedef struct kt_objective {
    char metric[KT_OBJECTIVE_METRIC_MAX + 1]; /* "" = time_ms */
    int maximise;                             /* 1: goal "max" (metrics only) */
} kt_objective;

/* The default: time_ms, min. */
void kt_objective_time(kt_objective *o);
/* 1 when o is the time (no metric). */
int kt_objective_is_time(const kt_objective *o);
/* The "objective" member of a request, {"metric": NAME, "goal": "max"|"min"} (goal defaults to
 * "min"); NULL or JSON null is the time. "metric": "time_ms" is the time, and only with goal min.
 * Errors name the field: objective (wrong_type), objective.<unknown> (unknown_field),
 * objective.metric (missing_field, wrong_type, out_of_range: 1-64 printable characters),
 * objective.goal (out_of_range). */
int kt_objective_parse(const json_t *v, kt_objective *o, kt_error *err);
/* From stored columns: metric NULL or "" is the time; goal "max" maximises, anything else
 * minimises. */
void kt_objective_set(kt_objective *o, const char *metric, const char *goal);
/* "max" or "min". */
const char *kt_objective_goal(const kt_objective *o);
/* The metric's name, or KT_OBJECTIVE_TIME. */
const char *kt_objective_name(const kt_objective *o);
/* {"metric": name, "goal": "min"|"max"} (new reference; NULL when out of memory). */
json_t *kt_objective_json(const kt_objective *o);
/* The objective's value of a result: for the time, time_ms of an ok result; for a metric, the
 * number extras.metrics.<metric> of an ok result. NAN when r is not ok or the value is absent, not
 * finite or not > 0. */
double kt_objective_value(const kt_objective *o, const trial_result *r);
/* The cost searchers minimise for an objective value: value (min) or 1/value (max); NAN for a
 * value that is not finite and > 0 (or whose reciprocal is not finite). */
double kt_objective_cost(const kt_objective *o, double value);
/* What a searcher is told of r (out gets no extras: NULL): the time objective tells r as it is; a
 * metric objective tells an ok result with a value as ok with time_ms = its cost, and an ok result
 * without one as invalid; failures as they are. Returns 1 when an ok result was told as a failure
 * for lack of a value, else 0. */
int kt_objective_told(const kt_objective *o, const trial_result *r, trial_result *out);

#endif
