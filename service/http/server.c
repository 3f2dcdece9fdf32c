/* The server object and its workers: options checked in http_server_new; one MHD daemon per
 * thread (epoll, no listening socket: gate.c accepts and hands connections over), the open files
 * limit raised for the connection limit, bind failures explained, and percent-decoding that keeps
 * "%00" as written. The per-request lifecycle lives in request.c. */
#include "http/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "core/log.h"

#define HTTP_DEFAULT_THREADS 4
#define HTTP_MAX_THREADS     256
/* Connection memory of libmicrohttpd (its default is 32 KiB): large enough that ktune's own limits
 * (HTTP_MAX_URL, HTTP_MAX_HEADER_BYTES, HTTP_MAX_HEADERS) are always reached first and answered
 * in JSON; MHD zeroes it between requests, so it is not made larger than needed. */
#define HTTP_CONN_MEMORY (64 * 1024)
#define HTTP_FD_RESERVE  256 /* open files kept for everything but connections */

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
    s->max_connections =
        opt->max_connections > 0 ? opt->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS;
    s->max_connections_per_ip = opt->max_connections_per_ip > 0
                                    ? opt->max_connections_per_ip
                                    : HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP;
    s->header_timeout_s =
        opt->header_timeout_s > 0 ? opt->header_timeout_s : HTTP_DEFAULT_HEADER_TIMEOUT_S;
    s->body_timeout_s = opt->body_timeout_s > 0 ? opt->body_timeout_s : HTTP_DEFAULT_BODY_TIMEOUT_S;
    s->body_min_rate = opt->body_min_rate > 0 ? opt->body_min_rate : 0;
    s->heavy_threads = opt->heavy_threads <= 0 ? HTTP_DEFAULT_HEAVY_THREADS : opt->heavy_threads;
    if (s->heavy_threads > HTTP_MAX_HEAVY_THREADS) {
        kt_error_set(err, KT_ERR_CONFIG, "http: %d heavy threads requested; at most %d are allowed",
                     s->heavy_threads, HTTP_MAX_HEAVY_THREADS);
        goto out;
    }
    s->heavy_queue = s->heavy_threads * HTTP_HEAVY_QUEUE_PER_THREAD;
    s->route_heavy = calloc((size_t)s->n_routes + 1, 1);
    if (!s->route_heavy) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; opt->heavy && opt->heavy[i]; i++) {
        int found = 0;
        for (int r = 0; r < s->n_routes; r++) {
            if (strcmp(routes[r].pattern, opt->heavy[i]) == 0)
                s->route_heavy[r] = found = 1;
        }
        if (!found) {
            kt_error_set(err, KT_ERR_CONFIG, "http: heavy route %s is not a route", opt->heavy[i]);
            goto out;
        }
    }
    s->route_blocking = calloc((size_t)s->n_routes + 1, 1);
    if (!s->route_blocking) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; opt->blocking && opt->blocking[i]; i++) {
        int found = 0;
        for (int r = 0; r < s->n_routes; r++) {
            if (strcmp(routes[r].pattern, opt->blocking[i]) == 0)
                s->route_blocking[r] = found = 1;
        }
        if (!found) {
            kt_error_set(err, KT_ERR_CONFIG, "http: blocking route %s is not a route",
                         opt->blocking[i]);
            goto out;
        }
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
    if (!s || !s->started)
        return;
    http_gate_stop(s); /* no new connections */
    /* Blocking handlers see the flag and reply; their connections must be resumed before a
     * daemon stops (MHD refuses to stop with suspended connections). The heavy pool answers its
     * queue (503) and waits for the handlers running; no heavy handler runs after this. */
    atomic_store(&s->stopping, 1);
    http_heavy_pool_stop(s->heavy);
    s->heavy = NULL;
    for (int waited = 0; atomic_load(&s->blocking_running) > 0 && waited < 60000; waited += 5) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 5000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < s->threads; i++) {
        if (s->workers[i].daemon)
            MHD_stop_daemon(s->workers[i].daemon); /* joins its thread: no handler runs after */
        s->workers[i].daemon = NULL;
    }
    /* After the daemons: their connections' close callbacks count down the gate's addresses. A
     * later http_server_start makes a new gate. */
    http_gate_free(s);
    s->started = 0;
}

