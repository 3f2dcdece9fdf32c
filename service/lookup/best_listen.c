/* lookup/best_listen — see best_listen.h. One thread: connect, LISTEN, flush, then wait on the
 * connection's socket and a stop pipe; apply notifications as they come; on a broken connection
 * mark the cache unsynced and start again after a backoff. */
#include "lookup/best_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

#define LISTEN_BACKOFF_MIN_MS 100
#define LISTEN_BACKOFF_MAX_MS 2000

struct best_listen {
    best_cache *cache;    /* borrowed */
    const char *conninfo; /* borrowed */
    int stop_pipe[2];
    pthread_t thread;
};

static const char *field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

long best_listen_apply(best_cache *cache, const char *channel, const char *payload)
{
    long dropped = -1;
    int models = channel && strcmp(channel, BEST_LISTEN_CHANNEL_MODELS) == 0;
    json_t *o = payload && strcmp(payload, "*") != 0 ? json_loads(payload, 0, NULL) : NULL;
    const char *kernel = field(o, "kernel"), *cls = field(o, "device_class"),
               *hash = field(o, "kernel_hash"), *tool = field(o, "toolchain"),
               *problem = field(o, "problem_key");
    int known = models || (channel && strcmp(channel, BEST_LISTEN_CHANNEL_BEST) == 0);
    if (known && kernel && cls && hash && tool && (models || problem)) {
        dropped = (long)best_cache_invalidate(cache, kernel, cls, hash, tool, problem, models);
    } else {
        if (payload && strcmp(payload, "*") != 0)
            log_warn("lookup: unreadable notification on %s; flushing the /v1/best cache",
                     channel ? channel : "?");
        best_cache_flush(cache);
    }
    json_decref(o);
    return dropped;
}

/* Waits ms or until stop; returns 1 when asked to stop. */
static int wait_stop(best_listen *l, int ms)
{
    struct pollfd p = {.fd = l->stop_pipe[0], .events = POLLIN};
    int r = poll(&p, 1, ms);
    return r > 0;
}

/* A connection that LISTENs on both channels, or NULL (logged once per outage by the caller). */
static PGconn *listen_connect(best_listen *l, char *why, size_t cap)
{
    /* Our own connect (not db_connect): a short connect timeout and TCP keepalives, so that a
     * database host gone silent is noticed and a stop is never held by a connect. Keys given in
     * conninfo (expanded from dbname, last) win. */
    const char *const keys[] = {"application_name",
                                "connect_timeout",
                                "keepalives_idle",
                                "keepalives_interval",
                                "keepalives_count",
                                "dbname",
                                NULL};
    const char *const vals[] = {"ktuned-lookup", "2", "5", "2", "2", l->conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    PGresult *r = NULL;
    if (!c || PQstatus(c) != CONNECTION_OK)
        goto fail;
    r = PQexec(c, "LISTEN " BEST_LISTEN_CHANNEL_BEST "; LISTEN " BEST_LISTEN_CHANNEL_MODELS);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        goto fail;
    PQclear(r);
    return c;
fail:
    snprintf(why, cap, "%s", c ? PQerrorMessage(c) : "out of memory");
    why[strcspn(why, "\n")] = '\0';
    PQclear(r);
    PQfinish(c);
    return NULL;
}

/* Serves one connection until it breaks (0) or a stop (1). */
static int serve(best_listen *l, PGconn *c)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = PQsocket(c), .events = POLLIN},
                              {.fd = l->stop_pipe[0], .events = POLLIN}};
        int r = poll(p, 2, 1000);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r > 0 && p[1].revents)
            return 1;
        if (r > 0 && p[0].revents) {
            if (!PQconsumeInput(c))
                return 0;
            for (PGnotify *n; (n = PQnotifies(c));) {
                long dropped = best_listen_apply(l->cache, n->relname, n->extra);
                log_debug("lookup: %s %s: %ld cached answers dropped", n->relname, n->extra,
                          dropped);
                PQfreemem(n);
            }
        }
        if (PQstatus(c) != CONNECTION_OK)
            return 0;
    }
}

static void *listen_main(void *arg)
{
    best_listen *l = arg;
    int backoff = LISTEN_BACKOFF_MIN_MS, down_logged = 0;
    char why[256];
    for (;;) {
        PGconn *c = listen_connect(l, why, sizeof why);
        if (!c) {
            if (!down_logged)
                log_warn("lookup: cannot listen for best-table changes (%s); cached /v1/best "
                         "answers are served as they are until the database is back",
                         why);
            down_logged = 1;
            if (wait_stop(l, backoff))
                break;
            backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        /* LISTEN first, then flush: a change after the LISTEN is notified, one before is gone
         * with the flush, and fills that read the database before are dropped (tickets). */
        best_cache_flush(l->cache);
        best_cache_set_synced(l->cache, 1);
        if (down_logged)
            log_info("lookup: listening for best-table changes again; /v1/best cache flushed");
        down_logged = 0;
        backoff = LISTEN_BACKOFF_MIN_MS;
        int stop = serve(l, c);
        best_cache_set_synced(l->cache, 0);
        if (!stop) {
            snprintf(why, sizeof why, "%s", PQerrorMessage(c));
            why[strcspn(why, "\n")] = '\0';
            log_warn("lookup: the listening connection broke (%s); reconnecting", why);
            down_logged = 1;
        }
        PQfinish(c);
        if (stop || wait_stop(l, backoff))
            break;
    }
    return NULL;
}

best_listen *best_listen_start(best_cache *cache, const char *conninfo, kt_error *err)
{
    int pipe_ok = 0, rc = 0;
    best_listen *l = calloc(1, sizeof *l);
    if (!l) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting the /v1/best listener");
        goto fail;
    }
    l->cache = cache;
    l->conninfo = conninfo;
    pipe_ok = pipe2(l->stop_pipe, O_CLOEXEC) == 0;
    if (!pipe_ok) {
        kt_error_set(err, KT_ERR_INTERNAL, "pipe for the /v1/best listener: %s", strerror(errno));
        goto fail;
    }
    rc = pthread_create(&l->thread, NULL, listen_main, l);
    if (rc != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "cannot start the /v1/best listener thread: %s",
                     strerror(rc));
        goto fail;
    }
    return l;
fail:
    if (pipe_ok) {
        close(l->stop_pipe[0]);
        close(l->stop_pipe[1]);
    }
    free(l);
    return NULL;
}

void best_listen_stop(best_listen *l)
{
    if (!l)
        return;
    char b = 1;
    while (write(l->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(l->thread, NULL);
    close(l->stop_pipe[0]);
    close(l->stop_pipe[1]);
    free(l);
}
