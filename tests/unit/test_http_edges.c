/* Tests of the HTTP edges of issue #11 over real sockets: request smuggling (two Content-Length
 * headers, Transfer-Encoding with Content-Length) refused and the connection closed, 414/431/505
 * and many or repeated query parameters answered in the JSON error shape, a header deadline
 * against slow senders, a thousand slow connections not shutting new ones out, connection limits
 * per client address, and heavy routes on threads of their own (never a worker's: issue 32), a
 * bounded queue of them, and a stop while they run and wait. Issue 26: chunk sizes past
 * the body cap and queries of bare '&' answered at once, request bodies past their deadline or
 * below the minimum rate answered 408, and a full server that still takes a connection from an
 * address with fewer open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include "http_test_client.h"
#include "http_test_app.h"
#include "http/http_internal.h"

/* ---- a heavy route that blocks until released, and a fixture with options ---- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;
static atomic_int heavy_running;
static atomic_int heavy_entered; /* handlers that ever started */

static void h_heavy(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    atomic_fetch_add(&heavy_entered, 1);
    atomic_fetch_add(&heavy_running, 1);
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    atomic_fetch_sub(&heavy_running, 1);
    http_reply_text(res, 200, NULL, "heavy done\n");
}

static const http_route edge_routes[] = {
    {"GET", "/v1/items/{id}", h_item}, {"POST", "/v1/echo", h_echo},  {"GET", "/v1/query", h_query},
    {"GET", "/v1/heavy", h_heavy},     {"GET", "/healthz", h_health}, {NULL, NULL, NULL},
};
static const char *const heavy_patterns[] = {"/v1/heavy", NULL};

static fixture *start_opt(http_server_options opt)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    kt_error err;
    kt_error_clear(&err);
    opt.listen = "127.0.0.1:0";
    opt.heavy = heavy_patterns;
    f->s = http_server_new(edge_routes, &f->app, &opt, &err);
    assert_non_null(f->s);
    f->app.server = f->s;
    if (http_server_start(f->s, &err) != 0)
        fail_msg("start: %s", err.message);
    f->port = http_server_port(f->s);
    return f;
}

static fixture *start_with(int max_conn, int max_per_ip, double header_timeout, double body_timeout,
                           double body_min_rate)
{
    http_server_options opt = {.threads = 4,
                               .max_connections = max_conn,
                               .max_connections_per_ip = max_per_ip,
                               .header_timeout_s = header_timeout,
                               .body_timeout_s = body_timeout,
                               .body_min_rate = body_min_rate};
    return start_opt(opt);
}

static fixture *start(int max_conn, int max_per_ip, double header_timeout)
{
    return start_with(max_conn, max_per_ip, header_timeout, 0, 0);
}

static void stop(fixture *f)
{
    http_server_free(f->s);
    free(f);
}

