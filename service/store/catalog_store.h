/* store/catalog_store — mirrors the catalog (devices and kernels) into the kernels and devices
 * tables at start-up, so the database describes what the jobs in it refer to; and the fleet's
 * devices (sql/009, table fleet_devices): every measuring ktuned registers the full catalog record
 * of each device it serves (catalog_fleet_records_json) per host, heart-beats them, and lets them
 * go when it stops; every process reads them back (catalog_store_fleet_json) into its catalog's
 * fleet (catalog/catalog_fleet.h), so an API process with no device of its own lists, validates
 * and resolves the devices of the workers on every host. Connections come from the caller. */
#ifndef KT_STORE_CATALOG_STORE_H
#define KT_STORE_CATALOG_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

/* devices: the JSON of catalog_devices_json; kernels: of catalog_kernels_json. Upserts both. */
int catalog_store_sync(PGconn *c, const json_t *devices, const json_t *kernels, kt_error *err);

/* Registers records (catalog_fleet_records_json) as host's devices served by runner ("<host>:<pid>:
 * <start>"); rows of host not in records are deleted, and rows silent for 7 days. One transaction:
 * must not be called inside one. */
int catalog_store_fleet_register(PGconn *c, const char *host, const char *runner,
                                 const json_t *records, kt_error *err);
/* Heart-beats runner's rows (the runner thread, every second). */
int catalog_store_fleet_heartbeat(PGconn *c, const char *runner, kt_error *err);
/* A clean stop: runner's rows are no longer live (kept: stored jobs of their class still reopen).
 */
int catalog_store_fleet_leave(PGconn *c, const char *runner, kt_error *err);
/* The fleet as catalog_fleet_update takes it (at most 1024 elements):
 * [{"record":{...},"hosts":[live hosts],"live":b}], one element per distinct record of a cpu or
 * cuda device; a row is live when its heartbeat is younger than lease_s. New reference, or NULL
 * with err. */
json_t *catalog_store_fleet_json(PGconn *c, double lease_s, kt_error *err);

#endif
