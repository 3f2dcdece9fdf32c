/* store/model_store — the models table: queueing, reading, claiming and ending models. The training
 * data and retrain queries are in model_data_store.c. See model_store.h. */
#include "store/model_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/reap.h"
#include "store/store_exec.h"
#include "store/store_util.h"

/* The key columns in model_key order (less algorithm), as $-parameters from `first`. */
#define MODEL_KEY_MATCH(alias, a, b, c, d, e)                                                      \
    alias "kind = $" a " AND " alias "kernel = $" b " AND " alias "device_class = $" c             \
          " AND " alias "kernel_hash = $" d " AND " alias "toolchain = $" e

/* A model row as JSON, in two parts: the columns this service wrote itself (numbers of 64 bits at
 * most, text, times: they always parse), then the four jsonb columns apart (MODEL_JSON_COLUMNS),
 * each parsed on its own. jsonb writes a number such as 1e300 as a 301-digit integer that jansson
 * refuses: such a column (a row stored before the hyper check, or by hand) is shown as null and
 * named in "unreadable", and the rest of the row and of the list are served (issue 26). */
/* clang-format off */
#define MODEL_ROW_SQL_WITH(training)                                                               \
    "SELECT json_build_object('id', m.id, 'kind', m.kind, 'algorithm', m.algorithm, 'kernel',"     \
    " m.kernel, 'device_class', m.device_class, 'kernel_hash', m.kernel_hash, 'toolchain',"        \
    " m.toolchain, 'version', m.version, 'status', m.status, 'size_bytes', octet_length(m.model)," \
    " 'format_version', m.format_version, 'reason', m.reason, 'attempts', m.attempts,"             \
    " 'created_at', m.created_at, 'started_at', m.started_at, 'finished_at', m.finished_at),"      \
    " " training ", m.hyper, m.metrics, m.error"
#define MODEL_ROW_SQL MODEL_ROW_SQL_WITH("m.training")
/* clang-format on */
static const char *const model_json_columns[] = {"training", "hyper", "metrics", "error"};
#define MODEL_JSON_COLUMNS ((int)(sizeof model_json_columns / sizeof model_json_columns[0]))

/* The model of row `row` of r (columns as MODEL_ROW_SQL); NULL with err only when out of memory
 * or the first column does not parse (it cannot, unless the database is not this service's). */
static json_t *model_of_row(const PGresult *r, int row, kt_error *err)
{
    json_t *m = store_get_json(r, row, 0), *unreadable = NULL;
    if (!json_is_object(m)) {
        json_decref(m);
        kt_error_set(err, KT_ERR_INTERNAL, "the database returned a model row that does not parse");
        return NULL;
    }
    for (int i = 0; i < MODEL_JSON_COLUMNS; i++) {
        json_t *v = PQgetisnull(r, row, i + 1) ? json_null() : store_get_json(r, row, i + 1);
        if (!v) {
            v = json_null();
            if (!unreadable)
                unreadable = json_array();
            json_array_append_new(unreadable, json_string(model_json_columns[i]));
        }
        if (json_object_set_new(m, model_json_columns[i], v) < 0)
            goto oom;
    }
    if (unreadable && json_object_set_new(m, "unreadable", unreadable) < 0) {
        unreadable = NULL;
        goto oom;
    }
    return m;
oom:
    json_decref(unreadable);
    json_decref(m);
    kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading a model");
    return NULL;
}

