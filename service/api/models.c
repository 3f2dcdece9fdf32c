/* /v1/models — queue the training of a model for a key, list models, read one, delete one.
 * Training happens in the background (training/trainer.c, any ktuned sharing the database); the
 * body of a POST is checked by api/model_request.h (kinds "predictor" and "surrogate", their
 * algorithms and hyper-parameters, checked as the training checks them); this file resolves the key
 * through the catalog (a surrogate: an accel device only) and reads and writes the models table
 * through store/model_store. */
#include <stdio.h>
#include <string.h>

#include "core/device_name.h"
#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "core/log.h"
#include "store/model_store.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/model_request.h"
#include "training/model_confidence.h"

#define MODELS_PAGE_DEFAULT 50
#define MODELS_PAGE_MAX     500

static const char *const model_statuses[] = {"training", "ready", "failed", "superseded", NULL};

static int known_status(const char *s)
{
    for (int i = 0; model_statuses[i]; i++) {
        if (strcmp(s, model_statuses[i]) == 0)
            return 1;
    }
    return 0;
}

static int has_kernel(const json_t *device, const char *kernel)
{
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(device, "kernels"), i, k)
    {
        if (json_is_string(k) && strcmp(json_string_value(k), kernel) == 0)
            return 1;
    }
    return 0;
}

/* A device of the catalog of class device_class that offers kernel (copied into name), else
 * KT_ERR_UNKNOWN_DEVICE with the classes that offer it. */
static int device_of_class(const catalog *cat, const char *kernel, const char *device_class,
                           char *name, size_t cap, kt_error *err)
{
    json_t *devs = catalog_fleet_devices_json(cat); /* the fleet's too: an API process has none */
    char classes[512] = "";
    size_t used = 0;
    int rc = -1;
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d)
    {
        const char *cls = json_string_value(json_object_get(d, "class"));
        if (!cls || !json_is_true(json_object_get(d, "available")) || !has_kernel(d, kernel))
            continue;
        if (strcmp(cls, device_class) == 0) {
            snprintf(name, cap, "%s", json_string_value(json_object_get(d, "name")));
            rc = 0;
            break;
        }
        if (!strstr(classes, cls) && used < sizeof classes) {
            int n = snprintf(classes + used, sizeof classes - used, "%s%s", used ? ", " : "", cls);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (rc < 0) {
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE,
                     "no device of class '%.200s' offers kernel %.100s here", device_class, kernel);
        kt_error_hint(err, "device classes with kernel %.100s: %.400s (GET /v1/devices)", kernel,
                      used ? classes : "none");
    }
    json_decref(devs);
    return rc;
}

/* The model of key mk asked for (status requested, hyper its hyperparameters) and the trainer
 * woken: 0 after replying 202 with the model and its Location, or -1 with err. */
static int create_model(api_context *svc, PGconn *c, const model_key *mk, const json_t *hyper,
                        http_response *res, kt_error *err)
{
    long long id = 0;
    json_t *model = NULL;
    char location[64];
    if (model_store_create(c, mk, hyper, "requested", &id, err) < 0 ||
        !(model = model_store_get_json(c, id, err)))
        return -1;
    worker_system_wake_trainer(svc->workers);
    snprintf(location, sizeof location, "/v1/models/%lld", id);
    http_reply_json(res, 202, model);
    http_response_add_header(res, "Location", location);
    return 0;
}

/* POST /v1/models on an external key: 0 (the reply sent, or the 503 of a missing connection), or
 * -1 with err. */
static int create_external(api_context *svc, const model_request *mr, http_response *res,
                           kt_error *err)
{
    PGconn *c = NULL;
    json_t *space = NULL, *problem = NULL;
    char version[CATALOG_EXTERNAL_MAX_VERSION + 1];
    int rc = -1;
    if (mr->surrogate) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "device external has no cost model for a surrogate "
                     "to learn");
        kt_error_hint(err, "train a predictor (kind \"predictor\") for it");
        return -1;
    }
    if (catalog_external_check_names(mr->kernel_version, mr->device_class, err) < 0)
        return -1;
    if (!(c = api_db_acquire(svc, res)))
        return 0;
    int found = mr->kernel_version
                    ? 1
                    : model_store_newest_external_version(c, mr->kernel, mr->device_class, version,
                                                          sizeof version, err);
    if (found < 0)
        goto out;
    if (found == 0) {
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no job of kernel %.100s on device external, class %.128s has results to "
                     "learn from",
                     mr->kernel, mr->device_class);
        kt_error_hint(err, "tune it through ask/tell (POST /v1/tune with \"device\": "
                           "\"external\") or import a Kernel Tuner cache (ktune import) first");
        goto out;
    }
    const char *v = mr->kernel_version ? mr->kernel_version : version;
    /* The space the trainer will build, and a problem of the key (a list argument, Kernel Tuner's
     * problem_size, is learnt from element by element: training/trainer_data.c). */
    found = model_store_key_space(c, mr->kernel, mr->device_class, v, CATALOG_EXTERNAL_TOOLCHAIN,
                                  &space, &problem, err);
    if (found < 0)
        goto out;
    if (found == 0) {
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no job of kernel %.100s on device external, class %.128s, version %.64s "
                     "has a stored space",
                     mr->kernel, mr->device_class, v);
        kt_error_hint(err, "leave kernel_version out for the newest version with results");
        goto out;
    }
    model_key mk = {
        .kind = mr->kind,
        .algorithm = mr->algorithm,
        .kernel = mr->kernel,
        .device_class = mr->device_class,
        .kernel_hash = v,
        .toolchain = CATALOG_EXTERNAL_TOOLCHAIN,
    };
    rc = create_model(svc, c, &mk, mr->hyper, res, err);
