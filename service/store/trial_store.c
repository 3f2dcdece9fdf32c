#include "store/trial_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/best_store.h"
#include "core/strbuf.h"
#include "store/db.h"
#include "store/job_store.h"
#include "store/store_exec.h"
#include "store/store_util.h"

int trial_store_insert_batch(PGconn *c, long long job_id, const char *device, int first_seq,
                             const config_id *ids, json_t *const *configs, int n, kt_error *err)
{
    /* One statement for the batch: arrays of ids and configs unnested server-side. */
    int rc = -1;
    json_t *id_arr = json_array(), *cfg_arr = json_array();
    char *ids_text = NULL, *cfgs_text = NULL;
    for (int i = 0; i < n; i++) {
        json_array_append_new(id_arr, json_integer((json_int_t)ids[i]));
        json_array_append(cfg_arr, configs[i]);
    }
    ids_text = store_json_text(id_arr);
    cfgs_text = store_json_text(cfg_arr);
    store_num jid, seq;
    const char *p[] = {store_ll(&jid, job_id), device, store_ll(&seq, first_seq), ids_text,
                       cfgs_text};
    PGresult *r = db_exec_prepared(
        c, DB_PREPARED_TRIALS_INSERT,
        "INSERT INTO trials (job_id, device, seq, config_id, config)"
        " SELECT $1, $2, $3 + ord - 1, (e.id)::bigint, cfg"
        " FROM jsonb_array_elements_text($4::jsonb) WITH ORDINALITY AS e(id, ord)"
        " JOIN json_array_elements($5::json) WITH ORDINALITY AS f(cfg, ord2) ON ord = ord2"
        " ON CONFLICT (job_id, seq) DO NOTHING",
        5, p, err);
    rc = r ? 0 : -1;
    PQclear(r);
    free(ids_text);
    free(cfgs_text);
    json_decref(id_arr);
    json_decref(cfg_arr);
    return rc;
}

#define TRIAL_LOAD_COLUMNS                                                                         \
    "t.seq, t.config_id, t.status, t.time_ms, t.repeats, t.compile_ms, t.measure_ms, t.noise_cv,"  \
    " COALESCE(t.charged_seconds, 0), t.extras -> 'metrics'"

/* The trial rows of r from row first on, their columns (TRIAL_LOAD_COLUMNS) from col on. */
static int load_rows(const PGresult *r, int first, int col, trial_row **out, int *n, kt_error *err)
{
    int rows = PQntuples(r) - first;
    trial_row *t = calloc(rows > 0 ? (size_t)rows : 1, sizeof *t);
    if (!t)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory loading %d trials", rows);
    for (int i = 0; i < rows; i++) {
        int row = first + i;
        trial_result_init(&t[i].result);
        t[i].seq = (int)store_get_ll(r, row, col);
        t[i].cid = (config_id)store_get_ll(r, row, col + 1);
        if (trial_status_parse(PQgetvalue(r, row, col + 2), &t[i].result.status) < 0)
            t[i].result.status = TRIAL_INVALID;
        t[i].result.time_ms = store_get_double(r, row, col + 3);
        t[i].result.repeats = (int)store_get_ll(r, row, col + 4);
        t[i].result.compile_ms = store_get_double(r, row, col + 5);
        t[i].result.measure_ms = store_get_double(r, row, col + 6);
        t[i].result.noise_cv = store_get_double(r, row, col + 7);
        t[i].charged_seconds = store_get_double(r, row, col + 8);
        /* Only the user metrics of extras: a metric objective's value (core/objective.h). */
        json_t *metrics = store_get_json(r, row, col + 9);
        if (metrics) {
            t[i].result.extras = json_pack("{s:o}", "metrics", metrics);
            if (!t[i].result.extras) {
                for (int j = 0; j < i; j++)
                    trial_row_release(&t[j]);
                free(t);
                return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory loading %d trials", rows);
            }
        }
    }
    *out = t;
    *n = rows > 0 ? rows : 0;
    return 0;
}

