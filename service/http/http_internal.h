/* http/http_internal — what the files of service/http share and nobody else sees: the server
 * struct, the per-request state, the router, static files and metrics (text is built with
 * core/strbuf.h). Call order follows server.c: http_server_new builds the router and metrics; the
 * access handler matches, serves and counts. Everything hangs off http_server; nothing here is
 * global. */
#ifndef KT_HTTP_INTERNAL_H
#define KT_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "core/strbuf.h"
#include "http/server.h"

/* ---- listen address (listen.c) ---- */

typedef struct http_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    int ipv6;
} http_addr;

int http_listen_parse(const char *listen, http_addr *out, kt_error *err);

/* ---- router (router.c) ---- */

enum { HTTP_MATCH_NONE = 0, HTTP_MATCH_OK = 1, HTTP_MATCH_METHOD = 2 };

/* Checks a routes array; KT_ERR_CONFIG naming the first bad route. Sets *n to the number of routes.
 */
int http_router_check(const http_route *routes, int *n, kt_error *err);
/* Matches method and path. HTTP_MATCH_OK: *route_index, req->route and req->params set, captures
 * copied into scratch (at least strlen(path) + HTTP_MAX_PATH_PARAMS + 1 bytes). HTTP_MATCH_METHOD:
 * the path matches some pattern but no route has the method; allow gets "GET, POST" and req->route
 * that pattern. HTTP_MATCH_NONE: no pattern matches. */
int http_router_match(const http_route *routes, const char *method, const char *path,
                      http_request *req, int *route_index, char *scratch, char *allow,
                      size_t allow_cap);

/* ---- metrics (metrics.c) ---- */

#define HTTP_METRICS_MAX_ENTRIES 512

typedef struct http_metric_entry {
    int route_id; /* index into route_names */
    int method_id;
    int status;
    uint64_t count;
} http_metric_entry;

typedef struct http_metrics {
    pthread_mutex_t lock;
    const char **route_names; /* distinct patterns, then "static", "unmatched"; borrowed strings */
    int n_route_names;
    int *route_of;            /* route index -> route_names index */
    uint64_t *duration_ns;    /* per route_names index */
    uint64_t *route_requests; /* per route_names index */
    http_metric_entry entries[HTTP_METRICS_MAX_ENTRIES];
    int n_entries;
    uint64_t overflow; /* requests not counted by label because the table was full */
    uint64_t total;
} http_metrics;

int http_metrics_init(http_metrics *m, const http_route *routes, int n_routes);
void http_metrics_destroy(http_metrics *m);
/* route_index: a route index, or HTTP_ROUTE_STATIC / HTTP_ROUTE_UNMATCHED. */
#define HTTP_ROUTE_STATIC    (-1)
#define HTTP_ROUTE_UNMATCHED (-2)
void http_metrics_count(http_metrics *m, int route_index, const char *method, int status,
                        uint64_t duration_ns);
char *http_metrics_render(http_metrics *m);

/* ---- static files (static_files.c) ---- */

#define HTTP_STATIC_MAX_FILE (64 * 1024 * 1024)

/* Serves path from the web root (already resolved by realpath). Returns an MHD response for 200, or
 * NULL with res filled with the error reply (404 for anything missing, outside, not a regular
 * file). */
struct MHD_Response *http_static_serve(const char *root_real, const char *path, http_response *res);
const char *http_static_content_type(const char *path);

/* ---- replies (reply.c) ---- */

/* Returns a printable copy of s for logs and messages: control bytes become '?', capped at cap-1.
 */
void http_printable(char *dst, size_t cap, const char *s);
/* Frees what the response owns and zeroes it. */
void http_response_clear(http_response *res);
/* Writes a whole error reply (JSON, Connection: close) straight to a socket nobody else is
 * writing to: a connection the gate still holds, or one whose request body libmicrohttpd is
 * reading (it cannot queue a reply then). Non-blocking, best effort: the reply is a few hundred
 * bytes and the socket's send buffer is empty at those times. */
void http_reply_raw_error(int fd, const kt_error *err);

/* ---- request heads (head.c): pure checks shared by the gate and the access handler ---- */

/* What the header fields of one request add up to. */
typedef struct http_fields {
    int count;
    size_t bytes; /* names + values */
    int n_content_length, bad_content_length;
    int n_transfer_encoding, bad_transfer_encoding;
    int expect_continue; /* Expect: 100-continue (the body waits for the interim reply) */
} http_fields;

