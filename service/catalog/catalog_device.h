/* catalog/catalog_device — a device measured for real by ktune-runner, as the catalog lists it:
 * "cpu", "cuda:N", or the entry "cuda" that says why no CUDA device is available. The records are
 * filled by measure's device discovery (measure/device.h: device_discover probes the runner) or by
 * a test, and handed to catalog_new_real, which owns them from then on: it gives every available
 * device its measurement lock and frees the records in catalog_free. Read-only once in a catalog
 * (the lock is the one thing threads change: a backend holds it during a measurement).
 *
 * Lifecycle: calloc'd array filled (strings malloc'd) -> catalog_new_real (takes it) ->
 * catalog_free; an array that never reaches a catalog is freed with catalog_devices_free. */
#ifndef KT_CATALOG_CATALOG_DEVICE_H
#define KT_CATALOG_CATALOG_DEVICE_H

#include <pthread.h>

#include "catalog/kernel_spec.h"

typedef struct catalog_device {
    char name[32];
    kspec_kind kind;
    int ordinal; /* N of cuda:N; 0 for cpu */
    int available;
    char *reason;    /* why it is not available, else NULL */
    char *klass;     /* "cpu:<model>:<vector_bits>", "cuda:<name>:sm_<cc>"; results key */
    char *toolchain; /* the probe's "toolchain" ("gcc 12.2.0", "cuda driver 13.0, nvrtc 13.0");
                      * results key; required when available (catalog_new_real checks) */
    char *description_text; /* the runner's probe ("device" object), compact JSON */
    kspec_limits limits;    /* in kernel_spec_limit_names order */
    pthread_mutex_t *lock; /* set by the catalog for available devices: one measurement at a time */
} catalog_device;

/* Frees the strings and locks of n records and the array itself; NULL is fine. */
void catalog_devices_free(catalog_device *devs, int n);

#endif
