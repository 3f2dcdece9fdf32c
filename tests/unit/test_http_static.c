/* Tests of http/ static files over real sockets: a web root built in a mkdtemp folder (files, a
 * folder, symlinks in and out, a FIFO, a sparse huge file), content types, caching, HEAD,
 * keep-alive, and every way out of the root refused with a JSON 404. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>

#include "http/server.h"
#include "http_test_client.h"

typedef struct fixture {
    http_server *s;
    int port;
    char root[64];
    char outside[64]; /* next to the root; reachable only through the link_out symlink */
} fixture;

static void h_ping(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    http_reply_json(res, 200, json_pack("{s:b}", "pong", 1));
}

static const http_route routes[] = {
    {"GET", "/v1/ping", h_ping},
    {NULL, NULL, NULL},
};

static const char index_html[] = "<!doctype html><title>ktune</title>\n";

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->root, sizeof f->root, "/tmp/kt_http_root_XXXXXX");
    snprintf(f->outside, sizeof f->outside, "/tmp/kt_http_out_XXXXXX");
    assert_non_null(mkdtemp(f->root));
    assert_non_null(mkdtemp(f->outside));
    write_file(f->root, "index.html", index_html);
    write_file(f->root, "app.js", "console.log('ktune');\n");
    write_file(f->root, "mod.mjs", "export default 1;\n");
    write_file(f->root, "style.css", "body{margin:0}\n");
    write_file(f->root, "data.json", "{\"a\":1}\n");
    write_file(f->root, "logo.svg", "<svg/>");
    write_file(f->root, "blob.bin", "xyz");
    char path[256], target[256];
    snprintf(path, sizeof path, "%s/sub", f->root);
    assert_int_equal(mkdir(path, 0700), 0);
    write_file(path, "page.txt", "inside sub\n");
    write_file(f->outside, "secret.txt", "secret\n");
    snprintf(target, sizeof target, "%s/secret.txt", f->outside);
    snprintf(path, sizeof path, "%s/link_out", f->root);
    assert_int_equal(symlink(target, path), 0);
    snprintf(path, sizeof path, "%s/link_dir_out", f->root);
    assert_int_equal(symlink(f->outside, path), 0);
    snprintf(path, sizeof path, "%s/link_in", f->root);
    assert_int_equal(symlink("app.js", path), 0);
    snprintf(path, sizeof path, "%s/pipe", f->root);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/huge.bin", f->root);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 64 * 1024 * 1024 + 1), 0); /* sparse: costs no disk */
    close(fd);

    kt_error err;
    kt_error_clear(&err);
    http_server_options opt = {.listen = "127.0.0.1:0", .web_root = f->root, .threads = 2};
    f->s = http_server_new(routes, NULL, &opt, &err);
    assert_non_null(f->s);
    assert_int_equal(http_server_start(f->s, &err), 0);
    f->port = http_server_port(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    http_server_free(f->s);
    const char *names[] = {"index.html", "app.js",   "mod.mjs",      "style.css", "data.json",
                           "logo.svg",   "blob.bin", "sub/page.txt", "link_out",  "link_dir_out",
                           "link_in",    "pipe",     "huge.bin"};
    char path[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", f->root, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/sub", f->root);
    rmdir(path);
    rmdir(f->root);
    snprintf(path, sizeof path, "%s/secret.txt", f->outside);
    unlink(path);
    rmdir(f->outside);
    free(f);
    return 0;
}

static void get(fixture *f, const char *path, hc_resp *r)
{
    char raw[2048];
    snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    assert_int_equal(hc_request(f->port, raw, r), 0);
}

static void assert_file(fixture *f, const char *path, const char *type, const char *body_start)
{
    hc_resp r;
    char v[128];
    get(f, path, &r);
    if (r.status != 200)
        fail_msg("%s: status %d", path, r.status);
    assert_string_equal(hc_header(&r, "Content-Type", v, sizeof v), type);
    assert_string_equal(hc_header(&r, "X-Content-Type-Options", v, sizeof v), "nosniff");
    assert_memory_equal(r.body, body_start, strlen(body_start));
    hc_resp_free(&r);
}

