/* Tests of http/ over real sockets: a server on 127.0.0.1:0 with dummy routes (no web root), driven
 * by a raw TCP client: routing, errors and replies, metrics, junk input, concurrency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "http_test_client.h"
#include "http_test_app.h"

/* ---- routing ---- */

static void routes_capture_params_and_query(void **state)
{
    fixture *f = *state;
    hc_resp r;
    get(f, "/v1/items/42?q=hello%20world&x=1", &r);
    assert_int_equal(r.status, 200);
    char ct[128];
    assert_string_equal(hc_header(&r, "Content-Type", ct, sizeof ct), "application/json");
    assert_string_equal(r.body,
                        "{\"id\":\"42\",\"q\":\"hello world\",\"route\":\"/v1/items/{id}\"}\n");
    hc_resp_free(&r);

    get(f, "/v1/items/a%2Bb/parts/p-1", &r);
    assert_int_equal(r.status, 200);
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "id")), "a+b");
    assert_string_equal(json_string_value(json_object_get(j, "part")), "p-1");
    assert_int_equal(json_integer_value(json_object_get(j, "n")), 2);
    json_decref(j);
    hc_resp_free(&r);

    /* Arguments in order, '+' is a space, iteration stops when the callback says so (a repeated
     * name is refused before any handler: test_http_edges). */
    get(f, "/v1/query?a=1&b=two+words&A=3&stop=1&after=x", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"args\":[[\"a\",\"1\"],[\"b\",\"two words\"],[\"A\",\"3\"],"
                                "[\"stop\",\"1\"]],\"stopped\":true}\n");
    hc_resp_free(&r);
    assert_int_equal(atomic_load(&f->app.calls), 1);
}

static void unknown_paths_get_json_404(void **state)
{
    fixture *f = *state;
    const char *paths[] = {"/v1/nope",           "/v1",        "/v1/items/", "/v1/items/1/",
                           "/v1/items//parts/x", "/elsewhere", "/",          "/v1/items/1/parts"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        hc_resp r;
        get(f, paths[i], &r);
        assert_error(&r, 404, "not_found", paths[i]);
        /* The hint is empty here, so it is left out. */
        json_t *j = body_json(&r);
        assert_null(json_object_get(json_object_get(j, "error"), "hint"));
        json_decref(j);
        hc_resp_free(&r);
    }
}