void http_server_free(http_server *s)
{
    if (!s)
        return;
    http_server_stop(s);
    http_gate_free(s);
    free(s->workers);
    free(s->route_heavy);
    free(s->route_blocking);
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
    /* Connections that end mid-request are the client's doing or the gate's (a body past its
     * deadline or the cap, a displaced connection: the access handler returns MHD_NO, or MHD
     * reads the end of the socket the gate shut down): a flood of them must not flood the log. */
    static const char *const quiet[] = {"Application reported internal error",
                                        "Connection was closed by remote side",
                                        "Connection socket is closed when reading request", NULL};
    for (int i = 0; quiet[i]; i++) {
        if (strncmp(line, quiet[i], strlen(quiet[i])) == 0) {
            log_debug("http: libmicrohttpd: %s", line);
            return;
        }
    }
    log_warn("http: libmicrohttpd: %s", line);
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
        if (r[0] == '%' && (hi = http_hex_digit(r[1])) >= 0 && (lo = http_hex_digit(r[2])) >= 0 &&
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

/* MHD's connection notifications: a started connection finds the gate's record of it (the
 * access handler reads it as the socket context), a closed one is counted down in the gate. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    http_worker *w = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        http_gate_conn_started(w->server, conn, socket_context);
        return;
    }
    if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
        return;
    atomic_fetch_sub(&w->conns, 1);
    http_gate_conn_closed(w->server, *socket_context);
    *socket_context = NULL;
}

/* Raises the soft open files limit to the hard one and keeps max_connections within it. */
static void fit_open_files(http_server *s)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            log_info("http: open files limit raised from %llu to %llu", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max);
        else
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    const rlim_t reserve = HTTP_FD_RESERVE + HTTP_CLOSING_SLACK;
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)s->max_connections + reserve > rl.rlim_cur) {
        int fit = rl.rlim_cur > reserve + 16 ? (int)(rl.rlim_cur - reserve) : 16;
        log_warn("http: %d connections do not fit the open files limit (%llu); serving at most %d",
                 s->max_connections, (unsigned long long)rl.rlim_cur, fit);
        s->max_connections = fit;
    }
}

int http_server_start(http_server *s, kt_error *err)
{
    if (!s)
        return kt_error_set(err, KT_ERR_INTERNAL, "http: no server");
    if (s->started)
        return 0;
    fit_open_files(s);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    unsigned timeout = (unsigned)(s->header_timeout_s + 0.999);
    free(s->workers);
    s->workers = calloc((size_t)s->threads, sizeof *s->workers);
    if (!s->workers)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    s->started = 1; /* from here http_server_stop undoes what was started */
    atomic_store(&s->stopping, 0);
    for (int i = 0; i < s->threads; i++) {
        http_worker *w = &s->workers[i];
        w->server = s;
        /* Idle keep-alive connections (and stalled transfers) are closed after the header
         * deadline; the gate enforces it for a connection's first request. */
        // clang-format off
        w->daemon = MHD_start_daemon(flags, 0, NULL, NULL, http_on_access, w,
                                     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                                     MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, s,
                                     MHD_OPTION_NOTIFY_CONNECTION, on_connection, w,
                                     MHD_OPTION_URI_LOG_CALLBACK, http_on_uri, s,
                                     MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, s,
                                     MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
                                     MHD_OPTION_CONNECTION_LIMIT,
                                     (unsigned)(s->max_connections + HTTP_CLOSING_SLACK),
                                     MHD_OPTION_END);
        // clang-format on
        if (!w->daemon) {
            http_server_stop(s);
            return kt_error_set(err, KT_ERR_CONFIG,
                                "could not start the HTTP server's thread %d (see the log)", i);
        }
    }
    int any_heavy = 0;
    for (int r = 0; r < s->n_routes; r++)
        any_heavy |= s->route_heavy[r];
    if (any_heavy) {
        s->heavy = http_heavy_pool_start(s, s->heavy_threads, s->heavy_queue, err);
        if (!s->heavy) {
            http_server_stop(s);
            return -1;
        }
    }
    if (http_gate_start(s, err) != 0) {
        http_server_stop(s);
        http_gate_free(s);
        return -1;
    }
    log_info("http: listening on %s (port %d, %d threads, %d heavy, at most %d connections, %d "
             "per address, header deadline %.3g s, body deadline %.3g s, body rate at least %.0f "
             "bytes/s%s%s)",
             s->listen, s->port, s->threads, s->heavy ? s->heavy_threads : 0, s->max_connections,
             s->max_connections_per_ip, s->header_timeout_s, s->body_timeout_s, s->body_min_rate,
             s->web_root_real ? ", web root " : "", s->web_root_real ? s->web_root_real : "");
    return 0;
}
