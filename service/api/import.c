/* POST /v1/imports — records results measured elsewhere as a finished job (strategy "import").
 * The body names the target like POST /v1/tune (kernel, device, problem; on the device external
 * also device_class, space and kernel_version, checked as POST /v1/tune checks them: a Kernel
 * Tuner cache of a kernel with no catalog entry) and lists trials in ktune's own terms; `ktune
 * import` converts Kernel Tuner caches and T4 results files into it. A body holds at most 1 MiB, so
 * a large file comes in several requests: the first creates the job (201), the next ones name it
 * ({"job": id, "trials": [...]}, 200). Every trial is checked against the target's space before
 * anything is stored; each request is one transaction. The reply is
 * {"job": <the job as GET /v1/jobs/{id} shows it>, "inserted": n, "duplicates": n}.
 *
 * Imported results are second to this service's own (issue #11): their best entries say
 * "source": "imported", any measurement replaces them, and they replace a measurement only when
 * the request says "replace_measured": true (admin scope). An import job is removed, with its
 * trials and best entries, by DELETE /v1/imports/{id} (admin; the next best trial of each key comes
 * back). A time_ms must lie in [IMPORT_MIN_MS, IMPORT_MAX_MS]: 1e-300 ms is no measurement.
 *
 * And they are not measurements (issue 26): an import answers only a plain GET /v1/best (as
 * "imported"), never source=measured, the nearest fallback, a model's training data or retrain
 * count, or a warm start, unless an admin trusts it: "trusted": true (or "replace_measured": true)
 * on the request that creates the import job. Trust belongs to the job, set once when it is made.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"
#include "core/log.h"
#include "core/trial.h"
#include "space/space.h"
#include "store/import_store.h"
#include "store/job_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"

#define IMPORT_MAX_TRIALS  100000
#define IMPORT_MAX_SOURCE  64
#define IMPORT_MAX_REPEATS 1000000000LL
/* Bound of time_ms, compile_ms, measure_ms (a year in ms) and noise_cv: sums over 100,000 trials
 * stay far inside float8, so the job's totals never overflow in SQL. */
#define IMPORT_MAX_MS 3.2e10
/* A nanosecond: no kernel launch measures less; smaller (subnormal, 1e-300) times are refused. */
#define IMPORT_MIN_MS 1e-6
#define IMPORT_MAX_CV 1e6

/* A finite number in [0, max], or def when absent or null. */
static int get_nonneg(const json_t *o, const char *key, int i, double def, double max, double *out,
                      kt_error *err)
{
    json_t *v = json_object_get(o, key);
    *out = def;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
        json_number_value(v) > max)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "trials[%d].%s must be a number from 0 to %g",
                            i, key, max);
    *out = json_number_value(v);
    return 0;
}

