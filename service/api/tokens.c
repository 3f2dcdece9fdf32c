/* API tokens: the cache behind api_authorize (api.h, api_internal.h), the listen rule, the
 * per-token job cap, and the admin routes POST /v1/tokens (the secret is shown once), GET
 * /v1/tokens (never a secret) and DELETE /v1/tokens/{id}. A secret is "ktk_" + 48 hex characters
 * (24 random bytes); only its SHA-256 is stored and compared (in constant time). */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/sha256.h"
#include "store/token_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"

#define API_TOKENS_REFRESH_MS 1000
#define API_TOKEN_PREFIX      "ktk_"
#define API_TOKEN_BYTES       24
#define API_TOKEN_MAX         256 /* longest Authorization token looked at */
#define API_QUOTA_RETRY_AFTER "30"
#define API_TOKENS_ACQUIRE_MS 200
/* The reload runs on a request's thread (any request, a cached /v1/best too): bounded, and not
 * tried while the database is down (issue 26). */
#define API_TOKENS_LIMIT_MS 500

struct api_token_cache {
    pthread_mutex_t mu;
    db_pool *db;
    token_row *rows; /* the api_tokens table as last loaded */
    int n;
    uint64_t loaded_ns;
    int refreshing, stale;
    int failing;     /* the last reload failed (logged once until one succeeds) */
    int has_startup; /* --api-token given: its hash, an admin token */
    unsigned char startup[KT_SHA256_SIZE];
    int loopback, allow_insecure; /* the listen rule, kept for when the last token is deleted */
};

/* In api_scope order: each scope includes the ones before it. */
static const char *const scope_names[] = {"read", "tune", "kernels", "admin"};

static int scope_parse(const char *s, api_scope *out)
{
    for (int i = 0; i < (int)(sizeof scope_names / sizeof *scope_names); i++) {
        if (strcmp(s, scope_names[i]) == 0) {
            *out = (api_scope)i;
            return 0;
        }
    }
    return -1;
}

/* ---- the cache ---- */

