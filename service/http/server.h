/* http/server — the HTTP front door on libmicrohttpd: routing by method and path pattern, request
 * limits (body size, JSON nesting), JSON and error replies, static files from a web root, and
 * request counters for /metrics. Handlers are plain functions that fill an http_response; the
 * server queues it on a later call of the MHD access handler than the first, so keep-alive
 * connections stay open.
 *
 * Lifecycle: http_server_new(routes, app) -> http_server_start -> ... -> http_server_stop ->
 * http_server_free. Routes and app are borrowed and must outlive the server. Handlers run on the
 * server's threads (workers; heavy routes on the heavy pool's, blocking ones that wait on their
 * own), concurrently: whatever they touch through app must be thread-safe. */
#ifndef KT_HTTP_SERVER_H
#define KT_HTTP_SERVER_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

#define HTTP_MAX_BODY        (1024 * 1024) /* bytes; larger bodies get 413 body_too_large */
#define HTTP_MAX_JSON_DEPTH  32            /* deeper bodies get 400 json_too_deep */
#define HTTP_MAX_PATH_PARAMS 4
/* Request edges, answered in the JSON error shape before any handler runs (http/README.md): */
#define HTTP_MAX_URL          8192 /* request target with its query; longer: 414 uri_too_long */
#define HTTP_MAX_QUERY_PARAMS 64   /* more: 400 bad_request; a repeated name: 400 bad_request */
#define HTTP_MAX_HEADERS      64   /* header fields; more: 431 headers_too_large */
#define HTTP_MAX_HEADER_BYTES                                                                      \
    16384 /* names + values of all fields; more: 431 headers_too_large                             \
           */

typedef struct http_server http_server;

typedef struct http_request {
    const char *method; /* "GET", ... */
    const char *path;   /* decoded path, no query string */
    const char *route;  /* the pattern that matched ("/v1/jobs/{id}"), for metrics and logs */
    const char *params[HTTP_MAX_PATH_PARAMS]; /* captures of {name} segments, in order */
    int n_params;
    const char *body; /* NUL-terminated request body (may contain NULs), NULL when empty */
    size_t body_len;
    void *conn;                 /* the struct MHD_Connection, for query and header look-ups */
    struct http_server *server; /* for http_request_stopping */
    /* A blocking route's first call, on the worker's event loop (http_server_options.blocking):
     * the handler answers at once, or, when it would wait, calls http_response_defer and is
     * called again on a thread of its own (may_defer 0 there). */
    int may_defer;
} http_request;

typedef struct http_response {
    int status;
    char *content_type; /* owned */
    char *body;         /* owned, malloc'd */
    size_t body_len;
    char *extra_headers;            /* owned, "Name: value\r\n"... or NULL */
    struct http_prepared *prepared; /* owned: sent instead of the above (http/prepared.h) */
    int deferred;                   /* http_response_defer: run the handler again on a thread */
} http_response;

typedef void (*http_handler_fn)(void *app, const http_request *req, http_response *res);

typedef struct http_route {
    const char *method;  /* "GET", "POST", "DELETE" */
    const char *pattern; /* "/v1/jobs/{id}/trials": {name} matches one non-empty segment */
    http_handler_fn handler;
} http_route;

typedef struct http_server_options {
    const char *listen;   /* "127.0.0.1:8080", "[::1]:8080", ":8080" */
    const char *web_root; /* folder of static files served for paths no route matches, or NULL */
    int threads;          /* worker threads of the server (event loops, light handlers) [4] */
    /* Patterns of heavy routes (long or large: trial pages, imports, exports), NULL-ended, or
     * NULL: their handlers run on heavy_threads threads of their own (0 =
     * HTTP_DEFAULT_HEAVY_THREADS), never on a worker, so light routes (/healthz, /v1/best) never
     * wait behind one; with every heavy thread busy, at most HTTP_HEAVY_QUEUE_PER_THREAD x
     * heavy_threads more wait, and beyond, 429 too_many_requests with Retry-After. Borrowed. */
    const char *const *heavy;
    int heavy_threads;
    /* Patterns of blocking routes (handlers that may wait for an event, such as ask/tell's ask),
     * NULL-ended, or NULL: such a handler is called first on the worker with req->may_defer set,
     * where it must not wait: it answers what needs no wait, else calls http_response_defer; a
     * deferred request runs its handler again on a thread of its own while its connection is
     * suspended, so a worker's event loop (and every other connection on it) never waits for
     * it; at most HTTP_MAX_BLOCKING at once, beyond 429 too_many_requests. Their handlers should
     * ask http_request_stopping while they wait: http_server_stop waits for them. Borrowed. */
    const char *const *blocking;
    /* Admission (0 = default): connections at once [HTTP_DEFAULT_MAX_CONNECTIONS, at most what
     * RLIMIT_NOFILE leaves], per client address [HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP]; beyond,
     * new connections are closed unanswered. header_timeout_s: a connection that has not sent a
     * request's full headers this long after it opened or after its previous reply is closed
     * [HTTP_DEFAULT_HEADER_TIMEOUT_S; a quarter of it, at least 1 s, while more than half of
     * max_connections are open]. */
    int max_connections;
    int max_connections_per_ip;
    double header_timeout_s;
    /* Request bodies: one that has not arrived whole body_timeout_s after its headers
     * [HTTP_DEFAULT_BODY_TIMEOUT_S], or that averaged fewer than body_min_rate bytes a second once
     * it is HTTP_BODY_RATE_GRACE_S old (0 = no minimum; ktuned passes --http-body-min-rate), is
     * answered 408 request_timeout and its connection closed. When max_connections are open, a
     * connection from an address with fewer open displaces one of the address with the most that
     * is not being answered (http/README.md, "Edges and admission"). */
    double body_timeout_s;
    double body_min_rate;
} http_server_options;

