/* api/model_request — a POST /v1/models body checked before anything is stored (see
 * model_request.h). */
#include "core/device_name.h"
#include "api/model_request.h"

#include <string.h>

#include "model/predictor.h"
#include "store/model_store.h"
#include "training/trainer_surrogate.h"
#include "api/api_internal.h"

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
    if (!hyper)
        return 0;
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
static int check_surrogate(const json_t *hyper, const char *algorithm, kt_error *err)
{
    trainer_surrogate_plan plan;
    if (algorithm && strcmp(algorithm, TRAINER_SURROGATE_ALGORITHM) != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown surrogate algorithm '%.64s'", algorithm);
        kt_error_hint(err, "a surrogate's algorithm: " TRAINER_SURROGATE_ALGORITHM
                           " (the default; leave it out)");
        return -1;
    }
    if (trainer_surrogate_plan_parse(hyper, &plan, err) < 0) {
        if (!err->hint[0])
            kt_error_hint(err, "see POST /v1/models in GET /v1/openapi.json");
        return -1;
    }
    return 0;
}

int model_request_parse(const json_t *body, model_request *r, kt_error *err)
{
    static const char *const fields[] = {"kernel",    "device", "device_class",   "kind",
                                         "algorithm", "hyper",  "kernel_version", NULL};
    memset(r, 0, sizeof *r);
    /* A body that is not an object has no fields: "kernel" is missing. */
    if (api_check_fields(body, fields, "the model request", err) < 0 ||
        api_get_string(body, "kernel", 1, API_MAX_NAME, &r->kernel, err) < 0 ||
        api_get_string(body, "device", 0, API_MAX_NAME, &r->device, err) < 0 ||
        api_get_string(body, "device_class", 0, API_MAX_NAME, &r->device_class, err) < 0 ||
        api_get_string(body, "kind", 0, API_MAX_NAME, &r->kind, err) < 0 ||
        api_get_string(body, "algorithm", 0, API_MAX_NAME, &r->algorithm, err) < 0 ||
        api_get_string(body, "kernel_version", 0, API_MAX_NAME, &r->kernel_version, err) < 0)
        return -1;
    r->device_kind = kt_device_kind_of(r->device); /* the request's device, parsed once */
    r->external = r->device_kind == KT_DEVICE_EXTERNAL;
    if (!r->kind)
        r->kind = MODEL_KIND_PREDICTOR; /* the default kind */
    r->surrogate = strcmp(r->kind, MODEL_KIND_SURROGATE) == 0;
    if (!r->surrogate && strcmp(r->kind, MODEL_KIND_PREDICTOR) != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown model kind '%.64s'", r->kind);
        kt_error_hint(err, "kinds: \"predictor\" (the default: learns from tuned trials), "
                           "\"surrogate\" (learns an accel device's cost model, for mindmap)");
        return -1;
    }
    const json_t *hyper = json_object_get(body, "hyper");
    if (hyper && !json_is_null(hyper)) {
        if (!json_is_object(hyper))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "field 'hyper' must be an object of hyper-parameters");
        if (json_object_size(hyper) > MODEL_REQUEST_HYPER_MAX)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'hyper' has more than %d keys",
                                MODEL_REQUEST_HYPER_MAX);
        r->hyper = hyper;
    }
    if (r->surrogate ? check_surrogate(r->hyper, r->algorithm, err) < 0
                     : check_predictor(r->hyper, r->algorithm, err) < 0)
        return -1;
    if (!r->algorithm)
        r->algorithm = r->surrogate ? TRAINER_SURROGATE_ALGORITHM : predictor_default_kind();
    if (r->external) /* the device external names its class (checked by the caller) */
        return 0;
    if (r->kernel_version) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "field 'kernel_version' is only for device external");
        kt_error_hint(err, "leave it out: a catalog kernel's version is the hash of its source");
        return -1;
    }
    if (!r->device == !r->device_class) {
        kt_error_set(err, r->device ? KT_ERR_BAD_REQUEST : KT_ERR_MISSING_FIELD,
                     "give exactly one of 'device' and 'device_class'");
        kt_error_hint(err, "a model is trained for a device class; name a device (\"cpu\") or "
                           "its class (GET /v1/devices)");
        return -1;
    }
    return 0;
}
