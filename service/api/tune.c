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

void api_tune(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *job = NULL, *empty = json_object();
    target target;
    int resolved = 0;
    searcher *probe = NULL;
    PGconn *c = NULL;
    tune_request t;
    if (api_authorize(svc, req, res) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body || tune_request_parse(svc->cfg, body, &t, &err) < 0)
        goto fail;
    if (catalog_resolve(svc->cat, t.kernel, t.device, t.problem, &target, &err) < 0)
        goto fail;
    resolved = 1;
    /* Building the searcher once checks the options now, not when the job starts. */
    probe = searcher_new(t.strategy, target.sp, t.options, t.seed, &err);
    if (!probe)
        goto fail;
    if (space_count(target.sp) == 0) {
        kt_error_set(&err, KT_ERR_BAD_SPACE,
                     "kernel %s on %s has no valid configuration for this problem", t.kernel,
                     t.device);
        goto fail;
    }
    job_spec spec = {
        .key = target.key,
        .problem = target.problem,
        .strategy = t.strategy,
        .options = t.options ? t.options : empty,
        .seed = t.seed,
        .budget_evaluations = t.evaluations,
        .budget_seconds = t.seconds,
        /* Strategies that learn get one configuration per worker per batch (results feed the
         * next); the others get large batches, saving a driver round trip per few trials, unless
         * a seconds budget is set (a batch may overrun it). */
        .batch_size = searcher_learns(t.strategy) || t.seconds > 0 ? svc->cfg->workers
                      : svc->cfg->workers > TUNE_OPEN_LOOP_BATCH   ? svc->cfg->workers
                                                                   : TUNE_OPEN_LOOP_BATCH,
        .space_size = space_count(target.sp),
        .history = t.history,
    };
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    long long id = 0;
    if (job_store_create(c, &spec, &id, &err) < 0 || !(job = job_view_get(c, id, &err)))
        goto fail;
    worker_system_wake(svc->workers);
    api_reply_job(res, 202, json_incref(job), id);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    searcher_free(probe);
    if (resolved)
        target_release(&target);
    json_decref(job);
    json_decref(body);
    json_decref(empty);
}
