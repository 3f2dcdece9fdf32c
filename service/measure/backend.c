/* measure/backend — dispatch from a device to the backend of its kind (a switch on the kind
 * catalog_find_device parsed) through a const table. Kinds that are planned but not built yet (and
 * cpu / cuda when no kernel folders are configured) answer KT_ERR_NOT_IMPLEMENTED rather than
 * "unknown device". */
#include "measure/backend_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct backend_ops {
    void *(*open)(const catalog *c, const char *device, kt_error *err);
    int (*measure)(void *impl, const target *t, config_id id, const backend_stop *stop,
                   trial_result *out, kt_error *err);
    void (*close)(void *impl);
    /* NULL: the kind has no limits scaled from a best time */
    void (*set_best)(void *impl, const target *t, double best_ms);
    int (*limits)(void *impl, const target *t, double *call_limit_s, double *deadline_s);
    /* NULL: the kind measures no repeats to cut short */
    void (*set_early_stop)(void *impl, double above_ms);
} backend_ops;

/* Indexed by what measures: [0] replay, [1] real (cpu, cuda), [2] accel. */
static const backend_ops backend_kinds[] = {
    {replay_open, replay_measure, replay_close, NULL, NULL, NULL},
    {real_open, real_measure, real_close, real_set_best, real_limits, real_set_early_stop},
    {accel_open, accel_measure, accel_close, NULL, NULL, NULL},
};

struct backend {
    const backend_ops *ops;
    void *impl;
    backend_stop stop;
    const catalog *cat;
};

/* The backend of what catalog_find_device found, or NULL with err: an unavailable real device
 * says why; cpu and cuda without real measurement, hip and opencl are not implemented (501). */
static const backend_ops *pick_ops(const catalog *c, const char *device,
                                   const catalog_found_device *f, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    switch (f->parsed ? (int)f->dev.kind : -1) {
    case KT_DEVICE_REPLAY:
        if (f->replay)
            return &backend_kinds[0];
        break;
    case KT_DEVICE_ACCEL:
        if (f->accel)
            return &backend_kinds[2];
        break;
    case KT_DEVICE_CPU:
    case KT_DEVICE_CUDA:
        if (f->real && f->real->available)
            return &backend_kinds[1];
        if (f->real || f->unavailable) {
            kt_error_set(
                err, KT_ERR_UNKNOWN_DEVICE, "device %.200s is not available: %.300s", device,
                f->real ? (f->real->reason ? f->real->reason : "unknown reason") : f->unavailable);
            break;
        }
        /* fall through - no kernel folders configured: as hip, opencl */
    case KT_DEVICE_HIP:
    case KT_DEVICE_OPENCL:
        kt_error_set(err, KT_ERR_NOT_IMPLEMENTED,
                     "device %.200s: the %s backend is not implemented yet", device,
                     kt_device_kind_name(f->dev.kind));
        break;
    default:
        break; /* err: catalog_find_device's unknown device */
    }
    catalog_device_hint(c, hint, sizeof hint);
    kt_error_hint(err, "%s", hint);
    return NULL;
}

void *backend_state_new(const void *known, const char *device, size_t size, kt_error *err)
{
    void *state = NULL;
    if (!known)
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "unknown device '%.200s'", device);
    else if (!(state = calloc(1, size)))
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return state;
}

backend *backend_open(const catalog *c, const char *device, kt_error *err)
{
    backend *b = NULL;
    catalog_found_device f;
    catalog_find_device(c, device, CATALOG_FIND_LOCAL, NULL, &f, err);
    const backend_ops *ops = pick_ops(c, device ? device : "", &f, err);
    if (!ops)
        goto out;
    b = calloc(1, sizeof *b);
    if (!b) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    b->ops = ops;
    b->cat = c;
    b->impl = ops->open(c, device, err);
    if (!b->impl) {
        free(b);
        b = NULL;
    }
out:
    return b;
}

int backend_measure(backend *b, const target *t, config_id id, trial_result *out, kt_error *err)
{
    if (!b || !out) {
        if (out)
            trial_result_init(out);
        return kt_error_set(err, KT_ERR_INTERNAL, "no backend to measure with");
    }
    /* A configuration that changes the network is judged first (neural problems, issue 14): an
     * illegal one is never measured. */
    catalog_neural_verdict v;
    int judged = backend_legality(b->cat, t, id, &b->stop, &v, out);
    if (judged == BACKEND_LEGALITY_STOPPED)
        return BACKEND_STOPPED;
    if (judged > 0)
        return 0;
    int rc = b->ops->measure(b->impl, t, id, &b->stop, out, err);
    if (rc == 0 && v.changes)
        backend_legality_extras(&v, t, out);
    return rc;
}

void backend_set_stop(backend *b, backend_stop_fn fn, void *arg)
{
    if (!b)
        return;
    b->stop.fn = fn;
    b->stop.arg = fn ? arg : NULL;
}

void backend_set_best(backend *b, const target *t, double best_ms)
{
    if (b && b->ops->set_best)
        b->ops->set_best(b->impl, t, best_ms);
}

void backend_set_early_stop(backend *b, double above_ms)
{
    if (b && b->ops->set_early_stop)
        b->ops->set_early_stop(b->impl, above_ms);
}

int backend_limits(backend *b, const target *t, double *call_limit_s, double *deadline_s)
{
    *call_limit_s = *deadline_s = 0;
    if (!b || !b->ops->limits)
        return -1;
    return b->ops->limits(b->impl, t, call_limit_s, deadline_s);
}

int backend_quick_check(const catalog *c, const target *t, config_id id)
{
    if (!t || t->key.dev.kind != KT_DEVICE_ACCEL || !catalog_find_accel(c, t->key.device))
        return -1; /* cpu, cuda, replay: no check without measuring */
    return accel_quick_check(c, t, id);
}

void backend_close(backend *b)
{
    if (!b)
        return;
    b->ops->close(b->impl);
    free(b);
}