static int edge_setup(void **state)
{
    *state = start(0, 0, 0);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sends raw on a fresh connection, reads one reply, then checks whether the server closed. */
static int send_read(fixture *f, const char *raw, size_t n, hc_resp *r, int *closed)
{
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    assert_int_equal(hc_send(&c, raw, n), 0);
    int rc = hc_read(&c, r, 0);
    if (closed) {
        /* Closed: EOF (or a reset) within 2 s, and no second reply pending. */
        struct timeval tv = {2, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        hc_resp second;
        *closed = hc_read(&c, &second, 0) != 0;
        if (!*closed)
            hc_resp_free(&second);
    }
    hc_close(&c);
    return rc;
}

/* ---- heads, pure (http_head_check: what the gate decides on a connection's first head) ---- */

static void heads_are_checked_before_any_server(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        int rc;
        kt_code code;
    } cases[] = {
        {"GET /v1/jobs HTTP/1.1\r\nHost: t\r\n\r\n", 1, KT_OK},
        {"GET /v1/jobs HTTP/1.0\n\n", 1, KT_OK},
        {"GET /v1/jobs HTTP/1.1\r\nHost: t\r\n", 0, KT_OK},
        {"GET /v1/jo", 0, KT_OK},
        {"GET /v1/jobs HTTP/2.0\r\n\r\n", -1, KT_ERR_HTTP_VERSION},
        {"GET /v1/jobs HTTP/1.2\r\n", -1, KT_ERR_HTTP_VERSION},
        {"GET /v1/jobs HTTX/1.1\r\n", -1, KT_ERR_BAD_REQUEST},
        {"GET /v1/jobs\r\n", -1, KT_ERR_BAD_REQUEST},
        {"G(T /v1/jobs HTTP/1.1\r\n", -1, KT_ERR_BAD_REQUEST},
        {"GET /v1/\x01 HTTP/1.1\r\n", -1, KT_ERR_BAD_REQUEST},
        {"GET /a HTTP/1.1\r\nNoColon\r\n\r\n", -1, KT_ERR_BAD_REQUEST},
        {"GET /a HTTP/1.1\r\n folded: x\r\n\r\n", -1, KT_ERR_BAD_REQUEST},
        {"POST /a HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\n", -1,
         KT_ERR_BAD_REQUEST},
        {"POST /a HTTP/1.1\r\nContent-Length: +1\r\n\r\n", -1, KT_ERR_BAD_REQUEST},
        {"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", -1,
         KT_ERR_BAD_REQUEST},
        {"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -1, KT_ERR_BAD_REQUEST},
        {"POST /a HTTP/1.1\r\nTransfer-Encoding:  Chunked \r\n\r\n", 1, KT_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_error err;
        kt_error_clear(&err);
        int rc = http_head_check(cases[i].head, strlen(cases[i].head), &err);
        if (rc != cases[i].rc || (rc < 0 && err.code != cases[i].code))
            fail_msg("case %zu (%s): rc %d, %s '%s'", i, cases[i].head, rc,
                     kt_error_code_name(err.code), err.message);
    }
    /* Sizes: the target and the header section. */
    size_t cap = HTTP_MAX_URL + HTTP_MAX_HEADER_BYTES + 1024;
    char *buf = malloc(cap);
    assert_non_null(buf);
    memset(buf, 'a', cap);
    memcpy(buf, "GET /", 5);
    kt_error err;
    assert_int_equal(http_head_check(buf, HTTP_MAX_URL + 100, &err), -1);
    assert_int_equal(err.code, KT_ERR_URI_TOO_LONG);
    int n = snprintf(buf, cap, "GET / HTTP/1.1\r\nX: ");
    assert_int_equal(http_head_check(buf, (size_t)n + HTTP_MAX_HEADER_BYTES + 512, &err), -1);
    assert_int_equal(err.code, KT_ERR_HEADERS_TOO_LARGE);
    free(buf);
    assert_true(http_utf8_valid("abc \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"));
    assert_false(http_utf8_valid("\xff\xfe"));
    assert_false(http_utf8_valid("\xc0\xaf"));         /* overlong '/' */
    assert_false(http_utf8_valid("\xed\xa0\x80"));     /* a surrogate */
    assert_false(http_utf8_valid("\xf4\x90\x80\x80")); /* past U+10FFFF */
    assert_false(http_utf8_valid("\xe4\xb8"));         /* cut short */
}

/* ---- chunk sizes, pure (http_chunks_check: what the gate decides on a chunked first head) ---- */

static void chunk_sizes_are_checked_before_any_server(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc;
    } cases[] = {
        {"", 0},
        {"1a", 0},                    /* a size line not whole yet */
        {"ffffffffffffffff\r\n", -1}, /* 2^64 - 1 bytes announced */
        {"ffffffffffff", -1},         /* too large before the line ends */
        {"100001\r\n", -1},           /* 1 MiB + 1 */
        {"100000\r\n", 1},            /* exactly the cap */
        {"2\r\n{}\r\n0\r\n\r\n", 1},
        {"5;name=value\r\nhello\r\n", 1},
        {"zz\r\n", 1}, /* malformed: libmicrohttpd answers it */
        {"2\r\n{}\r\nfffffff\r\n", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_error err;
        kt_error_clear(&err);
        int rc = http_chunks_check(cases[i].body, strlen(cases[i].body), &err);
        if (rc != cases[i].rc || (rc < 0 && err.code != KT_ERR_BODY_TOO_LARGE))
            fail_msg("case %zu (%s): rc %d, %s", i, cases[i].body, rc,
                     kt_error_code_name(err.code));
    }
    /* Two chunks that pass the cap together. */
    size_t half = HTTP_MAX_BODY / 2 + 1;
    char *buf = malloc(half + 64);
    assert_non_null(buf);
    int n = snprintf(buf, 64, "%zx\r\n", half);
    memset(buf + n, 'x', half);
    size_t len = (size_t)n + half;
    len += (size_t)snprintf(buf + len, 64, "\r\n%zx\r\n", half);
    kt_error err;
    assert_int_equal(http_chunks_check(buf, len, &err), -1);
    assert_int_equal(err.code, KT_ERR_BODY_TOO_LARGE);
    free(buf);
    /* The head's framing, as the gate learns it. */
    static const char head[] =
        "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\nff\r\n";
    http_head_info info;
    assert_int_equal(http_head_scan(head, sizeof head - 1, &info, &err), 1);
    assert_int_equal(info.len, sizeof head - 1 - 4);
    assert_true(info.chunked && info.expect_continue);
}

/* ---- request smuggling ---- */

static void two_content_lengths_are_refused_and_closed(void **state)
{
    fixture *f = *state;
    /* With the first length winning, "GET /v1/items/smuggled" would be read as a second request. */
    static const char raw[] =
        "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        "Content-Length: 2\r\nContent-Length: 45\r\n\r\n"
        "{}GET /v1/items/smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    hc_resp r;
    int closed = 0;
    assert_int_equal(send_read(f, raw, sizeof raw - 1, &r, &closed), 0);
    assert_error(&r, 400, "bad_request", "Content-Length");
    hc_resp_free(&r);
    assert_true(closed);
    assert_int_equal(atomic_load(&f->app.calls), 0); /* h_item never ran */
    /* The same length twice is refused too (a proxy may still read it differently). */
    static const char same[] = "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                               "Content-Length: 2\r\n\r\n{}";
    assert_int_equal(send_read(f, same, sizeof same - 1, &r, &closed), 0);
    assert_error(&r, 400, "bad_request", "Content-Length");
    hc_resp_free(&r);
    assert_true(closed);
}

static void transfer_encoding_with_content_length_is_refused(void **state)
{
    fixture *f = *state;
    static const char raw[] =
        "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"
        "2\r\n{}\r\n0\r\n\r\nGET /v1/items/smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    hc_resp r;
    int closed = 0;
    assert_int_equal(send_read(f, raw, sizeof raw - 1, &r, &closed), 0);
    assert_error(&r, 400, "bad_request", "Transfer-Encoding");
    hc_resp_free(&r);
    assert_true(closed);
    assert_int_equal(atomic_load(&f->app.calls), 0);
    /* A transfer coding other than chunked has no length a proxy agrees on. */
    static const char gz[] =
        "POST /v1/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n{}";
    assert_int_equal(send_read(f, gz, sizeof gz - 1, &r, &closed), 0);
    assert_error(&r, 400, "bad_request", "Transfer-Encoding");
    hc_resp_free(&r);
    assert_true(closed);
}

/* ---- 414, 431, 505 and query parameters in JSON ---- */

static char *long_get(size_t target_len, const char *extra_headers)
{
    size_t cap = target_len + strlen(extra_headers) + 128;
    char *raw = malloc(cap);
    assert_non_null(raw);
    size_t n = (size_t)snprintf(raw, cap, "GET /v1/query?a=");
    while (n < target_len + 4)
        raw[n++] = 'x';
    n += (size_t)snprintf(raw + n, cap - n, " HTTP/1.1\r\nHost: t\r\n%s\r\n", extra_headers);
    return raw;
}

static void long_targets_get_json_414(void **state)
{
    fixture *f = *state;
    hc_resp r;
    /* Just over ktune's limit, and far over libmicrohttpd's default buffer (32 KiB). */
    size_t lens[] = {HTTP_MAX_URL + 1, 40000};
    for (size_t i = 0; i < 2; i++) {
        char *raw = long_get(lens[i], "");
        assert_int_equal(send_read(f, raw, strlen(raw), &r, NULL), 0);
        assert_error(&r, 414, "uri_too_long", "8192");
        hc_resp_free(&r);
        free(raw);
    }
    char *ok = long_get(HTTP_MAX_URL - 100, "");
    assert_int_equal(send_read(f, ok, strlen(ok), &r, NULL), 0);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    free(ok);
}

static void large_headers_get_json_431(void **state)
{
    fixture *f = *state;
    hc_resp r;
    /* Too many fields, too many bytes in a few fields, and one field past the old 32 KiB buffer. */
    size_t cap = 80000;
    char *h = malloc(cap);
    assert_non_null(h);
    size_t n = 0;
    for (int i = 0; i < HTTP_MAX_HEADERS + 1; i++)
        n += (size_t)snprintf(h + n, cap - n, "X-F%d: v\r\n", i);
    char *raw = long_get(10, h);
    assert_int_equal(send_read(f, raw, strlen(raw), &r, NULL), 0);
    assert_error(&r, 431, "headers_too_large", "fields");
    hc_resp_free(&r);
    free(raw);
    size_t sizes[] = {HTTP_MAX_HEADER_BYTES + 1, 40000};
    for (size_t k = 0; k < 2; k++) {
        n = (size_t)snprintf(h, cap, "X-Big: ");
        while (n < sizes[k] + 7)
            h[n++] = 'y';
        n += (size_t)snprintf(h + n, cap - n, "\r\n");
        raw = long_get(10, h);
        assert_int_equal(send_read(f, raw, strlen(raw), &r, NULL), 0);
        assert_error(&r, 431, "headers_too_large", "bytes");
        hc_resp_free(&r);
        free(raw);
    }
    free(h);
}

static void many_query_parameters_get_json_400(void **state)
{
    fixture *f = *state;
    hc_resp r;
    int counts[] = {HTTP_MAX_QUERY_PARAMS + 1, 500, 1500};
    for (size_t k = 0; k < 3; k++) {
        char *raw = malloc(32768);
        assert_non_null(raw);
        size_t n = (size_t)snprintf(raw, 32768, "GET /v1/query?");
        for (int i = 0; i < counts[k]; i++)
            n += (size_t)snprintf(raw + n, 32768 - n, "%sp%d=1", i ? "&" : "", i);
        snprintf(raw + n, 32768 - n, " HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_int_equal(send_read(f, raw, strlen(raw), &r, NULL), 0);
        if (n > HTTP_MAX_URL)
            assert_error(&r, 414, "uri_too_long", NULL);
        else
            assert_error(&r, 400, "bad_request", "64");
        hc_resp_free(&r);
        free(raw);
    }
}

static void repeated_query_parameter_is_400(void **state)
{
    fixture *f = *state;
    hc_resp r;
    get(f, "/v1/query?limit=5&x=1&limit=6", &r);
    assert_error(&r, 400, "bad_request", "limit");
    hc_resp_free(&r);
    get(f, "/v1/items/a?q=1&q=1", &r);
    assert_error(&r, 400, "bad_request", "'q'");
    hc_resp_free(&r);
    /* Names differing in case are different parameters (gemm's K and the option k). */
    get(f, "/v1/query?K=1&k=2", &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
}

static void unsupported_versions_get_json_505(void **state)
{
    fixture *f = *state;
    hc_resp r;
    const char *raws[] = {"GET /healthz HTTP/1.2\r\nHost: t\r\n\r\n",
                          "GET /healthz HTTP/2.0\r\nHost: t\r\n\r\n",
                          "GET /healthz HTTP/0.9\r\nHost: t\r\n\r\n"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(send_read(f, raws[i], strlen(raws[i]), &r, NULL), 0);
        assert_error(&r, 505, "http_version_not_supported", "HTTP/1.1");
        hc_resp_free(&r);
    }
    /* A request line that is not HTTP at all. */
    static const char junk[] = "HELLO\r\n\r\n";
    assert_int_equal(send_read(f, junk, sizeof junk - 1, &r, NULL), 0);
    assert_error(&r, 400, "bad_request", NULL);
    hc_resp_free(&r);
}

/* ---- slow senders and connection limits ---- */

static void slow_headers_are_cut_at_the_deadline(void **state)
{
    (void)state;
    fixture *f = start(0, 0, 1.0);
    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    static const char req[] =
        "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    double t0 = now_s();
    int closed = 0;
    for (size_t i = 0; i < sizeof req - 1 && now_s() - t0 < 6; i++) {
        if (send(c.fd, req + i, 1, MSG_NOSIGNAL) != 1) {
            closed = 1;
            break;
        }
        struct timespec d = {0, 150 * 1000 * 1000};
        nanosleep(&d, NULL);
        if (!hc_is_open(&c)) {
            closed = 1;
            break;
        }
    }
    double took = now_s() - t0;
    hc_close(&c);
    if (!closed || took < 0.9 || took > 3.5)
        fail_msg("slow sender: closed %d after %.2f s (expected about 1 s)", closed, took);
    /* A prompt request on a fresh connection is served, and an idle keep-alive connection is
     * closed after the same deadline. */
    hc_resp r;
    assert_int_equal(hc_connect(&c, f->port), 0);
    assert_int_equal(hc_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
    assert_int_equal(hc_read(&c, &r, 0), 0);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    struct timespec d = {2, 500 * 1000 * 1000};
    nanosleep(&d, NULL);
    assert_false(hc_is_open(&c));
    hc_close(&c);
    http_server_free(f->s);
    free(f);
}

static void many_slow_connections_do_not_shut_out_new_ones(void **state)
{
    fixture *f = *state;
    enum { SLOW = 1500 }; /* more than libmicrohttpd's default limit (FD_SETSIZE - 4) */
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 2 * SLOW + 100)
        fail_msg("RLIMIT_NOFILE %llu: the server should have raised it (hard limit %llu)",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
    static hc_conn slow[SLOW];
    int opened = 0;
    for (int i = 0; i < SLOW; i++) {
        if (hc_connect(&slow[i], f->port) != 0)
            break;
        opened++;
        hc_send_str(&slow[i], "G");
    }
    assert_int_equal(opened, SLOW);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < SLOW; i++)
            send(slow[i].fd, "E", 1, MSG_NOSIGNAL); /* still sending, a byte at a time */
        double t0 = now_s();
        hc_resp r;
        get(f, "/healthz", &r);
        double took = now_s() - t0;
        assert_int_equal(r.status, 200);
        hc_resp_free(&r);
        if (took > 1.0)
            fail_msg("GET /healthz took %.2f s beside %d slow connections", took, SLOW);
    }
    for (int i = 0; i < SLOW; i++)
        hc_close(&slow[i]);
}

static void connections_per_address_are_limited(void **state)
{
    (void)state;
    fixture *f = start(0, 3, 0);
    hc_conn c[4];
    hc_resp r;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(hc_connect(&c[i], f->port), 0);
        assert_int_equal(hc_send_str(&c[i], "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
        assert_int_equal(hc_read(&c[i], &r, 0), 0);
        assert_int_equal(r.status, 200);
        hc_resp_free(&r);
    }
    /* The fourth is closed without a request being served. */
    assert_int_equal(hc_connect(&c[3], f->port), 0);
    hc_send_str(&c[3], "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_not_equal(hc_read(&c[3], &r, 0), 0);
    hc_close(&c[3]);
    /* Once one closes, a new one is served again. */
    hc_close(&c[0]);
    struct timespec d = {0, 200 * 1000 * 1000};
    nanosleep(&d, NULL);
    get(f, "/healthz", &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    hc_close(&c[1]);
    hc_close(&c[2]);
    http_server_free(f->s);
    free(f);
}

/* ---- issue 26: framing leftovers, slow bodies, a full server ---- */

/* Reads one reply within 5 s and whether the server then closed (within 2 s); -1: no reply. */
static int read_then_closed(hc_conn *c, hc_resp *r, int *closed)
{
    struct timeval tv = {5, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (hc_read(c, r, 0) != 0)
        return -1;
    tv.tv_sec = 2;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    hc_resp second;
    *closed = hc_read(c, &second, 0) != 0;
    if (!*closed)
        hc_resp_free(&second);
    return 0;
}

static void bare_ampersands_and_huge_chunks_are_answered_at_once(void **state)
{
    fixture *f = *state;
    /* Each bare '&' is an empty parameter MHD stores: 1,008 of them ran its connection memory out
     * (no reply until the timeout). */
    char raw[2048];
    int n = snprintf(raw, sizeof raw, "GET /v1/query?");
    memset(raw + n, '&', 1008);
    n += 1008;
    n += snprintf(raw + n, sizeof raw - (size_t)n, " HTTP/1.1\r\nHost: t\r\n\r\n");
    static const char chunked[] = "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                  "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int round = 0; round < 3; round++) {
        hc_conn c;
        hc_resp r;
        int closed = 0;
        double t0 = now_s();
        assert_int_equal(hc_connect(&c, f->port), 0);
        if (round == 0) {
            assert_int_equal(hc_send(&c, raw, (size_t)n), 0);
        } else {
            assert_int_equal(hc_send_str(&c, chunked), 0);
            if (round == 2) { /* the size line after the head */
                struct timespec d = {0, 200 * 1000 * 1000};
                nanosleep(&d, NULL);
            }
            assert_int_equal(hc_send_str(&c, "ffffffffffffffff\r\n"), 0);
        }
        assert_int_equal(read_then_closed(&c, &r, &closed), 0);
        if (round == 0)
            assert_error(&r, 400, "bad_request", "1009 parameters");
        else
            assert_error(&r, 413, "body_too_large", NULL);
        hc_resp_free(&r);
        hc_close(&c);
        assert_true(closed);
        if (now_s() - t0 > 3.0)
            fail_msg("round %d: answered and closed after %.1f s", round, now_s() - t0);
    }
    assert_int_equal(atomic_load(&f->app.calls), 0);
}

/* A POST /v1/echo whose Content-Length promises 100 bytes; sends `sent` of them. */
static void slow_post(hc_conn *c, int port, int sent)
{
    assert_int_equal(hc_connect(c, port), 0);
    assert_int_equal(hc_send_str(c, "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                    "application/json\r\nContent-Length: 100\r\n\r\n"),
                     0);
    for (int i = 0; i < sent; i++)
        assert_int_equal(hc_send_str(c, " "), 0);
}

static void slow_bodies_get_408(void **state)
{
    (void)state;
    /* The deadline alone (no minimum rate): a body stalled after 10 bytes. */
    fixture *f = start_with(0, 0, 0, 1.0, 0);
    hc_conn c;
    hc_resp r;
    int closed = 0;
    double t0 = now_s();
    slow_post(&c, f->port, 10);
    assert_int_equal(read_then_closed(&c, &r, &closed), 0);
    double took = now_s() - t0;
    assert_error(&r, 408, "request_timeout", "within 1 s");
    hc_resp_free(&r);
    hc_close(&c);
    assert_true(closed);
    if (took < 0.9 || took > 3.0)
        fail_msg("408 after %.2f s (deadline 1 s)", took);
    stop(f);
    /* The minimum rate: 10 bytes in 2 s are below 100 bytes a second; a body sent at once is
     * served. */
    f = start_with(0, 0, 0, 30.0, 100);
    t0 = now_s();
    slow_post(&c, f->port, 10);
    assert_int_equal(read_then_closed(&c, &r, &closed), 0);
    took = now_s() - t0;
    assert_error(&r, 408, "request_timeout", "bytes a second");
    hc_resp_free(&r);
    hc_close(&c);
    assert_true(closed);
    if (took < HTTP_BODY_RATE_GRACE_S - 0.1 || took > HTTP_BODY_RATE_GRACE_S + 2.0)
        fail_msg("408 after %.2f s (judged after %g s)", took, HTTP_BODY_RATE_GRACE_S);
    assert_int_equal(hc_request(f->port,
                                "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                                "application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
                                &r),
                     0);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    stop(f);
}

/* hc_connect from another loopback address (127.0.0.x). */
static int connect_from(hc_conn *c, int port, const char *source)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {10, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    inet_pton(AF_INET, source, &a.sin_addr);
    if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(c->fd, (struct sockaddr *)&a, sizeof a);
}

static void a_full_server_takes_an_address_with_fewer(void **state)
{
    (void)state;
    enum { MAX = 20 };
    fixture *f = start_with(MAX, MAX / 2, 0, 30.0, 0);
    static const char head[] = "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Type: "
                               "application/json\r\nContent-Length: 100\r\n\r\n{";
    hc_conn slow[MAX], c;
    hc_resp r;
    for (int i = 0; i < MAX; i++) {
        assert_int_equal(connect_from(&slow[i], f->port, i % 2 ? "127.0.0.3" : "127.0.0.2"), 0);
        assert_int_equal(hc_send_str(&slow[i], head), 0);
    }
    struct timespec d = {0, 300 * 1000 * 1000};
    nanosleep(&d, NULL);
    /* Both addresses at their limit: more from them are closed unanswered. */
    assert_int_equal(connect_from(&c, f->port, "127.0.0.2"), 0);
    hc_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_not_equal(hc_read(&c, &r, 0), 0);
    hc_close(&c);
    /* A third address is served, each time: one slow body of the busiest address makes room. */
    for (int i = 0; i < 3; i++) {
        hc_conn probe;
        assert_int_equal(hc_connect(&probe, f->port), 0);
        assert_int_equal(hc_send_str(&probe, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"), 0);
        assert_int_equal(hc_read(&probe, &r, 0), 0);
        assert_int_equal(r.status, 200);
        hc_resp_free(&r);
        hc_close(&probe); /* its place is the next probe's */
        nanosleep(&d, NULL);
    }
    int displaced = 0;
    for (int i = 0; i < MAX; i++)
        displaced += !hc_is_open(&slow[i]);
    if (displaced < 1 || displaced > 3)
        fail_msg("%d slow connections were closed for 3 probes (1 to 3 expected)", displaced);
    for (int i = 0; i < MAX; i++)
        hc_close(&slow[i]);
    stop(f);
}

/* ---- heavy routes ---- */

typedef struct heavy_call {
    int port;
    int status;
} heavy_call;

static void *call_heavy(void *arg)
{
    heavy_call *h = arg;
    hc_resp r;
    h->status =
        hc_request(h->port, "GET /v1/heavy HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 ? r.status : -1;
    hc_resp_free(&r);
    return NULL;
}

static void open_gate(int open)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = open;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Waits (up to 5 s) until the heavy pool runs `running` handlers (each inside h_heavy) with
 * `queued` calls waiting. */
static void wait_heavy_load(fixture *f, int running, int queued)
{
    int r = -1, q = -1;
    for (int i = 0; i < 500; i++) {
        http_heavy_pool_load(f->s->heavy, &r, &q);
        if (r == running && q == queued && atomic_load(&heavy_running) == running)
            return;
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    fail_msg("the heavy pool runs %d and queues %d; %d and %d expected", r, q, running, queued);
}

static void start_heavy_calls(heavy_call *calls, pthread_t *th, int n, int port)
{
    for (int i = 0; i < n; i++) {
        calls[i].port = port;
        calls[i].status = 0;
        assert_int_equal(pthread_create(&th[i], NULL, call_heavy, &calls[i]), 0);
    }
}

/* /healthz answered quickly, repeatedly. */
static void light_is_answered(fixture *f)
{
    hc_resp r;
    for (int i = 0; i < 20; i++) {
        double t0 = now_s();
        get(f, "/healthz", &r);
        assert_int_equal(r.status, 200);
        hc_resp_free(&r);
        assert_true(now_s() - t0 < 0.5);
    }
}

/* The heavy routes' scene: one worker thread, HEAVY heavy threads, the heavy handlers' gate
 * closed (they block until open_gate(1)) and their counters at zero. */
enum { HEAVY = 2 };
static fixture *start_heavy_scene(void)
{
    http_server_options opt = {.threads = 1, .heavy_threads = HEAVY};
    fixture *f = start_opt(opt);
    open_gate(0);
    atomic_store(&heavy_running, 0);
    atomic_store(&heavy_entered, 0);
    return f;
}

/* Issue 32: heavy handlers run on the heavy pool, never on a worker: with one worker thread and
 * both heavy threads blocked, light requests are answered at once (on the worker thread, as
 * before, they waited for it); 4 per heavy thread wait, and the next one is refused 429. */
static void heavy_routes_never_take_a_light_thread(void **state)
{
    (void)state;
    enum { WAITING = HEAVY * HTTP_HEAVY_QUEUE_PER_THREAD, N = HEAVY + WAITING };
    fixture *f = start_heavy_scene();
    heavy_call calls[N];
    pthread_t th[N];
    start_heavy_calls(calls, th, HEAVY, f->port);
    wait_heavy_load(f, HEAVY, 0);
    assert_int_equal(atomic_load(&heavy_running), HEAVY);
    light_is_answered(f);
    start_heavy_calls(calls + HEAVY, th + HEAVY, WAITING, f->port);
    wait_heavy_load(f, HEAVY, WAITING);
    assert_int_equal(atomic_load(&heavy_entered), HEAVY);

    hc_resp r;
    char v[32];
    get(f, "/v1/heavy", &r); /* the (heavy threads + queue + 1)-th */
    assert_error(&r, 429, "too_many_requests", "heavy");
    assert_non_null(hc_header(&r, "Retry-After", v, sizeof v));
    assert_string_equal(v, "1");
    hc_resp_free(&r);
    light_is_answered(f);

    open_gate(1);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(calls[i].status, 200);
    }
    assert_int_equal(atomic_load(&heavy_entered), N);
    get(f, "/v1/heavy", &r);
    assert_int_equal(r.status, 200);
    hc_resp_free(&r);
    stop(f);
}

static void *stop_server(void *arg)
{
    http_server_stop(arg);
    return NULL;
}

/* A stop while heavy handlers run and others wait: the waiting ones are answered 503 at once and
 * never run, the stop waits for the running ones, and nothing runs after it (ASan: no leak, no
 * use after free of a call or its connection). A running handler's reply may or may not go out
 * before the daemons close its connection. */
static void stop_with_heavy_calls_running_and_waiting(void **state)
{
    (void)state;
    enum { WAITING = 3, N = HEAVY + WAITING };
    fixture *f = start_heavy_scene();
    heavy_call calls[N];
    pthread_t th[N], stopper;
    start_heavy_calls(calls, th, HEAVY, f->port);
    wait_heavy_load(f, HEAVY, 0);
    start_heavy_calls(calls + HEAVY, th + HEAVY, WAITING, f->port);
    wait_heavy_load(f, HEAVY, WAITING);
    assert_int_equal(pthread_create(&stopper, NULL, stop_server, f->s), 0);
    for (int i = HEAVY; i < N; i++) { /* answered while the running ones still block */
        pthread_join(th[i], NULL);
        assert_int_equal(calls[i].status, 503);
    }
    assert_int_equal(atomic_load(&heavy_running), HEAVY);
    open_gate(1);
    pthread_join(stopper, NULL);
    for (int i = 0; i < HEAVY; i++) {
        pthread_join(th[i], NULL);
        if (calls[i].status != 200 && calls[i].status != -1)
            fail_msg("a running heavy call got %d at the stop (200 or closed expected)",
                     calls[i].status);
    }
    assert_int_equal(atomic_load(&heavy_entered), HEAVY);
    assert_int_equal(atomic_load(&heavy_running), 0);
    stop(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, edge_setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heads_are_checked_before_any_server),
        cmocka_unit_test(chunk_sizes_are_checked_before_any_server),
        T(bare_ampersands_and_huge_chunks_are_answered_at_once),
        cmocka_unit_test(slow_bodies_get_408),
        cmocka_unit_test(a_full_server_takes_an_address_with_fewer),
        T(two_content_lengths_are_refused_and_closed),
        T(transfer_encoding_with_content_length_is_refused),
        T(long_targets_get_json_414),
        T(large_headers_get_json_431),
        T(many_query_parameters_get_json_400),
        T(repeated_query_parameter_is_400),
        T(unsupported_versions_get_json_505),
        cmocka_unit_test(slow_headers_are_cut_at_the_deadline),
        T(many_slow_connections_do_not_shut_out_new_ones),
        cmocka_unit_test(connections_per_address_are_limited),
        cmocka_unit_test(heavy_routes_never_take_a_light_thread),
        cmocka_unit_test(stop_with_heavy_calls_running_and_waiting),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
