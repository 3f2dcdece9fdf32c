/* POST /v1/jobs/{id}/ask and /tell — the harness side of an external job (issue 27): the caller's
 * own harness leases configurations the job's driver proposed, measures them and tells the
 * results, which are recorded like any measured trial (store/ask_store.h). An ask that finds
 * nothing to lease waits for the driver (worker_system_wait_job: woken when this process's runner
 * queues the job's trials or the job ends; other processes' runners are seen by looking at the
 * database again every ASK_RECHECK_MS). It is a blocking route (api_blocking_routes): an ask whose
 * configurations are ready (or whose job is over) is answered on the HTTP worker's first call;
 * one that would wait (for a step a tell asked of the runner, or for proposals) defers to a thread
 * of its own (http_response_defer), so a wait never holds an HTTP worker's event loop. A tell
 * wakes the runner at once (worker_system_job_told); a tell with "ask" also leases the next
 * configurations once that step is made, answering both in one round trip (it runs on a thread
 * of its own from the start, api_job_tell). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_name.h"
#include "core/clock.h"
#include "store/ask_store.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"

#define ASK_MAX_N         64
#define ASK_DEFAULT_N     1
#define ASK_MAX_LEASE_S   3600
#define ASK_DEFAULT_LEASE 60
#define ASK_MAX_WAIT_S    30.0
#define ASK_DEFAULT_WAIT  5.0
/* How long one wait lasts before the database is asked again (a runner of another process, a
 * lease that ran out, the server stopping). */
#define ASK_RECHECK_MS   250
#define TELL_MAX         256
#define TELL_MAX_METRICS 64

/* An optional integer field in lo..hi (def when absent); where: how the message names it. */
static int int_field(const json_t *body, const char *name, const char *where, long long lo,
                     long long hi, long long def, long long *out, kt_error *err)
{
    json_t *v = body ? json_object_get(body, name) : NULL;
    *out = def;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s%s' must be an integer", where, name);
    if (json_integer_value(v) < lo || json_integer_value(v) > hi)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field '%s%s' must be %lld to %lld, not %lld",
                            where, name, lo, hi, (long long)json_integer_value(v));
    *out = json_integer_value(v);
    return 0;
}

/* The body of an ask or tell: NULL for an empty one (an ask's defaults), else the object. */
static int read_body(const http_request *req, int required, json_t **out, kt_error *err)
{
    *out = NULL;
    if (!req->body || req->body_len == 0) {
        if (required)
            return kt_error_set(err, KT_ERR_MISSING_FIELD,
                                "the request needs a JSON body {\"trials\": [...]}");
        return 0;
    }
    *out = http_parse_json_body(req, err);
    return *out ? 0 : -1;
}

static int job_not_external(long long id, const char *device, kt_error *err)
{
    kt_error_set(err, KT_ERR_CONFLICT,
                 "job %lld is on device %.200s: ktune's own workers measure it, not a harness", id,
                 device);
    kt_error_hint(err, "ask and tell are for jobs of device external: POST /v1/tune with "
                       "\"device\": \"external\", \"device_class\" and the \"space\" inline");
    return -1;
}

/* What an ask asks for: an ask's body, or a tell's "ask" member (where "ask."). */
typedef struct ask_opts {
    long long n, lease_s;
    double wait_s;
} ask_opts;