int trial_store_load(PGconn *c, long long job_id, int after_seq, trial_row **out, int *n,
                     kt_error *err)
{
    int rc = -1;
    store_num jid, seq;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&seq, after_seq)};
    *out = NULL;
    *n = 0;
    PGresult *r = db_exec(c,
                          "SELECT " TRIAL_LOAD_COLUMNS " FROM trials t WHERE t.job_id = $1"
                          " AND t.seq > $2 AND t.final_round IS NULL ORDER BY t.seq",
                          2, p, err);
    if (r)
        rc = load_rows(r, 0, 0, out, n, err);
    PQclear(r);
    return rc;
}

int trial_store_load_driving(PGconn *c, long long job_id, const char *runner, int after_seq,
                             char *status, size_t cap, int *mine, trial_row **out, int *n,
                             kt_error *err)
{
    int rc = -1;
    store_num jid, seq;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&seq, after_seq), runner};
    *out = NULL;
    *n = 0;
    /* The job's row first (its trials, if any, follow in seq order): one snapshot, one round
     * trip. */
    PGresult *r =
        db_exec_prepared(c, DB_PREPARED_TRIALS_DRIVING,
                         "SELECT j.status, j.runner IS NOT DISTINCT FROM $3, " TRIAL_LOAD_COLUMNS
                         " FROM jobs j LEFT JOIN trials t ON t.job_id = j.id AND t.seq > $2"
                         " AND t.final_round IS NULL WHERE j.id = $1 ORDER BY t.seq NULLS FIRST",
                         3, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", job_id);
        goto out;
    }
    snprintf(status, cap, "%s", PQgetvalue(r, 0, 0));
    *mine = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    rc = load_rows(r, PQgetisnull(r, 0, 2) ? 1 : 0, 2, out, n, err);
out:
    PQclear(r);
    return rc;
}

void trial_row_release(trial_row *r)
{
    trial_result_release(&r->result);
}

int trial_store_claim(PGconn *c, const char *worker, const trial_claim_devices *devices,
                      trial_claim *out, kt_error *err)
{
    int rc = -1;
    json_t *arr = json_array();
    for (int i = 0; arr && i < devices->n; i++)
        json_array_append_new(arr, json_pack("[s,s,s]", devices->names[i], devices->classes[i],
                                             devices->toolchains[i]));
    char *devs = store_json_text(arr);
    const char *p[] = {worker, devs ? devs : "[]"};
    /* A trial goes only to a worker serving its job's device with the job's class and toolchain:
     * "cpu" on two hosts with different processors are two classes (sql/009). */
    PGresult *r =
        db_exec(c,
                "UPDATE trials t SET status = 'running', worker = $1, claimed_at = now()"
                " FROM (SELECT pt.id FROM trials pt JOIN jobs j ON j.id = pt.job_id"
                " WHERE pt.status = 'pending' AND (pt.device, j.device_class, j.toolchain)"
                " IN (SELECT d->>0, d->>1, d->>2 FROM jsonb_array_elements($2::jsonb) d)"
                " ORDER BY pt.id LIMIT 1 FOR UPDATE OF pt SKIP LOCKED) pick, jobs j"
                " WHERE t.id = pick.id AND j.id = t.job_id"
                " RETURNING t.id, t.job_id, t.config_id, t.device, t.final_round IS NOT NULL,"
                " CASE WHEN j.objective_metric IS NULL THEN j.best_time_ms END,"
                " (SELECT CASE WHEN jsonb_typeof(bt.extras -> 'min_ms') = 'number'"
                " THEN (bt.extras ->> 'min_ms')::double precision END FROM trials bt"
                " WHERE bt.id = j.best_trial_id AND j.objective_metric IS NULL),"
                " (SELECT bt.noise_cv FROM trials bt WHERE bt.id = j.best_trial_id"
                " AND j.objective_metric IS NULL)",
                2, p, err);
    if (!r)
        goto out;
    rc = 0;
    if (PQntuples(r) == 1) {
        out->id = store_get_ll(r, 0, 0);
        out->job_id = store_get_ll(r, 0, 1);
        out->cid = (config_id)store_get_ll(r, 0, 2);
        snprintf(out->device, sizeof out->device, "%s", PQgetvalue(r, 0, 3));
        out->final_round = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
        out->job_best_ms = PQgetisnull(r, 0, 5) ? NAN : store_get_double(r, 0, 5);
        out->job_best_min_ms = PQgetisnull(r, 0, 6) ? NAN : store_get_double(r, 0, 6);
        out->job_best_cv = PQgetisnull(r, 0, 7) ? NAN : store_get_double(r, 0, 7);
        rc = 1;
    }
out:
    PQclear(r);
    free(devs);
    json_decref(arr);
    return rc;
}