int model_store_create(PGconn *c, const model_key *k, const json_t *hyper, const char *reason,
                       long long *id_out, kt_error *err)
{
    int rc = -1;
    char state[6] = "";
    char *hyper_text = store_json_text(hyper);
    const char *p[] = {k->kind,
                       k->kernel,
                       k->device_class,
                       k->kernel_hash,
                       k->toolchain,
                       k->algorithm,
                       hyper_text ? hyper_text : "{}",
                       reason};
    PGresult *r = NULL;
    char training[32];
    int busy = store_query_text(
        c,
        "SELECT id FROM models WHERE " MODEL_KEY_MATCH("", "1", "2", "3", "4", "5") " AND status = "
                                                                                    "'training'",
        5, p, training, sizeof training, err);
    if (busy < 0)
        goto out;
    if (busy) {
        kt_error_set(err, KT_ERR_CONFLICT,
                     "model %s of kernel %s on device class %s is already training", training,
                     k->kernel, k->device_class);
        kt_error_hint(err, "wait for model %s (GET /v1/models/%s) before asking for another",
                      training, training);
        goto out;
    }
    r = db_exec_state(
        c,
        "INSERT INTO models (kind, kernel, device_class, kernel_hash, toolchain, algorithm, hyper,"
        " reason, status, version) SELECT $1, $2, $3, $4, $5, $6, $7::jsonb, $8, 'training',"
        " COALESCE(max(version), 0) + 1 FROM models WHERE " MODEL_KEY_MATCH("", "1", "2", "3", "4",
                                                                            "5") " RETURNING id",
        8, p, state, err);
    if (!r) {
        /* Another create of the same key won the race (version or the one-training index). */
        if (strcmp(state, "23505") == 0) {
            kt_error_set(err, KT_ERR_CONFLICT,
                         "a model of kernel %s on device class %s was queued at the same time",
                         k->kernel, k->device_class);
            kt_error_hint(err, "GET /v1/models?kernel=%s lists it", k->kernel);
        }
        goto out;
    }
    *id_out = store_get_ll(r, 0, 0);
    rc = 0;
out:
    PQclear(r);
    free(hyper_text);
    return rc;
}

json_t *model_store_get_json(PGconn *c, long long id, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    json_t *out = NULL;
    PGresult *r = db_exec(c, MODEL_ROW_SQL " FROM models m WHERE m.id = $1", 1, p, err);
    if (!r)
        return NULL;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no model with id %lld", id);
        kt_error_hint(err, "GET /v1/models lists the models");
    } else {
        out = model_of_row(r, 0, err);
    }
    PQclear(r);
    return out;
}

json_t *model_store_list_json(PGconn *c, const char *kernel, const char *device_class,
                              const char *status, int limit, kt_error *err)
{
    store_num l;
    if (limit < 1 || limit > 1000) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "limit %d is out of range", limit);
        kt_error_hint(err, "a limit from 1 to 1000");
        return NULL;
    }
    const char *p[] = {kernel, device_class, status, store_ll(&l, limit)};
    /* A row per model, parsed one by one: a row that does not read is marked, never the end of
     * the list (model_of_row). */
    PGresult *r =
        db_exec(c,
                /* A list leaves out each model's trained-on problems (up to 10,000
                 * each, issue 31): GET /v1/models/{id} shows them. */
                MODEL_ROW_SQL_WITH(
                    "(m.training - 'trained_on')") " FROM models m WHERE ($1::text IS NULL OR "
                                                   "m.kernel = $1)"
                                                   " AND ($2::text IS NULL OR m.device_class = $2)"
                                                   " AND ($3::text IS NULL OR m.status = $3)"
                                                   " ORDER BY m.id DESC LIMIT $4",
                4, p, err);
    json_t *models = json_array(), *out = NULL;
    if (!r || !models)
        goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *m = model_of_row(r, i, err);
        if (!m || json_array_append_new(models, m) < 0)
            goto out;
    }
    out = json_pack("{s:O}", "models", models);
    if (!out)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory listing models");
out:
    if (r && !models)
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory listing models");
    json_decref(models);
    PQclear(r);
    return out;
}

typedef struct delete_ctx {
    long long id;
    model_deleted *out;
} delete_ctx;