static void files_are_served_with_their_types(void **state)
{
    fixture *f = *state;
    assert_file(f, "/", "text/html; charset=utf-8", index_html);
    assert_file(f, "/index.html", "text/html; charset=utf-8", index_html);
    assert_file(f, "/app.js", "text/javascript; charset=utf-8", "console.log");
    assert_file(f, "/mod.mjs", "text/javascript; charset=utf-8", "export");
    assert_file(f, "/style.css", "text/css; charset=utf-8", "body{");
    assert_file(f, "/data.json", "application/json", "{\"a\":1}");
    assert_file(f, "/logo.svg", "image/svg+xml", "<svg/>");
    assert_file(f, "/blob.bin", "application/octet-stream", "xyz");
    assert_file(f, "/sub/page.txt", "text/plain; charset=utf-8", "inside sub");
    /* Percent-escapes in the path are decoded before the look-up. */
    assert_file(f, "/st%79le.css", "text/css; charset=utf-8", "body{");
    /* A symlink that stays inside the root is fine. */
    assert_file(f, "/link_in", "application/octet-stream", "console.log");
    /* Query strings do not take part in the look-up. */
    assert_file(f, "/app.js?v=3", "text/javascript; charset=utf-8", "console.log");
}

static void html_is_not_cached_and_head_has_no_body(void **state)
{
    fixture *f = *state;
    hc_resp r;
    char v[128];
    get(f, "/", &r);
    assert_string_equal(hc_header(&r, "Cache-Control", v, sizeof v), "no-cache");
    assert_int_equal(r.body_len, strlen(index_html));
    hc_resp_free(&r);
    get(f, "/app.js", &r);
    assert_null(hc_header(&r, "Cache-Control", v, sizeof v));
    hc_resp_free(&r);
    assert_int_equal(hc_request(f->port, "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    char want[32];
    snprintf(want, sizeof want, "%zu", strlen(index_html));
    assert_string_equal(hc_header(&r, "Content-Length", v, sizeof v), want);
    hc_resp_free(&r);
    assert_int_equal(
        hc_request(f->port, "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}",
                   &r),
        0);
    assert_int_equal(r.status, 405);
    assert_string_equal(hc_header(&r, "Allow", v, sizeof v), "GET, HEAD");
    hc_resp_free(&r);
}

static void nothing_outside_the_root_is_served(void **state)
{
    fixture *f = *state;
    const char *paths[] = {
        "/../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/a/%2e%2e/%2e%2e/x",
        "/sub/..%2f..%2fetc%2fpasswd",
        "/sub/%2E%2E/index.html", /* would land inside, but ".." is refused outright */
        "/..",
        "/sub/..",
        "/..%5c..%5cetc%5cpasswd",
        "/sub%5cpage.txt",
        "/index.html%00.png",
        "/link_out",
        "/link_dir_out/secret.txt",
        "/sub",
        "/sub/",
        "/pipe",
        "/huge.bin",
        "/missing.html",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        hc_resp r;
        char v[128];
        get(f, paths[i], &r);
        if (r.status != 404)
            fail_msg("%s: status %d, body %s", paths[i], r.status, r.body);
        assert_string_equal(hc_header(&r, "Content-Type", v, sizeof v), "application/json");
        assert_non_null(strstr(r.body, "\"code\":\"not_found\""));
        assert_memory_equal(r.body, "{\"error\":", 9); /* an error, not the file */
        hc_resp_free(&r);
    }
}

static void api_paths_and_keep_alive_with_a_web_root(void **state)
{
    fixture *f = *state;
    hc_resp r;
    get(f, "/v1/missing", &r);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "no such resource: /v1/missing"));
    hc_resp_free(&r);
    get(f, "/metrics", &r); /* no route for it here: still a JSON 404, never a file */
    assert_int_equal(r.status, 404);
    hc_resp_free(&r);

    hc_conn c;
    assert_int_equal(hc_connect(&c, f->port), 0);
    const char *seq[] = {"/", "/app.js", "/v1/ping", "/missing", "/style.css"};
    const int want[] = {200, 200, 200, 404, 200};
    for (int i = 0; i < 5; i++) {
        char raw[256];
        snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", seq[i]);
        assert_int_equal(hc_send_str(&c, raw), 0);
        assert_int_equal(hc_read(&c, &r, 0), 0);
        assert_int_equal(r.status, want[i]);
        hc_resp_free(&r);
        assert_true(hc_is_open(&c));
    }
    hc_close(&c);

    char *text = http_server_metrics_text(f->s);
    assert_non_null(strstr(text, "{route=\"static\",method=\"GET\",status=\"200\"} 3\n"));
    assert_non_null(strstr(text, "{route=\"static\",method=\"GET\",status=\"404\"} 1\n"));
    assert_non_null(strstr(text, "{route=\"unmatched\",method=\"GET\",status=\"404\"} 2\n"));
    assert_non_null(strstr(text, "{route=\"/v1/ping\",method=\"GET\",status=\"200\"} 1\n"));
    free(text);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(files_are_served_with_their_types),
        T(html_is_not_cached_and_head_has_no_body),
        T(nothing_outside_the_root_is_served),
        T(api_paths_and_keep_alive_with_a_web_root),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