static void wrong_method_gets_405_with_allow(void **state)
{
    fixture *f = *state;
    hc_resp r;
    assert_int_equal(
        hc_request(f->port, "PUT /v1/items/7 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", &r),
        0);
    assert_error(&r, 405, "method_not_allowed", "PUT");
    char allow[128];
    assert_non_null(hc_header(&r, "Allow", allow, sizeof allow));
    assert_string_equal(allow, "GET, DELETE");
    hc_resp_free(&r);

    assert_int_equal(hc_request(f->port, "DELETE /v1/items/7 HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    assert_int_equal(r.status, 204);
    hc_resp_free(&r);

    assert_int_equal(hc_request(f->port, "GET /v1/echo HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    assert_error(&r, 405, "method_not_allowed", NULL);
    assert_string_equal(hc_header(&r, "Allow", allow, sizeof allow), "POST");
    hc_resp_free(&r);
}

static void handler_replies_error_hint_headers_and_500(void **state)
{
    fixture *f = *state;
    hc_resp r;
    get(f, "/v1/fail", &r);
    assert_error(&r, 404, "no_best", "nothing for saxpy");
    json_t *j = body_json(&r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "hint")),
                        "run a tuning job first");
    json_decref(j);
    hc_resp_free(&r);

    get(f, "/v1/broken", &r);
    assert_error(&r, 500, "internal", NULL);
    hc_resp_free(&r);

    assert_int_equal(
        hc_request(f->port, "GET /v1/header HTTP/1.1\r\nHost: t\r\nX-Test: abc\r\n\r\n", &r), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "abc");
    char v[64];
    assert_string_equal(hc_header(&r, "X-Reply", v, sizeof v), "yes");
    assert_string_equal(hc_header(&r, "Content-Type", v, sizeof v), "text/plain; charset=utf-8");
    assert_null(hc_header(&r, "X-Bad", v, sizeof v));
    assert_null(hc_header(&r, "Injected", v, sizeof v));
    hc_resp_free(&r);
}

/* ---- metrics ---- */

static void metrics_count_known_requests(void **state)
{
    fixture *f = *state;
    hc_resp r;
    for (int i = 0; i < 3; i++) {
        get(f, "/v1/items/1", &r);
        hc_resp_free(&r);
    }
    assert_int_equal(hc_request(f->port, "PUT /v1/items/1 HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    hc_resp_free(&r);
    get(f, "/v1/nope", &r);
    hc_resp_free(&r);
    get(f, "/somewhere", &r);
    hc_resp_free(&r);
    get(f, "/v1/broken", &r);
    hc_resp_free(&r);
    assert_int_equal(hc_request(f->port, "BREW /v1/nope HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    hc_resp_free(&r);
    assert_int_equal(http_server_requests_total(f->s), 8);
    get(f, "/metrics", &r);
    assert_int_equal(r.status, 200);
    const char *want[] = {
        "# HELP ktune_http_requests_total ",
        "# TYPE ktune_http_requests_total counter\n",
        "\nktune_http_requests_total{route=\"/v1/items/{id}\",method=\"GET\",status=\"200\"} 3\n",
        "\nktune_http_requests_total{route=\"/v1/items/{id}\",method=\"PUT\",status=\"405\"} 1\n",
        "\nktune_http_requests_total{route=\"/v1/broken\",method=\"GET\",status=\"500\"} 1\n",
        "\nktune_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 2\n",
        "\nktune_http_requests_total{route=\"unmatched\",method=\"OTHER\",status=\"404\"} 1\n",
        "# TYPE ktune_http_request_duration_seconds_sum counter\n",
        "\nktune_http_request_duration_seconds_sum{route=\"/v1/items/{id}\"} 0.",
        "\nktune_http_request_duration_seconds_sum{route=\"unmatched\"} 0.",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.body, want[i]))
            fail_msg("metrics lack %s in:\n%s", want[i], r.body);
    /* The metrics request itself is counted once answered, not before. */
    assert_null(strstr(r.body, "route=\"/metrics\""));
    assert_null(strstr(r.body, "route=\"static\""));
    hc_resp_free(&r);
    assert_int_equal(http_server_requests_total(f->s), 9);
    char *text = http_server_metrics_text(f->s);
    assert_non_null(strstr(text, "{route=\"/metrics\",method=\"GET\",status=\"200\"} 1\n"));
    free(text);
}

/* ---- robustness and concurrency ---- */

static void garbage_requests_do_not_hurt(void **state)
{
    fixture *f = *state;
    const char *junk[] = {
        "GARBAGE\r\n\r\n",
        "GET\r\n\r\n",
        "GET /v1/items/1 HTTP/9.9\r\n\r\n",
        "GET /v1/items/1 HTTP/1.1\r\nNoColonHere\r\n\r\n",
        "GET /v1/items/%00 HTTP/1.1\r\nHost: t\r\n\r\n",
        "GET /v1/items/%ff%fe HTTP/1.1\r\nHost: t\r\n\r\n",
        "GET /v1/nope%0a%0d%ff HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n",
        "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n\x01\x02\x00\xff}",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        hc_conn c;
        assert_int_equal(hc_connect(&c, f->port), 0);
        /* Some junk gets no answer at all (MHD waits for the rest of a line): do not wait long. */
        struct timeval tv = {1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        size_t n = strlen(junk[i]);
        if (i == 8)
            n = strlen("POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n") + 5;
        hc_send(&c, junk[i], n);
        shutdown(c.fd, SHUT_WR);
        hc_resp r;
        if (hc_read(&c, &r, 0) == 0) /* any answer, or none, but no crash */
            assert_true(r.status >= 200 && r.status < 600);
        hc_resp_free(&r);
        hc_close(&c);
    }
    /* A very long URL and many headers. */
    size_t big = 100000;
    char *raw = malloc(big + 64);
    assert_non_null(raw);
    memcpy(raw, "GET /v1/", 8);
    memset(raw + 8, 'a', big);
    memcpy(raw + 8 + big, " HTTP/1.1\r\nHost: t\r\n\r\n", 23);
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    hc_send(&c, raw, 8 + big + 23);
    hc_resp r;
    if (hc_read(&c, &r, 0) == 0)
        assert_true(r.status >= 400);
    hc_resp_free(&r);
    hc_close(&c);
    free(raw);
    /* Still serving. */
    get(f, "/healthz", &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
}

typedef struct worker_arg {
    int port;
    int id;
    int ok;
} worker_arg;

static void *client_thread(void *p)
{
    worker_arg *w = p;
    hc_conn c;
    c.fd = -1;
    for (int i = 0; i < 50; i++) {
        if (i % 10 == 0) { /* a fresh connection every 10 requests, keep-alive in between */
            hc_close(&c);
            if (hc_connect(&c, w->port) != 0)
                return NULL;
        }
        char raw[128], want[64];
        snprintf(raw, sizeof raw, "GET /v1/items/t%d-%d HTTP/1.1\r\nHost: t\r\n\r\n", w->id, i);
        snprintf(want, sizeof want, "\"id\":\"t%d-%d\"", w->id, i);
        hc_resp r;
        if (hc_send_str(&c, raw) != 0 || hc_read(&c, &r, 0) != 0) {
            hc_resp_free(&r);
            break;
        }
        if (r.status == 200 && strstr(r.body, want))
            w->ok++;
        hc_resp_free(&r);
    }
    hc_close(&c);
    return NULL;
}

static void concurrent_clients_are_all_answered(void **state)
{
    fixture *f = *state;
    pthread_t t[8];
    worker_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (worker_arg){f->port, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, client_thread, &args[i]), 0);
    }
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ok += args[i].ok;
    }
    assert_int_equal(ok, 400);
    assert_int_equal(atomic_load(&f->app.calls), 400);
    char *text = http_server_metrics_text(f->s);
    assert_non_null(strstr(text, "{route=\"/v1/items/{id}\",method=\"GET\",status=\"200\"} 400\n"));
    free(text);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(routes_capture_params_and_query),     T(unknown_paths_get_json_404),
        T(wrong_method_gets_405_with_allow),    T(handler_replies_error_hint_headers_and_500),
        T(metrics_count_known_requests),        T(garbage_requests_do_not_hurt),
        T(concurrent_clients_are_all_answered),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
