/* POST /v1/tune — validates a tuning request field by field and queues a job. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_name.h"
#include "catalog/catalog.h"
#include "catalog/kernel_spec.h"
#include "search/searcher.h"
#include "space/space.h"
#include "store/job_store.h"
#include "store/model_store.h"
#include "worker/final_pick.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"
#include "api/tune_request.h"

/* Batch size of jobs whose strategy does not learn from results (random, exhaustive). */
#define TUNE_OPEN_LOOP_BATCH 64

/* The global admission of new jobs (all clients together): 0, or -1 with 429 too_many_requests
 * (the caller adds Retry-After). A job's share: its budget, or its space size when smaller (as in
 * job_store_queue_load). Checked before the insert, not with it: concurrent submissions may pass
 * a limit by at most one job per HTTP thread. */
static int admit(const api_context *svc, PGconn *c, long long evaluations, kt_error *err)
{
    long long queued = 0, pending = 0;
    if (job_store_queue_load(c, &queued, &pending, err) < 0)
        return -1;
    if (queued >= svc->cfg->max_queued_jobs) {
        kt_error_set(err, KT_ERR_TOO_MANY_REQUESTS, "%lld jobs are queued already (at most %lld)",
                     queued, svc->cfg->max_queued_jobs);
        kt_error_hint(err, "retry once jobs have started (see GET /v1/jobs?status=queued), or "
                           "start ktuned with a larger --max-queued-jobs");
        return -1;
    }
    if (pending + evaluations > svc->cfg->max_queued_evaluations) {
        kt_error_set(err, KT_ERR_TOO_MANY_REQUESTS,
                     "%lld evaluations are queued already; %lld more would pass the limit of %lld",
                     pending, evaluations, svc->cfg->max_queued_evaluations);
        kt_error_hint(err, "ask for a smaller budget, retry once jobs have finished, or start "
                           "ktuned with a larger --max-queued-evaluations");
        return -1;
    }
    return 0;
}

/* A strategy that searches through a surrogate (mindmap) needs a ready one of the target's key:
 * 0, or -1 with 409 no_model (hint: the request that trains one) or a database error. The job
 * records which one it uses when it starts (worker/job_driver.c). */
static int require_surrogate(PGconn *c, const tune_request *t, const target *tg, kt_error *err)
{
    model_ready ready;
    int found =
        model_store_latest_ready(c, MODEL_KIND_SURROGATE, tg->key.kernel, tg->key.device_class,
                                 tg->key.kernel_hash, tg->key.toolchain, 0, &ready, err);
    if (found != 0)
        return found < 0 ? -1 : 0;
    kt_error_set(err, KT_ERR_NO_MODEL, "strategy %s needs a trained surrogate for %s on %s",
                 t->strategy, t->kernel, t->device);
    kt_error_hint(err,
                  "train one: POST /v1/models {\"kind\": \"surrogate\", \"kernel\": \"%s\", "
                  "\"device\": \"%s\"}, then submit again once GET /v1/models/{id} says ready",
                  t->kernel, t->device);
    return -1;
}

/* A metric objective (core/objective.h) must name a metric the job's trials will carry: on cpu
 * and cuda devices one the kernel version declares (its spec's "metrics", computed for every ok
 * trial); on the external device any name (the harness tells metrics; an ok trial told without it
 * is a failure for the objective); replay and accel devices report no metrics. The final pick
 * re-measures times only: with a metric objective it is off, and asking for it is a 501. 0, or -1
 * with err naming the field. */
