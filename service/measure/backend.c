/* measure/backend — dispatch from a device to the backend of its kind through a const table. Kinds
 * that are planned but not built yet (and cpu / cuda when no kernel folders are configured) answer
 * KT_ERR_NOT_IMPLEMENTED rather than "unknown device". */
#include "measure/backend_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct backend_ops {
    const char *kind;
    void *(*open)(const catalog *c, const char *device, kt_error *err);
    int (*measure)(void *impl, const target *t, config_id id, const backend_stop *stop,
                   trial_result *out, kt_error *err);
    void (*close)(void *impl);
} backend_ops;

static const backend_ops backend_kinds[] = {
    {"replay", replay_open, replay_measure, replay_close},
    {"real", real_open, real_measure, real_close},
    {"accel", accel_open, accel_measure, accel_close},
};

static const char *const planned_kinds[] = {"cpu", "cuda", "hip", "opencl"};

struct backend {
    const backend_ops *ops;
    void *impl;
    backend_stop stop;
    const catalog *cat;
};

/* The kind named by a device: "cuda:0" -> "cuda", "cpu" -> "cpu". */
static size_t kind_len(const char *device)
{
    const char *colon = strchr(device, ':');
    return colon ? (size_t)(colon - device) : strlen(device);
}

static const backend_ops *find_ops(const char *kind)
{
    for (size_t i = 0; i < sizeof backend_kinds / sizeof backend_kinds[0]; i++) {
        if (strcmp(backend_kinds[i].kind, kind) == 0)
            return &backend_kinds[i];
    }
    return NULL;
}

backend *backend_open(const catalog *c, const char *device, kt_error *err)
{
    backend *b = NULL;
    const backend_ops *ops = NULL;
    char hint[KT_ERROR_HINT_MAX];

    if (!device)
        device = "";
    if (catalog_find_replay(c, device))
        ops = find_ops("replay");
    else if (catalog_find_accel(c, device))
        ops = find_ops("accel");
    const catalog_device *rd = ops ? NULL : catalog_find_real(c, device);
    if (rd && rd->available)
        ops = find_ops("real");
    if (!ops) {
        size_t n = kind_len(device);
        /* cpu and cuda are built: with real measurement on, such a device that cannot be used is
         * "not available" (with the reason the runner gave). */
        const char *why = catalog_real_unavailable(c, device);
        if (why) {
            kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device %.200s is not available: %.300s",
                         device, why);
            catalog_device_hint(c, hint, sizeof hint);
            kt_error_hint(err, "%s", hint);
            goto out;
        }
        for (size_t i = 0; i < sizeof planned_kinds / sizeof planned_kinds[0]; i++) {
            if (strlen(planned_kinds[i]) == n && strncmp(planned_kinds[i], device, n) == 0) {
                kt_error_set(err, KT_ERR_NOT_IMPLEMENTED,
                             "device %.200s: the %s backend is not implemented yet", device,
                             planned_kinds[i]);
                catalog_device_hint(c, hint, sizeof hint);
                kt_error_hint(err, "%s", hint);
                goto out;
            }
        }
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "unknown device '%.200s'", device);
        catalog_device_hint(c, hint, sizeof hint);
        kt_error_hint(err, "%s", hint);
        goto out;
    }
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

int backend_quick_check(const catalog *c, const target *t, config_id id)
{
    if (!t || !t->key.device || !catalog_find_accel(c, t->key.device))
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