int trial_store_complete(PGconn *c, const trial_claim *claim, const char *worker,
                         const trial_result *res, kt_error *err)
{
    char *extras = store_json_text(res->extras);
    store_num tid, jid, t, rep, cms, mms, cv, charged;
    int ok = res->status == TRIAL_OK && isfinite(res->time_ms);
    double compile_ms = isfinite(res->compile_ms) ? res->compile_ms : 0;
    double measure_ms = isfinite(res->measure_ms) ? res->measure_ms : 0;
    /* The charge is computed here, once, by the one rule; the trial keeps it and the job's clock
     * adds the same value. The rest is sql/020's ktune_complete_trial, one round trip and its own
     * transaction: the job locked before done_seq is taken (within a job done_seq order is commit
     * order: a poller reading ?after=N never sees N+1 committed while N is still to come), nothing
     * recorded for a job that no longer runs (its trial removed), the counters and clock, the
     * job's best and the best table (ktune_improves_best); sql/023 has its statements. */
    const char *p[] = {
        store_ll(&tid, claim->id),
        store_ll(&jid, claim->job_id),
        worker,
        trial_status_name(res->status),
        ok ? store_double(&t, res->time_ms) : NULL,
        store_ll(&rep, res->repeats),
        store_double(&cms, compile_ms),
        store_double(&mms, measure_ms),
        store_double_or_null(&cv, res->noise_cv),
        extras,
        store_double(&charged, trial_cost_seconds(res)),
    };
    PGresult *r = db_exec(c,
                          "SELECT ktune_complete_trial($1, $2, $3, $4, $5, $6, $7, $8, $9,"
                          " $10::jsonb, $11)",
                          11, p, err);
    int rc = r ? (strcmp(PQgetvalue(r, 0, 0), "1") == 0) : -1;
    PQclear(r);
    free(extras);
    return rc;
}

int trial_store_claim_live(PGconn *c, const trial_claim *claim, const char *worker, kt_error *err)
{
    store_num tid;
    const char *p[] = {store_ll(&tid, claim->id), worker};
    int rows = store_exec_count(c,
                                "SELECT 1 FROM trials t JOIN jobs j ON j.id = t.job_id"
                                " WHERE t.id = $1 AND t.worker = $2 AND t.status = 'running'"
                                " AND j.status = 'running'",
                                2, p, err);
    return rows < 0 ? -1 : rows == 1;
}

int trial_store_release(PGconn *c, const trial_claim *claim, const char *worker, kt_error *err)
{
    store_num tid;
    const char *p[] = {store_ll(&tid, claim->id), worker};
    long long n = 0;
    /* One statement: the job's status decides between deleting and handing back, seen at once. */
    int rc = store_query_ll(
        c,
        "WITH t AS (SELECT t.id, j.status = 'running' AS job_runs FROM trials t"
        " JOIN jobs j ON j.id = t.job_id WHERE t.id = $1 AND t.worker = $2"
        " AND t.status = 'running' FOR UPDATE OF t),"
        " gone AS (DELETE FROM trials WHERE id IN (SELECT id FROM t WHERE NOT job_runs)"
        " RETURNING id),"
        " back AS (UPDATE trials SET status = 'pending', worker = NULL, claimed_at = NULL"
        " WHERE id IN (SELECT id FROM t WHERE job_runs) RETURNING id)"
        " SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM back)",
        2, p, &n, err);
    return rc < 0 ? -1 : n != 0;
}