static int check_objective(const api_context *svc, const tune_request *t, const target *tg,
                           int external, kt_error *err)
{
    const kt_objective *o = &t->objective;
    if (kt_objective_is_time(o))
        return 0;
    if (t->final_remeasure > 0) {
        kt_error_set(err, KT_ERR_NOT_IMPLEMENTED,
                     "final_remeasure: the final pick re-measures times, not metric %s "
                     "(objective.metric)",
                     o->metric);
        kt_error_hint(err, "leave final_remeasure out (0 with a metric objective), or leave the "
                           "objective out to minimise the time with a final pick");
        return -1;
    }
    if (external)
        return 0;
    const kernel_spec *k =
        tune_device_deterministic((int)tg->key.dev.kind)
            ? NULL
            : catalog_find_kernel_version(svc->cat, tg->key.kernel, tg->key.kernel_hash);
    if (!k) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "objective.metric: device %s reports no metrics, so '%s' cannot be the "
                     "objective",
                     t->device, o->metric);
        kt_error_hint(err, "metrics come from a kernel's spec on cpu and cuda devices, or from "
                           "the harness on the external device; leave the objective out to "
                           "minimise the time");
        return -1;
    }
    char names[KSPEC_MAX_METRICS * (KSPEC_MAX_NAME + 2) + 1] = "";
    size_t len = 0;
    for (int i = 0; i < k->n_metrics; i++) {
        if (strcmp(k->metrics[i].name, o->metric) == 0)
            return 0;
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                k->metrics[i].name);
        if (len >= sizeof names)
            len = sizeof names - 1;
    }
    kt_error_set(err, KT_ERR_OUT_OF_RANGE, "objective.metric: kernel %s declares no metric '%s'",
                 t->kernel, o->metric);
    if (k->n_metrics > 0)
        kt_error_hint(err,
                      "its metrics: %s (GET /v1/kernels); or leave the objective out to "
                      "minimise the time",
                      names);
    else
        kt_error_hint(err, "it declares none: a spec's \"metrics\" lists them (kernels/README.md); "
                           "or leave the objective out to minimise the time");
    return -1;
}

/* The request's target, with its space: the external device's from the request (issue 27: stored
 * with the job, the caller's harness measures through ask/tell), elsewhere the catalog's, of the
 * version kernel_version names (NULL: the newest ready). 0 (*out, *external), or -1 with err. */
static int resolve_target(const api_context *svc, const tune_request *t, target *out, int *external,
                          kt_error *err)
{
    int oom;
    json_t *problem = tune_request_problem(t, &oom);
    if (oom)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the problem");
    *external = t->device_kind == KT_DEVICE_EXTERNAL;
    int rc = -1;
    if (*external && t->neural)
        kt_error_set(err, KT_ERR_BAD_REQUEST, "field 'neural' is not for device external");
    else
        rc = *external ? catalog_external_resolve(t->kernel, t->kernel_version, t->device_class,
                                                  t->space, problem, 1, out, err)
                       : catalog_resolve_version(svc->cat, t->kernel, t->kernel_version, t->device,
                                                 problem, 1, out, err);
    json_decref(problem);
    return rc;
}

/* Building the searcher once checks the options now, not when the job starts; "start": "default"
 * is resolved as the job driver will (the job keeps the options as sent). Then what the strategy
 * and the objective need of the target. 0, or -1 with err. */
static int check_search(const api_context *svc, PGconn *c, const tune_request *t, const target *tg,
                        int external, kt_error *err)
{
    int rc = -1;
    searcher *probe = NULL;
    json_t *def_config = catalog_default_config(svc->cat, tg);
    json_t *options = searcher_options_resolve_start(t->options, def_config, err);
    if (!options && t->options) /* NULL from options: no default configuration to start at */
        goto out;
    probe = searcher_new(t->strategy, tg->sp, options, t->seed, err);
    if (!probe)
        goto out;
    if (searcher_needs_surrogate(t->strategy) && require_surrogate(c, t, tg, err) < 0)
        goto out;
    if (check_objective(svc, t, tg, external, err) < 0)
        goto out;
    rc = 0;
out:
    searcher_free(probe);
    json_decref(options);
    json_decref(def_config);
    return rc;
}

/* The final pick's count: on by default where a measurement is real; a replayed time (or an accel
 * device's cost model) is the same every time, so asking to re-measure one is refused. An
 * external harness re-measures only when asked to (its re-measurements are asked like any
 * trial). 0 (*out), or -1 with err. */
