/* Tests of http/ request limits and connection reuse over real sockets: JSON bodies (media type,
 * syntax, nesting depth), body size (declared, chunked, exact cap, Expect: 100-continue),
 * keep-alive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http_test_client.h"
#include "http_test_app.h"

/* ---- JSON bodies ---- */

static void post_json_is_echoed(void **state)
{
    fixture *f = *state;
    hc_resp r;
    post(f, "/v1/echo", "application/json", "{\"a\":[1,2,{\"b\":\"c\"}]}", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"echo\":{\"a\":[1,2,{\"b\":\"c\"}]}}\n");
    hc_resp_free(&r);
    /* Parameters and case of the media type do not matter; a missing Content-Type is refused
     * (issue #11: without it a cross-site page could post without a CORS preflight). */
    post(f, "/v1/echo", "Application/JSON; charset=utf-8", "{\"k\":\"v\"}", &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    post(f, "/v1/echo", NULL, "{\"k\":\"v\"}", &r);
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "\"unsupported_media_type\""));
    hc_resp_free(&r);
}

static void bad_json_bodies_get_400(void **state)
{
    fixture *f = *state;
    hc_resp r;
    post(f, "/v1/echo", "application/json", "{\"a\":", &r);
    assert_error(&r, 400, "bad_json", "line 1, column");
    hc_resp_free(&r);
    post(f, "/v1/echo", "application/json", "[1,2]", &r);
    assert_error(&r, 400, "bad_json", "must be a JSON object");
    hc_resp_free(&r);
    post(f, "/v1/echo", "application/json", "", &r);
    assert_error(&r, 400, "bad_json", "request body is empty; a JSON object is expected");
    hc_resp_free(&r);
    post(f, "/v1/echo", "application/json", "{\"a\":1,\"a\":2}", &r);
    assert_error(&r, 400, "bad_json", "duplicate");
    hc_resp_free(&r);
    post(f, "/v1/echo", "text/plain", "{\"a\":1}", &r);
    assert_error(&r, 415, "unsupported_media_type", "text/plain");
    hc_resp_free(&r);
    post(f, "/v1/echo", "application/jsonx", "{\"a\":1}", &r);
    assert_error(&r, 415, "unsupported_media_type", NULL);
    hc_resp_free(&r);
}

static void json_depth_limit_is_32(void **state)
{
    fixture *f = *state;
    hc_resp r;
    char *ok = nested(HTTP_MAX_JSON_DEPTH);
    post(f, "/v1/echo", "application/json", ok, &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    free(ok);
    char *deep = nested(HTTP_MAX_JSON_DEPTH + 1);
    post(f, "/v1/echo", "application/json", deep, &r);
    assert_error(&r, 400, "json_too_deep", "32");
    hc_resp_free(&r);
    free(deep);
    /* Brackets inside strings (escaped quotes included) are not nesting. */
    post(f, "/v1/echo", "application/json",
         "{\"s\":\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{"
         "\"}",
         &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
}

/* ---- body size ---- */

static void declared_large_body_gets_413_unread(void **state)
{
    fixture *f = *state;
    hc_resp r;
    /* Only the headers are sent: the reply must come without waiting for the 2 MB. */
    assert_int_equal(
        hc_request(f->port,
                   "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                   "\r\nContent-Length: 2000000\r\n\r\n",
                   &r),
        0);
    assert_error(&r, 413, "body_too_large", "1048576");
    hc_resp_free(&r);
    assert_int_equal(hc_request(f->port,
                                "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: "
                                "99999999999999999999999\r\n\r\n",
                                &r),
                     0);
    assert_true(r.status == 413 || r.status == 400);
    hc_resp_free(&r);
}

static void expect_continue_is_honoured(void **state)
{
    fixture *f = *state;
    hc_conn c;
    hc_resp r;
    assert_int_equal(hc_connect(&c, f->port), 0);
    assert_int_equal(hc_send_str(&c, "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                     "application/json\r\nExpect: 100-continue\r\n"
                                     "Content-Length: 7\r\n\r\n"),
                     0);
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 100);
    hc_resp_free(&r);
    assert_int_equal(hc_send_str(&c, "{\"a\":1}"), 0);
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"echo\":{\"a\":1}}\n");
    hc_resp_free(&r);
    hc_close(&c);
    /* Too large: refused at once, no 100 Continue invites the body. */
    assert_int_equal(hc_request(f->port,
                                "POST /v1/echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                                "Content-Length: 1048577\r\n\r\n",
                                &r),
                     0);
    assert_error(&r, 413, "body_too_large", NULL);
    hc_resp_free(&r);
}

