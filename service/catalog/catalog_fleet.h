/* catalog/catalog_fleet — devices this process knows only from the fleet: the cpu and cuda:N
 * devices that worker processes (on this or other hosts) registered in the database
 * (store/catalog_store.h, table fleet_devices of sql/009). An API process (--role api) probes no
 * device: it lists, validates and resolves targets on these records, and any process that drives a
 * job whose device class it does not serve itself reopens the job's target from them.
 *
 * The catalog itself is immutable after catalog_new_real; the fleet part is the one thing that
 * changes, behind a read-write lock. Records are never freed before catalog_free (a record that
 * changed is added as a new one and the old one kept, marked gone), so target keys already resolved
 * on a fleet device (they borrow its name, class and toolchain) stay valid.
 *
 * The catalog never queries the database: the owner sets a fetch callback
 * (catalog_fleet_set_source) that reads the table; the catalog calls it when its copy is older than
 * the period, or on a miss (an unknown device name) at most every CATALOG_FLEET_MISS_MS.
 *
 * Lifecycle: catalog_new* -> [catalog_fleet_set_source, once, before threads use the catalog] ->
 * catalog_fleet_update / refresh (any thread) -> catalog_free. */
#ifndef KT_CATALOG_CATALOG_FLEET_H
#define KT_CATALOG_CATALOG_FLEET_H

#include <jansson.h>

#include "core/error.h"

typedef struct catalog catalog;

#define CATALOG_FLEET_MAX     256 /* fleet records kept (live or gone); more are ignored */
#define CATALOG_FLEET_MISS_MS 500 /* a miss refreshes at most this often */
#define CATALOG_FLEET_HOSTS   64  /* hosts listed per record */

/* Reads the fleet: *rows = new reference to
 * [{"record":{...},"hosts":["h1",...],"live":true|false}, ...] (store/catalog_store.h's
 * catalog_store_fleet_json). 0 or -1 with err. */
typedef int (*catalog_fleet_fetch)(void *ctx, json_t **rows, kt_error *err);

/* Sets where fleet records come from and how old a copy may get (seconds > 0). Call once, before
 * other threads use the catalog. */
void catalog_fleet_set_source(catalog *c, catalog_fleet_fetch fetch, void *ctx, double period_s);
/* Merges rows (the fetch format) into the fleet: records of kinds cpu and cuda are taken (replay
 * and accel ones skipped), checked (name — a device name of the record's kind, kt_device_parse —,
 * kind, ordinal, class, toolchain, every limit of the kind
 * as an integer >= 0); a bad record is skipped with a warning. Every record not in rows is marked
 * gone. 0, or -1 when out of memory.
 */
int catalog_fleet_update(const catalog *c, const json_t *rows, kt_error *err);
/* Fetches and merges when the copy is older than the period (force: on a miss, rate-limited). A
 * failing fetch is logged and the old copy kept; returns 0 or -1. No-op without a source. */
int catalog_fleet_refresh(const catalog *c, int force, kt_error *err);

/* The records this process registers for its own available devices (real, replay and accel; the
 * merge skips replay and accel records, which every process resolves from its own files):
 * [{"name","kind","ordinal","class","toolchain","limits":{...},"description":{...}}]. */
json_t *catalog_fleet_records_json(const catalog *c);
/* GET /v1/devices: catalog_devices_json (this process's devices) followed by the live fleet
 * devices whose name this process does not serve, each with "hosts" and "fleet": true. Refreshes
 * the fleet first when its copy is old. */
json_t *catalog_fleet_devices_json(const catalog *c);

#endif
