/* POST /v1/tune — validates a tuning request field by field and queues a job. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../search/searcher.h"
#include "../store/job_store.h"
#include "api_internal.h"
#include "handlers.h"

#define TUNE_DEFAULT_STRATEGY "random"
#define TUNE_DEFAULT_EVALUATIONS 100

typedef struct tune_request {
    const char *kernel, *device, *strategy;
    const json_t *problem, *options;
    long long evaluations;
    double seconds;
    uint64_t seed;
} tune_request;

static int parse_budget(const service *svc, const json_t *budget, tune_request *t, kt_error *err)
{
    static const char *const fields[] = {"evaluations", "seconds", NULL};
    t->evaluations = 0;
    t->seconds = 0;
    if (!budget || json_is_null(budget)) {
        t->evaluations = TUNE_DEFAULT_EVALUATIONS;
        return 0;
    }
    if (!json_is_object(budget))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'budget' must be an object like {\"evaluations\": 100, \"seconds\": 600}");
    if (api_check_fields(budget, fields, "budget", err) < 0)
        return -1;
    json_t *ev = json_object_get(budget, "evaluations");
    json_t *sec = json_object_get(budget, "seconds");
    if (ev && !json_is_null(ev)) {
        if (!json_is_integer(ev))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "budget.evaluations must be an integer");
        t->evaluations = json_integer_value(ev);
        if (t->evaluations < 1)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "budget.evaluations must be at least 1, not %lld",
                                t->evaluations);
        if (t->evaluations > svc->cfg.max_evaluations) {
            kt_error_set(err, KT_ERR_BUDGET_TOO_LARGE, "budget.evaluations %lld exceeds the maximum of %lld",
                         t->evaluations, svc->cfg.max_evaluations);
            kt_error_hint(err, "ask for at most %lld evaluations, or start ktuned with a larger --max-evaluations",
                          svc->cfg.max_evaluations);
            return -1;
        }
    }
    if (sec && !json_is_null(sec)) {
        if (!json_is_number(sec))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "budget.seconds must be a number");
        t->seconds = json_number_value(sec);
        if (!(t->seconds > 0) || !isfinite(t->seconds))
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "budget.seconds must be greater than 0");
        if (t->seconds > svc->cfg.max_seconds) {
            kt_error_set(err, KT_ERR_BUDGET_TOO_LARGE, "budget.seconds %g exceeds the maximum of %g", t->seconds,
                         svc->cfg.max_seconds);
            kt_error_hint(err, "ask for at most %g seconds, or start ktuned with a larger --max-seconds",
                          svc->cfg.max_seconds);
            return -1;
        }
    }
    if (t->evaluations == 0 && t->seconds == 0)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "budget needs 'evaluations' or 'seconds' (or both)");
    return 0;
}

static uint64_t fresh_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    }
    return seed & 0x7fffffffffffffffULL; /* stored as a non-negative bigint */
}

static int parse_tune(const service *svc, const json_t *body, tune_request *t, kt_error *err)
{
    static const char *const fields[] = {"kernel",   "device", "problem", "strategy", "strategy_options",
                                         "budget",   "seed",   NULL};
    memset(t, 0, sizeof *t);
    if (api_check_fields(body, fields, "the tune request", err) < 0)
        return -1;
    if (api_get_string(body, "kernel", 1, API_MAX_NAME, &t->kernel, err) < 0 ||
        api_get_string(body, "device", 1, API_MAX_NAME, &t->device, err) < 0 ||
        api_get_string(body, "strategy", 0, API_MAX_NAME, &t->strategy, err) < 0)
        return -1;
    if (!t->strategy)
        t->strategy = TUNE_DEFAULT_STRATEGY;
    if (!searcher_exists(t->strategy)) {
        kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "no strategy named '%s'", t->strategy);
        kt_error_hint(err, "valid strategies: %s", searcher_names());
        return -1;
    }
    t->problem = json_object_get(body, "problem");
    if (t->problem && json_is_null(t->problem))
        t->problem = NULL;
    if (t->problem && !json_is_object(t->problem))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'problem' must be an object of problem arguments");
    t->options = json_object_get(body, "strategy_options");
    if (t->options && json_is_null(t->options))
        t->options = NULL;
    if (t->options && !json_is_object(t->options))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'strategy_options' must be an object");
    if (parse_budget(svc, json_object_get(body, "budget"), t, err) < 0)
        return -1;
    json_t *seed = json_object_get(body, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0)
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'seed' must be a non-negative integer");
        t->seed = (uint64_t)json_integer_value(seed);
    } else {
        t->seed = fresh_seed();
    }
    return 0;
}

void api_tune(void *app, const http_request *req, http_response *res)
{
    service *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *job = NULL, *empty = json_object();
    tune_target target;
    int resolved = 0;
    searcher *probe = NULL;
    PGconn *c = NULL;
    tune_request t;
    if (api_authorize(svc, req, res) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body || parse_tune(svc, body, &t, &err) < 0)
        goto fail;
    if (catalog_resolve(svc->cat, t.kernel, t.device, t.problem, &target, &err) < 0)
        goto fail;
    resolved = 1;
    /* Building the searcher once checks the options now, not when the job starts. */
    probe = searcher_new(t.strategy, target.sp, t.options, t.seed, &err);
    if (!probe)
        goto fail;
    if (space_count(target.sp) == 0) {
        kt_error_set(&err, KT_ERR_BAD_SPACE, "kernel %s on %s has no valid configuration for this problem",
                     t.kernel, t.device);
        goto fail;
    }
    job_spec spec = {
        .kernel = target.kernel,
        .device = target.device,
        .device_class = target.device_class,
        .kernel_hash = target.kernel_hash,
        .problem = target.problem,
        .problem_key = target.problem_key,
        .strategy = t.strategy,
        .options = t.options ? t.options : empty,
        .seed = t.seed,
        .budget_evaluations = t.evaluations,
        .budget_seconds = t.seconds,
        .batch_size = svc->cfg.workers,
        .space_size = space_count(target.sp),
    };
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    long long id = 0;
    if (job_store_create(c, &spec, &id, &err) < 0 || !(job = job_store_get_json(c, id, &err)))
        goto fail;
    worker_system_wake(svc->workers);
    char location[64];
    snprintf(location, sizeof location, "/v1/jobs/%lld", id);
    http_reply_json(res, 202, json_incref(job));
    http_response_add_header(res, "Location", location);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    searcher_free(probe);
    if (resolved)
        tune_target_release(&target);
    json_decref(job);
    json_decref(body);
    json_decref(empty);
}
