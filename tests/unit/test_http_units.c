/* Tests of http/ pieces without a client: listen strings, bind failures, route and option checks,
 * JSON body parsing, replies and headers, metrics rendering, router edge cases, start/stop cycles,
 * IPv6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "http/http_internal.h"
#include "http_test_client.h"
#include "skip_test_util.h"

static void h_ok(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    http_reply_text(res, 200, NULL, "ok");
}

static const http_route routes[] = {
    {"GET", "/healthz", h_ok},
    {NULL, NULL, NULL},
};

static http_server *make(const char *listen, const char *web_root, kt_error *err)
{
    http_server_options opt = {.listen = listen, .web_root = web_root, .threads = 2};
    kt_error_clear(err);
    return http_server_new(routes, NULL, &opt, err);
}

static void bad_listen_strings_are_config_errors(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "nope",
                         "127.0.0.1",
                         "127.0.0.1:",
                         "127.0.0.1:99999",
                         "127.0.0.1:80x",
                         "::1:80",
                         "[::1]80",
                         "[::1",
                         "[nope]:80",
                         "1.2.3:80",
                         "example.com:80",
                         "127.0.0.1:-1",
                         "[127.0.0.1]:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kt_error err;
        http_server *s = make(bad[i], NULL, &err);
        if (s)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_int_equal(err.code, KT_ERR_CONFIG);
        assert_true(err.message[0] != '\0');
        if (bad[i][0])
            assert_non_null(strstr(err.message, bad[i]));
    }
    kt_error err;
    http_server_options opt = {.listen = NULL, .threads = 2};
    assert_null(http_server_new(routes, NULL, &opt, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    const char *good[] = {":0", "127.0.0.1:0", "localhost:0", "[::1]:0", "0.0.0.0:8080"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        http_server *s = make(good[i], NULL, &err);
        if (!s)
            fail_msg("\"%s\" refused: %s", good[i], err.message);
        http_server_free(s);
    }
}

static void bind_failure_names_address_and_reason(void **state)
{
    (void)state;
    kt_error err;
    http_server *a = make("127.0.0.1:0", NULL, &err);
    assert_non_null(a);
    assert_int_equal(http_server_start(a, &err), 0);
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", http_server_port(a));
    http_server *b = make(listen, NULL, &err);
    assert_non_null(b);
    assert_int_equal(http_server_start(b, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, listen));
    assert_non_null(strstr(err.message, strerror(EADDRINUSE)));
    http_server_free(b);
    http_server_free(a);
}

static void bad_routes_and_options_are_refused(void **state)
{
    (void)state;
    const http_route bad[][2] = {
        {{"GET", NULL, h_ok}, {NULL, NULL, NULL}},
        {{"GET", "healthz", h_ok}, {NULL, NULL, NULL}},
        {{"GET", "/a", NULL}, {NULL, NULL, NULL}},
        {{"GET", "/a/{id", h_ok}, {NULL, NULL, NULL}},
        {{"GET", "/a/x{id}", h_ok}, {NULL, NULL, NULL}},
        {{"GET", "/a/{}", h_ok}, {NULL, NULL, NULL}},
        {{"GET", "/a/{b}{c}", h_ok}, {NULL, NULL, NULL}},
        {{"GET", "/{a}/{b}/{c}/{d}/{e}", h_ok}, {NULL, NULL, NULL}},
    };
    http_server_options opt = {.listen = "127.0.0.1:0", .threads = 2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kt_error err;
        kt_error_clear(&err);
        if (http_server_new(bad[i], NULL, &opt, &err))
            fail_msg("route %zu accepted", i);
        assert_int_equal(err.code, KT_ERR_CONFIG);
    }
    kt_error err;
    assert_null(http_server_new(NULL, NULL, &opt, &err));
    assert_null(http_server_new(routes, NULL, NULL, &err));
    assert_null(make("127.0.0.1:0", "/nonexistent/kt/web", &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/kt/web"));
    assert_null(make("127.0.0.1:0", "/etc/hostname", &err)); /* a file, not a folder */
    assert_int_equal(err.code, KT_ERR_CONFIG);
    http_server_options many = {.listen = "127.0.0.1:0", .threads = 100000};
    assert_null(http_server_new(routes, NULL, &many, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
}

static void start_stop_cycles_and_all_interfaces(void **state)
{
    (void)state;
    kt_error err;
    http_server_options opt = {.listen = ":0", .threads = 1}; /* one thread: no pool */
    http_server *s = http_server_new(routes, NULL, &opt, &err);
    assert_non_null(s);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(http_server_start(s, &err), 0);
        assert_int_equal(http_server_start(s, &err), 0); /* already running: no-op */
        hc_resp r;
        assert_int_equal(
            hc_request(http_server_port(s), "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
        assert_int_equal(r.status, 200);
        hc_resp_free(&r);
        http_server_stop(s);
        http_server_stop(s);
    }
    assert_int_equal(http_server_requests_total(s), 3);
    http_server_free(s);
    http_server_free(NULL);
}

static void ipv6_loopback_serves(void **state)
{
    (void)state;
    kt_error err;
    http_server *s = make("[::1]:0", NULL, &err);
    assert_non_null(s);
    if (http_server_start(s, &err) != 0) {
        http_server_free(s);
        KT_SKIP("no IPv6 loopback on this machine: [::1]:0 does not listen (%s)", err.message);
    }
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons((uint16_t)http_server_port(s));
    a.sin6_addr = in6addr_loopback;
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    hc_conn c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    assert_int_equal(hc_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    hc_resp r;
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    hc_close(&c);
    http_server_free(s);
}

static json_t *parse(const char *body, size_t len, kt_error *err)
{
    http_request req;
    memset(&req, 0, sizeof req);
    req.body = body;
    req.body_len = len;
    kt_error_clear(err);
    return http_parse_json_body(&req, err);
}

static void json_bodies_are_checked(void **state)
{
    (void)state;
    kt_error err;
    json_t *j = parse("{\"a\":[1,{\"b\":null}]}", 20, &err);
    assert_non_null(j);
    json_decref(j);
    assert_null(parse(NULL, 0, &err));
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    assert_string_equal(err.message, "request body is empty; a JSON object is expected");
    assert_null(parse("  \n", 3, &err));
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    assert_null(parse("{\"a\":\"x\0y\"}", 11, &err)); /* a NUL inside the body */
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    assert_null(parse("{\"a\":\"\xff\"}", 9, &err));
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    assert_null(parse("{\"a\":1}\n{", 9, &err));
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    assert_null(parse("\"str\"", 5, &err));
    assert_string_equal(err.message, "the request body must be a JSON object");
    assert_null(parse("{\"a\":1,\n \"b\":}", 14, &err));
    assert_non_null(strstr(err.message, "line 2, column"));
    /* Depth is counted on the raw bytes: unbalanced closers do not go negative. */
    char deep[80];
    memset(deep, '[', sizeof deep);
    deep[0] = '{';
    assert_null(parse(deep, 33, &err));
    assert_int_equal(err.code, KT_ERR_JSON_TOO_DEEP);
    assert_non_null(strstr(err.message, "32"));
    assert_null(parse("]]]]]]]]]]{\"a\":1}", 17, &err));
    assert_int_equal(err.code, KT_ERR_BAD_JSON);
    char *big = calloc(1, (size_t)HTTP_MAX_BODY + 2);
    assert_non_null(big);
    assert_null(parse(big, (size_t)HTTP_MAX_BODY + 1, &err));
    assert_int_equal(err.code, KT_ERR_BODY_TOO_LARGE);
    free(big);
    /* err may be NULL. */
    http_request req;
    memset(&req, 0, sizeof req);
    assert_null(http_parse_json_body(&req, NULL));
}

static void replies_fill_the_response(void **state)
{
    (void)state;
    http_response res;
    memset(&res, 0, sizeof res);
    http_response_add_header(&res, "Location", "/v1/jobs/7");
    http_reply_json(&res, 201, json_pack("[i,s]", 1, "x"));
    assert_int_equal(res.status, 201);
    assert_string_equal(res.content_type, "application/json");
    assert_string_equal(res.body, "[1,\"x\"]\n");
    assert_int_equal(res.body_len, 8);
    assert_string_equal(res.extra_headers, "Location: /v1/jobs/7\r\n"); /* kept across replies */

    http_reply_json(&res, 200, NULL); /* a failed json_pack upstream */
    assert_int_equal(res.status, 500);
    assert_non_null(strstr(res.body, "\"internal\""));

    kt_error err;
    kt_error_set(&err, KT_ERR_NOT_FOUND, "no job \xff\xfe here");
    http_reply_error(&res, &err);
    assert_int_equal(res.status, 404);
    assert_string_equal(res.body,
                        "{\"error\":{\"code\":\"not_found\",\"message\":\"no job ?? here\"}}\n");
    kt_error_set(&err, KT_ERR_CONFLICT, NULL);
    kt_error_hint(&err, "cancel it first");
    http_reply_error(&res, &err);
    assert_int_equal(res.status, 409);
    assert_non_null(strstr(res.body, "\"hint\":\"cancel it first\""));
    kt_error_clear(&err);
    http_reply_error(&res, &err); /* "ok" is no error: answered as internal */
    assert_int_equal(res.status, 500);
    http_reply_error(&res, NULL);
    assert_int_equal(res.status, 500);

    http_reply_text(&res, 200, NULL, NULL);
    assert_int_equal(res.body_len, 0);
    assert_string_equal(res.content_type, "text/plain; charset=utf-8");

    http_response_add_header(&res, "Bad Name", "x");
    http_response_add_header(&res, "X-A", "1\r\nX-B: 2");
    http_response_add_header(&res, "X-A", "1\n");
    http_response_add_header(&res, NULL, "x");
    assert_string_equal(res.extra_headers, "Location: /v1/jobs/7\r\n");
    char value[1024];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    for (int i = 0; i < 20; i++)
        http_response_add_header(&res, "X-Long", value);
    assert_true(strlen(res.extra_headers) <= 8192);
    http_response_clear(&res);
    assert_null(res.body);
}

static void metrics_escape_labels_and_cap_entries(void **state)
{
    (void)state;
    const http_route odd[] = {
        {"GET", "/v1/a\"b\\c", h_ok},
        {"POST", "/v1/a\"b\\c", h_ok},
        {NULL, NULL, NULL},
    };
    http_metrics m;
    assert_int_equal(http_metrics_init(&m, odd, 2), 0);
    http_metrics_count(&m, 0, "GET", 200, 1500000000ull);
    http_metrics_count(&m, 1, "POST", 201, 250000000ull);
    http_metrics_count(&m, HTTP_ROUTE_STATIC, "HEAD", 200, 1);
    for (int st = 100; st < 100 + HTTP_METRICS_MAX_ENTRIES; st++)
        http_metrics_count(&m, HTTP_ROUTE_UNMATCHED, "GET", st, 0);
    char *text = http_metrics_render(&m);
    assert_non_null(text);
    assert_non_null(strstr(
        text,
        "ktune_http_requests_total{route=\"/v1/a\\\"b\\\\c\",method=\"GET\",status=\"200\"} 1\n"));
    assert_non_null(strstr(text, "{route=\"static\",method=\"HEAD\",status=\"200\"} 1\n"));
    /* Both methods of one pattern share one duration line. */
    assert_non_null(strstr(
        text, "ktune_http_request_duration_seconds_sum{route=\"/v1/a\\\"b\\\\c\"} 1.750000000\n"));
    assert_non_null(strstr(text, "{route=\"overflow\",method=\"OTHER\",status=\"0\"} 3\n"));
    free(text);
    http_metrics_destroy(&m);
}

static void router_edges(void **state)
{
    (void)state;
    const http_route r[] = {
        {"GET", "/", h_ok},      {"GET", "/a/", h_ok},
        {"GET", "/a/{x}", h_ok}, {"POST", "/a/{x}/{y}/{z}/{w}", h_ok},
        {NULL, NULL, NULL},
    };
    http_request req;
    char scratch[128], allow[64];
    int idx = -9;
    memset(&req, 0, sizeof req);
    assert_int_equal(http_router_match(r, "GET", "/", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_OK);
    assert_int_equal(idx, 0);
    assert_int_equal(http_router_match(r, "GET", "/a/", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_OK);
    assert_int_equal(idx, 1);
    assert_int_equal(http_router_match(r, "GET", "/a", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_NONE);
    assert_int_equal(http_router_match(r, "GET", "/a/b", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_OK);
    assert_string_equal(req.params[0], "b");
    assert_string_equal(req.route, "/a/{x}");
    memset(&req, 0, sizeof req);
    assert_int_equal(
        http_router_match(r, "POST", "/a/1/22/333/4444", &req, &idx, scratch, allow, sizeof allow),
        HTTP_MATCH_OK);
    assert_int_equal(req.n_params, 4);
    assert_string_equal(req.params[3], "4444");
    assert_string_equal(req.params[2], "333");
    assert_int_equal(
        http_router_match(r, "GET", "/a/1/22/333/4444", &req, &idx, scratch, allow, sizeof allow),
        HTTP_MATCH_METHOD);
    assert_string_equal(allow, "POST");
    assert_int_equal(idx, 3);
    assert_int_equal(http_router_match(r, "get", "/", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_METHOD); /* methods are case-sensitive */
    assert_int_equal(http_router_match(r, "GET", "", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_NONE);
    assert_int_equal(http_router_match(r, "GET", "*", &req, &idx, scratch, allow, sizeof allow),
                     HTTP_MATCH_NONE);
    assert_string_equal(http_static_content_type("/a/b.WOFF2"), "font/woff2");
    assert_string_equal(http_static_content_type("/a.b/c"), "application/octet-stream");
    assert_string_equal(http_static_content_type("/x.map"), "application/json");
}

/* If-None-Match against a quoted strong ETag: lists, weak tags, "*", and no prefix matches. */
static void etags_match_if_none_match(void **state)
{
    (void)state;
    const char *e1 = "\"cbf29ce484222325-7\"", *e3 = "\"00000000000000aa-7\"";
    char list[128];
    assert_true(http_etag_matches(e1, e1));
    snprintf(list, sizeof list, "%s, %s", e3, e1);
    assert_true(http_etag_matches(list, e1));
    snprintf(list, sizeof list, "W/%s", e1);
    assert_true(http_etag_matches(list, e1)); /* weak comparison */
    assert_true(http_etag_matches("*", e1));
    assert_false(http_etag_matches(e3, e1));
    assert_false(http_etag_matches("", e1));
    assert_false(http_etag_matches(NULL, e1));
    snprintf(list, sizeof list, "%.*sX\"", (int)strlen(e1) - 1, e1); /* a longer tag */
    assert_false(http_etag_matches(list, e1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_listen_strings_are_config_errors),
        cmocka_unit_test(bind_failure_names_address_and_reason),
        cmocka_unit_test(bad_routes_and_options_are_refused),
        cmocka_unit_test(start_stop_cycles_and_all_interfaces),
        cmocka_unit_test(ipv6_loopback_serves),
        cmocka_unit_test(json_bodies_are_checked),
        cmocka_unit_test(replies_fill_the_response),
        cmocka_unit_test(metrics_escape_labels_and_cap_entries),
        cmocka_unit_test(router_edges),
        cmocka_unit_test(etags_match_if_none_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