/* Replaces the snapshot from the table; c NULL: a pooled connection, waited for briefly. */
static int cache_reload(api_token_cache *t, PGconn *c, kt_error *err)
{
    PGconn *own = c ? NULL : db_acquire(t->db, API_TOKENS_ACQUIRE_MS, err);
    if (own)
        db_set_limit(own, API_TOKENS_LIMIT_MS);
    token_row *rows = NULL;
    int n = 0, rc = -1;
    if ((c || own) && token_store_load(c ? c : own, &rows, &n, err) == 0)
        rc = 0;
    if (own)
        db_release(t->db, own);
    pthread_mutex_lock(&t->mu);
    if (rc == 0) {
        free(t->rows);
        t->rows = rows;
        t->n = n;
        t->stale = 0;
    }
    t->loaded_ns = kt_clock_ns(); /* a failed load is retried after the interval, not at once */
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* One caller at a time refreshes a snapshot older than the interval; the others use the old one.
 * While the database is down (db_pool_down) nobody does: the old snapshot serves, and the request
 * that would have reloaded it does not wait on a database that does not answer; the reload resumes
 * once any database work of the process has reconnected (/healthz, a handler, the runner). */
static void cache_refresh(api_token_cache *t)
{
    pthread_mutex_lock(&t->mu);
    int due = !t->refreshing &&
              (t->stale || kt_clock_since_ns(t->loaded_ns) > API_TOKENS_REFRESH_MS * 1000000ULL);
    if (due && t->db && db_pool_down(t->db)) {
        due = 0;
        t->loaded_ns = kt_clock_ns(); /* asked again after the interval */
    }
    if (due)
        t->refreshing = 1;
    pthread_mutex_unlock(&t->mu);
    if (!due)
        return;
    kt_error err;
    kt_error_clear(&err);
    int failed = cache_reload(t, NULL, &err) < 0;
    pthread_mutex_lock(&t->mu);
    int first = failed && !t->failing;
    t->failing = failed;
    t->refreshing = 0;
    pthread_mutex_unlock(&t->mu);
    if (first) /* once per outage, not once a second */
        log_warn("cannot reload the API tokens (the last ones loaded stay in force): %s",
                 err.message);
}

static int cache_any(api_token_cache *t)
{
    if (!t)
        return 0;
    cache_refresh(t);
    pthread_mutex_lock(&t->mu);
    int any = t->has_startup || t->n > 0;
    pthread_mutex_unlock(&t->mu);
    return any;
}

/* 1 and *scope, *id (0 for the --api-token) when the secret is a known token; 0 otherwise. Every
 * known hash is compared, whatever matched. */
static int cache_find(api_token_cache *t, const char *secret, api_scope *scope, long long *id)
{
    unsigned char h[KT_SHA256_SIZE];
    int found = 0;
    if (!t)
        return 0;
    kt_sha256(secret, strlen(secret), h);
    pthread_mutex_lock(&t->mu);
    if (t->has_startup && kt_sha256_equal(h, t->startup)) {
        found = 1;
        *scope = API_SCOPE_ADMIN;
        *id = 0;
    }
    for (int i = 0; i < t->n; i++) {
        if (kt_sha256_equal(h, t->rows[i].hash) && !found &&
            scope_parse(t->rows[i].scope, scope) == 0) {
            found = 1;
            *id = t->rows[i].id;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return found;
}

/* "127.0.0.1:8080", "localhost:8080", "[::1]:8080" are loopback; ":8080", "0.0.0.0:8080" and any
 * other address are not. */
static int listen_is_loopback(const char *listen)
{
    char host[128];
    const char *end = listen[0] == '[' ? strchr(listen, ']') : strrchr(listen, ':');
    const char *start = listen[0] == '[' ? listen + 1 : listen;
    if (!end || end < start || (size_t)(end - start) >= sizeof host)
        return 0;
    memcpy(host, start, (size_t)(end - start));
    host[end - start] = '\0';
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
}

api_token_cache *api_token_cache_new(const kt_config *cfg, db_pool *db, kt_error *err)
{
    api_token_cache *t = calloc(1, sizeof *t);
    if (!t) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating the token cache");
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->db = db;
    t->loopback = listen_is_loopback(cfg->listen);
    t->allow_insecure = cfg->allow_insecure_listen;
    if (cfg->api_token[0]) {
        t->has_startup = 1;
        kt_sha256(cfg->api_token, strlen(cfg->api_token), t->startup);
    }
    if (cache_reload(t, NULL, err) < 0) {
        kt_error_prefix(err, "loading the API tokens");
        api_token_cache_free(t);
        return NULL;
    }
    if (t->has_startup || t->n > 0) {
        log_info("API tokens: %s%d in the database; every request but /healthz and static files "
                 "needs one",
                 t->has_startup ? "--api-token and " : "", t->n);
    } else if (t->loopback) {
        log_warn("no API token configured: serving on the loopback address %s only, without "
                 "authentication; create one (POST /v1/tokens or --api-token) to serve others",
                 cfg->listen);
    } else if (t->allow_insecure) {
        log_warn("no API token configured and --allow-insecure-listen: %s is served without "
                 "authentication to anyone who can reach it",
                 cfg->listen);
    } else {
        kt_error_set(err, KT_ERR_CONFIG,
                     "--listen %s is not a loopback address, and no API token exists: anyone "
                     "reaching it could tune, import and delete",
                     cfg->listen);
        kt_error_hint(err, "give --api-token <secret> (an admin token), or listen on 127.0.0.1, "
                           "or pass --allow-insecure-listen to serve it open on purpose");
        api_token_cache_free(t);
        return NULL;
    }
    return t;
}

void api_token_cache_free(api_token_cache *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->rows);
    free(t);
}

const char *api_token_cache_mode(api_token_cache *t)
{
    return cache_any(t) ? "token" : "none";
}

/* ---- authorising a request ---- */

/* The token of "Authorization: Bearer <token>": 1 and out set, 0 when there is no such header,
 * -1 when the header is there but not a bearer token of a sane length. */
static int bearer(const http_request *req, char *out, size_t size)
{
    const char *h = http_header(req, "Authorization");
    if (!h)
        return 0;
    if (strncasecmp(h, "Bearer ", 7) != 0)
        return -1;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strcspn(h, " \t");
    if (n == 0 || n >= size || h[n] != '\0')
        return -1;
    memcpy(out, h, n);
    out[n] = '\0';
    return 1;
}

/* A write a browser sent from another site: Sec-Fetch-Site says so, or Origin is not this service
 * (its scheme://host:port against the Host header). */
static int foreign_origin(const http_request *req)
{
    const char *site = http_header(req, "Sec-Fetch-Site");
    if (site && (strcasecmp(site, "cross-site") == 0 || strcasecmp(site, "same-site") == 0))
        return 1;
    const char *origin = http_header(req, "Origin");
    if (!origin)
        return 0;
    const char *host = http_header(req, "Host");
    const char *rest = strstr(origin, "://");
    return !host || !rest || strcasecmp(rest + 3, host) != 0;
}

static int deny(http_response *res, kt_code code, api_scope scope, const char *what)
{
    kt_error err;
    kt_error_set(&err, code, "%s", what);
    if (code == KT_ERR_UNAUTHORIZED)
        kt_error_hint(&err,
                      "send 'Authorization: Bearer <token>' with a token of scope %s or wider "
                      "(an admin creates one: POST /v1/tokens, or ktuned --api-token)",
                      scope_names[scope]);
    else
        kt_error_hint(&err, "this needs scope %s; scopes nest: admin > kernels > tune > read",
                      scope_names[scope]);
    http_reply_error(res, &err);
    return -1;
}

static int deny_host(http_response *res, const char *host)
{
    kt_error err;
    char printable[96];
    size_t i = 0;
    for (; host[i] && i + 1 < sizeof printable; i++) /* the client's bytes, quoted printable */
        printable[i] = (host[i] > 0x20 && host[i] < 0x7f && host[i] != '\'') ? host[i] : '?';
    printable[i] = '\0';
    kt_error_set(&err, KT_ERR_MISDIRECTED,
                 "Host '%s' is not a loopback name: with no API token this service answers only "
                 "requests addressed to localhost, 127.0.0.1 or [::1]",
                 printable);
    kt_error_hint(&err, "open it as http://127.0.0.1:<port>/ or http://localhost:<port>/; to "
                        "serve it under another name, create an API token (POST /v1/tokens, or "
                        "ktuned --api-token) and send it");
    http_reply_error(res, &err);
    return -1;
}

int api_authorize(api_context *svc, const http_request *req, http_response *res, api_scope scope)
{
    char given[API_TOKEN_MAX];
    char what[160];
    api_scope have = API_SCOPE_READ;
    long long id = 0;
    if (svc->tokens)
        cache_refresh(svc->tokens); /* at most once per API_TOKENS_REFRESH_MS, by one thread */
    int b = bearer(req, given, sizeof given);
    if (b < 0)
        return deny(res, KT_ERR_UNAUTHORIZED, scope,
                    "the Authorization header is not 'Bearer <token>'");
    if (b > 0) {
        /* A token created by another process is known here within API_TOKENS_REFRESH_MS. */
        if (!cache_find(svc->tokens, given, &have, &id))
            return deny(res, KT_ERR_UNAUTHORIZED, scope, "the API token is not valid");
        if (have < scope) {
            snprintf(what, sizeof what, "the API token has scope %s; this request needs %s",
                     scope_names[have], scope_names[scope]);
            return deny(res, KT_ERR_FORBIDDEN, scope, what);
        }
        return 0;
    }
    if (cache_any(svc->tokens)) {
        snprintf(what, sizeof what, "this request needs an API token of scope %s",
                 scope_names[scope]);
        return deny(res, KT_ERR_UNAUTHORIZED, scope, what);
    }
    /* Every token was deleted while a non-loopback address is served: fail closed (a restart
     * with --api-token, or on loopback, opens it again). */
    if (svc->tokens && !svc->tokens->loopback && !svc->tokens->allow_insecure)
        return deny(res, KT_ERR_UNAUTHORIZED, scope,
                    "no API token exists and this service listens on a non-loopback address");
    /* No token on a loopback address: a page whose own name a DNS rebinding points at 127.0.0.1
     * reaches this service as a same-origin page, Origin and Host both its own name; only the
     * Host tells. Reads are refused too: they would hand it the jobs and results. */
    const char *host = http_header(req, "Host");
    if (svc->tokens && svc->tokens->loopback && host && !api_host_is_loopback(host))
        return deny_host(res, host);
    if (scope > API_SCOPE_READ && foreign_origin(req))
        return deny(res, KT_ERR_FORBIDDEN, scope,
                    "a write from another site (Origin or Sec-Fetch-Site) is refused");
    return 0;
}

void api_caller(api_context *svc, const http_request *req, char *out, size_t size)
{
    char given[API_TOKEN_MAX];
    api_scope have;
    long long id = 0;
    if (bearer(req, given, sizeof given) > 0 && cache_find(svc->tokens, given, &have, &id)) {
        if (id)
            snprintf(out, size, "token:%lld", id);
        else
            snprintf(out, size, "startup");
    } else {
        snprintf(out, size, "anonymous");
    }
}

int api_job_quota(api_context *svc, PGconn *c, const http_request *req, http_response *res,
                  char *out, size_t size)
{
    kt_error err;
    kt_error_clear(&err);
    long long n = 0;
    api_caller(svc, req, out, size);
    if (token_store_active_jobs(c, out, &n, &err) < 0) {
        http_reply_error(res, &err);
        return -1;
    }
    int max = svc->cfg->max_queued_jobs_per_token;
    if (n < max)
        return 0;
    kt_error_set(&err, KT_ERR_TOO_MANY_REQUESTS,
                 "%s already has %lld queued or running jobs, the most allowed (%d)", out, n, max);
    kt_error_hint(&err, "retry when some have finished, or cancel some (DELETE /v1/jobs/{id}); "
                        "ktuned --max-queued-jobs-per-token sets the cap");
    http_response_add_header(res, "Retry-After", API_QUOTA_RETRY_AFTER);
    http_reply_error(res, &err);
    return -1;
}

/* ---- the admin routes (routes.c checks the admin scope) ---- */

static int valid_name(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr(" ._-@", *s)))
            return 0;
    }
    return 1;
}

