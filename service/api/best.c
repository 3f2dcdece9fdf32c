/* /v1/best — the best known configuration of a kernel on a device for a problem, and the browsable
 * table. Problem arguments come as query parameters: numbers, comma-separated lists of numbers, or
 * strings. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "store/best_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"

#define BEST_LIST_DEFAULT     100
#define BEST_LIST_MAX         1000
#define BEST_MAX_PROBLEM_ARGS 32

static json_t *scalar_from_text(const char *s, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return json_stringn(s, len);
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    long long i = strtoll(buf, &end, 10);
    if (!errno && *end == '\0')
        return json_integer(i);
    errno = 0;
    double d = strtod(buf, &end);
    if (!errno && *end == '\0')
        return json_real(d);
    return json_stringn(s, len);
}

/* "4096" -> 4096, "4096,4096" -> [4096, 4096], "abc" -> "abc". */
static json_t *value_from_text(const char *s)
{
    if (!strchr(s, ','))
        return scalar_from_text(s, strlen(s));
    json_t *arr = json_array();
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        json_array_append_new(arr, scalar_from_text(p, len));
        if (!comma)
            break;
        p = comma + 1;
    }
    return arr;
}

typedef struct problem_collect {
    json_t *problem;
    int count;
} problem_collect;

static int collect_problem_arg(void *ctx, const char *key, const char *value)
{
    problem_collect *pc = ctx;
    if (strcmp(key, "kernel") == 0 || strcmp(key, "device") == 0)
        return 0;
    if (++pc->count > BEST_MAX_PROBLEM_ARGS)
        return 1;
    json_object_set_new(pc->problem, key, value_from_text(value ? value : ""));
    return 0;
}

void api_best_get(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    const char *kernel = http_query(req, "kernel");
    const char *device = http_query(req, "device");
    problem_collect pc = {json_object(), 0};
    target target;
    int resolved = 0;
    json_t *best = NULL;
    PGconn *c = NULL;
    if (!kernel || !device) {
        kt_error_set(&err, KT_ERR_MISSING_FIELD,
                     "query parameters 'kernel' and 'device' are required");
        kt_error_hint(&err,
                      "GET /v1/best?kernel=convolution&device=replay:convolution_milo-A4000"
                      "&<problem argument>=<value>...; GET /v1/kernels lists kernels and devices");
        goto fail;
    }
    if (http_query_each(req, collect_problem_arg, &pc)) {
        kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "at most %d problem arguments are accepted",
                     BEST_MAX_PROBLEM_ARGS);
        goto fail;
    }
    /* The key only: a lookup never builds the space (a cpu kernel's costs milliseconds). */
    if (catalog_resolve_key(svc->cat, kernel, device, pc.problem, &target, &err) < 0)
        goto fail;
    resolved = 1;
    c = api_db_acquire(svc, res);
    if (!c)
        goto out;
    best = best_store_get_json(c, &target.key, &err);
    if (!best) {
        if (err.code == KT_ERR_NO_BEST)
            kt_error_hint(&err,
                          "tune it first: POST /v1/tune {\"kernel\": \"%s\", \"device\": \"%s\", "
                          "\"problem\": %s}",
                          target.key.kernel, target.key.device, target.key.problem_key);
        goto fail;
    }
    http_reply_json(res, 200, json_incref(best));
    goto out;
fail:
    api_fail(res, &err);
out:
    api_db_release(svc, c);
    if (resolved)
        target_release(&target);
    json_decref(best);
    json_decref(pc.problem);
}

void api_best_list(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"kernel", "device_class", "limit", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long limit;
    if (api_check_query(req, allowed, &err) < 0 ||
        api_query_ll(req, "limit", 1, BEST_LIST_MAX, BEST_LIST_DEFAULT, &limit, &err) < 0)
        return api_fail(res, &err);
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *list = best_store_list_json(c, http_query(req, "kernel"),
                                        http_query(req, "device_class"), (int)limit, &err);
    api_db_release(svc, c);
    if (!list)
        return api_fail(res, &err);
    http_reply_json(res, 200, list);
}