/* model_store_delete in its transaction. */
static int delete_tx(PGconn *c, void *ctx, kt_error *err)
{
    const delete_ctx *x = ctx;
    int rc = -1;
    store_num n;
    const char *p[] = {store_ll(&n, x->id)};
    /* The row lock orders this against a job's first open recording the model
     * (model_store_job_model: its reference takes a key-share lock on the row). */
    PGresult *r = db_exec(c, "SELECT status, kind FROM models WHERE id = $1 FOR UPDATE", 1, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no model with id %lld", x->id);
        kt_error_hint(err, "GET /v1/models lists the models");
        goto out;
    }
    snprintf(x->out->status, sizeof x->out->status, "%s", PQgetvalue(r, 0, 0));
    snprintf(x->out->kind, sizeof x->out->kind, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    /* A queued or running job resumes by replaying through the model it recorded: it must stay. */
    r = db_exec(c,
                "SELECT id, status FROM jobs WHERE surrogate_model_id = $1"
                " AND status IN ('queued', 'running') ORDER BY id LIMIT 1",
                1, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) > 0) {
        kt_error_set(err, KT_ERR_CONFLICT, "model %lld is the surrogate of job %s, which is %s",
                     x->id, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
        kt_error_hint(err,
                      "a job resumes through the surrogate it started with: wait for job %s to "
                      "end, or cancel it (DELETE /v1/jobs/%s), then delete the model",
                      PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 0));
        goto out;
    }
    /* Ended jobs forget it (their reference is history, not a resume), then the row goes. */
    int unlinked = store_exec_count(c,
                                    "UPDATE jobs SET surrogate_model_id = NULL"
                                    " WHERE surrogate_model_id = $1 RETURNING id",
                                    1, p, err);
    if (unlinked < 0 || db_run(c, "DELETE FROM models WHERE id = $1", 1, p, err) < 0)
        goto out;
    x->out->jobs_unlinked = unlinked;
    rc = 0;
out:
    PQclear(r);
    return rc;
}

int model_store_delete(PGconn *c, long long id, model_deleted *out, kt_error *err)
{
    delete_ctx x = {.id = id, .out = out};
    memset(out, 0, sizeof *out);
    return store_tx(c, delete_tx, &x, err);
}

/* Runs sql, whose row (if any) is (id, algorithm, version, model bytes or NULL), into out: the
 * bytes unescaped when want_bytes and present (else out->bytes stays NULL). 1 with a row, 0
 * without, -1 (err) on a database error or out of memory. */
static int model_ready_query(PGconn *c, const char *sql, int n, const char *const *p,
                             int want_bytes, model_ready *out, kt_error *err)
{
    memset(out, 0, sizeof *out);
    PGresult *r = db_exec(c, sql, n, p, err);
    if (!r)
        return -1;
    int rc = PQntuples(r) > 0;
    if (rc) {
        out->id = store_get_ll(r, 0, 0);
        snprintf(out->algorithm, sizeof out->algorithm, "%s", PQgetvalue(r, 0, 1));
        out->version = (int)store_get_ll(r, 0, 2);
    }
    if (rc && want_bytes && !PQgetisnull(r, 0, 3)) {
        out->bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 3), &out->len);
        if (!out->bytes)
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading model %lld", out->id);
    }
    PQclear(r);
    if (rc < 0)
        model_ready_release(out);
    return rc;
}

int model_store_latest_ready(PGconn *c, const char *kind, const char *kernel,
                             const char *device_class, const char *kernel_hash,
                             const char *toolchain, int want_bytes, model_ready *out, kt_error *err)
{
    const char *p[] = {kind,
                       kernel,
                       device_class,
                       kernel_hash,
                       toolchain ? toolchain : "",
                       want_bytes ? "t" : "f"};
    return model_ready_query(c,
                             "SELECT id, algorithm, version, CASE WHEN $6::boolean THEN model END"
                             " FROM models WHERE " MODEL_KEY_MATCH(
                                 "", "1", "2", "3", "4", "5") " AND status = 'ready'"
                                                              " ORDER BY version DESC LIMIT 1",
                             6, p, want_bytes, out, err);
}

/* The newest ready model of kind $2 and key $3 .. $6 (model_store_job_model). */
/* clang-format off */
#define JOB_NEWEST_READY_SQL                                                                       \
    "(SELECT id FROM models WHERE " MODEL_KEY_MATCH("", "2", "3", "4", "5", "6")                   \
    " AND status = 'ready' ORDER BY version DESC LIMIT 1)"
/* clang-format on */