out:
    api_db_release(svc, c);
    json_decref(space);
    json_decref(problem);
    return rc;
}

void api_models_create(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL;
    model_request mr;
    char class_device[API_MAX_NAME + 1];
    target t;
    int resolved = 0;
    PGconn *c = NULL;
    if (api_authorize(svc, req, res, API_SCOPE_ADMIN) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body || model_request_parse(body, &mr, &err) < 0)
        goto fail;
    const char *device = mr.device;
    int kind = mr.device_kind;
    if (mr.external) {
        /* An external key (issue 27): kernel, the caller's class, its version (kernel_version, or
         * the newest with a stored space), toolchain "external". The trainer builds the space from
         * the one stored with the key's newest job. */
        if (create_external(svc, &mr, res, &err) < 0)
            goto fail;
        goto out;
    }
    if (mr.device_class) {
        if (device_of_class(svc->cat, mr.kernel, mr.device_class, class_device, sizeof class_device,
                            &err) < 0)
            goto fail;
        device = class_device;
        kind = kt_device_kind_of(class_device); /* the class's device, parsed once */
    }
    if (mr.surrogate && kind != KT_DEVICE_ACCEL) {
        kt_error_set(&err, KT_ERR_BAD_REQUEST,
                     "device %.200s has no cost model for a surrogate to learn", device);
        kt_error_hint(&err,
                      "a surrogate learns a device's cost model, and only accel devices have "
                      "one: name an accel:<name> device (GET /v1/devices, kind accel), or "
                      "train a predictor (kind \"predictor\") for %.100s",
                      device);
        goto fail;
    }
    /* The key of the kernel on that device: its class, kernel hash and toolchain (the default
     * problem stands in; a model covers every problem of the key). */
    if (catalog_resolve_key(svc->cat, mr.kernel, device, NULL, &t, &err) < 0)
        goto fail;
    resolved = 1;
    model_key mk = {
        .kind = mr.kind,
        .algorithm = mr.algorithm,
        .kernel = t.key.kernel,
        .device_class = t.key.device_class,
        .kernel_hash = t.key.kernel_hash,
        .toolchain = t.key.toolchain,
    };
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    if (create_model(svc, c, &mk, mr.hyper, res, &err) < 0)
        goto fail;
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (resolved)
        target_release(&t);
    json_decref(body);
}

/* Adds "confidence" (training/model_confidence.h: the facts /v1/best judges a model by, with this
 * process's minimum) to a ready or superseded predictor of model; others are left as they are.
 * -1 when out of memory. */
static int add_confidence(const api_context *svc, json_t *model)
{
    const char *kind = json_string_value(json_object_get(model, "kind"));
    const char *status = json_string_value(json_object_get(model, "status"));
    if (!kind || strcmp(kind, "predictor") != 0 || !status ||
        (strcmp(status, "ready") != 0 && strcmp(status, "superseded") != 0))
        return 0;
    model_minimum min = {svc->cfg->model_min_problems, svc->cfg->model_min_accuracy};
    json_t *conf = model_confidence_json(json_object_get(model, "training"),
                                         json_object_get(model, "metrics"), &min);
    return conf ? json_object_set_new(model, "confidence", conf) : -1;
}

void api_models_list(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"kernel", "device_class", "status", "limit", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long limit;
    const char *status = http_query(req, "status");
    if (api_check_query(req, allowed, &err) < 0 ||
        api_query_ll(req, "limit", 1, MODELS_PAGE_MAX, MODELS_PAGE_DEFAULT, &limit, &err) < 0)
        return api_fail(res, &err);
    if (status && !known_status(status)) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown model status '%.40s'", status);
        kt_error_hint(&err, "accepted: training, ready, failed, superseded");
        return api_fail(res, &err);
    }
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *list = model_store_list_json(c, http_query(req, "kernel"),
                                         http_query(req, "device_class"), status, (int)limit, &err);
    api_db_release(svc, c);
    if (!list)
        return api_fail(res, &err);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(list, "models"), i, m)
    {
        if (add_confidence(svc, m) < 0) {
            json_decref(list);
            list = NULL; /* a 500 */
            break;
        }
    }
    http_reply_json(res, 200, list);
}

/* GET /v1/models/{id}: the row, with its confidence (add_confidence). */
void api_model_get(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    long long id;
    kt_error_clear(&err);
    if (api_path_id(req, 0, "model", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *model = model_store_get_json(c, id, &err);
    api_db_release(svc, c);
    if (!model) {
        if (err.code == KT_ERR_NOT_FOUND)
            kt_error_hint(&err, "GET /v1/models lists the models");
        return api_fail(res, &err);
    }
    if (add_confidence(svc, model) < 0) {
        json_decref(model);
        model = NULL; /* a 500 */
    }
    http_reply_json(res, 200, model);
}

/* DELETE /v1/models/{id} (admin, routes.c): whatever its status; what that means for a model being
 * trained, one serving predictions and a surrogate a job searches through is model_store_delete's
 * (store/model_store.h). */
static json_t *model_delete(PGconn *c, long long id, kt_error *err)
{
    model_deleted gone;
    if (model_store_delete(c, id, &gone, err) < 0)
        return NULL;
    log_info("model %lld deleted (%s %s; %lld ended jobs unlinked)", id, gone.kind, gone.status,
             gone.jobs_unlinked);
    return json_pack("{s:I,s:b,s:s,s:s,s:I}", "id", (json_int_t)id, "deleted", 1, "kind", gone.kind,
                     "status", gone.status, "jobs_unlinked", (json_int_t)gone.jobs_unlinked);
}

void api_model_delete(void *app, const http_request *req, http_response *res)
{
    api_reply_by_id(app, req, res, "model", model_delete);
}
