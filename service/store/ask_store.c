/* store/ask_store — leases and results of external jobs' trials (store/ask_store.h). */
#include "store/ask_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_util.h"
#include "store/trial_store.h"

json_t *ask_store_lease(PGconn *c, long long job_id, int n, int lease_s, kt_error *err)
{
    store_num jid, lim, secs;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&lim, n), store_ll(&secs, lease_s),
                       ASK_STORE_WORKER};
    /* One statement: the ask is recorded, and the open trials (pending, or running past their
     * lease: a lease that ran out is offered again here, without waiting for any reaper) are
     * leased in proposal order. Trials another ask is leasing are skipped, never handed twice. */
    return store_query_json(
        c,
        "WITH info AS (SELECT status, device FROM jobs WHERE id = $1),"
        " asked AS (UPDATE jobs SET last_ask_at = now() WHERE id = $1 AND device = 'external'"
        " RETURNING id),"
        " pick AS (SELECT t.id FROM trials t WHERE t.job_id = $1"
        " AND (t.status = 'pending' OR (t.status = 'running' AND t.lease_expires_at < now()))"
        " AND EXISTS (SELECT 1 FROM info WHERE status = 'running' AND device = 'external')"
        " ORDER BY t.seq LIMIT $2 FOR UPDATE OF t SKIP LOCKED),"
        " leased AS (UPDATE trials t SET status = 'running', worker = $4, claimed_at = now(),"
        " lease_expires_at = now() + make_interval(secs => $3::int) FROM pick WHERE t.id = pick.id"
        " RETURNING t.id, t.seq, t.config, t.lease_expires_at)"
        " SELECT json_build_object('job_status', i.status, 'device', i.device,"
        " 'asked', (SELECT count(*) FROM asked), 'trials', COALESCE((SELECT json_agg("
        "json_build_object('id', l.id, 'seq', l.seq, 'config', l.config, 'lease_s', $3::int,"
        " 'lease_expires_at', l.lease_expires_at) ORDER BY l.seq) FROM leased l), '[]'::json))"
        " FROM info i",
        4, p, "no such job", err);
}

int ask_store_check(PGconn *c, long long job_id, const long long *ids, int n, char (*status)[16],
                    int *other_job, char *job_status, char *device, kt_error *err)
{
    int rc = -1;
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_integer(ids[i]));
    char *ids_text = store_json_text(arr);
    store_num jid;
    const char *p[] = {store_ll(&jid, job_id), ids_text ? ids_text : "[]"};
    PGresult *r = db_exec(c,
                          "SELECT j.status, j.device, e.ord, t.status, t.job_id <> j.id FROM jobs j"
                          " CROSS JOIN jsonb_array_elements_text($2::jsonb) WITH ORDINALITY"
                          " AS e(id, ord) LEFT JOIN trials t ON t.id = e.id::bigint"
                          " WHERE j.id = $1 UNION ALL SELECT j.status, j.device, NULL, NULL, NULL"
                          " FROM jobs j WHERE j.id = $1",
                          2, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no such job");
        goto out;
    }
    snprintf(job_status, ASK_STORE_TEXT, "%s", PQgetvalue(r, 0, 0));
    snprintf(device, ASK_STORE_TEXT, "%s", PQgetvalue(r, 0, 1));
    for (int i = 0; i < n; i++) {
        status[i][0] = '\0';
        other_job[i] = 0;
    }
    for (int row = 0; row < PQntuples(r); row++) {
        if (PQgetisnull(r, row, 2))
            continue;
        long long ord = store_get_ll(r, row, 2);
        if (ord < 1 || ord > n || PQgetisnull(r, row, 3))
            continue;
        snprintf(status[ord - 1], 16, "%s", PQgetvalue(r, row, 3));
        other_job[ord - 1] = strcmp(PQgetvalue(r, row, 4), "t") == 0;
    }
    rc = 0;
out:
    PQclear(r);
    free(ids_text);
    json_decref(arr);
    return rc;
}

int ask_store_tell(PGconn *c, long long job_id, long long id, int pending, const trial_result *r,
                   kt_error *err)
{
    store_num tid, jid;
    const char *p[] = {store_ll(&tid, id), store_ll(&jid, job_id), ASK_STORE_WORKER};
    /* A trial handed back by an expired lease and not asked again is taken back under the
     * harness; then (or when it is running under a lease) the completion records it. */
    PGresult *q = NULL;
    if (pending) {
        q = db_exec(c,
                    "UPDATE trials SET status = 'running', worker = $3, claimed_at = now()"
                    " WHERE id = $1 AND job_id = $2 AND status = 'pending' RETURNING id",
                    3, p, err);
        if (!q)
            return -1;
        PQclear(q);
    }
    trial_claim claim = {.id = id, .job_id = job_id, .cid = 0};
    snprintf(claim.device, sizeof claim.device, "external");
    int done = trial_store_complete(c, &claim, ASK_STORE_WORKER, r, err);
    if (done < 0)
        return -1;
    if (done == 1)
        return ASK_TOLD_RECORDED;
    /* Not recorded: another tell finished it first (duplicate), or the job no longer runs. */
    q = db_exec(c, "SELECT status FROM trials WHERE id = $1", 1, p, err);
    if (!q)
        return -1;
    int dup = PQntuples(q) == 1 && strcmp(PQgetvalue(q, 0, 0), "pending") != 0 &&
              strcmp(PQgetvalue(q, 0, 0), "running") != 0;
    PQclear(q);
    return dup ? ASK_TOLD_DUPLICATE : ASK_TOLD_LOST;
}