int model_store_job_model(PGconn *c, long long job_id, const char *kind, const char *kernel,
                          const char *device_class, const char *kernel_hash, const char *toolchain,
                          model_ready *out, kt_error *err)
{
    store_num j;
    const char *p[] = {store_ll(&j, job_id), kind,        kernel,
                       device_class,         kernel_hash, toolchain ? toolchain : ""};
    /* One statement: the recorded model, or the newest ready one recorded now (the job's row lock
     * makes a second first call find the first one's record). */
    int rc =
        model_ready_query(c,
                          "WITH pick AS (UPDATE jobs SET surrogate_model_id = " JOB_NEWEST_READY_SQL
                          " WHERE id = $1 AND surrogate_model_id IS NULL"
                          " RETURNING surrogate_model_id)"
                          " SELECT m.id, m.algorithm, m.version, m.model FROM models m"
                          " WHERE m.id = COALESCE((SELECT surrogate_model_id FROM pick),"
                          " (SELECT surrogate_model_id FROM jobs WHERE id = $1))",
                          6, p, 1, out, err);
    if (rc > 0 && !out->bytes) {
        rc = kt_error_set(err, KT_ERR_INTERNAL, "model %lld of job %lld has no bytes", out->id,
                          job_id);
        model_ready_release(out);
    }
    return rc;
}

void model_ready_release(model_ready *r)
{
    if (r->bytes)
        PQfreemem(r->bytes);
    memset(r, 0, sizeof *r);
}

void model_claim_release(model_claim *m)
{
    free(m->kind);
    free(m->algorithm);
    free(m->kernel);
    free(m->device_class);
    free(m->kernel_hash);
    free(m->toolchain);
    free(m->reason);
    json_decref(m->hyper);
    memset(m, 0, sizeof *m);
}

/* {"code","message","hint","reason"} as jsonb text (malloc'd). */
static char *error_text(const kt_error *why, const char *reason)
{
    json_t *e = json_pack("{s:s,s:s,s:s,s:s}", "code", kt_error_code_name(why->code), "message",
                          why->message, "hint", why->hint, "reason", reason ? reason : "failed");
    char *text = store_json_text(e);
    json_decref(e);
    return text;
}

/* Fails the claimable models that used up their attempts. */
static int fail_exhausted(PGconn *c, int stale_s, kt_error *err)
{
    store_num s, max;
    kt_error why;
    kt_error_set(&why, KT_ERR_INTERNAL,
                 "training was started %d times and never finished (the process training it "
                 "died each time)",
                 MODEL_MAX_ATTEMPTS);
    kt_error_hint(&why, "see the ktuned logs of the hosts that trained it; POST /v1/models queues "
                        "a new one");
    char *e = error_text(&why, "attempts");
    const char *p[] = {store_ll(&s, stale_s), store_ll(&max, MODEL_MAX_ATTEMPTS), e};
    int rc =
        db_run(c,
               "UPDATE models SET status = 'failed', error = $3::jsonb, finished_at = now(),"
               " runner = NULL WHERE status = 'training' AND attempts >= $2 AND (runner IS NULL"
               " OR runner_heartbeat < now() - make_interval(secs => $1))",
               3, p, err);
    free(e);
    return rc;
}

int model_store_claim(PGconn *c, const runner_identity *me, int stale_s, model_claim *out,
                      kt_error *err)
{
    return model_store_claim_served(c, me, stale_s, NULL, out, err);
}

