/* One request through MHD's access handler: the URI log callback allocates the state and measures
 * the raw target; the first call checks the request's edges (version, target, query, header
 * fields and framing: a refusal is answered at once and closes the connection) and tells the
 * gate the body's clock starts (http_gate_conn_phase: its deadline and minimum rate); data calls
 * count and buffer the body (capped: a chunked body past the cap is answered 413 at once through
 * the gate, since MHD cannot queue a reply while it reads a body, and the connection closed); the
 * last call routes, runs the handler or serves a file, queues the reply, counts it and logs it.
 * A heavy route's handler goes to the heavy pool (heavy_pool.c) and a blocking route's that must
 * wait to a thread of its own, each with the connection suspended; the call after the resume
 * queues its reply (finish_call). */
#include "http/http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "http/prepared.h"

typedef struct req_state {
    uint64_t t0_ns; /* kt_clock_ns at the first call */
    strbuf body;    /* at most HTTP_MAX_BODY bytes */
    int too_large;  /* declared or sent more than HTTP_MAX_BODY */
    int no_memory;
    int answered;
    char *scratch; /* path parameter captures */
    /* measured by http_on_uri on the raw target */
    int target_too_long;
    int query_params; /* how many the raw query string has */
    int started;      /* the first call of the access handler has been */
    int refused;      /* answered with refusal, closing the connection */
    kt_error refusal;
    http_conn *gate; /* the gate's record of the connection (borrowed; may be NULL) */
    http_call *call; /* a blocking or heavy route's handler on another thread; owned */
} req_state;

static void body_append(req_state *st, const char *data, size_t n)
{
    if (st->too_large || st->no_memory)
        return;
    if (strbuf_append(&st->body, data, n) == 0)
        return;
    if (st->body.failed == STRBUF_TOO_LONG) {
        st->too_large = 1; /* the caller answers 413 at once */
        strbuf_release(&st->body);
    } else {
        st->no_memory = 1;
    }
}

/* A chunked body past the cap (a Content-Length one is refused before it is read): answered 413
 * on the socket and the connection closed, rather than reading (and dropping) a body that could
 * go on for 2^64 bytes. MHD_NO makes MHD close it. */
static enum MHD_Result body_refuse(http_worker *w, struct MHD_Connection *conn, req_state *st)
{
    kt_error err;
    kt_error_set(&err, KT_ERR_BODY_TOO_LARGE, "the request body exceeds %d bytes", HTTP_MAX_BODY);
    kt_error_hint(&err, "send bodies of at most 1 MiB");
    st->answered = 1;
    if (st->gate) {
        http_gate_conn_cut(w->server, st->gate, &err);
    } else {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            http_reply_raw_error(ci->connect_fd, &err);
    }
    log_debug("http: a chunked request body passed %d bytes: 413, connection closed",
              HTTP_MAX_BODY);
    return MHD_NO;
}

/* Content-Length larger than the cap (digits only; MHD itself rejects malformed values). */
static int declared_too_large(struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return 0;
    unsigned long long v = 0;
    for (const char *p = cl; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (unsigned long long)(*p - '0');
        if (v > HTTP_MAX_BODY)
            return 1;
    }
    return 0;
}

static int is_api_path(const char *path)
{
    return strcmp(path, "/v1") == 0 || strncmp(path, "/v1/", 4) == 0 ||
           strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0;
}

static void reply_code(http_response *res, kt_code code, const char *fmt, const char *arg)
{
    kt_error err;
    char printable[256];
    http_printable(printable, sizeof printable, arg);
    kt_error_set(&err, code, fmt, printable);
    http_reply_error(res, &err);
}

/* Adds the "Name: value\r\n" lines of extra_headers (owned, so split in place). */
static void add_extra_headers(struct MHD_Response *mr, char *headers)
{
    for (char *line = headers; line && *line;) {
        char *end = strstr(line, "\r\n");
        if (!end)
            break;
        *end = '\0';
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = '\0';
            const char *value = colon + 1;
            while (*value == ' ')
                value++;
            if (MHD_add_response_header(mr, line, value) != MHD_YES)
                log_warn("http: header %s not accepted by libmicrohttpd", line);
        }
        line = end + 2;
    }
}

