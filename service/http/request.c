/* One request through MHD's access handler: first call allocates the state, data calls buffer the
 * body (capped; the excess is read and dropped so the connection stays usable), the last call
 * routes, runs the handler or serves a file, queues the reply, counts it and logs it. */
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
} req_state;

static void body_append(req_state *st, const char *data, size_t n)
{
    if (st->too_large || st->no_memory)
        return;
    if (strbuf_append(&st->body, data, n) == 0)
        return;
    if (st->body.failed == STRBUF_TOO_LONG) {
        /* Over the cap: drop what we have, keep reading (and discarding) so keep-alive survives. */
        st->too_large = 1;
        strbuf_release(&st->body);
    } else {
        st->no_memory = 1;
    }
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

static enum MHD_Result answer(http_server *s, struct MHD_Connection *conn, const char *url,
                              const char *method, req_state *st)
{
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
    req.body = st->body.len ? st->body.data : NULL;
    req.body_len = st->body.len;
    st->scratch = malloc(strlen(url) + HTTP_MAX_PATH_PARAMS + 1);
    if (!st->scratch)
        goto out; /* MHD_NO: MHD drops the connection */
    int m = http_router_match(s->routes, method, url, &req, &route_index, st->scratch, allow,
                              sizeof allow);
    if (m == HTTP_MATCH_NONE)
        route_index = HTTP_ROUTE_UNMATCHED;
    if (st->too_large) {
        kt_error err;
        kt_error_set(&err, KT_ERR_BODY_TOO_LARGE, "the request body exceeds %d bytes",
                     HTTP_MAX_BODY);
        http_reply_error(&res, &err);
    } else if (st->no_memory) {
        kt_error err;
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory while reading the request body");
        http_reply_error(&res, &err);
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
    /* A reply made once and kept by the handler (http/prepared.h): queued as it is. */
    http_prepared *prepared = http_response_take_prepared(&res);
    if (!mr && prepared) {
        mr = http_prepared_response(prepared);
        status = http_prepared_status(prepared);
    }
    if (!mr)
        mr = to_mhd(&req, &res, &status);
    if (!mr) {
        http_prepared_release(prepared);
        goto out;
    }
    ok = MHD_queue_response(conn, (unsigned)status, mr);
    if (!prepared || mr != http_prepared_response(prepared))
        MHD_destroy_response(mr);
    http_prepared_release(prepared); /* MHD holds its own reference while it sends it */
    uint64_t ns = kt_clock_since_ns(st->t0_ns);
    http_metrics_count(&s->metrics, route_index, method, status, ns);
    char printable[256];
    http_printable(printable, sizeof printable, url);
    log_debug("http: %s %s %d %.1f ms", method, printable, status, (double)ns / 1e6);
out:
    http_response_clear(&res);
    return ok;
}

enum MHD_Result http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    http_server *s = cls;
    req_state *st = *con_cls;
    (void)version;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            return MHD_NO;
        st->t0_ns = kt_clock_ns();
        strbuf_init(&st->body, HTTP_MAX_BODY);
        *con_cls = st;
        if (declared_too_large(conn)) {
            /* Refused before reading any of it; MHD closes the connection after this reply, since
             * the unread body would otherwise be taken for the next request. */
            st->too_large = 1;
            return answer(s, conn, url, method, st);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!st->answered)
            body_append(st, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (st->answered)
        return MHD_YES;
    return answer(s, conn, url, method, st);
}

void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    req_state *st = *con_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!st)
        return;
    strbuf_release(&st->body);
    free(st->scratch);
    free(st);
    *con_cls = NULL;
}
