/* GET /v1/jobs/{id}/events — a job's changes as Server-Sent Events (issue 31: the dashboard's live
 * updates, polling kept as the fallback).
 *
 * One request answers one batch of events and ends; the client asks again from the cursor it was
 * given (an EventSource does so by itself, with Last-Event-ID, after `retry` ms). The request waits
 * (at most wait_s) until something changed: trials finished after the cursor `after`, the job's
 * status differs from the `status` the client knows, or the job ended. It waits on a thread of its
 * own (a blocking route: api/routes.c), woken by this process's runner and measurers
 * (worker_system_wait_job) and looking at the database at least every second, since another host
 * of the fleet may measure the job. Events, in this order:
 *
 *   retry: 1000
 *   event: job      data: the job as GET /v1/jobs/{id} gives it (always)
 *   event: trials   data: the trials after the cursor as GET /v1/jobs/{id}/trials?format=compact
 *                   gives them (at most 10,000), with id: their next_after (the next cursor)
 *   event: end      data: {"job_status"}: the job is over and every trial of it was sent
 *
 * A wait that ends with no change answers the job event alone (a heartbeat). */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "store/trial_store.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"

#define EVENTS_WAIT_DEFAULT_S 15
#define EVENTS_WAIT_MAX_S     60
#define EVENTS_TRIALS_MAX     10000
#define EVENTS_RECHECK_MS     1000
#define EVENTS_RETRY_MS       "1000"
#define EVENTS_MAX_BYTES      (64u << 20)

/* The request's options: the cursor (`after`, else the Last-Event-ID header, else 0), the status
 * the client knows (or NULL), how long to wait. 0, or -1 with err. */
static int events_opts(const http_request *req, long long *after, const char **known,
                       long long *wait_s, kt_error *err)
{
    static const char *const allowed[] = {"after", "status", "wait_s", NULL};
    if (api_check_query(req, allowed, err) < 0 ||
        api_query_ll(req, "wait_s", 0, EVENTS_WAIT_MAX_S, EVENTS_WAIT_DEFAULT_S, wait_s, err) < 0)
        return -1;
    const char *last = http_header(req, "Last-Event-ID");
    if (!http_query(req, "after") && last && last[0]) {
        char *end = NULL;
        long long v = strtoll(last, &end, 10);
        if (*end || v < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "Last-Event-ID: \"%.40s\" is not a cursor this route gave", last);
        *after = v;
    } else if (api_query_ll(req, "after", 0, INT64_MAX, 0, after, err) < 0) {
        return -1;
    }
    *known = http_query(req, "status");
    return *known ? api_job_status_check(*known, "status", err) : 0;
}

/* The compact page's next_after (the last number of its text). */
static long long page_next_after(const char *text, long long after)
{
    const char *p = strstr(text, "\"next_after\":");
    return p ? strtoll(p + strlen("\"next_after\":"), NULL, 10) : after;
}

/* One event: its lines; text split at its newlines into data lines (JSON may hold some). */
static void sse_event(strbuf *b, const char *name, const char *id, const char *text)
{
    if (id) {
        strbuf_puts(b, "id: ");
        strbuf_puts(b, id);
        strbuf_puts(b, "\n");
    }
    strbuf_puts(b, "event: ");
    strbuf_puts(b, name);
    strbuf_puts(b, "\n");
    for (const char *line = text; line;) {
        const char *nl = strchr(line, '\n');
        strbuf_puts(b, "data: ");
        strbuf_append(b, line, nl ? (size_t)(nl - line) : strlen(line));
        strbuf_puts(b, "\n");
        line = nl ? nl + 1 : NULL;
    }
    strbuf_puts(b, "\n");
}

/* The reply's body from the job's view and the trials page. NULL when out of memory. */
static char *events_body(const json_t *view, const char *page, long long after, long long next)
{
    strbuf b;
    char id[24];
    char *job = json_dumps(view, JSON_COMPACT);
    const char *status = json_string_value(json_object_get(view, "status"));
    strbuf_init(&b, EVENTS_MAX_BYTES);
    strbuf_puts(&b, "retry: " EVENTS_RETRY_MS "\n\n");
    sse_event(&b, "job", NULL, job ? job : "null");
    if (next > after) {
        snprintf(id, sizeof id, "%lld", next);
        sse_event(&b, "trials", id, page);
    } else if (api_job_over(status)) {
        json_t *end = json_pack("{s:s}", "job_status", status);
        char *text = end ? json_dumps(end, JSON_COMPACT) : NULL;
        sse_event(&b, "end", NULL, text ? text : "{}");
        free(text);
        json_decref(end);
    }
    free(job);
    return b.failed ? (strbuf_release(&b), NULL) : strbuf_take(&b);
}

void api_job_events(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long id, after = 0, wait_s;
    const char *known = NULL;
    json_t *view = NULL;
    char *page = NULL, *body = NULL;
    if (api_path_id(req, 0, "job", &id, &err) < 0 ||
        events_opts(req, &after, &known, &wait_s, &err) < 0) {
        api_fail(res, &err);
        return;
    }
    uint64_t deadline = kt_clock_ns() + (uint64_t)wait_s * 1000000000u;
    long long next = after;
    for (;;) {
        /* The generation before the look: a change made after it wakes the wait. */
        unsigned long gen = worker_system_job_gen(svc->workers, id);
        PGconn *c = api_db_acquire(svc, res);
        if (!c)
            goto out;
        view = job_view_get(c, id, &err);
        if (view)
            trial_store_list_compact(c, id, after, EVENTS_TRIALS_MAX, &page, &err);
        api_db_release(svc, c);
        if (!view || !page) {
            api_fail(res, &err);
            goto out;
        }
        next = page_next_after(page, after);
        const char *status = json_string_value(json_object_get(view, "status"));
        uint64_t now = kt_clock_ns();
        if (next > after || api_job_over(status) || (known && status && strcmp(known, status)) ||
            now >= deadline || http_request_stopping(req))
            break;
        if (req->may_defer) { /* the wait is a thread's, not the HTTP worker's */
            http_response_defer(res);
            goto out;
        }
        json_decref(view);
        view = NULL;
        free(page);
        page = NULL;
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        worker_system_wait_job(svc->workers, id, gen,
                               left_ms < EVENTS_RECHECK_MS ? (int)left_ms : EVENTS_RECHECK_MS);
    }
    body = events_body(view, page, after, next);
    if (!body) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, "out of memory building the events");
        api_fail(res, &err);
        goto out;
    }
    http_response_add_header(res, "Cache-Control", "no-store");
    http_reply_text(res, 200, "text/event-stream", body);
out:
    free(body);
    free(page);
    json_decref(view);
}
