#include "store/worker_store.h"

#include <stdlib.h>

#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

int worker_store_register(PGconn *c, const char *id, const char *host, int pid,
                          const char *const *devices, int n_devices, kt_error *err)
{
    json_t *arr = json_array();
    for (int i = 0; i < n_devices; i++)
        json_array_append_new(arr, json_string(devices[i]));
    char *devs = store_json_text(arr);
    store_num p;
    const char *params[] = {id, host, store_ll(&p, pid), devs};
    int rc =
        db_run(c,
               "INSERT INTO workers (id, host, pid, devices) VALUES ($1, $2, $3,"
               " ARRAY(SELECT jsonb_array_elements_text($4::jsonb))) ON CONFLICT (id) DO UPDATE SET"
               " status = 'idle', current_trial = NULL, heartbeat_at = now()",
               4, params, err);
    free(devs);
    json_decref(arr);
    return rc;
}

int worker_store_set_state(PGconn *c, const char *id, const char *status, long long current_trial,
                           long long trials_done, kt_error *err)
{
    store_num t, d;
    const char *p[] = {id, status, current_trial > 0 ? store_ll(&t, current_trial) : NULL,
                       store_ll(&d, trials_done)};
    return db_run(
        c,
        "UPDATE workers SET status = $2, current_trial = $3, trials_done = $4, heartbeat_at = now()"
        " WHERE id = $1",
        4, p, err);
}

int worker_store_heartbeat(PGconn *c, const char *host, int pid, kt_error *err)
{
    store_num p;
    const char *params[] = {host, store_ll(&p, pid)};
    return db_run(c,
                  "UPDATE workers SET heartbeat_at = now() WHERE host = $1 AND pid = $2"
                  " AND status IN ('idle', 'measuring')",
                  2, params, err);
}

int worker_store_reap(PGconn *c, const char *host, int my_pid, const char *my_prefix, int stale_s,
                      kt_error *err)
{
    int requeued = -1;
    store_num s, pid;
    const char *p1[] = {store_ll(&s, stale_s)};
    PGresult *r = NULL;
    if (db_run(c,
               "UPDATE workers SET status = 'dead', current_trial = NULL WHERE status IN ('idle', "
               "'measuring')"
               " AND heartbeat_at < now() - make_interval(secs => $1)",
               1, p1, err) < 0)
        goto out;
    /* Workers on this host are checked by pid, so a process killed with -9 is noticed at once; my
     * own pid with another id prefix is a previous incarnation. */
    const char *p2[] = {host};
    r = db_exec(
        c, "SELECT DISTINCT pid FROM workers WHERE host = $1 AND status IN ('idle', 'measuring')",
        1, p2, err);
    if (!r)
        goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        int other = (int)store_get_ll(r, i, 0);
        if (other != my_pid && store_pid_alive(other))
            continue;
        const char *p3[] = {host, store_ll(&pid, other), my_prefix};
        if (db_run(c,
                   "UPDATE workers SET status = 'dead', current_trial = NULL WHERE host = $1 AND "
                   "pid = $2"
                   " AND status IN ('idle', 'measuring') AND NOT starts_with(id, $3)",
                   3, p3, err) < 0)
            goto out;
    }
    requeued = store_exec_count(
        c,
        "UPDATE trials SET status = 'pending', worker = NULL, claimed_at = NULL WHERE "
        "status = 'running' AND lease_expires_at IS NULL" /* leased: its lease decides */
        " AND (worker IS NULL OR worker IN (SELECT id FROM workers WHERE status IN "
        "('dead', 'stopped'))"
        " OR worker NOT IN (SELECT id FROM workers)) RETURNING id",
        0, NULL, err);
out:
    PQclear(r);
    return requeued;
}

json_t *worker_store_list_json(PGconn *c, kt_error *err)
{
    return store_query_json(
        c,
        "SELECT json_build_object('workers', COALESCE(json_agg(json_build_object('id', w.id, "
        "'host', w.host,"
        " 'pid', w.pid, 'devices', w.devices, 'status', w.status, 'current_trial', w.current_trial,"
        " 'trials_done', w.trials_done, 'started_at', w.started_at, 'heartbeat_at', w.heartbeat_at)"
        " ORDER BY (w.status IN ('idle', 'measuring')) DESC, w.started_at DESC), '[]'::json))"
        " FROM (SELECT * FROM workers ORDER BY started_at DESC LIMIT 200) w",
        0, NULL, "no workers", err);
}