void api_tokens_create(void *app, const http_request *req, http_response *res)
{
    static const char *const fields[] = {"name", "scope", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *row = NULL;
    PGconn *c = NULL;
    const char *name = NULL, *scope_name = NULL;
    api_scope scope;
    unsigned char raw[API_TOKEN_BYTES], h[KT_SHA256_SIZE];
    char secret[sizeof API_TOKEN_PREFIX + 2 * API_TOKEN_BYTES];
    body = http_parse_json_body(req, &err);
    if (!body || api_check_fields(body, fields, "the token request", &err) < 0 ||
        api_get_string(body, "name", 1, TOKEN_STORE_NAME_MAX, &name, &err) < 0 ||
        api_get_string(body, "scope", 1, 8, &scope_name, &err) < 0)
        goto fail;
    if (!valid_name(name)) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE,
                     "field 'name' may hold letters, digits, space and . _ - @ only");
        goto fail;
    }
    if (scope_parse(scope_name, &scope) < 0) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown scope '%.20s'", scope_name);
        kt_error_hint(&err, "read (lookups, dashboard), tune (submit, cancel, import) or admin "
                            "(models, tokens, removing imports)");
        goto fail;
    }
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        kt_error_set(&err, KT_ERR_IO, "no random bytes for a token");
        goto fail;
    }
    int used = snprintf(secret, sizeof secret, "%s", API_TOKEN_PREFIX);
    for (int i = 0; i < API_TOKEN_BYTES; i++)
        used += snprintf(secret + used, sizeof secret - (size_t)used, "%02x", raw[i]);
    kt_sha256(secret, strlen(secret), h);
    if (!(c = api_db_acquire(svc, res)))
        goto out;
    if (!(row = token_store_create(c, name, scope_names[scope], h, &err)))
        goto fail;
    if (svc->tokens)
        cache_reload(svc->tokens, c, NULL);
    log_info("API token %lld (%s, scope %s) created",
             (long long)json_integer_value(json_object_get(row, "id")), name, scope_names[scope]);
    json_object_set_new(row, "token", json_string(secret));
    http_reply_json(res, 201, row);
    row = NULL;
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    json_decref(row);
    json_decref(body);
}

void api_tokens_list(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = NULL;
    json_t *out = NULL;
    if (api_check_query(req, allowed, &err) < 0)
        goto fail;
    if (!(c = api_db_acquire(svc, res)))
        return;
    if (!(out = token_store_list_json(c, &err)))
        goto fail;
    http_reply_json(res, 200, out);
    goto done;
fail:
    api_fail(res, &err);
done:
    api_db_release(svc, c);
}

void api_token_delete(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = NULL;
    long long id;
    if (api_path_id(req, 0, "API token", &id, &err) < 0)
        goto fail;
    if (!(c = api_db_acquire(svc, res)))
        return;
    if (token_store_delete(c, id, &err) < 0)
        goto fail;
    if (svc->tokens)
        cache_reload(svc->tokens, c, NULL);
    log_info("API token %lld deleted", id);
    http_reply_json(res, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "deleted", 1));
    goto done;
fail:
    api_fail(res, &err);
done:
    api_db_release(svc, c);
}