/* o: the object (NULL: the defaults); a tell's "ask" may also be the integer n alone. */
static int parse_ask_opts(const json_t *o, const char *where, ask_opts *a, kt_error *err)
{
    static const char *const fields[] = {"n", "lease_s", "wait_s", NULL};
    a->wait_s = ASK_DEFAULT_WAIT;
    if (o && json_is_integer(o) && where[0]) {
        a->lease_s = ASK_DEFAULT_LEASE;
        if (json_integer_value(o) < 1 || json_integer_value(o) > ASK_MAX_N)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'ask' must be 1 to %d, not %lld",
                                ASK_MAX_N, (long long)json_integer_value(o));
        a->n = json_integer_value(o);
        return 0;
    }
    if (o && !json_is_object(o) && !where[0])
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "the ask's body must be a JSON object");
    if (o && !json_is_object(o))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'ask' must be the number of trials to ask for, or an object "
                            "{\"n\", \"lease_s\", \"wait_s\"} as POST /v1/jobs/{id}/ask takes");
    if ((o && api_check_fields(o, fields, where[0] ? "the tell's ask" : "the ask", err) < 0) ||
        int_field(o, "n", where, 1, ASK_MAX_N, ASK_DEFAULT_N, &a->n, err) < 0 ||
        int_field(o, "lease_s", where, 1, ASK_MAX_LEASE_S, ASK_DEFAULT_LEASE, &a->lease_s, err) < 0)
        return -1;
    json_t *w = o ? json_object_get(o, "wait_s") : NULL;
    if (w && !json_is_null(w)) {
        if (!json_is_number(w) || !(json_number_value(w) >= 0) ||
            !(json_number_value(w) <= ASK_MAX_WAIT_S)) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field '%swait_s' must be a number 0 to %g",
                         where, ASK_MAX_WAIT_S);
            kt_error_hint(err, "wait_s is how long the ask waits for configurations when none "
                               "is ready; ask again after an empty reply");
            return -1;
        }
        a->wait_s = json_number_value(w);
    }
    return 0;
}

/* What ask_lease did: the reply is in *out; the request is to run again on a thread of its own
 * (http_response_defer); it failed (err); res holds the answer already (no database). */
enum { ASK_READY = 1, ASK_DEFER = 0, ASK_FAILED = -1, ASK_ANSWERED = -2 };

/* Leases up to a->n of job id's configurations, waiting up to a->wait_s for some, into *out:
 * {"job_id", "job_status", "trials", "done"}. */
static int ask_lease(api_context *svc, const http_request *req, http_response *res, long long id,
                     const ask_opts *a, json_t **out, kt_error *err)
{
    json_t *got = NULL;
    int rc = ASK_FAILED;
    *out = NULL;
    uint64_t deadline = kt_clock_ns() + (uint64_t)(a->wait_s * 1e9);
    /* A tell just woke the job's driver here: its next proposals are coming, look once they are
     * (one look at the database less per batch of one). On the HTTP worker's first call that
     * wait, like any other, is the thread's (http_response_defer). */
    if (a->wait_s > 0 && req->may_defer && worker_system_job_stepping(svc->workers, id))
        return ASK_DEFER;
    if (a->wait_s > 0)
        worker_system_wait_stepped(svc->workers, id, ASK_RECHECK_MS);
    for (;;) {
        /* The generation before the look: a proposal made after the look wakes the wait. */
        unsigned long gen = worker_system_job_gen(svc->workers, id);
        PGconn *c = api_db_acquire(svc, res);
        if (!c)
            return ASK_ANSWERED;
        got = ask_store_lease(c, id, (int)a->n, (int)a->lease_s, err);
        api_db_release(svc, c);
        if (!got)
            goto out;
        const char *device = json_string_value(json_object_get(got, "device"));
        const char *status = json_string_value(json_object_get(got, "job_status"));
        if (kt_device_kind_of(device) != KT_DEVICE_EXTERNAL) {
            job_not_external(id, device ? device : "", err);
            goto out;
        }
        if (json_array_size(json_object_get(got, "trials")) > 0 || !status || api_job_over(status))
            break;
        uint64_t now = kt_clock_ns();
        if (now >= deadline || http_request_stopping(req))
            break;
        if (req->may_defer) {
            rc = ASK_DEFER;
            goto out;
        }
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        json_decref(got);
        got = NULL;
        worker_system_wait_job(svc->workers, id, gen,
                               left_ms < ASK_RECHECK_MS ? (int)left_ms : ASK_RECHECK_MS);
    }
    const char *status = json_string_value(json_object_get(got, "job_status"));
    *out = json_pack("{s:I, s:s, s:O, s:b}", "job_id", (json_int_t)id, "job_status",
                     status ? status : "", "trials", json_object_get(got, "trials"), "done",
                     status && api_job_over(status));
    rc = *out ? ASK_READY : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    json_decref(got);
    return rc;
}