static struct MHD_Response *to_mhd(const http_request *req, http_response *res, int *status)
{
    if (res->status < 100 || res->status > 599) {
        char printable[256];
        http_printable(printable, sizeof printable, req->path);
        log_error("http: handler for %s %s left status %d; answering 500", req->method, printable,
                  res->status);
        kt_error err;
        kt_error_set(&err, KT_ERR_INTERNAL, "the handler produced no reply");
        http_reply_error(res, &err);
    }
    struct MHD_Response *mr;
    if (res->body && res->body_len > 0) {
        mr = MHD_create_response_from_buffer(res->body_len, res->body, MHD_RESPMEM_MUST_FREE);
        if (mr)
            res->body = NULL; /* MHD frees it with the response */
    } else {
        mr = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    }
    if (!mr)
        return NULL;
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                            res->content_type ? res->content_type : "application/octet-stream");
    add_extra_headers(mr, res->extra_headers);
    *status = res->status;
    return mr;
}

/* Queues res (or mr, a file's reply) on conn, counts and logs it. */
static enum MHD_Result queue_reply(http_worker *w, struct MHD_Connection *conn, req_state *st,
                                   const http_request *req, http_response *res,
                                   struct MHD_Response *mr, int route_index, int status)
{
    http_server *s = w->server;
    enum MHD_Result ok = MHD_NO;
    /* A reply made once and kept by the handler (http/prepared.h): queued as it is. */
    http_prepared *prepared = http_response_take_prepared(res);
    if (!mr && prepared) {
        mr = http_prepared_response(prepared);
        status = http_prepared_status(prepared);
    }
    if (!mr)
        mr = to_mhd(req, res, &status);
    if (!mr) {
        log_error("http: out of memory making a reply to %s; connection dropped", req->method);
        http_prepared_release(prepared);
        return MHD_NO;
    }
    ok = MHD_queue_response(conn, (unsigned)status, mr);
    if (!prepared || mr != http_prepared_response(prepared))
        MHD_destroy_response(mr);
    http_prepared_release(prepared); /* MHD holds its own reference while it sends it */
    uint64_t ns = kt_clock_since_ns(st->t0_ns);
    http_metrics_count(&s->metrics, route_index, req->method, status, ns);
    char printable[256];
    http_printable(printable, sizeof printable, req->path);
    log_debug("http: %s %s %d %.1f ms", req->method, printable, status, (double)ns / 1e6);
    return ok;
}

static int start_blocking(http_worker *w, struct MHD_Connection *conn, req_state *st,
                          const http_request *req, int route_index, http_response *res);
static int start_heavy(http_worker *w, struct MHD_Connection *conn, req_state *st,
                       const http_request *req, int route_index, http_response *res);

