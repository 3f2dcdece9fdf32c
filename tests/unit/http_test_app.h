/* The test application of the http/ socket tests: a test_app, dummy routes (items with path
 * parameters, JSON echo, query listing, a handler that forgets its status, metrics), a fixture that
 * starts a server on 127.0.0.1:0 per test, and request/assert helpers. Included by
 * test_http_server.c and test_http_limits.c; needs cmocka.h and http_test_client.h first. */
#ifndef KT_TEST_HTTP_APP_H
#define KT_TEST_HTTP_APP_H

#include <jansson.h>
#include <stdatomic.h>

#include "http/server.h"

typedef struct test_app {
    http_server *server;
    atomic_int calls;
} test_app;

typedef struct fixture {
    test_app app;
    http_server *s;
    int port;
} fixture;

/* ---- handlers ---- */

static void h_item(void *app, const http_request *req, http_response *res)
{
    test_app *a = app;
    atomic_fetch_add(&a->calls, 1);
    const char *q = http_query(req, "q");
    http_reply_json(
        res, 200, json_pack("{s:s, s:s?, s:s}", "id", req->params[0], "q", q, "route", req->route));
}

static void h_delete(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    res->status = 204;
}

static void h_part(void *app, const http_request *req, http_response *res)
{
    (void)app;
    http_reply_json(res, 200,
                    json_pack("{s:s, s:s, s:i}", "id", req->params[0], "part", req->params[1], "n",
                              req->n_params));
}

static void h_echo(void *app, const http_request *req, http_response *res)
{
    (void)app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = http_parse_json_body(req, &err);
    if (!body) {
        http_reply_error(res, &err);
        return;
    }
    http_reply_json(res, 200, json_pack("{s:o}", "echo", body));
}

static int collect_query(void *ctx, const char *key, const char *value)
{
    json_array_append_new(ctx, json_pack("[s,s]", key, value));
    return strcmp(key, "stop") == 0;
}

static void h_query(void *app, const http_request *req, http_response *res)
{
    (void)app;
    json_t *list = json_array();
    int stopped = http_query_each(req, collect_query, list);
    http_reply_json(res, 200, json_pack("{s:o, s:b}", "args", list, "stopped", stopped));
}

static void h_broken(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    (void)res; /* leaves status 0 */
}

static void h_header(void *app, const http_request *req, http_response *res)
{
    (void)app;
    const char *x = http_header(req, "X-Test");
    http_response_add_header(res, "X-Reply", "yes");
    http_response_add_header(res, "X-Bad", "a\r\nInjected: 1"); /* refused */
    http_reply_text(res, 200, NULL, x ? x : "(none)");
}

static void h_fail(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    kt_error err;
    kt_error_set(&err, KT_ERR_NO_BEST, "nothing for %s", "saxpy");
    kt_error_hint(&err, "run a tuning job first");
    http_reply_error(res, &err);
}

static void h_health(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    http_reply_text(res, 200, NULL, "ok\n");
}

static void h_metrics(void *app, const http_request *req, http_response *res)
{
    test_app *a = app;
    (void)req;
    char *text = http_server_metrics_text(a->server);
    http_reply_text(res, text ? 200 : 500, "text/plain; version=0.0.4; charset=utf-8",
                    text ? text : "");
    free(text);
}

static const http_route routes[] = {
    {"GET", "/v1/items/{id}", h_item},
    {"DELETE", "/v1/items/{id}", h_delete},
    {"GET", "/v1/items/{id}/parts/{part}", h_part},
    {"POST", "/v1/echo", h_echo},
    {"GET", "/v1/query", h_query},
    {"GET", "/v1/broken", h_broken},
    {"GET", "/v1/header", h_header},
    {"GET", "/v1/fail", h_fail},
    {"GET", "/healthz", h_health},
    {"GET", "/metrics", h_metrics},
    {NULL, NULL, NULL},
};

/* ---- fixture ---- */

static inline int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    kt_error err;
    kt_error_clear(&err);
    http_server_options opt = {.listen = "127.0.0.1:0", .threads = 4};
    f->s = http_server_new(routes, &f->app, &opt, &err);
    assert_non_null(f->s);
    f->app.server = f->s;
    assert_int_equal(http_server_start(f->s, &err), 0);
    f->port = http_server_port(f->s);
    assert_true(f->port > 0);
    *state = f;
    return 0;
}

static inline int teardown(void **state)
{
    fixture *f = *state;
    http_server_free(f->s);
    free(f);
    return 0;
}

/* ---- helpers ---- */

static inline json_t *body_json(const hc_resp *r)
{
    json_error_t je;
    json_t *j = json_loadb(r->body, r->body_len, 0, &je);
    assert_non_null(j);
    return j;
}

static inline void assert_error(const hc_resp *r, int status, const char *code,
                                const char *in_message)
{
    char ct[128];
    assert_int_equal(r->status, status);
    assert_non_null(hc_header(r, "Content-Type", ct, sizeof ct));
    assert_string_equal(ct, "application/json");
    assert_true(r->body_len > 0 && r->body[r->body_len - 1] == '\n');
    json_t *j = body_json(r);
    json_t *e = json_object_get(j, "error");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "code")), code);
    const char *msg = json_string_value(json_object_get(e, "message"));
    assert_non_null(msg);
    if (in_message && !strstr(msg, in_message))
        fail_msg("message \"%s\" lacks \"%s\"", msg, in_message);
    json_decref(j);
}

static inline void get(fixture *f, const char *path, hc_resp *r)
{
    char raw[2048];
    snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    assert_int_equal(hc_request(f->port, raw, r), 0);
}

static inline void post(fixture *f, const char *path, const char *type, const char *body,
                        hc_resp *r)
{
    char raw[8192];
    char ct[160] = "";
    if (type)
        snprintf(ct, sizeof ct, "Content-Type: %s\r\n", type);
    int n =
        snprintf(raw, sizeof raw, "POST %s HTTP/1.1\r\nHost: t\r\n%sContent-Length: %zu\r\n\r\n%s",
                 path, ct, strlen(body), body);
    assert_true(n > 0 && (size_t)n < sizeof raw);
    assert_int_equal(hc_request(f->port, raw, r), 0);
}

/* {"a":[[...[1]...]]} with depth levels of nesting in all. */
static inline char *nested(int depth)
{
    size_t cap = (size_t)depth * 2 + 16;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap, "{\"a\":");
    for (int i = 1; i < depth; i++)
        s[n++] = '[';
    s[n++] = '1';
    for (int i = 1; i < depth; i++)
        s[n++] = ']';
    s[n++] = '}';
    s[n] = '\0';
    return s;
}

#endif
