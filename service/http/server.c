/* The server object and its MHD daemon: options checked in http_server_new, the daemon started with
 * an internal thread pool (epoll where available), bind failures explained via a probe socket, and
 * percent-decoding that keeps "%00" as written. The per-request lifecycle lives in request.c. */
#include "http/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/log.h"

#define HTTP_DEFAULT_THREADS 4
#define HTTP_MAX_THREADS     256
#define HTTP_IDLE_TIMEOUT_S  60u /* idle keep-alive connections are closed after this */
/* Per-connection memory (request line, headers, reply header): libmicrohttpd zeroes all of it for
 * every request, so its default of 32 KiB cost 11% of the CPU of a cached GET /v1/best; 16 KiB
 * measured 17% less CPU per request (tests/bench/results/v1-best-wrk.txt). Headers that do not fit
 * get 431. */
#define HTTP_CONNECTION_MEMORY ((size_t)16 * 1024)

/* ---- lifecycle ---- */

http_server *http_server_new(const http_route *routes, void *app, const http_server_options *opt,
                             kt_error *err)
{
    int ok = 0;
    http_server *s = calloc(1, sizeof *s);
    if (!s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (!opt) {
        kt_error_set(err, KT_ERR_CONFIG, "http: server options are missing");
        goto out;
    }
    if (http_router_check(routes, &s->n_routes, err) != 0)
        goto out;
    s->routes = routes;
    s->app = app;
    if (http_listen_parse(opt->listen, &s->addr, err) != 0)
        goto out;
    s->listen = strdup(opt->listen);
    s->threads = opt->threads <= 0 ? HTTP_DEFAULT_THREADS : opt->threads;
    if (s->threads > HTTP_MAX_THREADS) {
        kt_error_set(err, KT_ERR_CONFIG, "http: %d threads requested; at most %d are allowed",
                     s->threads, HTTP_MAX_THREADS);
        goto out;
    }
    if (opt->web_root && opt->web_root[0]) {
        struct stat st;
        s->web_root_real = realpath(opt->web_root, NULL);
        if (!s->web_root_real || stat(s->web_root_real, &st) != 0 || !S_ISDIR(st.st_mode)) {
            kt_error_set(err, KT_ERR_CONFIG, "web root \"%s\" is not a readable folder: %s",
                         opt->web_root, s->web_root_real ? "not a folder" : strerror(errno));
            goto out;
        }
    }
    if (!s->listen || http_metrics_init(&s->metrics, routes, s->n_routes) != 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    ok = 1;
out:
    if (!ok) {
        http_server_free(s);
        s = NULL;
    }
    return s;
}

void http_server_stop(http_server *s)
{
    if (!s || !s->daemon)
        return;
    MHD_stop_daemon(s->daemon); /* joins the worker threads: no handler runs after this */
    s->daemon = NULL;
}

void http_server_free(http_server *s)
{
    if (!s)
        return;
    http_server_stop(s);
    http_metrics_destroy(&s->metrics);
    free(s->listen);
    free(s->web_root_real);
    free(s);
}

int http_server_port(const http_server *s)
{
    return s ? s->port : 0;
}

char *http_server_metrics_text(http_server *s)
{
    return s ? http_metrics_render(&s->metrics) : NULL;
}

unsigned long long http_server_requests_total(http_server *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->metrics.lock);
    unsigned long long n = s->metrics.total;
    pthread_mutex_unlock(&s->metrics.lock);
    return n;
}

/* ---- MHD callbacks besides the access handler ---- */

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    (void)cls;
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    log_warn("http: libmicrohttpd: %s", line);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes paths and query arguments in place like MHD's default, except that "%00" stays as
 * written: a decoded NUL would silently cut the C string ("/a.html%00.png" serving /a.html). */
static size_t on_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *w = s;
    (void)cls;
    (void)conn;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex_value(r[1])) >= 0 && (lo = hex_value(r[2])) >= 0 &&
            (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

int http_server_start(http_server *s, kt_error *err)
{
    if (!s)
        return kt_error_set(err, KT_ERR_INTERNAL, "http: no server");
    if (s->daemon)
        return 0;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    uint16_t port;
    if (s->addr.ipv6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)&s->addr.ss)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)&s->addr.ss)->sin_port);
    }
    /* A pool size of 1 makes MHD warn; 0 means the one internal thread. */
    unsigned pool = s->threads > 1 ? (unsigned)s->threads : 0;
    // clang-format off
    s->daemon = MHD_start_daemon(flags, port, NULL, NULL, http_on_access, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                                 MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&s->addr.ss,
                                 MHD_OPTION_THREAD_POOL_SIZE, pool,
                                 MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, s,
                                 MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, s,
                                 MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONNECTION_MEMORY,
                                 MHD_OPTION_END);
    // clang-format on
    if (!s->daemon) {
        int e = http_listen_probe(&s->addr);
        if (e)
            kt_error_set(err, KT_ERR_CONFIG, "cannot listen on %s: %s", s->listen, strerror(e));
        else
            kt_error_set(err, KT_ERR_CONFIG, "could not start the HTTP server on %s (see the log)",
                         s->listen);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    log_info("http: listening on %s (port %d, %d threads%s%s)", s->listen, s->port, s->threads,
             s->web_root_real ? ", web root " : "", s->web_root_real ? s->web_root_real : "");
    return 0;
}