#define HTTP_MAX_BLOCKING                   1024 /* blocking handlers running at once */
#define HTTP_DEFAULT_HEAVY_THREADS          2
#define HTTP_MAX_HEAVY_THREADS              64
#define HTTP_HEAVY_QUEUE_PER_THREAD         4 /* heavy calls waiting, per heavy thread */
#define HTTP_DEFAULT_MAX_CONNECTIONS        4096
#define HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP 2048
#define HTTP_DEFAULT_HEADER_TIMEOUT_S       10.0
#define HTTP_DEFAULT_BODY_TIMEOUT_S         30.0
#define HTTP_DEFAULT_BODY_MIN_RATE          1024.0 /* bytes a second, ktuned's default */
#define HTTP_BODY_RATE_GRACE_S              2.0    /* the minimum rate is judged after this */

/* routes: array terminated by an entry whose method is NULL. */
http_server *http_server_new(const http_route *routes, void *app, const http_server_options *opt,
                             kt_error *err);
int http_server_start(http_server *s, kt_error *err); /* binds and starts serving */
int http_server_port(const http_server *s);           /* the bound port (useful with port 0) */
void http_server_stop(http_server *s); /* stops accepting, waits for handlers to end */
void http_server_free(http_server *s);

/* 1 once the server is stopping: a blocking handler that waits should reply now. */
int http_request_stopping(const http_request *req);

/* Query string value of key (decoded), or NULL. */
const char *http_query(const http_request *req, const char *key);
/* Calls fn for every query argument in order; stops early and returns 1 if fn returns non-zero. */
int http_query_each(const http_request *req,
                    int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
const char *http_header(const http_request *req, const char *name);
/* Whether an If-None-Match value ("*", or a comma-separated list of ETags, weak or strong) names
 * etag, a quoted strong ETag (weak comparison, RFC 9110); 0 for NULL. */
int http_etag_matches(const char *if_none_match, const char *etag);

/* Parses the body as a JSON object (Content-Type must be application/json, a missing one is
 * refused; size, nesting depth). Returns
 * a new reference or NULL with err set (KT_ERR_BAD_JSON, KT_ERR_JSON_TOO_DEEP,
 * KT_ERR_UNSUPPORTED_MEDIA). */
json_t *http_parse_json_body(const http_request *req, kt_error *err);

/* Replies. Each replaces the status, content type and body the response held; headers added with
 * http_response_add_header stay, whichever came first. Error bodies leave "hint" out when empty. */
void http_reply_json(http_response *res, int status, json_t *body_owned); /* takes the reference */
void http_reply_error(http_response *res,
                      const kt_error *err); /* {"error":{"code","message","hint"}} */
/* The same with one more top-level member key: extra (borrowed; nothing added when NULL), e.g.
 * {"error":{...},"tune_on_miss":{...}}. */
void http_reply_error_with(http_response *res, const kt_error *err, const char *key, json_t *extra);
void http_reply_text(http_response *res, int status, const char *content_type, const char *text);
void http_response_add_header(http_response *res, const char *name, const char *value);
/* A blocking route's first call (req->may_defer) cannot answer without waiting: whatever res
 * holds is dropped and the handler runs again on a thread of its own. */
void http_response_defer(http_response *res);

/* Prometheus text lines for the request counters, appended to a malloc'd string the caller frees:
 * ktune_http_requests_total{route="/v1/jobs",method="GET",status="200"} 12 */
char *http_server_metrics_text(http_server *s);
/* Requests answered since the server was made (every status), e.g. for a status page. */
unsigned long long http_server_requests_total(http_server *s);

#endif