static void body_of_exactly_the_cap_is_accepted(void **state)
{
    fixture *f = *state;
    size_t n = HTTP_MAX_BODY;
    char *body = malloc(n);
    assert_non_null(body);
    memset(body, 'x', n);
    memcpy(body, "{\"s\":\"", 6);
    memcpy(body + n - 2, "\"}", 2);
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    char head[256];
    snprintf(head, sizeof head,
             "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             n);
    assert_int_equal(hc_send_str(&c, head), 0);
    assert_int_equal(hc_send(&c, body, n), 0);
    hc_resp r;
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, n + 10); /* {"echo":...}\n */
    hc_resp_free(&r);
    hc_close(&c);
    free(body);
}

static void chunked_large_body_gets_413_at_once_and_closes(void **state)
{
    fixture *f = *state;
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    assert_int_equal(hc_send_str(&c, "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                     "application/json\r\nTransfer-Encoding: chunked\r\n\r\n"),
                     0);
    char chunk[65536 + 16];
    int n = snprintf(chunk, sizeof chunk, "%x\r\n", 65536);
    memset(chunk + n, ' ', 65536);
    memcpy(chunk + n + 65536, "\r\n", 2);
    /* 1.5 MiB offered: the server answers once 1 MiB is past and closes, so a later send may
     * fail (the body is not read on: it could go on for ever). */
    for (int i = 0; i < 24 && hc_send(&c, chunk, (size_t)n + 65536 + 2) == 0; i++) {
    }
    hc_resp r;
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_error(&r, 413, "body_too_large", NULL);
    char v[64];
    const char *conn = hc_header(&r, "Connection", v, sizeof v);
    assert_true(conn && strcasecmp(conn, "close") == 0);
    hc_resp_free(&r);
    struct timeval tv = {2, 0};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_not_equal(hc_read(&c, &r, 0), 0); /* closed: no second reply */
    hc_close(&c);
    /* The server is fine: a new connection is served. */
    assert_int_equal(hc_request(f->port, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
}

/* ---- keep-alive ---- */

static void keep_alive_serves_many_requests_per_connection(void **state)
{
    fixture *f = *state;
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    for (int i = 0; i < 5; i++) {
        char raw[256], want[128];
        snprintf(raw, sizeof raw, "GET /v1/items/k%d HTTP/1.1\r\nHost: t\r\n\r\n", i);
        assert_int_equal(hc_send_str(&c, raw), 0);
        hc_resp r;
        assert_int_equal(hc_read(&c, &r, 0), 0);
        assert_int_equal(r.status, 200);
        snprintf(want, sizeof want, "\"id\":\"k%d\"", i);
        assert_non_null(strstr(r.body, want));
        char v[64];
        const char *conn = hc_header(&r, "Connection", v, sizeof v);
        assert_true(!conn || strcasecmp(conn, "close") != 0);
        hc_resp_free(&r);
        assert_true(hc_is_open(&c));
    }
    for (int i = 0; i < 4; i++) {
        char raw[256], body[64];
        snprintf(body, sizeof body, "{\"n\":%d}", i);
        snprintf(raw, sizeof raw,
                 "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 strlen(body), body);
        assert_int_equal(hc_send_str(&c, raw), 0);
        hc_resp r;
        assert_int_equal(hc_read(&c, &r, 0), 0);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, body));
        hc_resp_free(&r);
        assert_true(hc_is_open(&c));
    }
    /* Errors keep the connection too. */
    assert_int_equal(hc_send_str(&c, "GET /v1/nope HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    hc_resp r;
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 404);
    hc_resp_free(&r);
    assert_true(hc_is_open(&c));
    hc_close(&c);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(post_json_is_echoed),
        T(bad_json_bodies_get_400),
        T(json_depth_limit_is_32),
        T(declared_large_body_gets_413_unread),
        T(expect_continue_is_honoured),
        T(body_of_exactly_the_cap_is_accepted),
        T(chunked_large_body_gets_413_at_once_and_closes),
        T(keep_alive_serves_many_requests_per_connection),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