static enum MHD_Result answer(http_worker *w, struct MHD_Connection *conn, const char *url,
                              const char *method, req_state *st)
{
    http_server *s = w->server;
    enum MHD_Result ok = MHD_NO;
    http_request req;
    http_response res;
    struct MHD_Response *mr = NULL;
    char allow[256];
    int route_index = HTTP_ROUTE_UNMATCHED;
    int status = 500;
    memset(&req, 0, sizeof req);
    memset(&res, 0, sizeof res);
    st->answered = 1;
    req.method = method;
    req.path = url;
    req.route = "unmatched";
    req.conn = conn;
    req.server = s;
    req.body = st->body.len ? st->body.data : NULL;
    req.body_len = st->body.len;
    st->scratch = malloc(strlen(url) + HTTP_MAX_PATH_PARAMS + 1);
    if (!st->scratch) {
        log_error("http: out of memory answering %s; connection dropped", method);
        goto out; /* MHD_NO: MHD drops the connection */
    }
    int m = http_router_match(s->routes, method, url, &req, &route_index, st->scratch, allow,
                              sizeof allow);
    if (m == HTTP_MATCH_NONE)
        route_index = HTTP_ROUTE_UNMATCHED;
    if (st->refused) {
        http_response_add_header(&res, "Connection", "close");
        http_reply_error(&res, &st->refusal);
    } else if (st->too_large) {
        kt_error err;
        kt_error_set(&err, KT_ERR_BODY_TOO_LARGE, "the request body exceeds %d bytes",
                     HTTP_MAX_BODY);
        http_reply_error(&res, &err);
    } else if (st->no_memory) {
        kt_error err;
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory while reading the request body");
        http_reply_error(&res, &err);
    } else if (m == HTTP_MATCH_OK && s->route_blocking[route_index]) {
        /* First here, for an answer that needs no wait (an ask whose configurations are ready):
         * no thread, no suspension. Only one that would wait goes to a thread of its own. */
        req.may_defer = 1;
        s->routes[route_index].handler(s->app, &req, &res);
        req.may_defer = 0;
        if (res.deferred) {
            http_response_clear(&res);
            if (start_blocking(w, conn, st, &req, route_index, &res)) {
                ok = MHD_YES; /* the reply comes when the handler's thread resumes the connection */
                goto out;
            }
        }
    } else if (m == HTTP_MATCH_OK && s->route_heavy[route_index]) {
        if (start_heavy(w, conn, st, &req, route_index, &res)) {
            ok = MHD_YES; /* the reply comes when a heavy thread resumes the connection */
            goto out;
        }
    } else if (m == HTTP_MATCH_OK) {
        s->routes[route_index].handler(s->app, &req, &res);
    } else if (m == HTTP_MATCH_METHOD) {
        http_response_add_header(&res, MHD_HTTP_HEADER_ALLOW, allow);
        reply_code(&res, KT_ERR_METHOD_NOT_ALLOWED, "method %s is not allowed here", method);
    } else if (is_api_path(url) || !s->web_root_real) {
        reply_code(&res, KT_ERR_NOT_FOUND, "no such resource: %s", url);
    } else {
        route_index = HTTP_ROUTE_STATIC;
        req.route = "static";
        if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
            mr = http_static_serve(s->web_root_real, url, &res);
            status = 200;
        } else {
            http_response_add_header(&res, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
            reply_code(&res, KT_ERR_METHOD_NOT_ALLOWED, "method %s is not allowed here", method);
        }
    }
    ok = queue_reply(w, conn, st, &req, &res, mr, route_index, status);
out:
    http_response_clear(&res);
    return ok;
}

/* A call made for a handler that runs off the worker (blocking or heavy). */
static http_call *call_new(http_worker *w, struct MHD_Connection *conn, const http_request *req,
                           int route_index)
{
    http_call *call = calloc(1, sizeof *call);
    if (call) {
        call->w = w;
        call->conn = conn;
        call->route = &w->server->routes[route_index];
        call->route_index = route_index;
        call->req = *req;
    }
    return call;
}

/* Frees a call and what its reply holds (a prepared reply's reference too). */
static void call_free(http_call *call)
{
    if (call) {
        http_prepared_release(http_response_take_prepared(&call->res));
        http_response_clear(&call->res);
        free(call);
    }
}

/* The blocking call's thread: runs the handler, then resumes the connection (after which the
 * call belongs to MHD's thread again: nothing of it is touched here). */
static void *blocking_main(void *arg)
{
    http_call *call = arg;
    http_server *s = call->w->server;
    struct MHD_Connection *conn = call->conn;
    call->route->handler(s->app, &call->req, &call->res);
    atomic_store(&call->done, 1);
    MHD_resume_connection(conn);
    atomic_fetch_sub(&s->blocking_running, 1);
    return NULL;
}

/* Starts a blocking route's handler on its own thread with the connection suspended: 1, or 0
 * with res holding the refusal (429: too many at once, or no thread). */
static int start_blocking(http_worker *w, struct MHD_Connection *conn, req_state *st,
                          const http_request *req, int route_index, http_response *res)
{
    http_server *s = w->server;
    kt_error err;
    pthread_attr_t attr;
    pthread_t tid;
    http_call *call = NULL;
    if (atomic_fetch_add(&s->blocking_running, 1) >= HTTP_MAX_BLOCKING || atomic_load(&s->stopping))
        goto refuse;
    call = call_new(w, conn, req, route_index);
    if (!call)
        goto refuse;
    st->call = call;
    MHD_suspend_connection(conn);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&tid, &attr, blocking_main, call) == 0;
    pthread_attr_destroy(&attr);
    if (started)
        return 1;
    MHD_resume_connection(conn);
    st->call = NULL;
    call_free(call);