/* Checks one trial against the space and appends its stored form to out. */
static int check_trial(const space *sp, const json_t *t, int i, json_t *out, kt_error *err)
{
    static const char *const fields[] = {"config",     "status",     "time_ms",  "repeats",
                                         "compile_ms", "measure_ms", "noise_cv", NULL};
    char where[48];
    snprintf(where, sizeof where, "trials[%d]", i);
    if (!json_is_object(t))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s must be an object", where);
    if (api_check_fields(t, fields, where, err) < 0)
        return -1;
    const char *status_name = NULL;
    trial_status st;
    if (api_get_string(t, "status", 1, 32, &status_name, err) < 0) {
        kt_error_prefix(err, "%s", where);
        return -1;
    }
    if (trial_status_parse(status_name, &st) < 0 || !trial_status_is_final(st) ||
        st == TRIAL_ILLEGAL) { /* decided by ktune's legality check, never imported */
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s.status '%s' is not a final trial status", where,
                     status_name);
        kt_error_hint(err,
                      "accepted: ok, invalid, compile_error, runtime_error, timeout, wrong_result");
        return -1;
    }
    json_t *cfg = json_object_get(t, "config");
    if (!json_is_object(cfg))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "%s.config must be an object of parameter values", where);
    config_id cid;
    if (space_config_from_json(sp, cfg, &cid, err) < 0) {
        kt_error_prefix(err, "%s.config", where);
        return -1;
    }
    json_t *time = json_object_get(t, "time_ms");
    double time_ms = NAN;
    if (st == TRIAL_OK) {
        if (!json_is_number(time) || !isfinite(json_number_value(time)) ||
            json_number_value(time) < IMPORT_MIN_MS || json_number_value(time) > IMPORT_MAX_MS) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                         "%s.time_ms must be a number from %g to %g (milliseconds) for status ok",
                         where, IMPORT_MIN_MS, IMPORT_MAX_MS);
            kt_error_hint(err, "times are in milliseconds; a Kernel Tuner cache's \"time\" is too");
            return -1;
        }
        time_ms = json_number_value(time);
    } else if (time && !json_is_null(time)) {
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "%s.time_ms must be null or absent for status %s", where, status_name);
    }
    double compile_ms, measure_ms, noise_cv;
    if (get_nonneg(t, "compile_ms", i, 0, IMPORT_MAX_MS, &compile_ms, err) < 0 ||
        get_nonneg(t, "measure_ms", i, 0, IMPORT_MAX_MS, &measure_ms, err) < 0 ||
        get_nonneg(t, "noise_cv", i, 0, IMPORT_MAX_CV, &noise_cv, err) < 0)
        return -1;
    json_t *rep = json_object_get(t, "repeats");
    long long repeats = st == TRIAL_OK ? 1 : 0;
    if (rep && !json_is_null(rep)) {
        if (!json_is_integer(rep) || json_integer_value(rep) < 0 ||
            json_integer_value(rep) > IMPORT_MAX_REPEATS)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "%s.repeats must be an integer from 0 to %lld", where,
                                IMPORT_MAX_REPEATS);
        repeats = json_integer_value(rep);
    }
    json_t *row =
        json_pack("{s:I,s:o,s:s,s:o,s:I,s:f,s:f,s:f}", "config_id", (json_int_t)cid, "config",
                  space_config_json(sp, cid), "status", status_name, "time_ms",
                  st == TRIAL_OK ? json_real(time_ms) : json_null(), "repeats", (json_int_t)repeats,
                  "compile_ms", compile_ms, "measure_ms", measure_ms, "noise_cv", noise_cv);
    if (!row || json_array_append_new(out, row) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory checking %s", where);
    return 0;
}

static int check_trials(const space *sp, const json_t *trials, json_t *out, kt_error *err)
{
    if (!trials)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "field 'trials' is required");
    if (!json_is_array(trials))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'trials' must be an array");
    size_t n = json_array_size(trials);
    if (n == 0 || n > IMPORT_MAX_TRIALS)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field 'trials' must hold 1 to %d trials, not %zu", IMPORT_MAX_TRIALS,
                            n);
    for (size_t i = 0; i < n; i++) {
        if (check_trial(sp, json_array_get(trials, i), (int)i, out, err) < 0)
            return -1;
    }
    return 0;
}

