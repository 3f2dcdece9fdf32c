/* measure/backend_impl — internal to measure/: the entry points of the backend kinds that backend.c
 * dispatches to (replay.c, real_backend.c, accel_backend.c). Each open returns the kind's state, or
 * NULL with err set; measure fills out as backend_measure does, asking stop (may be NULL: never)
 * while it waits and returning BACKEND_STOPPED when it said stop; close frees the state. The
 * catalog must outlive it. */
#ifndef KT_MEASURE_BACKEND_IMPL_H
#define KT_MEASURE_BACKEND_IMPL_H

#include "catalog/catalog.h"
#include "catalog/catalog_neural.h"
#include "measure/backend.h"

/* The stop check backend_set_stop gave (fn NULL: none). */
typedef struct backend_stop {
    backend_stop_fn fn;
    void *arg;
} backend_stop;

/* A kind's state (size bytes, zeroed) for device, which the catalog found as known (its entry,
 * NULL: none): the state, or NULL with KT_ERR_UNKNOWN_DEVICE or KT_ERR_NO_MEMORY (backend.c). */
void *backend_state_new(const void *known, const char *device, size_t size, kt_error *err);

/* Replay backend (replay.c). */
void *replay_open(const catalog *c, const char *device, kt_error *err);
int replay_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                   trial_result *out, kt_error *err);
void replay_close(void *impl);

/* Accel backend for accel:<name> (accel_backend.c): the cost model, in process. accel_quick_check
 * is backend_quick_check's accel part (1 valid, 0 invalid, -1 not an accel target of c). */
void *accel_open(const catalog *c, const char *device, kt_error *err);
int accel_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                  trial_result *out, kt_error *err);
void accel_close(void *impl);
int accel_quick_check(const catalog *c, const target *t, config_id id);

/* Real backend for cpu and cuda:N (real_backend.c). */
void *real_open(const catalog *c, const char *device, kt_error *err);
int real_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                 trial_result *out, kt_error *err);
void real_close(void *impl);
/* backend_set_best and backend_limits of a real backend. */
void real_set_best(void *impl, const target *t, double best_ms);
int real_limits(void *impl, const target *t, double *call_limit_s, double *deadline_s);
/* backend_set_early_stop of a real backend. */
void real_set_early_stop(void *impl, double above_ms);

/* The legality step of neural problems (legality.c). Judges configuration id of t when it changes
 * the network (catalog_neural_check; v->changes says whether it does), asking stop (may be NULL)
 * while it computes: returns 1 with out final (illegal with the verdict in extras; timeout when
 * the check ran past the catalog's limit; runtime_error when the check itself failed: its data set
 * missing, ...; the seconds it took charged as measure_ms), BACKEND_LEGALITY_STOPPED when stop
 * said stop (out empty, nothing to record), 0 when the configuration is to be measured (out
 * initialised, v filled). */
#define BACKEND_LEGALITY_STOPPED 2
int backend_legality(const catalog *c, const target *t, config_id id, const backend_stop *stop,
                     catalog_neural_verdict *v, trial_result *out);
/* Adds a legal transformation's verdict to a measured result's extras. */
void backend_legality_extras(const catalog_neural_verdict *v, const target *t, trial_result *out);

#endif
