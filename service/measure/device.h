/* measure/device — finds the real devices by asking ktune-runner (one probe of `cpu`, then of
 * `cuda:0`, `cuda:1`, ...), as the catalog device records that catalog_new_real takes.
 *
 * Call order: device_discover -> catalog_new_real(..., devs, n, ...), which owns the records from
 * then on (catalog_devices_free them if they never reach a catalog). */
#ifndef KT_MEASURE_DEVICE_H
#define KT_MEASURE_DEVICE_H

#include "catalog/catalog.h"
#include "core/error.h"

#define DEVICE_MAX_CUDA 16 /* cuda:0 .. cuda:15 are probed at most */

/* With real measurement (real names kernel folders): checks real (catalog_real_check), creates the
 * runners' cache folder, then probes cpu, then cuda:0, cuda:1, ... until one is refused, starting
 * real->runner. Always fills at least the cpu entry and one cuda entry (unavailable ones carry a
 * reason: a missing runner or CUDA driver is not an error). Without real measurement: *out NULL,
 * *n 0, nothing started. Returns -1 with err set when real is not usable (KT_ERR_CONFIG) or out of
 * memory. */
int device_discover(const catalog_real_options *real, catalog_device **out, int *n, kt_error *err);

#endif
