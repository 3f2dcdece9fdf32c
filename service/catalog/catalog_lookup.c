/* catalog/catalog_lookup — the catalog's lookups by name (replay datasets, real devices, kernels),
 * its measurement options, and the device list of unknown-device hints. */
#include "catalog/catalog_impl.h"

#include <stdio.h>
#include <string.h>

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

const char *catalog_real_unavailable(const catalog *c, const char *device)
{
    const catalog_device *d = catalog_find_real(c, device);
    if (!catalog_has_real(c) || !device || (d && d->available))
        return NULL;
    if (d)
        return d->reason ? d->reason : "unknown reason";
    if (strcmp(device, "cpu") == 0)
        return "no cpu device was found";
    if (strncmp(device, "cpu:", 4) == 0)
        return "the machine's processor is the device named cpu";
    if (strncmp(device, "cuda:", 5) != 0)
        return NULL;
    d = catalog_find_real(c, "cuda");
    return d && d->reason ? d->reason : "no such CUDA device on this machine";
}

/* 1 when device d can run kernel k (available, and k has a variant of its kind). */
int catalog_offers(const catalog_device *d, const kernel_spec *k)
{
    return d->available && k->variants[d->kind].present;
}
