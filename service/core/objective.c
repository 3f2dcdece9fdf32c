#include "core/objective.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void kt_objective_time(kt_objective *o)
{
    memset(o, 0, sizeof *o);
}

int kt_objective_is_time(const kt_objective *o)
{
    return o->metric[0] == '\0';
}

/* 1-64 printable ASCII characters (a metric name shows in messages, URLs of the dashboard). */
static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > KT_OBJECTIVE_METRIC_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

int kt_objective_parse(const json_t *v, kt_objective *o, kt_error *err)
{
    const char *key;
    json_t *val;
    kt_objective_time(o);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'objective' must be an object");
        kt_error_hint(err, "{\"metric\": \"gflops\", \"goal\": \"max\"}; leave it out to minimise "
                           "the time");
        return -1;
    }
    json_object_foreach((json_t *)v, key, val)
    {
        if (strcmp(key, "metric") != 0 && strcmp(key, "goal") != 0) {
            kt_error_set(err, KT_ERR_UNKNOWN_FIELD, "objective.%.64s: unknown field", key);
            kt_error_hint(err, "an objective has \"metric\" and \"goal\"");
            return -1;
        }
    }
    const json_t *m = json_object_get(v, "metric"), *g = json_object_get(v, "goal");
    if (!m || json_is_null(m))
        return kt_error_set(err, KT_ERR_MISSING_FIELD,
                            "objective.metric: required (a metric's name, or \"time_ms\")");
    if (!json_is_string(m))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "objective.metric must be a string");
    if (!valid_name(json_string_value(m))) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "objective.metric: 1 to %d printable characters without spaces",
                     KT_OBJECTIVE_METRIC_MAX);
        kt_error_hint(err, "the name of a metric the kernel declares (GET /v1/kernels) or the "
                           "harness tells");
        return -1;
    }
    const char *goal = "min";
    if (g && !json_is_null(g)) {
        goal = json_string_value(g);
        if (!goal || (strcmp(goal, "min") != 0 && strcmp(goal, "max") != 0))
            return kt_error_set(err, json_is_string(g) ? KT_ERR_OUT_OF_RANGE : KT_ERR_WRONG_TYPE,
                                "objective.goal must be \"max\" or \"min\"");
    }
    if (strcmp(json_string_value(m), KT_OBJECTIVE_TIME) == 0) {
        if (strcmp(goal, "max") == 0) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                         "objective.goal: the time (%s) is only minimised", KT_OBJECTIVE_TIME);
            kt_error_hint(err, "send \"goal\": \"min\", or name a metric to maximise");
            return -1;
        }
        return 0;
    }
    snprintf(o->metric, sizeof o->metric, "%s", json_string_value(m));
    o->maximise = strcmp(goal, "max") == 0;
    return 0;
}

void kt_objective_set(kt_objective *o, const char *metric, const char *goal)
{
    kt_objective_time(o);
    if (!metric || !metric[0] || strcmp(metric, KT_OBJECTIVE_TIME) == 0)
        return;
    snprintf(o->metric, sizeof o->metric, "%s", metric);
    o->maximise = goal && strcmp(goal, "max") == 0;
}

const char *kt_objective_goal(const kt_objective *o)
{
    return o->maximise ? "max" : "min";
}

const char *kt_objective_name(const kt_objective *o)
{
    return kt_objective_is_time(o) ? KT_OBJECTIVE_TIME : o->metric;
}

json_t *kt_objective_json(const kt_objective *o)
{
    return json_pack("{s:s, s:s}", "metric", kt_objective_name(o), "goal", kt_objective_goal(o));
}

double kt_objective_value(const kt_objective *o, const trial_result *r)
{
    double v = NAN;
    if (r->status != TRIAL_OK)
        return NAN;
    if (kt_objective_is_time(o)) {
        v = r->time_ms;
    } else {
        const json_t *x = json_object_get(json_object_get(r->extras, "metrics"), o->metric);
        if (json_is_number(x))
            v = json_number_value(x);
    }
    return isfinite(v) && v > 0 ? v : NAN;
}

double kt_objective_cost(const kt_objective *o, double value)
{
    if (!isfinite(value) || !(value > 0))
        return NAN;
    double c = o->maximise ? 1.0 / value : value;
    return isfinite(c) && c > 0 ? c : NAN;
}

int kt_objective_told(const kt_objective *o, const trial_result *r, trial_result *out)
{
    *out = *r;
    out->extras = NULL;
    if (kt_objective_is_time(o) || r->status != TRIAL_OK)
        return 0;
    double cost = kt_objective_cost(o, kt_objective_value(o, r));
    if (isnan(cost)) {
        out->status = TRIAL_INVALID;
        out->time_ms = NAN;
        return 1;
    }
    out->time_ms = cost;
    return 0;
}
