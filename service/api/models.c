/* /v1/models — queue the training of a model for a key, list models, read one. Training happens in
 * the background (worker/trainer.c, any ktuned sharing the database); this file validates requests,
 * resolves the key through the catalog and reads the models table through store/model_store.
 * Kinds: "predictor" (algorithm: predictor_kinds(); hyper numbers, checked here as the training
 * checks them) and "surrogate" (algorithm "mlp"; an accel device only; hyper checked here in full:
 * worker/trainer_surrogate.h). */
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "model/predictor.h"
#include "store/model_store.h"
#include "worker/trainer_surrogate.h"
#include "worker/worker.h"
#include "api/api_internal.h"
#include "api/handlers.h"

#define MODELS_PAGE_DEFAULT 50
#define MODELS_PAGE_MAX     500
#define MODEL_KIND          "predictor"
#define MODEL_HYPER_MAX     32 /* keys of "hyper" */

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

/* A predictor's algorithm (NULL: the default) and hyper (numbers; keys and ranges as the training
 * checks them, predictor_hyper_check). */
static int check_predictor(const json_t *hyper, const char *algorithm, kt_error *err)
{
    if (algorithm && !predictor_kind_exists(algorithm)) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown algorithm '%.64s'", algorithm);
        kt_error_hint(err, "algorithms: %s (default %s)", predictor_kinds(),
                      predictor_default_kind());
        return -1;
    }
    if (!hyper || json_is_null(hyper))
        return 0;
    if (!json_is_object(hyper))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'hyper' must be an object of hyper-parameters");
    if (json_object_size(hyper) > MODEL_HYPER_MAX)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'hyper' has more than %d keys",
                            MODEL_HYPER_MAX);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)hyper, key, v)
    {
        if (!json_is_number(v)) {
            kt_error_set(err, KT_ERR_WRONG_TYPE, "hyper.%.64s must be a number", key);
            kt_error_hint(err, "e.g. {\"top\": 8, \"beam\": 32}; see GET /v1/openapi.json");
            return -1;
        }
    }
    /* Keys and ranges as the training will check them, before the row is stored: a number out of
     * range (1e300) stored once made every GET /v1/models fail. */
    return predictor_hyper_check(algorithm, hyper, err);
}

/* A surrogate's algorithm (NULL: mlp) and hyper, checked now: the whole plan of its training. */
static int check_surrogate(const json_t *body, const char *algorithm, kt_error *err)
{
    trainer_surrogate_plan plan;
    if (algorithm && strcmp(algorithm, TRAINER_SURROGATE_ALGORITHM) != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown surrogate algorithm '%.64s'", algorithm);
        kt_error_hint(err, "a surrogate's algorithm: " TRAINER_SURROGATE_ALGORITHM
                           " (the default; leave it out)");
        return -1;
    }
    if (trainer_surrogate_plan_parse(json_object_get(body, "hyper"), &plan, err) < 0) {
        if (!err->hint[0])
            kt_error_hint(err, "see POST /v1/models in GET /v1/openapi.json");
        return -1;
    }
    return 0;
}

void api_models_create(void *app, const http_request *req, http_response *res)
{
    static const char *const fields[] = {"kernel", "device", "device_class", "kind", "algorithm",
                                         "hyper",  NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    json_t *body = NULL, *model = NULL;
    const char *kernel, *device, *device_class, *kind, *algorithm;
    char class_device[API_MAX_NAME + 1];
    target t;
    int resolved = 0;
    long long id = 0;
    PGconn *c = NULL;
    if (api_authorize(svc, req, res, API_SCOPE_ADMIN) < 0)
        goto out;
    body = http_parse_json_body(req, &err);
    if (!body || api_check_fields(body, fields, "the model request", &err) < 0 ||
        api_get_string(body, "kernel", 1, API_MAX_NAME, &kernel, &err) < 0 ||
        api_get_string(body, "device", 0, API_MAX_NAME, &device, &err) < 0 ||
        api_get_string(body, "device_class", 0, API_MAX_NAME, &device_class, &err) < 0 ||
        api_get_string(body, "kind", 0, API_MAX_NAME, &kind, &err) < 0 ||
        api_get_string(body, "algorithm", 0, API_MAX_NAME, &algorithm, &err) < 0)
        goto fail;
    if (!kind)
        kind = MODEL_KIND;
    int surrogate = strcmp(kind, TRAINER_SURROGATE_KIND) == 0;
    if (!surrogate && strcmp(kind, MODEL_KIND) != 0) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown model kind '%.64s'", kind);
        kt_error_hint(&err, "kinds: \"predictor\" (the default: learns from tuned trials), "
                            "\"surrogate\" (learns an accel device's cost model, for mindmap)");
        goto fail;
    }
    if (surrogate ? check_surrogate(body, algorithm, &err) < 0
                  : check_predictor(json_object_get(body, "hyper"), algorithm, &err) < 0)
        goto fail;
    if (!algorithm)
        algorithm = surrogate ? TRAINER_SURROGATE_ALGORITHM : predictor_default_kind();
    if (!device == !device_class) {
        kt_error_set(&err, device ? KT_ERR_BAD_REQUEST : KT_ERR_MISSING_FIELD,
                     "give exactly one of 'device' and 'device_class'");
        kt_error_hint(&err, "a model is trained for a device class; name a device (\"cpu\") or "
                            "its class (GET /v1/devices)");
        goto fail;
    }
    if (device_class) {
        if (device_of_class(svc->cat, kernel, device_class, class_device, sizeof class_device,
                            &err) < 0)
            goto fail;
        device = class_device;
    }
    if (surrogate && strncmp(device, "accel:", 6) != 0) {
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
    if (catalog_resolve_key(svc->cat, kernel, device, NULL, &t, &err) < 0)
        goto fail;
    resolved = 1;
    model_key mk = {
        .kind = kind,
        .algorithm = algorithm,
        .kernel = t.key.kernel,
        .device_class = t.key.device_class,
        .kernel_hash = t.key.kernel_hash,
        .toolchain = t.key.toolchain,
    };
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    const json_t *hyper = json_object_get(body, "hyper");
    if (model_store_create(c, &mk, json_is_object(hyper) ? hyper : NULL, "requested", &id, &err) <
            0 ||
        !(model = model_store_get_json(c, id, &err)))
        goto fail;
    worker_system_wake_trainer(svc->workers);
    char location[64];
    snprintf(location, sizeof location, "/v1/models/%lld", id);
    http_reply_json(res, 202, json_incref(model));
    http_response_add_header(res, "Location", location);
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (resolved)
        target_release(&t);
    json_decref(model);
    json_decref(body);
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
    http_reply_json(res, 200, list);
}

void api_model_get(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long id;
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
    http_reply_json(res, 200, model);
}
