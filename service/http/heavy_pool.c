/* The heavy pool: the threads that run heavy routes' handlers (trial pages, imports, exports, the
 * best table), so that none of them ever occupies a worker's event loop and light requests
 * (/healthz, /v1/best) never wait behind one. A worker's access handler queues the call and
 * suspends its connection (http_heavy_pool_submit, under the pool's lock, so the call can never be
 * resumed before it is suspended); a pool thread runs the handler, marks the call done and resumes
 * the connection; MHD calls the access handler again, which queues the reply (request.c). The
 * queue is bounded: with every thread busy and queue_max calls waiting, a heavy request is
 * refused (429). http_heavy_pool_stop answers the calls still queued (503, their handlers never
 * run) and joins the threads, whose running handlers end first: afterwards no suspended
 * connection is left for MHD_stop_daemon (which refuses to stop with one). */
#include "http/http_internal.h"

#include <stdlib.h>

#include "core/log.h"

struct http_heavy_pool {
    http_server *server; /* borrowed */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    http_call *head, *tail; /* waiting calls, oldest first */
    int queued;             /* calls in the queue */
    int running;            /* handlers running now */
    int threads;            /* threads started */
    int queue_max;
    int stopping;
    pthread_t *tids;
};

/* A pool thread: takes the oldest call, runs its handler, resumes its connection (after which the
 * call is the worker's: nothing of it is touched here), until the pool stops. */
static void *pool_main(void *arg)
{
    http_heavy_pool *p = arg;
    http_server *s = p->server;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        http_call *call = p->head;
        if (!call)
            break; /* stopping; the queue was answered by http_heavy_pool_stop */
        p->head = call->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        p->running++;
        pthread_mutex_unlock(&p->lock);
        struct MHD_Connection *conn = call->conn;
        call->route->handler(s->app, &call->req, &call->res);
        atomic_store(&call->done, 1);
        MHD_resume_connection(conn);
        pthread_mutex_lock(&p->lock);
        p->running--;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

http_heavy_pool *http_heavy_pool_start(http_server *s, int threads, int queue_max, kt_error *err)
{
    http_heavy_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->tids = calloc((size_t)threads, sizeof *p->tids))) {
        free(p);
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        p = NULL;
        goto out;
    }
    p->server = s;
    p->queue_max = queue_max;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    for (; p->threads < threads; p->threads++) {
        if (pthread_create(&p->tids[p->threads], NULL, pool_main, p) != 0) {
            kt_error_set(err, KT_ERR_CONFIG, "http: could not start heavy thread %d of %d",
                         p->threads + 1, threads);
            http_heavy_pool_stop(p); /* joins the threads started */
            p = NULL;
            goto out;
        }
    }
out:
    return p;
}

int http_heavy_pool_submit(http_heavy_pool *p, http_call *call)
{
    int rc = 1;
    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        rc = -1;
    } else if (p->queued + p->running >= p->threads + p->queue_max) {
        rc = 0;
    } else {
        /* Suspended before any pool thread can see it: the thread's resume always follows. */
        MHD_suspend_connection(call->conn);
        call->next = NULL;
        if (p->tail)
            p->tail->next = call;
        else
            p->head = call;
        p->tail = call;
        p->queued++;
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void http_heavy_pool_load(http_heavy_pool *p, int *running, int *queued)
{
    *running = *queued = 0;
    if (p) {
        pthread_mutex_lock(&p->lock);
        *running = p->running;
        *queued = p->queued;
        pthread_mutex_unlock(&p->lock);
    }
}

void http_heavy_pool_stop(http_heavy_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    http_call *left = p->head;
    p->head = p->tail = NULL;
    p->queued = 0;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    /* Resumed outside the lock: the worker that queues the reply may be submitting meanwhile. */
    while (left) {
        http_call *call = left;
        left = call->next;
        struct MHD_Connection *conn = call->conn;
        kt_error err;
        kt_error_set(&err, KT_ERR_UNAVAILABLE, "the server is stopping");
        kt_error_hint(&err, "retry once it is back");
        http_reply_error(&call->res, &err);
        atomic_store(&call->done, 1);
        MHD_resume_connection(conn);
    }
    for (int i = 0; i < p->threads; i++)
        pthread_join(p->tids[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->tids);
    free(p);
}
