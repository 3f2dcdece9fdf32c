/* GET /v1/best?kernel=K&device=external&device_class=C&<problem>... — the best configuration an
 * external job's harness measured (issue 27), for the version named (kernel_version=) or else the
 * newest version with a result for the problem; the answer says which (kernel_hash, and
 * kernel_version beside it). Measurements answer, and imports (an imported Kernel Tuner cache) as
 * for every device: an untrusted one only a plain request, as "imported", a trusted one also
 * source=measured. A problem without a result is answered by the key's newest ready model
 * (source=predicted asks for that alone; its space is the one stored with the key's newest job).
 * These answers are not kept in the answer cache (they are read each time). */
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "store/best_store.h"
#include "store/model_store.h"
#include "training/model_cache.h"
#include "api/api_internal.h"
#include "api/best_cached.h"
#include "api/handlers.h"

/* A ready model's answer for t (a key-only target): 1 (*out), 0 no model (or no candidate), -1
 * err. A prediction that is not cached needs the space: the one stored with the key's newest job,
 * built for this problem. */
static int predicted(api_context *svc, PGconn *c, const target *t, const json_t *problem,
                     int accept_weak, json_t **out, json_t **weak, kt_error *err)
{
    json_t *pred = NULL, *space = NULL, *stored_problem = NULL;
    if (!svc->models)
        return 0;
    int rc = model_cache_predict(svc->models, c, t, 1, &pred, err);
    if (rc == MODEL_CACHE_NEEDS_SPACE) {
        target full;
        rc = model_store_key_space(c, t->key.kernel, t->key.device_class, t->key.kernel_hash,
                                   t->key.toolchain, &space, &stored_problem, err);
        if (rc == 1 &&
            catalog_external_resolve(t->key.kernel, t->key.kernel_hash, t->key.device_class, space,
                                     problem, 1, &full, err) < 0)
            rc = -1;
        if (rc == 1) {
            rc = model_cache_predict(svc->models, c, &full, 1, &pred, err);
            target_release(&full);
        }
    }
    /* A weak model (issue 31, training/model_confidence.h): served only with accept=weak. */
    json_t *conf = rc == 1 ? json_object_get(pred, "confidence") : NULL;
    if (conf && json_is_true(json_object_get(conf, "weak")) && !accept_weak) {
        *weak =
            json_pack("{s:O, s:O}", "model", json_object_get(pred, "model"), "confidence", conf);
        rc = 0;
    }
    if (rc == 1) {
        *out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s}", "kernel", t->key.kernel,
                         "device", t->key.device, "device_class", t->key.device_class,
                         "kernel_hash", t->key.kernel_hash, "toolchain", t->key.toolchain,
                         "problem", t->problem, "source", "predicted", "origin", "predicted");
        if (!*out || json_object_update(*out, pred) < 0)
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory writing a prediction");
    }
    json_decref(pred);
    json_decref(space);
    json_decref(stored_problem);
    return rc == MODEL_CACHE_NEEDS_SPACE ? 0 : rc;
}

/* The query's own checks: a device class, a source of the two an external kernel has, names the
 * catalog accepts. 0, or -1 with err naming the parameter. */
static int check_query(const char *kernel, const char *device_class, const char *version,
                       const char *source, kt_error *err)
{
    if (!device_class) {
        kt_error_set(err, KT_ERR_MISSING_FIELD,
                     "query parameter 'device_class' is required with device=external");
        kt_error_hint(err,
                      "the class your harness measured on: GET /v1/best?kernel=%s&device="
                      "external&device_class=laptop-rtx4060&n=1000000",
                      kernel);
        return -1;
    }
    if (source && strcmp(source, "measured") != 0 && strcmp(source, "predicted") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "source=%.40s: an external kernel is answered by its results or a model",
                     source);
        kt_error_hint(err, "leave source out, or send source=measured or source=predicted");
        return -1;
    }
    return catalog_external_check_names(version, device_class, err);
}

/* No version named: the newest with a result for the problem (want_results), else the newest with
 * a stored space, for a model (want_model), into newest. 0, or -1 with err (404 no_best when none
 * has either). */