/* The page of the rows in "page" (a CTE over trials): the job's status, the trials as objects in
 * finishing order, next_after ($2 when the page is empty). */
#define TRIAL_PAGE_JSON                                                                            \
    " SELECT json_build_object('job_id', j.id, 'job_status', j.status,"                            \
    " 'trials', COALESCE((SELECT json_agg(json_build_object('id', t.id, 'seq', t.seq, "            \
    "'done_seq',"                                                                                  \
    " t.done_seq, 'config_id', t.config_id, 'config', t.config, 'status', t.status, 'time_ms', "   \
    "t.time_ms,"                                                                                   \
    " 'repeats', t.repeats, 'compile_ms', t.compile_ms, 'measure_ms', t.measure_ms, 'noise_cv',"   \
    " t.noise_cv, 'extras', t.extras, 'worker', t.worker, 'finished_at', t.finished_at,"           \
    " 'final_round', t.final_round)"                                                               \
    " ORDER BY t.done_seq) FROM page t), '[]'::json),"                                             \
    " 'next_after', COALESCE((SELECT max(done_seq) FROM page), $2))"                               \
    " FROM jobs j WHERE j.id = $1"

json_t *trial_store_list_json(PGconn *c, long long job_id, long long after, int limit,
                              kt_error *err)
{
    store_num jid, a, l;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&a, after), store_ll(&l, limit)};
    return store_query_json(
        c,
        "WITH page AS (SELECT * FROM trials WHERE job_id = $1 AND done_seq > $2 "
        "ORDER BY done_seq LIMIT $3)" TRIAL_PAGE_JSON,
        3, p, "no such job", err);
}

json_t *trial_store_get_json(PGconn *c, long long job_id, long long trial_id, kt_error *err)
{
    store_num jid, z, tid;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&z, 0), store_ll(&tid, trial_id)};
    return store_query_json(c,
                            "WITH page AS (SELECT * FROM trials WHERE job_id = $1 AND id = $3 "
                            "AND done_seq IS NOT NULL)" TRIAL_PAGE_JSON,
                            3, p, "no such job", err);
}

json_t *trial_store_totals(PGconn *c, kt_error *err)
{
    return store_query_json(
        c,
        "SELECT json_build_object('measured', count(*), 'measure_seconds',"
        " COALESCE(sum(charged_seconds), 0)) FROM trials WHERE done_seq IS NOT NULL",
        0, NULL, "no totals", err);
}

/* ---- the compact trials page: JSON text written row by row ---- */

/* Rows stop once the page passes TRIAL_PAGE_MAX_BYTES; the hard cap leaves room for the last row
 * (a config is a few KiB) and keeps a bug from growing the page without bound. */
#define TRIAL_PAGE_HARD_MAX (2u * TRIAL_PAGE_MAX_BYTES)

/* A JSON string; control characters, quotes and backslashes escaped. */
static void page_string(strbuf *b, const char *s)
{
    strbuf_append(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            strbuf_append(b, esc, 2);
        } else if (ch < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            strbuf_append(b, esc, 6);
        } else {
            strbuf_append(b, s, 1);
        }
    }
    strbuf_append(b, "\"", 1);
}

/* A numeric cell as a JSON number: null for SQL NULL and for what JSON cannot say (NaN,
 * Infinity), so the page always parses. */
static void page_number(strbuf *b, const PGresult *r, int row, int col)
{
    const char *v = PQgetvalue(r, row, col);
    const char *digits = v[0] == '-' ? v + 1 : v;
    int finite = !PQgetisnull(r, row, col) && digits[0] >= '0' && digits[0] <= '9';
    strbuf_puts(b, finite ? v : "null");
}