int model_store_claim_served(PGconn *c, const runner_identity *me, int stale_s, const char *classes,
                             model_claim *out, kt_error *err)
{
    int rc = -1;
    store_num s;
    PGresult *r = NULL;
    memset(out, 0, sizeof *out);
    if (fail_exhausted(c, stale_s, err) < 0)
        goto out;
    const char *p[] = {me->id, store_ll(&s, stale_s), classes};
    /* With classes: a model of a class some live process serves (fleet_devices, sql/009) is left
     * to such a process; one nobody serves is taken, to be failed as target_unavailable. */
    r = db_exec(
        c,
        "UPDATE models m SET runner = $1, runner_heartbeat = now(), attempts = m.attempts + 1,"
        " started_at = COALESCE(m.started_at, now()) FROM (SELECT id FROM models md"
        " WHERE status = 'training' AND (runner IS NULL"
        " OR runner_heartbeat < now() - make_interval(secs => $2::int))"
        " AND ($3::jsonb IS NULL OR md.device_class IN (SELECT jsonb_array_elements_text($3))"
        " OR NOT EXISTS (SELECT 1 FROM fleet_devices f WHERE f.class = md.device_class"
        " AND f.heartbeat_at > now() - make_interval(secs => $2::int)))"
        " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) pick WHERE m.id = pick.id"
        " RETURNING m.id, m.version, m.attempts, m.kind, m.algorithm, m.kernel,"
        " m.device_class, m.kernel_hash, m.toolchain, m.reason, m.hyper",
        3, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        rc = 0;
        goto out;
    }
    out->id = store_get_ll(r, 0, 0);
    out->version = (int)store_get_ll(r, 0, 1);
    out->attempts = (int)store_get_ll(r, 0, 2);
    out->kind = strdup(PQgetvalue(r, 0, 3));
    out->algorithm = strdup(PQgetvalue(r, 0, 4));
    out->kernel = strdup(PQgetvalue(r, 0, 5));
    out->device_class = strdup(PQgetvalue(r, 0, 6));
    out->kernel_hash = strdup(PQgetvalue(r, 0, 7));
    out->toolchain = strdup(PQgetvalue(r, 0, 8));
    out->reason = strdup(PQgetvalue(r, 0, 9));
    out->hyper = store_get_json(r, 0, 10);
    if (!out->kind || !out->algorithm || !out->kernel || !out->device_class || !out->kernel_hash ||
        !out->toolchain || !out->reason) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading model %lld", out->id);
        model_claim_release(out);
        goto out;
    }
    rc = 1;
out:
    PQclear(r);
    return rc;
}

int model_store_heartbeat(PGconn *c, const runner_identity *me, kt_error *err)
{
    const char *p[] = {me->id};
    return db_run(
        c, "UPDATE models SET runner_heartbeat = now() WHERE runner = $1 AND status = 'training'",
        1, p, err);
}

int model_store_release_dead(PGconn *c, const runner_identity *me, int stale_s, kt_error *err)
{
    static const store_reap_sql models = {
        .release_stale = "UPDATE models SET runner = NULL WHERE status = 'training' AND runner IS"
                         " NOT NULL AND runner_heartbeat < now() - make_interval(secs => $1)"
                         " RETURNING id",
        .runners = "SELECT DISTINCT runner FROM models WHERE status = 'training' AND runner IS NOT"
                   " NULL AND runner <> $1",
        .release_runner =
            "UPDATE models SET runner = NULL WHERE status = 'training' AND runner = $1"
            " RETURNING id",
    };
    return store_reap_dead(c, me, stale_s, &models, err);
}

int model_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err)
{
    const char *p[] = {me->id};
    return db_run(c,
                  "UPDATE models SET runner = NULL, attempts = greatest(attempts - 1, 0)"
                  " WHERE runner = $1 AND status = 'training'",
                  1, p, err);
}

/* "\x<hex>": the text form of a bytea parameter (malloc'd). */
static char *bytea_hex(const unsigned char *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *out = malloc(2 * len + 3);
    if (!out)
        return NULL;
    out[0] = '\\';
    out[1] = 'x';
    for (size_t i = 0; i < len; i++) {
        out[2 + 2 * i] = digits[bytes[i] >> 4];
        out[3 + 2 * i] = digits[bytes[i] & 15];
    }
    out[2 + 2 * len] = '\0';
    return out;
}

typedef struct finish_ctx {
    long long id;
    const runner_identity *me;
    const char *const *p; /* model_store_finish's 7 parameters */
} finish_ctx;

/* model_store_finish in its transaction: the model made ready, then the older ready versions of
 * its key superseded. */