void api_job_ask(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *reply = NULL;
    long long id;
    ask_opts a;
    if (api_path_id(req, 0, "job", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0 ||
        read_body(req, 0, &body, &err) < 0 || parse_ask_opts(body, "", &a, &err) < 0) {
        api_fail(res, &err);
        goto out;
    }
    int rc = ask_lease(svc, req, res, id, &a, &reply, &err);
    if (rc == ASK_READY)
        http_reply_json(res, 200, reply);
    else if (rc == ASK_DEFER)
        http_response_defer(res);
    else if (rc == ASK_FAILED)
        api_fail(res, &err);
out:
    json_decref(body);
}

/* One told trial, checked: its id and its result (extras: {"metrics": {...}} when given). */
typedef struct told {
    long long id;
    trial_result r;
} told;

static int parse_metrics(const json_t *m, size_t i, json_t **out, kt_error *err)
{
    const char *k;
    json_t *v;
    *out = NULL;
    if (!m || json_is_null(m))
        return 0;
    if (!json_is_object(m) || json_object_size(m) > TELL_MAX_METRICS)
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "trials[%zu].metrics must be an object of at most %d numbers", i,
                            TELL_MAX_METRICS);
    json_object_foreach((json_t *)m, k, v)
    {
        if (strlen(k) < 1 || strlen(k) > 64)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "trials[%zu].metrics: a name must be 1 to 64 characters", i);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "trials[%zu].metrics.%.64s must be a finite number", i, k);
    }
    *out = json_pack("{s:O}", "metrics", m);
    return *out ? 0 : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
}

/* An optional non-negative finite number (NAN when absent). */
static int ms_field(const json_t *o, const char *name, size_t i, double *out, kt_error *err)
{
    json_t *v = json_object_get(o, name);
    *out = NAN;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "trials[%zu].%s must be a finite number >= 0",
                            i, name);
    *out = json_number_value(v);
    return 0;
}

static int parse_told(const json_t *arr, told *out, kt_error *err)
{
    static const char *const fields[] = {"id",         "status",     "time_ms", "metrics",
                                         "compile_ms", "measure_ms", NULL};
    static const char *const statuses[] = {
        "ok", "invalid", "compile_error", "runtime_error", "timeout", "wrong_result", NULL};
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(arr, i);
        told *o = &out[i];
        char where[32];
        snprintf(where, sizeof where, "trials[%zu]", i);
        if (!json_is_object(t))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "%s must be an object {\"id\", \"status\", \"time_ms\"}", where);
        if (api_check_fields(t, fields, where, err) < 0)
            return -1;
        json_t *id = json_object_get(t, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 1)
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "%s.id must be the positive integer id an ask gave", where);
        o->id = json_integer_value(id);
        for (size_t j = 0; j < i; j++) {
            if (out[j].id == o->id)
                return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                    "%s.id: trial %lld is told twice in this request (also "
                                    "trials[%zu])",
                                    where, o->id, j);
        }
        const char *st = json_string_value(json_object_get(t, "status"));
        if (!st || !api_in_list(st, statuses)) {
            kt_error_set(err, st ? KT_ERR_OUT_OF_RANGE : KT_ERR_MISSING_FIELD,
                         "%s.status must be one of ok, invalid, compile_error, runtime_error, "
                         "timeout, wrong_result",
                         where);
            kt_error_hint(err, "ok with the time_ms measured; invalid for a configuration the "
                               "harness cannot run");
            return -1;
        }
        trial_status_parse(st, &o->r.status);
        json_t *tm = json_object_get(t, "time_ms");
        o->r.time_ms = NAN;
        if (tm && !json_is_null(tm)) {
            if (!json_is_number(tm) || !isfinite(json_number_value(tm)) ||
                !(json_number_value(tm) > 0))
                return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                    "%s.time_ms must be a finite number > 0", where);
            o->r.time_ms = json_number_value(tm);
        } else if (o->r.status == TRIAL_OK) {
            return kt_error_set(err, KT_ERR_MISSING_FIELD, "%s.time_ms is required with status ok",
                                where);
        }
        if (ms_field(t, "compile_ms", i, &o->r.compile_ms, err) < 0 ||
            ms_field(t, "measure_ms", i, &o->r.measure_ms, err) < 0 ||
            parse_metrics(json_object_get(t, "metrics"), i, &o->r.extras, err) < 0)
            return -1;
        o->r.repeats = 1;
        o->r.noise_cv = NAN;
    }
    return 0;
}

