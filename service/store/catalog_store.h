/* store/catalog_store — mirrors the catalog (devices and kernels) into the kernels and devices
 * tables at start-up, so the database describes what the jobs in it refer to.
 *
 * Nothing reads these tables yet (the API lists its own process's catalog). Issue 11 gives them
 * their reader: an API process listing the devices (and kernels) of the workers of every ktuned
 * sharing the database, on other hosts too. Kept written until then so that reader finds them. */
#ifndef KT_STORE_CATALOG_STORE_H
#define KT_STORE_CATALOG_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

/* devices: the JSON of catalog_devices_json; kernels: of catalog_kernels_json. Upserts both. */
int catalog_store_sync(PGconn *c, const json_t *devices, const json_t *kernels, kt_error *err);

#endif
