/* catalog/catalog_lookup — the catalog's lookups by name (replay datasets, real devices, kernels),
 * its measurement options, and the device list of unknown-device hints. */
#include "catalog/catalog_impl.h"

#include <stdio.h>
#include <string.h>

#include "core/suggest.h"

#define CATALOG_HINT_DEVICES 8 /* devices named in an unknown-device hint */

const replay_dataset *catalog_find_replay(const catalog *c, const char *device)
{
    for (int i = 0; c && device && i < c->n; i++) {
        if (strcmp(c->ds[i]->device, device) == 0)
            return c->ds[i];
    }
    return NULL;
}

int catalog_num_devices(const catalog *c)
{
    return c ? c->n + c->n_devs + c->n_accel : 0;
}

double catalog_replay_speed(const catalog *c)
{
    return c ? c->replay_speed : 0.0;
}

/* The name of the i-th usable device: real available devices first, then replay devices, then
 * accel devices, then the fleet's (names[0..n_fleet), catalog_fleet_names). */
static const char *usable_device(const catalog *c, int i, const char *const *fleet, int n_fleet)
{
    for (int d = 0; c && d < c->n_devs; d++) {
        if (c->devs[d].available && i-- == 0)
            return c->devs[d].name;
    }
    if (c && i < c->n)
        return c->ds[i]->device;
    i -= c ? c->n : 0;
    if (c && i < c->n_accel)
        return c->accel[i].name;
    i -= c ? c->n_accel : 0;
    return i < n_fleet ? fleet[i] : NULL;
}

void catalog_device_hint(const catalog *c, char *buf, size_t cap)
{
    size_t len;
    int n = 0;
    const char *fleet[CATALOG_FLEET_MAX];
    int n_fleet = catalog_fleet_names(c, fleet, CATALOG_FLEET_MAX);
    while (usable_device(c, n, fleet, n_fleet))
        n++;
    int w = snprintf(buf, cap, "%s", n ? "devices: " : "no devices are loaded");
    len = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < n && i < CATALOG_HINT_DEVICES && len < cap; i++) {
        w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
                     usable_device(c, i, fleet, n_fleet));
        len += w > 0 ? (size_t)w : 0;
    }
    if (n > CATALOG_HINT_DEVICES && len < cap)
        snprintf(buf + len, cap - len, ", ... (%d more)", n - CATALOG_HINT_DEVICES);
}

const catalog_device *catalog_find_real(const catalog *c, const char *device)
{
    for (int i = 0; c && device && i < c->n_devs; i++) {
        if (strcmp(c->devs[i].name, device) == 0)
            return &c->devs[i];
    }
    return NULL;
}

const catalog_real_options *catalog_measure_options(const catalog *c)
{
    return &c->opt;
}

int catalog_has_real(const catalog *c)
{
    return c && c->real;
}

/* Why a real device of that parsed name is not here, with real measurement on. */
static const char *real_missing_reason(const catalog *c, const kt_device *dev)
{
    if (!catalog_has_real(c))
        return NULL;
    if (dev->kind == KT_DEVICE_CPU)
        return "no cpu device was found";
    const catalog_device *d = catalog_find_real(c, "cuda"); /* the entry that says why no CUDA */
    return d && d->reason ? d->reason : "no such CUDA device on this machine";
}

const char *catalog_real_unavailable(const catalog *c, const char *device)
{
    kt_device dev;
    const catalog_device *d = catalog_find_real(c, device);
    if (!catalog_has_real(c) || !device || (d && d->available))
        return NULL;
    if (d)
        return d->reason ? d->reason : "unknown reason";
    if (kt_device_parse(device, &dev, NULL) < 0)
        return NULL; /* "cpu:1": catalog_find_device gives the parser's why */
    return dev.kind == KT_DEVICE_CPU || dev.kind == KT_DEVICE_CUDA ? real_missing_reason(c, &dev)
                                                                   : NULL;
}

/* The real device a name resolves to: this process's own when it serves it (and, for a stored key
 * want, with the key's class and toolchain), else (FLEET) the fleet's (catalog_fleet.h: for want,
 * the record of exactly its class and toolchain; for a request, the live one most hosts serve),
 * else this process's unavailable one, or NULL. */
static const catalog_device *real_device_for(const catalog *c, const char *device,
                                             catalog_find_scope scope, const target_key *want)
{
    const catalog_device *local = catalog_find_real(c, device);
    const catalog_device *f = NULL;
    if (scope == CATALOG_FIND_LOCAL)
        return local;
    if (want) {
        if (local && local->available && strcmp(local->klass, want->device_class) == 0 &&
            want->toolchain && strcmp(local->toolchain, want->toolchain) == 0)
            return local;
        f = catalog_fleet_find(c, device, want->device_class, want->toolchain);
        if (f || local)
            return f ? f : local; /* local: reopen reports what changed */
    } else if (local && local->available)
        return local;
    f = catalog_fleet_find(c, device, NULL, NULL);
    return f ? f : local;
}

int catalog_find_device(const catalog *c, const char *device, catalog_find_scope scope,
                        const target_key *want, catalog_found_device *out, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    memset(out, 0, sizeof *out);
    const catalog_device *own = catalog_find_real(c, device);
    int parsed = kt_device_parse(device, &out->dev, err) == 0;
    if (!parsed && own && !own->available) {
        /* The record "cuda" (catalog_device.h) that says why no CUDA device is here: asking for
         * it by that name gets the reason. */
        out->dev.kind = own->kind == KSPEC_CUDA ? KT_DEVICE_CUDA : KT_DEVICE_CPU;
        out->parsed = 1;
        out->real = own;
        return 0;
    }
    if (parsed) {
        out->parsed = 1;
        switch (out->dev.kind) {
        case KT_DEVICE_REPLAY:
            out->replay = catalog_find_replay(c, device);
            break;
        case KT_DEVICE_ACCEL:
            out->accel = catalog_accel_find(c, device);
            break;
        case KT_DEVICE_CPU:
        case KT_DEVICE_CUDA:
            out->real = real_device_for(c, device, scope, want);
            out->unavailable = out->real ? NULL : real_missing_reason(c, &out->dev);
            break;
        case KT_DEVICE_EXTERNAL: /* the caller's harness (catalog_external.c), not a catalog's */
        case KT_DEVICE_HIP:      /* planned */
        case KT_DEVICE_OPENCL:
            break;
        }
        if (out->replay || out->accel || out->real)
            return 0;
        if (out->unavailable)
            kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device %.200s is not available: %.300s",
                         device, out->unavailable);
        else
            kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "unknown device '%.200s'", device);
    }
    catalog_device_hint(c, hint, sizeof hint);
    kt_error_hint(err, "%s", hint);
    /* "did you mean 'cpu'?" (issue 31): every usable device, listed in the hint or not. */
    const char *fleet[CATALOG_FLEET_MAX];
    int n_fleet = catalog_fleet_names(c, fleet, CATALOG_FLEET_MAX);
    kt_suggest s;
    kt_suggest_init(&s, device);
    for (int i = 0; usable_device(c, i, fleet, n_fleet); i++)
        kt_suggest_add(&s, usable_device(c, i, fleet, n_fleet), (size_t)-1);
    kt_suggest_hint(&s, err);
    return -1;
}

/* 1 when device d can run kernel k (available, and k has a variant of its kind). */
int catalog_offers(const catalog_device *d, const kernel_spec *k)
{
    return d->available && k->variants[d->kind].present;
}