/* A tell's parsed trials: items (the results, which own their extras), with their ids and
 * results side by side as ask_store_tell takes them (rs borrows from items). */
typedef struct tell_batch {
    size_t n;
    told *items;
    long long *ids;
    trial_result *rs;
} tell_batch;

static void tell_batch_release(tell_batch *b)
{
    for (size_t i = 0; b->items && i < b->n; i++)
        trial_result_release(&b->items[i].r);
    free(b->items);
    free(b->ids);
    free(b->rs);
}

/* The tell's "trials" into b (released by tell_batch_release, also after a failure). */
static int parse_tell(const json_t *body, tell_batch *b, kt_error *err)
{
    json_t *arr = json_object_get(body, "trials");
    b->n = json_array_size(arr);
    if (!json_is_array(arr) || b->n < 1 || b->n > TELL_MAX) {
        kt_error_set(err, arr ? KT_ERR_OUT_OF_RANGE : KT_ERR_MISSING_FIELD,
                     "field 'trials' must be an array of 1 to %d results", TELL_MAX);
        kt_error_hint(err, "{\"trials\": [{\"id\": 17, \"status\": \"ok\", \"time_ms\": 1.23}]}");
        b->n = 0;
        return -1;
    }
    b->items = calloc(b->n, sizeof *b->items);
    b->ids = calloc(b->n, sizeof *b->ids);
    b->rs = calloc(b->n, sizeof *b->rs);
    if (!b->items || !b->ids || !b->rs)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    for (size_t i = 0; i < b->n; i++)
        trial_result_init(&b->items[i].r);
    if (parse_told(arr, b->items, err) < 0)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        b->ids[i] = b->items[i].id;
        b->rs[i] = b->items[i].r; /* borrowed: items own the extras */
    }
    return 0;
}

/* The database's tell reply got, checked: the job is external and, when nothing was recorded
 * because of an id, which id. 0, or -1 with err. */
static int tell_check(const json_t *got, long long id, const tell_batch *b, kt_error *err)
{
    const char *job_status = json_string_value(json_object_get(got, "job_status"));
    const char *device = json_string_value(json_object_get(got, "device"));
    json_t *checks = json_object_get(got, "checks");
    json_t *outcomes = json_object_get(got, "outcomes");
    if (!job_status || !device || json_array_size(checks) != b->n)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "the database's tell reply is not what ktuned expects");
    if (kt_device_kind_of(device) != KT_DEVICE_EXTERNAL)
        return job_not_external(id, device, err);
    int running = strcmp(job_status, "running") == 0;
    for (size_t i = 0; !json_is_array(outcomes) && i < b->n; i++) {
        json_t *check = json_array_get(checks, i);
        int other = json_is_true(json_array_get(check, 1));
        if (other || (json_is_null(json_array_get(check, 0)) && running)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "trials[%zu].id: job %lld has no trial %lld%s", i,
                         id, b->ids[i], other ? " (it is another job's)" : "");
            kt_error_hint(err, "tell the ids this job's asks gave");
            return -1;
        }
    }
    if (json_array_size(outcomes) != b->n)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "the database's tell reply is not what ktuned expects");
    return 0;
}