static int finish_tx(PGconn *c, void *ctx, kt_error *err)
{
    const finish_ctx *x = ctx;
    PGresult *r =
        db_exec(c,
                "UPDATE models SET status = 'ready', model = $3::bytea, format_version = $4,"
                " metrics = $5::jsonb, training = COALESCE($6::jsonb, training),"
                " hyper = COALESCE($7::jsonb, hyper), error = NULL, finished_at = now(),"
                " runner = NULL WHERE id = $1 AND runner = $2 AND status = 'training'"
                " RETURNING kind, kernel, device_class, kernel_hash, toolchain, version",
                7, x->p, err);
    if (!r)
        return -1;
    int rc = -1;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_CONFLICT, "model %lld is no longer trained by %s", x->id,
                     x->me->id);
        kt_error_hint(err,
                      "it was deleted (DELETE /v1/models/%lld), or another trainer claimed it "
                      "after this one's heartbeat went stale",
                      x->id);
    } else {
        const char *q[] = {PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
                           PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 4), PQgetvalue(r, 0, 5)};
        rc = db_run(c,
                    "UPDATE models SET status = 'superseded' WHERE " MODEL_KEY_MATCH(
                        "", "1", "2", "3", "4", "5") " AND status = 'ready' AND version < $6",
                    6, q, err);
    }
    PQclear(r);
    return rc;
}

int model_store_finish(PGconn *c, const runner_identity *me, long long id,
                       const unsigned char *bytes, size_t len, int format_version,
                       const json_t *metrics, const json_t *training, const json_t *hyper,
                       kt_error *err)
{
    int rc = -1;
    store_num n, fv;
    char *hex = NULL, *metrics_text = store_json_text(metrics);
    char *training_text = store_json_text(training), *hyper_text = store_json_text(hyper);
    if (len > MODEL_MAX_BYTES) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "model %lld is %zu bytes, more than %u", id, len,
                     MODEL_MAX_BYTES);
        kt_error_hint(err, "train with a smaller model (hyper \"hidden\") or fewer problems");
        goto out;
    }
    hex = bytea_hex(bytes, len);
    if (!hex) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory storing model %lld", id);
        goto out;
    }
    const char *p[] = {store_ll(&n, id), me->id,        hex,       store_ll(&fv, format_version),
                       metrics_text,     training_text, hyper_text};
    finish_ctx x = {.id = id, .me = me, .p = p};
    rc = store_tx(c, finish_tx, &x, err) < 0 ? -1 : 0;
out:
    free(hex);
    free(metrics_text);
    free(training_text);
    free(hyper_text);
    return rc;
}

int model_store_fail(PGconn *c, const runner_identity *me, long long id, const kt_error *why,
                     const char *reason, const json_t *training, kt_error *err)
{
    store_num n;
    char *e = error_text(why, reason);
    char *training_text = store_json_text(training);
    const char *p[] = {store_ll(&n, id), me->id, e, training_text};
    int rc = db_run(c,
                    "UPDATE models SET status = 'failed', error = $3::jsonb,"
                    " training = COALESCE($4::jsonb, training), finished_at = now(), runner = NULL"
                    " WHERE id = $1 AND runner = $2 AND status = 'training'",
                    4, p, err);
    free(e);
    free(training_text);
    return rc;
}

int model_store_key_space(PGconn *c, const char *kernel, const char *device_class,
                          const char *kernel_hash, const char *toolchain, json_t **space,
                          json_t **problem, kt_error *err)
{
    const char *p[] = {kernel, device_class, kernel_hash, toolchain};
    *space = *problem = NULL;
    PGresult *r = db_exec(c,
                          "SELECT space, problem FROM jobs WHERE kernel = $1 AND device_class = $2"
                          " AND kernel_hash = $3 AND toolchain = $4 AND space IS NOT NULL"
                          " ORDER BY id DESC LIMIT 1",
                          4, p, err);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1) {
        *space = store_get_json(r, 0, 0);
        *problem = store_get_json(r, 0, 1);
        rc = *space && *problem ? 1 : kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        if (rc < 0) {
            json_decref(*space);
            json_decref(*problem);
            *space = *problem = NULL;
        }
    }
    PQclear(r);
    return rc;
}

int model_store_newest_external_version(PGconn *c, const char *kernel, const char *device_class,
                                        char *out, size_t cap, kt_error *err)
{
    const char *p[] = {kernel, device_class};
    return store_query_text(
        c,
        "SELECT kernel_hash FROM jobs WHERE kernel = $1 AND device_class = $2"
        " AND device = 'external' AND space IS NOT NULL ORDER BY id DESC LIMIT 1",
        2, p, out, cap, err);
}
