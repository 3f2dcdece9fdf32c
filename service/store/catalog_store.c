#include "store/catalog_store.h"

#include <stdlib.h>

#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

int catalog_store_sync(PGconn *c, const json_t *devices, const json_t *kernels, kt_error *err)
{
    char *devs = store_json_text(devices);
    char *kers = store_json_text(kernels);
    const char *pd[] = {devs ? devs : "[]"};
    const char *pk[] = {kers ? kers : "[]"};
    /* The summary by name (sql/001); the fleet's per-host records are in fleet_devices (below). */
    int rc =
        db_run(c,
               "INSERT INTO devices (name, kind, class, available, reason, description)"
               " SELECT d->>'name', COALESCE(d->>'kind', ''), COALESCE(d->>'class', d->>'name'),"
               " COALESCE((d->>'available')::boolean, true), d->>'reason', "
               "COALESCE(d->'description', '{}')"
               " FROM jsonb_array_elements($1::jsonb) AS d ON CONFLICT (name) DO UPDATE SET"
               " kind = EXCLUDED.kind, class = EXCLUDED.class, available = EXCLUDED.available,"
               " reason = EXCLUDED.reason, description = EXCLUDED.description, updated_at = now()",
               1, pd, err);
    if (rc == 0)
        rc = db_run(c,
                    "INSERT INTO kernels (name, description) SELECT k->>'name', k FROM"
                    " jsonb_array_elements($1::jsonb) AS k ON CONFLICT (name) DO UPDATE SET"
                    " description = EXCLUDED.description, updated_at = now()",
                    1, pk, err);
    free(devs);
    free(kers);
    return rc;
}

/* Rows of hosts silent for this long are deleted when a worker registers. */
#define FLEET_RETENTION "7 days"

/* catalog_store_fleet_register in its transaction; ctx: its parameters (host, runner, records). */
static int fleet_register_tx(PGconn *c, void *ctx, kt_error *err)
{
    const char *const *p = ctx;
    const char *pd[] = {p[0], p[2]};
    /* The devices this host no longer has go; the others are (re)registered under this runner. */
    if (db_run(c,
               "DELETE FROM fleet_devices WHERE (host = $1 AND name NOT IN (SELECT r->>'name'"
               " FROM jsonb_array_elements($2::jsonb) AS r)) OR heartbeat_at < now() - "
               "interval '" FLEET_RETENTION "'",
               2, pd, err) < 0)
        return -1;
    return db_run(c,
                  "INSERT INTO fleet_devices (host, name, runner, kind, class, toolchain, record)"
                  " SELECT $1, r->>'name', $2, r->>'kind', r->>'class', COALESCE(r->>'toolchain',"
                  " ''), r FROM jsonb_array_elements($3::jsonb) AS r ON CONFLICT (host, name) DO"
                  " UPDATE SET runner = EXCLUDED.runner, kind = EXCLUDED.kind, class ="
                  " EXCLUDED.class, toolchain = EXCLUDED.toolchain, record = EXCLUDED.record,"
                  " started_at = now(), heartbeat_at = now()",
                  3, p, err);
}

int catalog_store_fleet_register(PGconn *c, const char *host, const char *runner,
                                 const json_t *records, kt_error *err)
{
    char *recs = store_json_text(records);
    const char *p[] = {host, runner, recs ? recs : "[]"};
    int rc = store_tx(c, fleet_register_tx, (void *)p, err);
    free(recs);
    return rc;
}

int catalog_store_fleet_heartbeat(PGconn *c, const char *runner, kt_error *err)
{
    const char *p[] = {runner};
    return db_run(c, "UPDATE fleet_devices SET heartbeat_at = now() WHERE runner = $1", 1, p, err);
}

int catalog_store_fleet_leave(PGconn *c, const char *runner, kt_error *err)
{
    const char *p[] = {runner};
    /* A day old: not live for any lease (--lease-s is at most an hour), kept for the retention. */
    return db_run(
        c, "UPDATE fleet_devices SET heartbeat_at = now() - interval '1 day' WHERE runner = $1", 1,
        p, err);
}

json_t *catalog_store_fleet_json(PGconn *c, double lease_s, kt_error *err)
{
    store_num l;
    const char *p[] = {store_double(&l, lease_s)};
    /* One row per distinct record (name, class, toolchain, limits): the newest host's record,
     * the live hosts serving it, and whether any is live. */
    return store_query_json(
        c,
        "SELECT COALESCE(json_agg(json_build_object('record', g.record, 'hosts', g.hosts, 'live',"
        " g.live) ORDER BY g.name, g.class), '[]'::json) FROM (SELECT name, class,"
        " (array_agg(record ORDER BY heartbeat_at DESC))[1] AS record,"
        " COALESCE(array_agg(host ORDER BY host) FILTER (WHERE heartbeat_at > now() -"
        " make_interval(secs => $1)), '{}') AS hosts,"
        " bool_or(heartbeat_at > now() - make_interval(secs => $1)) AS live"
        " FROM fleet_devices WHERE kind IN ('cpu', 'cuda')"
        " GROUP BY name, class, toolchain, record -> 'limits', record -> 'ordinal'"
        " ORDER BY name, class LIMIT 1024) g",
        1, p, "no fleet devices", err);
}
