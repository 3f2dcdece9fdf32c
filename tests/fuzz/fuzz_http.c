/* libFuzzer target: the HTTP layer. Each input is checked by http_head_scan directly (and, for a
 * whole chunked head, the chunk sizes after it by http_chunks_check), then sent
 * as raw bytes on a fresh connection to a server started once (127.0.0.1:0, two threads, routes
 * with captures, a query listing and a JSON echo); the reply is read until the server closes.
 * Every 256 inputs a GET /healthz must still be answered 200, else the run aborts. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/log.h"
#include "http/http_internal.h"

static http_server *server;
static int port;

static void h_item(void *app, const http_request *req, http_response *res)
{
    (void)app;
    http_reply_json(res, 200,
                    json_pack("{s:s?, s:s?}", "id", req->params[0], "q", http_query(req, "q")));
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

static int count_arg(void *ctx, const char *key, const char *value)
{
    (void)key;
    (void)value;
    (*(int *)ctx)++;
    return 0;
}

static void h_query(void *app, const http_request *req, http_response *res)
{
    (void)app;
    int n = 0;
    http_query_each(req, count_arg, &n);
    http_reply_json(res, 200, json_pack("{s:i}", "args", n));
}

static void h_health(void *app, const http_request *req, http_response *res)
{
    (void)app;
    (void)req;
    http_reply_text(res, 200, NULL, "ok\n");
}

static const http_route routes[] = {
    {"GET", "/v1/items/{id}", h_item}, {"POST", "/v1/echo", h_echo},
    {"GET", "/v1/query", h_query},     {"GET", "/v1/items/{id}/trials", h_item},
    {"GET", "/healthz", h_health},     {NULL, NULL, NULL},
};
static const char *const heavy[] = {"/v1/items/{id}/trials", NULL};

/* Sends the bytes, half-closes, reads until the server closes (or 2 s). Returns the status of the
 * first reply, or 0. */
static int exchange(const void *data, size_t size)
{
    int status = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        const char *p = data;
        size_t left = size;
        while (left > 0) {
            ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            p += w;
            left -= (size_t)w;
        }
        shutdown(fd, SHUT_WR);
        char buf[65536];
        size_t got = 0;
        for (;;) {
            ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
            if (r <= 0)
                break;
            got += (size_t)r;
            if (got == sizeof buf - 1)
                got = 16; /* keep the status line, drop the rest */
        }
        buf[got] = '\0';
        if (got >= 12 && strncmp(buf, "HTTP/1.", 7) == 0)
            status = (int)strtol(buf + 9, NULL, 10);
    }
    close(fd);
    return status;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    kt_log_init(KT_LOG_ERROR);
    kt_error err;
    kt_error_clear(&err);
    http_server_options opt = {.listen = "127.0.0.1:0", .threads = 2, .heavy = heavy};
    server = http_server_new(routes, NULL, &opt, &err);
    if (!server || http_server_start(server, &err) != 0)
        abort();
    port = http_server_port(server);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned runs;
    kt_error err;
    kt_error_clear(&err);
    http_head_info info;
    if (http_head_scan((const char *)data, size, &info, &err) == 1 && info.chunked)
        (void)http_chunks_check((const char *)data + info.len, size - info.len, &err);
    int status = exchange(data, size);
    if (status != 0 && (status < 100 || status > 599))
        abort();
    if (++runs % 256 == 0) {
        static const char health[] = "GET /healthz HTTP/1.1\r\nHost: f\r\n\r\n";
        if (exchange(health, sizeof health - 1) != 200)
            abort(); /* the server stopped answering */
    }
    return 0;
}
