/* core/trial — the vocabulary shared by searchers, backends, stores and the job runner: a trial's
 * status, its measured result, and what it costs. trial_result.extras is a jansson reference owned
 * by whoever filled the struct (call trial_result_release when done with it). */
#ifndef KT_CORE_TRIAL_H
#define KT_CORE_TRIAL_H

#include <jansson.h>

typedef enum {
    TRIAL_PENDING = 0,
    TRIAL_RUNNING,
    TRIAL_OK,
    TRIAL_INVALID,
    TRIAL_COMPILE_ERROR,
    TRIAL_RUNTIME_ERROR,
    TRIAL_TIMEOUT,
    TRIAL_WRONG_RESULT,
    /* A neural transformation (issue 14) its legality check (Fisher Potential,
     * neural/nn_legality.h) rejected: counted, never measured. */
    TRIAL_ILLEGAL,
    TRIAL__STATUS_COUNT
} trial_status;

typedef struct trial_result {
    trial_status status;
    double time_ms;    /* median of repeats; only meaningful when status == TRIAL_OK */
    int repeats;       /* timed repetitions behind time_ms */
    double compile_ms; /* time spent compiling (recorded, for replay) */
    double measure_ms; /* time spent verifying and benchmarking (recorded, for replay) */
    double noise_cv;   /* coefficient of variation of the repeats, 0 when unknown */
    json_t *extras;    /* backend-specific details or NULL; owned */
} trial_result;

/* "ok", "compile_error", ... ; the names stored in the database and shown by the API. */
const char *trial_status_name(trial_status s);
/* Parses a name; returns -1 when unknown. */
int trial_status_parse(const char *name, trial_status *out);
/* 1 for statuses that end a trial (everything but pending and running). */
int trial_status_is_final(trial_status s);
void trial_result_init(trial_result *r);

/* The cost rule, the only place it is written: a trial is charged compile_ms + measure_ms of
 * (real or, for replay, recorded) time, in seconds; a part that is not finite (unknown, NAN for a
 * NULL column) counts 0. The job clock, the seconds budget, /metrics and ktune bench all add these
 * charges; the database stores each finished trial's charge (trials.charged_seconds) as computed
 * here, and every SQL sum adds that column. */
double trial_cost_seconds_of(double compile_ms, double measure_ms);
/* trial_cost_seconds_of(r->compile_ms, r->measure_ms). */
double trial_cost_seconds(const trial_result *r);
void trial_result_release(trial_result *r);

#endif