int trial_store_list_compact(PGconn *c, long long job_id, long long after, int limit, char **text,
                             kt_error *err)
{
    int rc = -1;
    strbuf b;
    strbuf_init(&b, TRIAL_PAGE_HARD_MAX);
    PGresult *r = NULL;
    char status[32];
    store_num jid, a, l;
    const char *p[] = {store_ll(&jid, job_id), store_ll(&a, after), store_ll(&l, limit)};
    *text = NULL;
    /* The job's status first: a poller that sees "succeeded" then has every trial in this page. */
    int found = store_query_text(c, "SELECT status FROM jobs WHERE id = $1", 1, p, status,
                                 sizeof status, err);
    if (found <= 0) {
        if (found == 0)
            kt_error_set(err, KT_ERR_NOT_FOUND, "no such job");
        goto out;
    }
    r = db_exec(c,
                "SELECT seq, done_seq, config_id, status, time_ms, compile_ms, measure_ms,"
                " round(extract(epoch FROM finished_at)::numeric, 3), config, extras->'metrics',"
                " final_round, CASE WHEN jsonb_typeof(extras->'gflops') = 'number'"
                " THEN extras->>'gflops' END"
                " FROM trials WHERE job_id = $1 AND done_seq > $2 ORDER BY done_seq LIMIT $3",
                3, p, err);
    if (!r)
        goto out;
    char head[96];
    snprintf(head, sizeof head, "{\"job_id\":%lld,\"job_status\":", job_id);
    strbuf_puts(&b, head);
    page_string(&b, status);
    strbuf_puts(&b, ",\"format\":\"compact\",\"fields\":[\"seq\",\"done_seq\",\"config_id\","
                    "\"status\",\"time_ms\",\"compile_ms\",\"measure_ms\",\"finished_at\","
                    "\"config\",\"metrics\",\"final_round\",\"gflops\"],\"rows\":[");
    const char *next_after = a.text;
    for (int i = 0; i < PQntuples(r) && b.len < TRIAL_PAGE_MAX_BYTES; i++) {
        strbuf_puts(&b, i ? ",[" : "[");
        for (int col = 0; col <= 2; col++) {
            page_number(&b, r, i, col);
            strbuf_append(&b, ",", 1);
        }
        page_string(&b, PQgetvalue(r, i, 3));
        for (int col = 4; col <= 7; col++) {
            strbuf_append(&b, ",", 1);
            page_number(&b, r, i, col);
        }
        strbuf_append(&b, ",", 1);
        /* json column: PostgreSQL checked it on insert; NOT NULL in the schema. */
        strbuf_puts(&b, PQgetisnull(r, i, 8) ? "null" : PQgetvalue(r, i, 8));
        /* The user metrics of an ok trial (extras.metrics, kernels/README.md), else null. */
        strbuf_append(&b, ",", 1);
        strbuf_puts(&b, PQgetisnull(r, i, 9) ? "null" : PQgetvalue(r, i, 9));
        /* The final pick's round of a re-measurement (1..), null for the search's trials. */
        strbuf_append(&b, ",", 1);
        page_number(&b, r, i, 10);
        /* The GFLOP/s the runner computed from the kernel's flop count (extras.gflops), or null. */
        strbuf_append(&b, ",", 1);
        page_number(&b, r, i, 11);
        strbuf_append(&b, "]", 1);
        next_after = PQgetvalue(r, i, 1);
    }
    strbuf_puts(&b, "],\"next_after\":");
    strbuf_puts(&b, next_after);
    strbuf_append(&b, "}", 1);
    if (b.failed == STRBUF_TOO_LONG) {
        kt_error_set(err, KT_ERR_INTERNAL, "a trials page exceeds %u bytes", TRIAL_PAGE_HARD_MAX);
        goto out;
    }
    *text = strbuf_take(&b);
    if (!*text) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory building a trials page");
        goto out;
    }
    rc = 0;
out:
    strbuf_release(&b);
    PQclear(r);
    return rc;
}
