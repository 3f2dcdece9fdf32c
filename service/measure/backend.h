/* measure/backend — measures configurations of a tuning target on one device. One backend per
 * measuring thread (not shared between threads). backend_measure never crashes the caller: every
 * failure of a kernel is a trial status; only a failure of the backend itself (not of the kernel)
 * returns -1.
 *
 * Lifecycle: backend_open -> backend_measure* -> backend_close. The catalog must outlive the
 * backend. */
#ifndef KT_MEASURE_BACKEND_H
#define KT_MEASURE_BACKEND_H

#include "core/error.h"
#include "core/trial.h"
#include "catalog/catalog.h"

typedef struct backend backend;

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
void backend_close(backend *b);

#endif
