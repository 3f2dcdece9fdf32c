/* store/token_store — see token_store.h. */
#include "store/token_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

#define TOKEN_JSON_SQL                                                                             \
    "json_build_object('id', t.id, 'name', t.name, 'scope', t.scope, 'created_at', t.created_at)"

static void to_hex(const unsigned char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", in[i]);
}

static int from_hex(const char *s, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (unsigned char)v;
    }
    return s[2 * n] == '\0' ? 0 : -1;
}

json_t *token_store_create(PGconn *c, const char *name, const char *scope,
                           const unsigned char hash[KT_SHA256_SIZE], kt_error *err)
{
    char hex[2 * KT_SHA256_SIZE + 1];
    store_num max;
    to_hex(hash, KT_SHA256_SIZE, hex);
    const char *p[] = {name, scope, hex, store_ll(&max, TOKEN_STORE_MAX)};
    /* The cap is checked in the statement; a race of two creations may pass it by one. */
    json_t *out = store_query_json(
        c,
        "WITH t AS (INSERT INTO api_tokens (name, scope, secret_hash)"
        " SELECT $1, $2, decode($3, 'hex') WHERE (SELECT count(*) FROM api_tokens) < $4::bigint"
        " RETURNING *) SELECT " TOKEN_JSON_SQL " FROM t",
        4, p, "too many tokens", err);
    if (!out && err && err->code == KT_ERR_NOT_FOUND) {
        kt_error_set(err, KT_ERR_CONFLICT, "%d API tokens exist, the most ktuned keeps",
                     TOKEN_STORE_MAX);
        kt_error_hint(err, "delete tokens no longer used: DELETE /v1/tokens/{id}");
    }
    return out;
}

json_t *token_store_list_json(PGconn *c, kt_error *err)
{
    return store_query_json(c,
                            "SELECT json_build_object('tokens', COALESCE(json_agg(" TOKEN_JSON_SQL
                            " ORDER BY t.id), '[]'::json)) FROM api_tokens t",
                            0, NULL, "no tokens", err);
}

int token_store_delete(PGconn *c, long long id, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    int found = store_exec_count(c, "DELETE FROM api_tokens WHERE id = $1 RETURNING id", 1, p, err);
    if (found < 0)
        return -1;
    if (found != 1) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no API token %lld", id);
        kt_error_hint(err, "GET /v1/tokens lists them");
        return -1;
    }
    return 0;
}

int token_store_load(PGconn *c, token_row **rows, int *n, kt_error *err)
{
    store_num max;
    const char *p[] = {store_ll(&max, TOKEN_STORE_MAX)};
    *rows = NULL;
    *n = 0;
    PGresult *r = db_exec(c,
                          "SELECT id, scope, encode(secret_hash, 'hex') FROM api_tokens"
                          " ORDER BY id LIMIT $1",
                          1, p, err);
    if (!r)
        return -1;
    int rc = 0, count = PQntuples(r);
    token_row *out = count ? calloc((size_t)count, sizeof *out) : NULL;
    if (count && !out) {
        rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory loading %d tokens", count);
        goto done;
    }
    for (int i = 0; i < count; i++) {
        out[i].id = store_get_ll(r, i, 0);
        snprintf(out[i].scope, sizeof out[i].scope, "%s", PQgetvalue(r, i, 1));
        if (from_hex(PQgetvalue(r, i, 2), out[i].hash, KT_SHA256_SIZE) < 0) {
            rc = kt_error_set(err, KT_ERR_DATABASE, "api_tokens row %lld has a malformed hash",
                              out[i].id);
            goto done;
        }
    }
    *rows = out;
    *n = count;
    out = NULL;
done:
    free(out);
    PQclear(r);
    return rc;
}

int token_store_active_jobs(PGconn *c, const char *submitter, long long *n, kt_error *err)
{
    const char *p[] = {submitter};
    *n = 0;
    int found = store_query_ll(c,
                               "SELECT count(*) FROM jobs WHERE submitter = $1"
                               " AND status IN ('queued', 'running')",
                               1, p, n, err);
    return found < 0 ? -1 : 0;
}