/* The append form: {"job", "trials"}; the target is the one stored with the job, reopened. */
static int resolve_job_target(api_context *svc, PGconn *c, const json_t *body, long long *id,
                              target *target, kt_error *err)
{
    static const char *const fields[] = {"job", "trials", "replace_measured", "trusted", NULL};
    if (api_check_fields(body, fields, "an import that adds to a job", err) < 0)
        return -1;
    if (json_object_get(body, "trusted")) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "field 'trusted' is set when an import job is created; an import that adds "
                     "to a job keeps that job's trust");
        kt_error_hint(err, "leave 'trusted' out, or import these trials as a new job (without "
                           "\"job\") with \"trusted\": true (admin)");
        return -1;
    }
    json_t *jv = json_object_get(body, "job");
    if (!json_is_integer(jv))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'job' must be a positive job id");
    if (json_integer_value(jv) <= 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'job' must be a positive job id");
    *id = json_integer_value(jv);
    /* A tuning job is refused before its trials are judged (the store checks again, locked). */
    job_info job;
    job_target stored;
    int rc = -1, have_stored = 0;
    if (job_store_get(c, *id, &job, err) < 0)
        return -1;
    if (strcmp(job.strategy, "import") != 0) {
        kt_error_set(err, KT_ERR_CONFLICT,
                     "job %lld is a tuning job (strategy %s); trials can only be added to an "
                     "import job",
                     *id, job.strategy);
        goto done;
    }
    /* job_info carries no stored space: the target with it (an external import's, sql/016). */
    if (job_store_target(c, *id, &stored, err) < 0)
        goto done;
    have_stored = 1;
    if (catalog_reopen_space(svc->cat, &stored.key, stored.problem, stored.space, target, err) <
        0) {
        /* The kernel's source (or dataset) changed since the job was made: its space is another;
         * or the device's toolchain did: the job's results are another toolchain's. */
        if (err->code == KT_ERR_CONFLICT)
            kt_error_hint(err,
                          "job %lld was imported for kernel source %s; import these trials as "
                          "a new job (without \"job\")",
                          *id, job.target.key.kernel_hash);
        else if (err->code == KT_ERR_TOOLCHAIN_CHANGED)
            kt_error_hint(err,
                          "job %lld was imported for toolchain '%.130s'; import these trials as "
                          "a new job (without \"job\")",
                          *id, job.target.key.toolchain);
        goto done;
    }
    rc = 0;
done:
    if (have_stored)
        job_target_release(&stored);
    job_info_release(&job);
    return rc;
}

/* The target of a new import job: a catalog target, or on the device external (issue 27: an
 * imported Kernel Tuner cache of a kernel ktune has no folder for) the space, device_class and
 * kernel_version sent inline, checked exactly as POST /v1/tune checks them. */
static int resolve_new_target(api_context *svc, const json_t *body, const char *kernel,
                              const char *device, const json_t *problem, target *out, kt_error *err)
{
    const char *version = NULL, *klass = NULL;
    const json_t *space = json_object_get(body, "space");
    if (space && json_is_null(space))
        space = NULL;
    if (api_get_string(body, "kernel_version", 0, API_MAX_NAME, &version, err) < 0 ||
        api_get_string(body, "device_class", 0, API_MAX_NAME, &klass, err) < 0)
        return -1;
    if (!catalog_is_external(device)) {
        if (version || klass || space) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "field '%s' is only for device external (an imported space)",
                         space   ? "space"
                         : klass ? "device_class"
                                 : "kernel_version");
            kt_error_hint(err, "leave it out for device %s, or send \"device\": \"external\"",
                          device);
            return -1;
        }
        return catalog_resolve(svc->cat, kernel, device, problem, out, err);
    }
    if (catalog_external_resolve(kernel, version, klass, space, problem, 1, out, err) < 0)
        return -1;
    if (space_count(out->sp) == 0) {
        target_release(out);
        kt_error_set(err, KT_ERR_BAD_SPACE, "space: no configuration satisfies the restrictions");
        kt_error_hint(err, "every imported trial must be a configuration of the space");
        return -1;
    }
    return 0;
}