void http_fields_init(http_fields *f);
void http_fields_add(http_fields *f, const char *name, size_t nlen, const char *value, size_t vlen);
/* 0, or -1 with err: 431 headers_too_large (count, bytes), 400 bad_request (two Content-Length,
 * Content-Length with Transfer-Encoding, a malformed length, a coding other than chunked). */
int http_fields_verdict(const http_fields *f, kt_error *err);
/* 1 when s (NUL-ended) is well-formed UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF), else 0. */
int http_utf8_valid(const char *s);
/* 0 for "HTTP/1.0" and "HTTP/1.1", else -1 with 505 http_version_not_supported. */
int http_version_check(const char *version, kt_error *err);
/* Checks the first n bytes a connection sent (raw). 1: a complete head (request line and header
 * fields up to the blank line), acceptable; 0: incomplete, acceptable so far; -1 with err: 400
 * (malformed line or field, framing above), 414 (target over HTTP_MAX_URL), 431, 505. */
int http_head_check(const char *buf, size_t n, kt_error *err);
/* What http_head_check learnt of a whole head: its length with the blank line, and its framing. */
typedef struct http_head_info {
    size_t len;
    int chunked;
    int expect_continue;
} http_head_info;
/* http_head_check, also filling *info when the head is whole (returns 1). */
int http_head_scan(const char *buf, size_t n, http_head_info *info, kt_error *err);
/* The chunk-size lines of a chunked body's first n bytes (raw, after the head), as far as they
 * have arrived. 1: a size line is whole and every size so far is acceptable (or the last chunk
 * came); 0: no size line is whole yet; -1 with err: a chunk, or the chunks so far together,
 * larger than HTTP_MAX_BODY (413 body_too_large; "ffffffffffffffff" would otherwise keep the
 * connection waiting for 2^64 bytes). A malformed line is left to libmicrohttpd (1). */
int http_chunks_check(const char *buf, size_t n, kt_error *err);
/* The value of one hexadecimal digit (either case), or -1 (head.c: chunk sizes, percent-escapes).
 */
int http_hex_digit(char c);

/* ---- admission (gate.c): ktune's own listening socket ----
 * One thread accepts, counts connections (total and per client address), holds each new one
 * until its first head has arrived whole (http_head_check, within the header deadline; a bad
 * head is answered in JSON and closed) and hands it to the least busy worker: one MHD daemon
 * with one thread, no listening socket of its own. The gate keeps a record (http_conn) of every
 * open connection, held or handed over, until MHD's NOTIFY_CONNECTION says it closed: the access
 * handler tells it each request's phase and body bytes, and the gate's tick enforces the body
 * deadline and minimum rate (408 written by the gate, then the socket shut down, so MHD closes
 * it) and, at max_connections, displaces a connection of the busiest address for one of an
 * address with fewer. */

typedef struct http_worker {
    struct http_server *server;
    struct MHD_Daemon *daemon;
    atomic_int conns; /* connections handed to this worker and not closed yet */
} http_worker;

/* Connections the gate cut (displaced, or answered 408) that MHD has not closed yet may pass
 * max_connections by this many: the open files limit keeps room for them. */
#define HTTP_CLOSING_SLACK 64

typedef struct http_gate http_gate;
typedef struct http_conn http_conn; /* the gate's record of one open connection */

/* What a connection handed to a worker is doing, as the access handler tells the gate. */
enum {
    HTTP_CONN_HELD = 0, /* the gate holds it (first head not whole yet) */
    HTTP_CONN_IDLE,     /* in MHD between requests, or reading a head */
    HTTP_CONN_BODY,     /* headers in, the body arriving: the body deadline and rate apply */
    HTTP_CONN_BUSY      /* a handler runs or the reply is being sent: never displaced */
};

/* Binds s->addr, learns the port, starts the gate thread. Errors: KT_ERR_CONFIG naming why. */
int http_gate_start(struct http_server *s, kt_error *err);
/* Stops accepting and closes the connections still held by the gate. */
void http_gate_stop(struct http_server *s);
/* After the workers stopped: frees the records left and the gate. */
void http_gate_free(struct http_server *s);
/* MHD's NOTIFY_CONNECTION: STARTED stores the gate's record of the socket in *socket_context
 * (NULL when the gate has none); CLOSED counts it down and frees it (MHD closes the socket
 * after). */
void http_gate_conn_started(struct http_server *s, struct MHD_Connection *conn,
                            void **socket_context);
