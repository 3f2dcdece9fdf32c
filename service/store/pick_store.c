#include "store/pick_store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/best_store.h"
#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

void pick_store_read_job(const PGresult *r, int row, job_info *j)
{
    int n = PQfnumber(r, "final_remeasure"), k = PQfnumber(r, "final_rounds"),
        p = PQfnumber(r, "final_pick"), m = PQfnumber(r, "final_measured");
    j->final_remeasure = n >= 0 ? (int)store_get_ll(r, row, n) : 0;
    j->final_rounds = k >= 0 ? (int)store_get_ll(r, row, k) : 0;
    j->final_pick = p >= 0 ? store_get_json(r, row, p) : NULL;
    j->final_measured = m >= 0 ? store_get_ll(r, row, m) : 0;
}

int pick_store_load(PGconn *c, long long job_id, int remeasures, pick_trial **out, int *n,
                    kt_error *err)
{
    int rc = -1;
    store_num jid;
    const char *p[] = {store_ll(&jid, job_id), remeasures ? "t" : "f"};
    *out = NULL;
    *n = 0;
    PGresult *r = db_exec(c,
                          "SELECT id, seq, config_id, COALESCE(final_round, 0), status, time_ms"
                          " FROM trials WHERE job_id = $1 AND (final_round IS NOT NULL) = $2::bool"
                          " ORDER BY seq",
                          2, p, err);
    if (!r)
        goto out;
    int rows = PQntuples(r);
    pick_trial *t = calloc(rows > 0 ? (size_t)rows : 1, sizeof *t);
    if (!t) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory loading %d trials of job %lld", rows,
                     job_id);
        goto out;
    }
    for (int i = 0; i < rows; i++) {
        t[i].id = store_get_ll(r, i, 0);
        t[i].seq = (int)store_get_ll(r, i, 1);
        t[i].cid = (config_id)store_get_ll(r, i, 2);
        t[i].round = (int)store_get_ll(r, i, 3);
        if (trial_status_parse(PQgetvalue(r, i, 4), &t[i].status) < 0)
            t[i].status = TRIAL_INVALID;
        t[i].time_ms = store_get_double(r, i, 5);
    }
    *out = t;
    *n = rows;
    rc = 0;
out:
    PQclear(r);
    return rc;
}

int pick_store_insert(PGconn *c, long long job_id, const char *device, int first_seq,
                      const config_id *cids, const int *rounds, json_t *const *configs, int n,
                      kt_error *err)
{
    int rc = -1;
    json_t *rows = json_array();
    char *text = NULL;
    for (int i = 0; rows && i < n; i++)
        if (json_array_append_new(
                rows, json_pack("[I,i,O]", (json_int_t)cids[i], rounds[i], configs[i])) < 0)
            goto out;
    text = store_json_text(rows);
    if (!text) {
        kt_error_set(err, KT_ERR_NO_MEMORY,
                     "out of memory queueing the re-measurements of job %lld", job_id);
        goto out;
    }
    store_num jid, seq;
    const char *p[] = {store_ll(&jid, job_id), device, store_ll(&seq, first_seq), text};
    /* One statement: [config_id, round, config] triples unnested in order. config stays json
     * (parameter order kept), so the array is parsed as json, not jsonb. */
    rc = db_run(c,
                "INSERT INTO trials (job_id, device, seq, config_id, final_round, config)"
                " SELECT $1, $2, $3 + ord - 1, (e->>0)::bigint, (e->>1)::int, e->2"
                " FROM json_array_elements($4::json) WITH ORDINALITY AS x(e, ord)"
                " ON CONFLICT (job_id, seq) DO NOTHING",
                4, p, err);
out:
    free(text);
    json_decref(rows);
    return rc;
}

typedef struct record_ctx {
    const runner_identity *me;
    long long job_id, winner_trial_id;
    const char *pick_text;
} record_ctx;

/* pick_store_record in its transaction. */
static int record_tx(PGconn *c, void *ctx, kt_error *err)
{
    const record_ctx *x = ctx;
    int rc = -1;
    PGresult *win = NULL, *job = NULL;
    store_num jid, tid;
    const char *pw[] = {store_ll(&jid, x->job_id), store_ll(&tid, x->winner_trial_id)};
    /* The job row first, locked (as trial_store_complete locks it): a cancel or a reaper that
     * took the job wins, and nothing is written. */
    const char *pj[] = {jid.text, x->me->id};
    int mine = store_exec_count(c,
                                "SELECT 1 FROM jobs WHERE id = $1 AND runner = $2"
                                " AND status = 'running' FOR UPDATE",
                                2, pj, err);
    if (mine <= 0)
        return mine;
    const char *best_config = NULL;
    double best_ms = NAN;
    long long best_trial = 0;
    if (x->winner_trial_id > 0) {
        win = db_exec(c,
                      "SELECT config, time_ms FROM trials WHERE job_id = $1 AND id = $2"
                      " AND final_round IS NOT NULL AND status = 'ok' AND time_ms IS NOT NULL",
                      2, pw, err);
        if (!win)
            goto out;
        if (PQntuples(win) == 0) {
            kt_error_set(err, KT_ERR_INTERNAL,
                         "the pick of job %lld names trial %lld, not an ok re-measurement of it",
                         x->job_id, x->winner_trial_id);
            goto out;
        }
        best_config = PQgetvalue(win, 0, 0);
        best_ms = store_get_double(win, 0, 1);
        best_trial = x->winner_trial_id;
    }
    store_num ms;
    const char *pu[] = {jid.text, x->pick_text, best_trial > 0 ? tid.text : NULL,
                        best_trial > 0 ? store_double(&ms, best_ms) : NULL, best_config};
    /* With a winner the job's best is replaced outright: the re-measured median is the job's answer
     * even when a search trial of it was faster once. */
    job = db_exec(c,
                  "UPDATE jobs SET final_pick = $2::jsonb, updated_at = now(),"
                  " best_trial_id = COALESCE($3::bigint, best_trial_id),"
                  " best_time_ms = CASE WHEN $3::bigint IS NULL THEN best_time_ms ELSE $4 END,"
                  " best_config = CASE WHEN $3::bigint IS NULL THEN best_config ELSE $5::json END"
                  " WHERE id = $1 RETURNING " BEST_JOB_KEY_COLUMNS
                  ", best_trial_id, best_time_ms, best_config",
                  5, pu, err);
    if (!job)
        goto out;
    if (PQntuples(job) == 1 && !PQgetisnull(job, 0, 7)) {
        best_offer offer =
            best_offer_of_job_row(job, 0, x->job_id, store_get_ll(job, 0, 7),
                                  store_get_double(job, 0, 8), PQgetvalue(job, 0, 9));
        if (best_store_offer(c, &offer, err) < 0)
            goto out;
    }
    rc = 1;
out:
    PQclear(win);
    PQclear(job);
    return rc;
}

int pick_store_record(PGconn *c, const runner_identity *me, long long job_id,
                      long long winner_trial_id, const json_t *pick, kt_error *err)
{
    char *pick_text = store_json_text(pick);
    record_ctx x = {
        .me = me, .job_id = job_id, .winner_trial_id = winner_trial_id, .pick_text = pick_text};
    int rc = pick_text ? store_tx(c, record_tx, &x, err)
                       : kt_error_set(err, KT_ERR_NO_MEMORY,
                                      "out of memory recording the pick of job %lld", job_id);
    free(pick_text);
    return rc;
}
