/* http/prepared over real sockets: a reply made once is sent byte for byte to every request, on
 * keep-alive connections and from several client threads at once, while the application swaps and
 * releases it (references counted: no use after free under ASan); bad statuses and header lines
 * that would split the response are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "http_test_client.h"

#include "http/prepared.h"

typedef struct prep_app {
    pthread_mutex_t lock;
    http_prepared *current; /* one reference */
} prep_app;

static void h_prepared(void *app, const http_request *req, http_response *res)
{
    prep_app *a = app;
    (void)req;
    pthread_mutex_lock(&a->lock);
    http_prepared *p = a->current;
    http_prepared_retain(p);
    pthread_mutex_unlock(&a->lock);
    http_reply_text(res, 500, NULL, "replaced by the prepared reply");
    http_response_add_header(res, "X-Dropped", "1");
    http_reply_prepared(res, p);
}

static const http_route routes[] = {{"GET", "/p", h_prepared}, {NULL, NULL, NULL}};

typedef struct fixture {
    prep_app app;
    http_server *s;
    int port;
} fixture;

static http_prepared *make(const char *body)
{
    return http_prepared_new(200, "application/json", "ETag: \"e1\"\r\nCache-Control: no-cache\r\n",
                             body, strlen(body));
}

static void swap(fixture *f, http_prepared *p)
{
    pthread_mutex_lock(&f->app.lock);
    http_prepared *old = f->app.current;
    f->app.current = p;
    pthread_mutex_unlock(&f->app.lock);
    http_prepared_release(old); /* connections sending it keep it alive */
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kt_error err;
    kt_error_clear(&err);
    pthread_mutex_init(&f->app.lock, NULL);
    f->app.current = make("{\"a\":1}");
    http_server_options opt = {.listen = "127.0.0.1:0", .threads = 4};
    f->s = http_server_new(routes, &f->app, &opt, &err);
    if (!f->s || http_server_start(f->s, &err) < 0)
        return -1;
    f->port = http_server_port(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    http_server_stop(f->s);
    http_server_free(f->s);
    http_prepared_release(f->app.current);
    pthread_mutex_destroy(&f->app.lock);
    free(f);
    return 0;
}

static void sent_as_made_on_keep_alive(void **state)
{
    fixture *f = *state;
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    for (int i = 0; i < 200; i++) {
        hc_resp r;
        assert_int_equal(hc_send_str(&c, "GET /p HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
        assert_int_equal(hc_read(&c, &r, 0), 0);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "{\"a\":1}");
        char v[64];
        assert_string_equal(hc_header(&r, "ETag", v, sizeof v), "\"e1\"");
        assert_string_equal(hc_header(&r, "Content-Type", v, sizeof v), "application/json");
        assert_string_equal(hc_header(&r, "Cache-Control", v, sizeof v), "no-cache");
        assert_null(hc_header(&r, "X-Dropped", v, sizeof v)); /* the prepared reply is all */
        hc_resp_free(&r);
    }
    hc_close(&c);
}

typedef struct client_arg {
    int port;
    int bad;
} client_arg;

static void *client(void *p)
{
    client_arg *a = p;
    hc_conn c;
    if (hc_connect(&c, a->port) != 0) {
        a->bad++;
        return NULL;
    }
    for (int i = 0; i < 300; i++) {
        hc_resp r;
        if (hc_send_str(&c, "GET /p HTTP/1.1\r\nHost: x\r\n\r\n") != 0 || hc_read(&c, &r, 0) != 0) {
            a->bad++;
            break;
        }
        /* one of the bodies the test swaps in, whole */
        if (r.status != 200 || r.body[0] != '{' || r.body[r.body_len - 1] != '}')
            a->bad++;
        hc_resp_free(&r);
    }
    hc_close(&c);
    return NULL;
}

static void shared_by_threads_while_swapped(void **state)
{
    fixture *f = *state;
    pthread_t t[4];
    client_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (client_arg){f->port, 0};
        assert_int_equal(pthread_create(&t[i], NULL, client, &a[i]), 0);
    }
    char body[64];
    for (int i = 0; i < 200; i++) {
        snprintf(body, sizeof body, "{\"swap\":%d}", i);
        http_prepared *p = make(body);
        assert_non_null(p);
        swap(f, p);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].bad, 0);
    }
    hc_resp r;
    assert_int_equal(hc_request(f->port, "GET /p HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
    assert_string_equal(r.body, "{\"swap\":199}");
    hc_resp_free(&r);
}

static void refuses_bad_replies(void **state)
{
    (void)state;
    assert_null(http_prepared_new(99, "text/plain", NULL, "x", 1));
    assert_null(http_prepared_new(600, "text/plain", NULL, "x", 1));
    assert_null(http_prepared_new(200, "text/plain", "X: a\r\nInjected\r\n", "x", 1));
    assert_null(http_prepared_new(200, "text/plain", "X: a\nSet-Cookie: b\r\n", "x", 1));
    assert_null(http_prepared_new(200, "text/plain", "X: a", "x", 1)); /* no CRLF */
    http_prepared *p = http_prepared_new(404, NULL, NULL, NULL, 0);
    assert_non_null(p);
    assert_int_equal(http_prepared_status(p), 404);
    http_prepared_retain(p);
    http_prepared_release(p);
    http_prepared_release(p);
    http_prepared_release(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sent_as_made_on_keep_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(shared_by_threads_while_swapped, setup, teardown),
        cmocka_unit_test(refuses_bad_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