void http_gate_conn_closed(struct http_server *s, void *socket_context);
/* The access handler's view (c from MHD_CONNECTION_INFO_SOCKET_CONTEXT, NULL is ignored), on
 * the connection's worker thread. Sets the phase (HTTP_CONN_BODY starts the body's clock);
 * returns -1 when the gate has already cut the connection (answered or displaced it): the
 * handler then returns MHD_NO and MHD closes it. */
int http_gate_conn_phase(struct http_server *s, http_conn *c, int phase);
/* Counts body bytes that arrived (lock-free); returns -1 when the connection was cut. */
int http_gate_conn_body(http_conn *c, size_t n);
/* Answers err on the connection (http_reply_raw_error) and shuts its socket down; for the
 * handler while MHD reads a body (it cannot queue a reply then). The handler returns MHD_NO. */
void http_gate_conn_cut(struct http_server *s, http_conn *c, const kt_error *err);
/* Connections open (held by the gate or handed to a worker; not those being closed). */
int http_gate_open_connections(struct http_server *s);

/* ---- the request lifecycle (request.c): MHD's access handler and completion callback ---- */

enum MHD_Result http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe);
/* MHD's URI log callback: measures the raw request target (length, query parameters) before MHD
 * parses the query, and cuts the query off when it is over the limits (so that MHD never runs out
 * of connection memory on it); the access handler then refuses the request. Returns the
 * per-request state (*con_cls). */
void *http_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);

/* ---- calls off the worker threads (request.c, heavy_pool.c) ----
 * A request whose handler runs on another thread while MHD holds its connection suspended: a
 * blocking route's (a detached thread of its own) or a heavy route's (the heavy pool). The thread
 * that runs it fills res, sets done and resumes the connection; from then on the call is the
 * worker's again: the access handler's next call queues the reply and frees the call (or
 * http_on_completed frees it, when the connection closes first). */
typedef struct http_call {
    struct http_call *next; /* the heavy pool's queue */
    http_worker *w;
    struct MHD_Connection *conn;
    const http_route *route;
    int route_index;
    http_request req;
    http_response res;
    atomic_int done;
} http_call;

/* ---- the heavy pool (heavy_pool.c): heavy routes' handlers on threads of their own ----
 * Call order: http_heavy_pool_start (from http_server_start) -> http_heavy_pool_submit (the access
 * handler, on a worker) ... -> http_heavy_pool_stop (from http_server_stop, before the daemons
 * stop), which frees it. */

typedef struct http_heavy_pool http_heavy_pool;

/* Starts threads pool threads; at most queue_max calls wait beyond those running. NULL with err
 * (KT_ERR_NO_MEMORY, KT_ERR_CONFIG when a thread cannot start). */
http_heavy_pool *http_heavy_pool_start(struct http_server *s, int threads, int queue_max,
                                       kt_error *err);
/* On the connection's worker, from the access handler: 1 when the call was queued and its
 * connection suspended (a pool thread runs call->route's handler, sets call->done and resumes
 * it; the call is borrowed until then); 0 when every thread is busy and queue_max calls wait
 * (the caller answers 429); -1 when the pool stops (503). Nothing is suspended unless 1. */
int http_heavy_pool_submit(http_heavy_pool *p, http_call *call);
/* Handlers running and calls waiting now (both 0 for NULL): for tests and logs. */
void http_heavy_pool_load(http_heavy_pool *p, int *running, int *queued);
/* Answers the calls still queued 503 (their handlers never run) and resumes their connections,
 * waits for the running handlers (each resumes its connection), joins the threads, frees p. */
void http_heavy_pool_stop(http_heavy_pool *p);

/* ---- the server (server.c) ---- */

struct http_server {
    const http_route *routes; /* borrowed */
    int n_routes;
    void *app; /* borrowed */
    char *listen;
    char *web_root_real; /* realpath of the web root, or NULL */
    int threads;
    http_addr addr;
    int port;
    http_metrics metrics;
    /* admission */
    int max_connections, max_connections_per_ip;
    double header_timeout_s;
    double body_timeout_s, body_min_rate; /* 0: no minimum rate */
    http_worker *workers;                 /* threads of them */
    unsigned char *route_heavy;    /* per route: 1 when its pattern is in the options' heavy list */
    int heavy_threads;             /* threads of the heavy pool */
    int heavy_queue;               /* heavy calls that may wait beyond those running */
    http_heavy_pool *heavy;        /* while started, when any route is heavy; owned */
    unsigned char *route_blocking; /* per route: 1 when in the options' blocking list */
    atomic_int blocking_running;   /* blocking handlers on their threads now */
    atomic_int stopping;           /* http_server_stop began: blocking handlers reply */
    http_gate *gate;
    int started;
};

#endif