refuse:
    atomic_fetch_sub(&s->blocking_running, 1);
    kt_error_set(&err, KT_ERR_TOO_MANY_REQUESTS, "%d waiting requests are running; retry shortly",
                 HTTP_MAX_BLOCKING);
    kt_error_hint(&err, "retry after the Retry-After seconds");
    http_response_add_header(res, "Retry-After", "1");
    http_reply_error(res, &err);
    return 0;
}

/* Queues a heavy route's call for the heavy pool, its connection suspended: 1, or 0 with res
 * holding the refusal (429: every heavy thread busy and the queue full; 503: stopping). st->call
 * is set after the submit: only this worker reads it, and not before the access handler returns. */
static int start_heavy(http_worker *w, struct MHD_Connection *conn, req_state *st,
                       const http_request *req, int route_index, http_response *res)
{
    http_server *s = w->server;
    kt_error err;
    http_call *call = call_new(w, conn, req, route_index);
    int rc = !call ? -2 : s->heavy ? http_heavy_pool_submit(s->heavy, call) : -1;
    if (rc == 1) {
        st->call = call;
    } else {
        call_free(call);
        if (rc == -2) {
            kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory queuing a heavy request");
        } else if (rc == -1) {
            kt_error_set(&err, KT_ERR_UNAVAILABLE, "the server is stopping");
            kt_error_hint(&err, "retry once it is back");
        } else {
            kt_error_set(&err, KT_ERR_TOO_MANY_REQUESTS,
                         "%d heavy requests (trial pages, imports, exports) are running and %d "
                         "wait; retry shortly",
                         s->heavy_threads, s->heavy_queue);
            kt_error_hint(&err,
                          "retry after the Retry-After seconds, or page with a smaller limit");
            http_response_add_header(res, "Retry-After", "1");
        }
        http_reply_error(res, &err);
    }
    return rc == 1;
}

/* The access handler's call after a blocking or heavy handler resumed the connection: queues its
 * reply. */
static enum MHD_Result finish_call(http_worker *w, struct MHD_Connection *conn, req_state *st)
{
    http_call *call = st->call;
    enum MHD_Result ok =
        queue_reply(w, conn, st, &call->req, &call->res, NULL, call->route_index, 500);
    st->call = NULL;
    call_free(call);
    return ok;
}

static req_state *state_new(void)
{
    req_state *st = calloc(1, sizeof *st);
    if (st) {
        st->t0_ns = kt_clock_ns();
        strbuf_init(&st->body, HTTP_MAX_BODY);
    }
    return st;
}

void *http_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    req_state *st = state_new();
    if (!st || !uri)
        return st;
    st->target_too_long = strlen(uri) > HTTP_MAX_URL;
    char *q = strchr(uri, '?');
    if (q) {
        /* Every '&'-separated part counts, empty ones too: MHD stores each, and a thousand bare
         * '&' ran its connection memory out (no reply, the connection held until the timeout). */
        int n = 1;
        for (const char *p = q + 1; *p; p++)
            n += *p == '&';
        st->query_params = n;
        if (st->target_too_long || n > HTTP_MAX_QUERY_PARAMS) {
            /* MHD parses the arguments from the byte after '?' once this returns: an empty string
             * there keeps it from spending connection memory on what will be refused anyway. uri
             * points into MHD's read buffer (libmicrohttpd 0.9.75, connection.c
             * parse_initial_message_line), writable; const only in the callback's type. */
            q[1] = '\0';
        }
    }
    return st;
}

typedef struct field_walk {
    http_fields f;
} field_walk;

static enum MHD_Result walk_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    field_walk *w = cls;
    http_fields_add(&w->f, key, key_size, value ? value : "", value ? value_size : 0);
    return MHD_YES;
}

typedef struct arg_walk {
    const char *keys[HTTP_MAX_QUERY_PARAMS + 1];
    int n;
    const char *repeated;
    const char *not_utf8;
} arg_walk;

static enum MHD_Result walk_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    arg_walk *w = cls;
    if (!http_utf8_valid(key) || (value && !http_utf8_valid(value))) {
        w->not_utf8 = key;
        return MHD_NO;
    }
    for (int i = 0; i < w->n; i++) {
        if (strcmp(w->keys[i], key) == 0) {
            w->repeated = key;
            return MHD_NO;
        }
    }
    if (w->n < HTTP_MAX_QUERY_PARAMS + 1)
        w->keys[w->n++] = key;
    return MHD_YES;
}