/* Records b for job id (one round trip, store/ask_store.h) and wakes its driver when it must
 * step; *out: the tell's reply {"job_id", "job_status", "results"}. ASK_READY, ASK_FAILED or
 * ASK_ANSWERED (no database: res holds the answer). */
static int tell_record(api_context *svc, http_response *res, long long id, const tell_batch *b,
                       json_t **out, kt_error *err)
{
    int rc = ASK_FAILED;
    json_t *results = NULL;
    *out = NULL;
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return ASK_ANSWERED;
    /* The check and every record in one round trip: a bad id refuses the whole tell before
     * anything is recorded. */
    json_t *got = ask_store_tell(c, id, b->ids, b->rs, (int)b->n, err);
    api_db_release(svc, c);
    if (!got || tell_check(got, id, b, err) < 0)
        goto out;
    json_t *outcomes = json_object_get(got, "outcomes");
    int recorded = 0;
    results = json_array();
    for (size_t i = 0; results && i < b->n; i++) {
        const char *outcome = json_string_value(json_array_get(outcomes, i));
        recorded += outcome && strcmp(outcome, "recorded") == 0;
        json_array_append_new(results, json_pack("{s:I, s:s}", "id", (json_int_t)b->ids[i],
                                                 "outcome", outcome ? outcome : "lost"));
    }
    /* The driver goes on once its whole batch is told: a batch still open needs no step (a batch
     * of one always does; for larger ones the same round trip looked at the open trials, after
     * the records, and saves the runner a step of the job per tell). */
    if (recorded && !json_is_true(json_object_get(got, "open")))
        worker_system_job_told(svc->workers, id); /* its driver tells its searcher, proposes */
    const char *job_status = json_string_value(json_object_get(got, "job_status"));
    *out = results ? json_pack("{s:I, s:s, s:O}", "job_id", (json_int_t)id, "job_status",
                               job_status, "results", results)
                   : NULL;
    rc = *out ? ASK_READY : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    json_decref(results);
    json_decref(got);
    return rc;
}

/* A tell may also ask ("ask": n, or the ask's own object): the next configurations come back in
 * its reply's "ask", one round trip instead of two for a harness's loop. Such a tell waits for
 * the driver's step it causes, so it runs on a thread of its own from the start (the tell route
 * is a blocking route): deferred once told, its records would be made a second time. */
void api_job_tell(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    static const char *const fields[] = {"trials", "ask", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *reply = NULL, *asked = NULL;
    tell_batch b = {0};
    ask_opts a;
    long long id;
    int rc = ASK_FAILED;
    if (api_path_id(req, 0, "job", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0 ||
        read_body(req, 1, &body, &err) < 0 || api_check_fields(body, fields, "the tell", &err) < 0)
        goto out;
    json_t *ask = json_object_get(body, "ask");
    if (json_is_null(ask))
        ask = NULL; /* as absent, like the ask's own fields */
    if ((ask && parse_ask_opts(ask, "ask.", &a, &err) < 0) || parse_tell(body, &b, &err) < 0)
        goto out;
    if (ask && req->may_defer) {
        rc = ASK_DEFER;
        goto out;
    }
    rc = tell_record(svc, res, id, &b, &reply, &err);
    if (rc == ASK_READY && ask) {
        rc = ask_lease(svc, req, res, id, &a, &asked, &err);
        if (rc == ASK_READY && json_object_set_new(reply, "ask", asked) < 0)
            rc = kt_error_set(&err, KT_ERR_NO_MEMORY, NULL);
    }
out:
    if (rc == ASK_READY) {
        http_reply_json(res, 200, reply);
        reply = NULL;
    } else if (rc == ASK_DEFER) {
        http_response_defer(res);
    } else if (rc == ASK_FAILED) {
        api_fail(res, &err);
    }
    tell_batch_release(&b);
    json_decref(reply);
    json_decref(body);
}
