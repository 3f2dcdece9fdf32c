#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

PGconn *api_db_acquire(api_context *svc, http_response *res)
{
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = db_acquire(svc->db, API_DB_ACQUIRE_MS, &err);
    if (!c) {
        kt_error_hint(&err, "the database is busy or down; retry shortly, and check GET /healthz");
        http_reply_error(res, &err);
        return NULL;
    }
    db_set_limit(c, API_DB_LIMIT_MS);
    return c;
}

void api_db_release(api_context *svc, PGconn *c)
{
    if (c)
        db_release(svc->db, c);
}

void api_fail(http_response *res, const kt_error *err)
{
    http_reply_error(res, err);
}

void api_reply_job(http_response *res, int status, json_t *body, long long id)
{
    char location[64];
    snprintf(location, sizeof location, "/v1/jobs/%lld", id);
    http_reply_json(res, status, body);
    http_response_add_header(res, "Location", location);
}

typedef struct query_check {
    const char *const *allowed;
    const char *bad;
} query_check;

static int query_check_one(void *ctx, const char *key, const char *value)
{
    (void)value;
    query_check *q = ctx;
    if (api_in_list(key, q->allowed))
        return 0;
    q->bad = key;
    return 1;
}

int api_check_query(const http_request *req, const char *const *allowed, kt_error *err)
{
    query_check q = {allowed, NULL};
    if (!http_query_each(req, query_check_one, &q))
        return 0;
    char list[512];
    api_join_list(allowed, list, sizeof list);
    kt_error_set(err, KT_ERR_UNKNOWN_FIELD, "unknown query parameter '%.100s'", q.bad);
    kt_error_hint(err, "accepted: %s", allowed[0] ? list : "none");
    return -1;
}

int api_query_ll(const http_request *req, const char *key, long long min, long long max,
                 long long def, long long *out, kt_error *err)
{
    return api_parse_ll(key, http_query(req, key), min, max, def, out, err);
}

int api_parse_ll(const char *key, const char *s, long long min, long long max, long long def,
                 long long *out, kt_error *err)
{
    if (!s) {
        *out = def;
        return 0;
    }
    if (api_decimal_ll(s, out) < 0 || *out < min || *out > max) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "query parameter %s must be an integer from %lld to %lld, not '%.40s'", key,
                     min, max, s);
        kt_error_hint(err, "write it in decimal digits, without '+', spaces or a base prefix");
        return -1;
    }
    return 0;
}

int api_path_id(const http_request *req, int index, const char *what, long long *out, kt_error *err)
{
    const char *s = index < req->n_params ? req->params[index] : NULL;
    if (!s || api_decimal_ll(s, out) < 0 || *out <= 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no %s '%.40s'", what, s ? s : "");
        kt_error_hint(err, "%s ids are positive integers", what);
        return -1;
    }
    return 0;
}

void api_reply_by_id(api_context *svc, const http_request *req, http_response *res,
                     const char *what, api_by_id_fn fn)
{
    static const char *const allowed[] = {NULL};
    kt_error err;
    long long id;
    kt_error_clear(&err);
    if (api_path_id(req, 0, what, &id, &err) < 0 || api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *body = fn(c, id, &err);
    api_db_release(svc, c);
    if (!body && err.code != KT_OK)
        return api_fail(res, &err);
    http_reply_json(res, 200, body); /* NULL without an error: out of memory, a 500 */
}

/* api_authorize: api/tokens.c (with the token cache it reads). */