static int final_remeasure_of(const tune_request *t, const target *tg, int external, int *out,
                              kt_error *err)
{
    int by_time = kt_objective_is_time(&t->objective);
    int measures = !tune_device_deterministic((int)tg->key.dev.kind);
    *out = t->final_remeasure >= 0            ? t->final_remeasure
           : measures && !external && by_time ? FINAL_PICK_DEFAULT_COUNT
                                              : 0;
    if (*out > 0 && !measures) {
        int replay = tg->key.dev.kind == KT_DEVICE_REPLAY;
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "field 'final_remeasure' must be 0 on %s device %s, not %d",
                     replay ? "replay" : "accel", t->device, *out);
        kt_error_hint(err,
                      "%s, so re-measuring changes nothing; leave final_remeasure out or send 0",
                      replay ? "a replay device answers every measurement with the recorded time"
                             : "an accel device's cost model gives a mapping the same cost every "
                               "time");
        return -1;
    }
    return 0;
}

/* Writes the job of spec once the disk and the admission allow it: *created 1 when a job was
 * made (unless_active: 0 when one of the key was queued or running already, *id_out is it). */
static int create_job(api_context *svc, PGconn *c, const tune_request *t, const job_spec *spec,
                      int unless_active, long long *id_out, int *created, kt_error *err)
{
    /* A full or read-only disk refuses the job now (507) rather than queue one that cannot run. */
    if (db_pool_check_writable(svc->db, err) < 0)
        return -1;
    long long space =
        spec->space_size > (uint64_t)INT64_MAX ? INT64_MAX : (long long)spec->space_size;
    long long want = t->evaluations > 0 ? t->evaluations : JOB_SECONDS_ONLY_EVALUATIONS;
    long long share = want < space ? want : space;
    if (admit(svc, c, share, err) < 0)
        return -1;
    if (unless_active)
        return job_store_create_unless_active(c, spec, id_out, created, err) < 0 ? -1 : 0;
    if (job_store_create(c, spec, id_out, err) < 0)
        return -1;
    *created = 1;
    return 0;
}

int api_tune_queue(api_context *svc, PGconn *c, const tune_request *t, const char *submitter,
                   int unless_active, long long *id_out, int *created, kt_error *err)
{
    int rc = -1;
    json_t *empty = json_object();
    target target;
    int resolved = 0, external = 0, final_remeasure = 0;
    *created = 0;
    int parallel = t->parallel > 0                         ? t->parallel
                   : svc->cfg->workers > TUNE_MAX_PARALLEL ? TUNE_MAX_PARALLEL
                                                           : svc->cfg->workers;
    if (resolve_target(svc, t, &target, &external, err) < 0)
        goto out;
    resolved = 1;
    if (check_search(svc, c, t, &target, external, err) < 0 ||
        final_remeasure_of(t, &target, external, &final_remeasure, err) < 0)
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
        /* Strategies that learn get "parallel" configurations per batch (results feed the next;
         * by default one per measurement thread of this process); the others get large
         * batches, saving a driver round trip per few trials, unless a seconds budget is set (a
         * batch may overrun it). Every worker of the class may claim a batch's trials. */
        .parallel = parallel,
        .batch_size = searcher_learns(t->strategy) || t->seconds > 0 ? parallel
                      : parallel > TUNE_OPEN_LOOP_BATCH              ? parallel
                                                                     : TUNE_OPEN_LOOP_BATCH,
        .space_size = space_count(target.sp),
        .history = t->history,
        .final_remeasure = final_remeasure,
        .final_rounds = t->final_rounds > 0 ? t->final_rounds : FINAL_PICK_DEFAULT_ROUNDS,
        .submitter = submitter,
        .space = target.space_def,
        .objective = &t->objective,
    };
    if (create_job(svc, c, t, &spec, unless_active, id_out, created, err) < 0)
        goto out;
    if (*created)
        worker_system_wake(svc->workers);
    rc = 0;
out:
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
    if (api_tune_queue(svc, c, &t, who, 0, &id, &created, &err) < 0)
        goto fail;
    if (!(job = job_view_get(c, id, &err)))
        goto fail;
    api_reply_job(res, 202, json_incref(job), id);
    goto out;
fail:
    if (err.code == KT_ERR_TOO_MANY_REQUESTS)
        http_response_add_header(res, "Retry-After", "5");
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    json_decref(job);
    json_decref(body);
}