static int newest_version(PGconn *c, const char *kernel, const char *device_class,
                          const char *problem_key, int measured_only, int want_results,
                          int want_model, char *newest, size_t cap, kt_error *err)
{
    int found = want_results
                    ? best_store_newest_version(c, kernel, device_class, CATALOG_EXTERNAL_TOOLCHAIN,
                                                problem_key, measured_only, newest, cap, err)
                    : 0;
    /* A problem never tuned: the newest version with a stored space, for a model. */
    if (found == 0 && want_model)
        found = model_store_newest_external_version(c, kernel, device_class, newest, cap, err);
    if (found < 0)
        return -1;
    if (found == 0) {
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no version of kernel %.100s measured on device class %.128s has a "
                     "result for problem %.200s",
                     kernel, device_class, problem_key);
        kt_error_hint(err,
                      "tune it: POST /v1/tune {\"kernel\": \"%.100s\", \"device\": "
                      "\"external\", \"device_class\": \"%.128s\", \"space\": {...}, "
                      "\"problem\": %.200s}, then measure through ask/tell",
                      kernel, device_class, problem_key);
        return -1;
    }
    return 0;
}

/* The answer for the key t: its result (want_results), else a ready model's prediction
 * (want_model). A new reference, or NULL with err (404 no_best for none). */
static json_t *answer_of(api_context *svc, PGconn *c, const target *t, const json_t *canon,
                         int measured_only, int want_results, int want_model, int accept_weak,
                         json_t **weak, kt_error *err)
{
    json_t *answer = want_results ? best_store_get_json(c, &t->key, measured_only, err) : NULL;
    if (answer || !want_model || (want_results && err->code != KT_ERR_NO_BEST))
        return answer;
    kt_error e;
    kt_error_clear(&e);
    int got = predicted(svc, c, t, canon, accept_weak, &answer, weak, &e);
    if (got < 0) {
        *err = e;
        return NULL;
    }
    if (*weak) {
        kt_error_set(
            err, KT_ERR_NO_BEST,
            "no result of kernel %.100s on device external, class %.128s, version %.64s "
            "for this problem, and model %lld of the key is weak: %s",
            t->key.kernel, t->key.device_class, t->key.kernel_hash,
            (long long)json_integer_value(json_object_get(json_object_get(*weak, "model"), "id")),
            json_string_value(json_object_get(json_object_get(*weak, "confidence"), "why")));
        kt_error_hint(err, "add accept=weak to get its prediction anyway (\"source\": "
                           "\"predicted\", confidence.weak true), or tune this problem");
        return NULL;
    }
    if (got == 0 && !want_results)
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no ready model of kernel %.100s on device external, class %.128s, "
                     "version %.64s",
                     t->key.kernel, t->key.device_class, t->key.kernel_hash);
    return answer;
}

void api_best_external(api_context *svc, const http_request *req, http_response *res,
                       const char *kernel, const char *device_class, const char *version,
                       const char *source, const char *accept, const json_t *problem)
{
    kt_error err;
    kt_error_clear(&err);
    PGconn *c = NULL;
    target t;
    int have = 0;
    /* As for every device: an untrusted import answers a plain request (origin "imported"),
     * source=measured only measurements and trusted imports. */
    int measured_only = source != NULL;
    int want_results = !source || strcmp(source, "measured") == 0;
    int want_model = !source || strcmp(source, "predicted") == 0;
    json_t *answer = NULL, *canon = NULL, *weak = NULL;
    char *problem_key = NULL, newest[CATALOG_EXTERNAL_MAX_VERSION + 1];
    if (accept && strcmp(accept, "weak") != 0) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown accept '%.40s'", accept);
        kt_error_hint(&err,
                      "accept=weak (serve a weak model's prediction); leave it out otherwise");
        goto fail;
    }
    if (check_query(kernel, device_class, version, source, &err) < 0 ||
        !(canon = catalog_external_problem(problem, &problem_key, &err)))
        goto fail;
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    if (!version) {
        if (newest_version(c, kernel, device_class, problem_key, measured_only, want_results,
                           want_model, newest, sizeof newest, &err) < 0)
            goto fail;
        version = newest;
    }
    if (catalog_external_key(kernel, version, device_class, canon, &t, &err) < 0)
        goto fail;
    have = 1;
    answer = answer_of(svc, c, &t, canon, measured_only, want_results, want_model, accept != NULL,
                       &weak, &err);
    if (!answer)
        goto fail;
    json_object_set_new(answer, "kernel_version", json_string(t.key.kernel_hash));
    http_reply_json(res, 200, json_incref(answer));
    best_reply_etag(req, res); /* an ETag as for every answer (304 when If-None-Match names it) */
    goto out;
fail:
    if (weak)
        http_reply_error_with(res, &err, "weak_model", weak);
    else
        api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (have)
        target_release(&t);
    json_decref(weak);
    json_decref(answer);
    json_decref(canon);
    free(problem_key);
}
