/* /v1/jobs — list, read, trials (incremental) and cancel. */
#include <stdlib.h>
#include <string.h>

#include "store/job_store.h"
#include "store/trial_store.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"

#define JOBS_PAGE_DEFAULT   50
#define JOBS_PAGE_MAX       500
#define TRIALS_PAGE_DEFAULT 1000
#define TRIALS_PAGE_MAX     10000
/* format=compact rows are cheap: a 100,000-trial job opens in one call. */
#define TRIALS_COMPACT_MAX 100000

static const char *const job_statuses[] = {"queued", "running",   "succeeded",
                                           "failed", "cancelled", NULL};

int api_job_status_check(const char *s, const char *field, kt_error *err)
{
    if (api_in_list(s, job_statuses))
        return 0;
    kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s%sunknown job status '%.40s'", field ? field : "",
                 field ? ": " : "", s);
    kt_error_hint(err, "accepted: queued, running, succeeded, failed, cancelled");
    return -1;
}

int api_job_over(const char *status)
{
    return status && (strcmp(status, "succeeded") == 0 || strcmp(status, "failed") == 0 ||
                      strcmp(status, "cancelled") == 0);
}

void api_jobs_list(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"status", "limit", "before", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long limit, before;
    const char *status = http_query(req, "status");
    if (api_check_query(req, allowed, &err) < 0 ||
        api_query_ll(req, "limit", 1, JOBS_PAGE_MAX, JOBS_PAGE_DEFAULT, &limit, &err) < 0 ||
        api_query_ll(req, "before", 1, INT64_MAX, 0, &before, &err) < 0)
        return api_fail(res, &err);
    if (status && api_job_status_check(status, NULL, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    job_page rows;
    json_t *page = NULL;
    if (job_store_list(c, status, before, (int)limit, &rows, &err) == 0)
        page = job_view_page_json(&rows, &err);
    api_db_release(svc, c);
    job_page_release(&rows);
    if (!page)
        return api_fail(res, &err);
    http_reply_json(res, 200, page);
}

void api_job_get(void *app, const http_request *req, http_response *res)
{
    api_reply_by_id(app, req, res, "job", job_view_get);
}

void api_job_trials(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"after", "limit", "format", "trial", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long id, after, limit, trial;
    const char *format = http_query(req, "format");
    int compact = format && strcmp(format, "compact") == 0;
    if (api_path_id(req, 0, "job", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    if (format && !compact && strcmp(format, "objects") != 0) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown trials format '%.40s'", format);
        kt_error_hint(&err, "accepted: objects (the default), compact");
        return api_fail(res, &err);
    }
    if (api_query_ll(req, "after", 0, INT64_MAX, 0, &after, &err) < 0 ||
        api_query_ll(req, "limit", 1, compact ? TRIALS_COMPACT_MAX : TRIALS_PAGE_MAX,
                     TRIALS_PAGE_DEFAULT, &limit, &err) < 0)
        return api_fail(res, &err);
    /* trial=ID: that trial alone (a best entry's link, issue 31), in the objects format */
    if (api_query_ll(req, "trial", 1, INT64_MAX, 0, &trial, &err) < 0)
        return api_fail(res, &err);
    if (trial && (compact || http_query(req, "after") || http_query(req, "limit"))) {
        kt_error_set(&err, KT_ERR_BAD_REQUEST, "trial= goes alone (no after, limit or compact)");
        kt_error_hint(&err, "GET /v1/jobs/{id}/trials?trial=<trial id> answers that one trial");
        return api_fail(res, &err);
    }
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    char *text = NULL;
    json_t *page = NULL;
    if (trial)
        page = trial_store_get_json(c, id, trial, &err);
    else if (compact)
        trial_store_list_compact(c, id, after, (int)limit, &text, &err);
    else
        page = trial_store_list_json(c, id, after, (int)limit, &err);
    api_db_release(svc, c);
    if (!page && !text)
        return api_fail(res, &err);
    if (text)
        http_reply_text(res, 200, "application/json", text);
    else
        http_reply_json(res, 200, page);
    free(text);
}

void api_job_cancel(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long id;
    if (api_authorize(svc, req, res, API_SCOPE_TUNE) < 0)
        return;
    if (api_path_id(req, 0, "job", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *job = NULL;
    if (job_store_cancel(c, id, &err) == 0)
        job = job_view_get(c, id, &err);
    api_db_release(svc, c);
    if (!job)
        return api_fail(res, &err);
    worker_system_job_ended(svc->workers, id); /* stops its measurement under way; wakes */
    http_reply_json(res, 200, job);
}