void api_import(void *app, const http_request *req, http_response *res)
{
    static const char *const fields[] = {
        "kernel",  "device",         "problem",      "source", "trials", "replace_measured",
        "trusted", "kernel_version", "device_class", "space",  NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *rows = json_array(), *job = NULL, *replace = NULL, *trusted = NULL;
    target target;
    int resolved = 0;
    PGconn *c = NULL;
    long long id = 0;
    const char *kernel = NULL, *device = NULL, *source = NULL;
    if (api_authorize(svc, req, res, API_SCOPE_TUNE) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body)
        goto fail;
    replace = json_object_get(body, "replace_measured");
    if (replace && !json_is_boolean(replace)) {
        kt_error_set(&err, KT_ERR_WRONG_TYPE, "field 'replace_measured' must be true or false");
        goto fail;
    }
    trusted = json_object_get(body, "trusted");
    if (trusted && !json_is_boolean(trusted)) {
        kt_error_set(&err, KT_ERR_WRONG_TYPE, "field 'trusted' must be true or false");
        goto fail;
    }
    /* Outranking this service's own measurements, or counting as them (source=measured, nearest,
     * models, warm starts), is an admin's decision. */
    if ((json_is_true(replace) || json_is_true(trusted)) &&
        api_authorize(svc, req, res, API_SCOPE_ADMIN) < 0)
        goto out;
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    db_set_limit(c, DB_LIMIT_MS); /* up to 100,000 trials in one statement: the store's limit */
    if (json_object_get(body, "job")) {
        if (resolve_job_target(svc, c, body, &id, &target, &err) < 0)
            goto fail;
    } else {
        const json_t *problem = json_object_get(body, "problem");
        if (api_check_fields(body, fields, "the import request", &err) < 0 ||
            api_get_string(body, "kernel", 1, API_MAX_NAME, &kernel, &err) < 0 ||
            api_get_string(body, "device", 1, API_MAX_NAME, &device, &err) < 0 ||
            api_get_string(body, "source", 0, IMPORT_MAX_SOURCE, &source, &err) < 0)
            goto fail;
        if (problem && !json_is_null(problem) && !json_is_object(problem)) {
            kt_error_set(&err, KT_ERR_WRONG_TYPE,
                         "field 'problem' must be an object of problem arguments");
            goto fail;
        }
        if (resolve_new_target(svc, body, kernel, device, json_is_null(problem) ? NULL : problem,
                               &target, &err) < 0)
            goto fail;
    }
    resolved = 1;
    if (check_trials(target.sp, json_object_get(body, "trials"), rows, &err) < 0)
        goto fail;
    import_target t = {
        .key = target.key,
        .problem = target.problem,
        .source = source,
        .space_size = space_count(target.sp),
        .replace_measured = json_is_true(replace),
        .trusted = json_is_true(trusted),
        .space = target.space_def, /* an external target's inline space, kept with the job */
    };
    import_counts counts;
    int created = id == 0;
    if (import_store_add(c, &t, rows, &id, &counts, &err) < 0 || !(job = job_view_get(c, id, &err)))
        goto fail;
    api_reply_job(res, created ? 201 : 200,
                  json_pack("{s:O,s:I,s:I}", "job", job, "inserted", (json_int_t)counts.inserted,
                            "duplicates", (json_int_t)counts.duplicates),
                  id);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (resolved)
        target_release(&target);
    json_decref(job);
    json_decref(rows);
    json_decref(body);
}

/* DELETE /v1/imports/{id} (admin, routes.c): the import job, its trials and its best entries. */
static json_t *import_delete(PGconn *c, long long id, kt_error *err)
{
    import_removed removed;
    db_set_limit(c, DB_LIMIT_MS); /* an import's trials and best entries go in one transaction */
    if (import_store_remove(c, id, &removed, err) < 0) {
        if (err->code == KT_ERR_CONFLICT)
            kt_error_hint(err, "a tuning job is cancelled with DELETE /v1/jobs/%lld", id);
        return NULL;
    }
    log_info("import job %lld removed: %lld trials, %lld best entries (%lld put back from other "
             "jobs)",
             id, removed.trials, removed.best_removed, removed.best_restored);
    return json_pack("{s:I,s:b,s:I,s:I,s:I}", "job", (json_int_t)id, "removed", 1, "trials",
                     (json_int_t)removed.trials, "best_removed", (json_int_t)removed.best_removed,
                     "best_restored", (json_int_t)removed.best_restored);
}

void api_import_delete(void *app, const http_request *req, http_response *res)
{
    api_reply_by_id(app, req, res, "import job", import_delete);
}