/* The edges every request passes before its body is read; 0, or -1 with st->refusal set. */
static int check_edges(struct MHD_Connection *conn, const char *version, req_state *st)
{
    kt_error *err = &st->refusal;
    if (http_version_check(version, err) < 0)
        return -1;
    if (st->target_too_long) {
        kt_error_set(err, KT_ERR_URI_TOO_LONG, "the request target exceeds %d bytes", HTTP_MAX_URL);
        kt_error_hint(err, "shorten the path and query string");
        return -1;
    }
    if (st->query_params > HTTP_MAX_QUERY_PARAMS) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the query string has %d parameters; at most %d",
                     st->query_params, HTTP_MAX_QUERY_PARAMS);
        kt_error_hint(err, "send fewer parameters; empty ones between '&' count too");
        return -1;
    }
    field_walk fw;
    http_fields_init(&fw.f);
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, walk_field, &fw);
    if (http_fields_verdict(&fw.f, err) < 0)
        return -1;
    arg_walk aw;
    aw.n = 0;
    aw.repeated = aw.not_utf8 = NULL;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, walk_arg, &aw);
    if (aw.not_utf8) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "a query parameter is not valid UTF-8");
        kt_error_hint(err, "percent-encode the UTF-8 bytes of names and values");
        return -1;
    }
    if (aw.repeated) {
        char printable[64];
        http_printable(printable, sizeof printable, aw.repeated);
        kt_error_set(err, KT_ERR_BAD_REQUEST, "query parameter '%s' is given more than once",
                     printable);
        kt_error_hint(err, "give each parameter once");
        return -1;
    }
    return 0;
}

enum MHD_Result http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    http_worker *w = cls;
    req_state *st = *con_cls;
    if (!st) {
        st = state_new();
        if (!st)
            return MHD_NO;
        *con_cls = st;
    }
    if (!st->started) {
        st->started = 1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        st->gate = ci ? ci->socket_context : NULL;
        int refuse = check_edges(conn, version, st) < 0;
        if (refuse)
            st->refused = 1; /* answered before the body is read: the connection closes after
                              * the reply, so a body framed two ways is never read as a next
                              * request */
        else if (declared_too_large(conn))
            st->too_large = 1; /* refused before reading any of it; MHD closes the connection
                                * after this reply (the unread body is no next request) */
        if (http_gate_conn_phase(w->server, st->gate,
                                 st->refused || st->too_large ? HTTP_CONN_BUSY : HTTP_CONN_BODY) <
            0)
            return MHD_NO; /* displaced by the gate meanwhile */
        if (st->refused || st->too_large)
            return answer(w, conn, url, method, st);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (http_gate_conn_body(st->gate, n) < 0)
            return MHD_NO; /* the gate answered 408 (deadline, rate) or displaced it */
        if (st->answered)
            return MHD_YES;
        body_append(st, upload_data, n);
        return st->too_large ? body_refuse(w, conn, st) : MHD_YES;
    }
    if (st->call) /* a blocking or heavy handler: its reply once it resumed the connection */
        return atomic_load(&st->call->done) ? finish_call(w, conn, st) : MHD_YES;
    if (st->answered)
        return MHD_YES;
    if (http_gate_conn_phase(w->server, st->gate, HTTP_CONN_BUSY) < 0)
        return MHD_NO;
    return answer(w, conn, url, method, st);
}

void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    req_state *st = *con_cls;
    (void)conn;
    (void)toe;
    if (!st)
        return;
    http_gate_conn_phase(s, st->gate, HTTP_CONN_IDLE); /* waits for a next request (or closes) */
    if (st->call && atomic_load(&st->call->done))
        call_free(st->call);
    /* else its thread still runs (never: MHD closes no suspended connection, and the server
     * stops its daemons only once every call was resumed): leaked, not freed under it */
    strbuf_release(&st->body);
    free(st->scratch);
    free(st);
    *con_cls = NULL;
}

int http_request_stopping(const http_request *req)
{
    return req && req->server && atomic_load(&req->server->stopping);
}
