/* store/pg_supervise — the embedded PostgreSQL's supervisor (see pg_cluster.h): a thread that
 * restarts the postmaster when it is gone. The pool (db.c) reconnects by itself once it is back. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/pg_cluster_internal.h"

#define PG_RETRY_MIN_MS 1000
#define PG_RETRY_MAX_MS 8000

struct pg_supervisor {
    pg_cluster *cluster;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* signalled by pg_supervisor_stop; monotonic deadlines */
    int stopping;
};

int pg_cluster_check_restart(pg_cluster *c, kt_error *err)
{
    if (pg_cluster_server_alive(c))
        return 0;
    if (pg_cluster_server_start(c, err) != 0)
        return -1;
    return 1;
}

/* Sleeps ms or until stop; returns 1 when stopping. */
static int nap(pg_supervisor *s, int ms)
{
    struct timespec deadline = kt_clock_deadline(ms);
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (pthread_cond_timedwait(&s->wake, &s->mu, &deadline) == ETIMEDOUT)
            break;
    }
    int stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    return stopping;
}

static void *supervise(void *arg)
{
    pg_supervisor *s = arg;
    const char *pgdata = pg_cluster_pgdata(s->cluster);
    int failing = 0, delay = PG_SUPERVISE_MS;
    uint64_t since = 0;
    long long attempts = 0;
    while (!nap(s, delay)) {
        kt_error err;
        kt_error_clear(&err);
        if (!failing && pg_cluster_server_alive(s->cluster))
            continue;
        if (!failing) {
            since = kt_clock_ns();
            log_warn("the embedded postgresql in %s is not running (killed or crashed?); "
                     "restarting it",
                     pgdata);
        }
        attempts++;
        int rc = pg_cluster_check_restart(s->cluster, &err);
        if (rc >= 0) {
            log_warn("the embedded postgresql in %s is running again after %.1f s (%lld restart "
                     "attempts)",
                     pgdata, (double)kt_clock_since_ns(since) / 1e9, attempts);
            failing = 0;
            attempts = 0;
            delay = PG_SUPERVISE_MS;
            continue;
        }
        if (!failing)
            log_warn("restarting the embedded postgresql failed: %s; retrying every few seconds "
                     "(further failures are not logged)",
                     err.message);
        failing = 1;
        delay = delay < PG_RETRY_MIN_MS       ? PG_RETRY_MIN_MS
                : delay * 2 > PG_RETRY_MAX_MS ? PG_RETRY_MAX_MS
                                              : delay * 2;
    }
    return NULL;
}

pg_supervisor *pg_supervisor_start(pg_cluster *c, kt_error *err)
{
    pg_supervisor *s = calloc(1, sizeof *s);
    if (!s) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory starting the postgresql supervisor");
        return NULL;
    }
    s->cluster = c;
    pthread_mutex_init(&s->mu, NULL);
    kt_clock_cond_init(&s->wake);
    if (pthread_create(&s->thread, NULL, supervise, s) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "cannot start the postgresql supervisor thread");
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    return s;
}

void pg_supervisor_stop(pg_supervisor *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
