#include "core/trial.h"

#include <math.h>
#include <string.h>

static const char *const status_names[TRIAL__STATUS_COUNT] = {
    "pending",       "running", "ok",           "invalid", "compile_error",
    "runtime_error", "timeout", "wrong_result", "illegal",
};

const char *trial_status_name(trial_status s)
{
    return (unsigned)s < TRIAL__STATUS_COUNT ? status_names[s] : "invalid";
}

int trial_status_parse(const char *name, trial_status *out)
{
    for (int i = 0; i < TRIAL__STATUS_COUNT; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (trial_status)i;
            return 0;
        }
    }
    return -1;
}

int trial_status_is_final(trial_status s)
{
    return s != TRIAL_PENDING && s != TRIAL_RUNNING;
}

void trial_result_init(trial_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = TRIAL_PENDING;
}

void trial_result_release(trial_result *r)
{
    if (r->extras)
        json_decref(r->extras);
    r->extras = NULL;
}

double trial_cost_seconds_of(double compile_ms, double measure_ms)
{
    return ((isfinite(compile_ms) ? compile_ms : 0) + (isfinite(measure_ms) ? measure_ms : 0)) /
           1000.0;
}

double trial_cost_seconds(const trial_result *r)
{
    return trial_cost_seconds_of(r->compile_ms, r->measure_ms);
}
