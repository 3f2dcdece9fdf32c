/* POST /v1/tune — validates a tuning request field by field and queues a job. */
#include <stdio.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "search/searcher.h"
#include "space/space.h"
#include "store/job_store.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"
#include "api/tune_request.h"

/* Batch size of jobs whose strategy does not learn from results (random, exhaustive). */
#define TUNE_OPEN_LOOP_BATCH 64

int api_tune_queue(api_context *svc, PGconn *c, const tune_request *t, int unless_active,
                   long long *id_out, int *created, kt_error *err)
{
    int rc = -1;
    json_t *empty = json_object();
    target target;
    int resolved = 0;
    searcher *probe = NULL;
    *created = 0;
    if (catalog_resolve(svc->cat, t->kernel, t->device, t->problem, &target, err) < 0)
        goto out;
    resolved = 1;
    /* Building the searcher once checks the options now, not when the job starts. */
    probe = searcher_new(t->strategy, target.sp, t->options, t->seed, err);
    if (!probe)
        goto out;
    if (space_count(target.sp) == 0) {
        kt_error_set(err, KT_ERR_BAD_SPACE,
                     "kernel %s on %s has no valid configuration for this problem", t->kernel,
                     t->device);
        goto out;
    }
    job_spec spec = {
        .key = target.key,
        .problem = target.problem,
        .strategy = t->strategy,
        .options = t->options ? t->options : empty,
        .seed = t->seed,
        .budget_evaluations = t->evaluations,
        .budget_seconds = t->seconds,
        /* Strategies that learn get one configuration per worker per batch (results feed the
         * next); the others get large batches, saving a driver round trip per few trials, unless
         * a seconds budget is set (a batch may overrun it). */
        .batch_size = searcher_learns(t->strategy) || t->seconds > 0 ? svc->cfg->workers
                      : svc->cfg->workers > TUNE_OPEN_LOOP_BATCH     ? svc->cfg->workers
                                                                     : TUNE_OPEN_LOOP_BATCH,
        .space_size = space_count(target.sp),
        .history = t->history,
    };
    if (unless_active) {
        if (job_store_create_unless_active(c, &spec, id_out, created, err) < 0)
            goto out;
    } else {
        if (job_store_create(c, &spec, id_out, err) < 0)
            goto out;
        *created = 1;
    }
    if (*created)
        worker_system_wake(svc->workers);
    rc = 0;
out:
    searcher_free(probe);
    if (resolved)
        target_release(&target);
    json_decref(empty);
    return rc;
}

void api_tune(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *job = NULL;
    PGconn *c = NULL;
    tune_request t;
    long long id = 0;
    int created = 0;
    char who[32];
    if (api_authorize(svc, req, res, API_SCOPE_TUNE) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body || tune_request_parse(svc->cfg, body, &t, &err) < 0)
        goto fail;
    c = api_db_acquire(svc, res);
    if (!c || api_job_quota(svc, c, req, res, who, sizeof who) < 0)
        goto out;
    if (api_tune_queue(svc, c, &t, 0, &id, &created, &err) < 0)
        goto fail;
    api_job_quota_tag(c, id, who);
    if (!(job = job_view_get(c, id, &err)))
        goto fail;
    api_reply_job(res, 202, json_incref(job), id);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    json_decref(job);
    json_decref(body);
}
