/* measure/backend — measures configurations of a tuning target on one device. One backend per measuring
 * thread (not shared between threads). backend_measure never crashes the caller: every failure of a
 * kernel is a trial status; only a failure of the backend itself (not of the kernel) returns -1.
 *
 * Lifecycle: backend_open -> backend_measure* -> backend_close. The catalog must outlive the backend. */
#ifndef KT_MEASURE_BACKEND_H
#define KT_MEASURE_BACKEND_H

#include "../core/error.h"
#include "../core/trial.h"
#include "catalog.h"

typedef struct backend backend;

backend *backend_open(const catalog *c, const char *device, kt_error *err);
/* Fills out (caller releases it with trial_result_release). Returns 0, or -1 with err set when the
 * backend itself failed (the trial should then be retried or failed by the caller). */
int backend_measure(backend *b, const tune_target *t, config_id id, trial_result *out, kt_error *err);
void backend_close(backend *b);

#endif
