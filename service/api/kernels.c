/* /v1/kernels (issue 27, kernels are data): POST registers a kernel given inline (spec, sources
 * and the caller's data files), GET /v1/kernels/{name} lists a name's versions, GET /v1/kernels
 * lists the catalog's kernels and the stored ones. A POST checks the spec and files synchronously
 * (every error named by its field path) and stores the version as validating; a worker compiles and
 * verifies it afterwards (worker/validator.c), so the answer does not wait for a compiler. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "catalog/catalog.h"
#include "store/kernel_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"

void api_kernels_create(void *app, const http_request *req, http_response *res)
{
    static const char *const fields[] = {"spec", "files", "data", NULL};
    api_context *svc = app;
    kt_error err;
    json_t *body = NULL, *row = NULL;
    kernel_spec *k = NULL;
    char *spec_json = NULL, *files_json = NULL, *data_json = NULL, submitter[96];
    PGconn *c = NULL;
    int created = 0;
    kt_error_clear(&err);
    if (api_authorize(svc, req, res, API_SCOPE_KERNELS) < 0)
        goto out;
    if (!(body = http_parse_json_body(req, &err)) ||
        api_check_fields(body, fields, "the request", &err) < 0)
        goto fail;
    const json_t *spec = json_object_get(body, "spec"), *files = json_object_get(body, "files"),
                 *data = json_object_get(body, "data");
    if (!spec || !files) {
        kt_error_set(&err, KT_ERR_MISSING_FIELD, "%s: missing", spec ? "files" : "spec");
        kt_error_hint(&err, "send {\"spec\": {<spec.json>}, \"files\": {\"cpu.c\": \"<source>\"}}; "
                            "kernels/README.md describes both");
        goto fail;
    }
    if (!(k = catalog_kernel_parse(svc->cat, spec, files, json_is_null(data) ? NULL : data, &err)))
        goto fail;
    if (catalog_is_folder_kernel(svc->cat, k->name)) {
        kt_error_set(&err, KT_ERR_CONFLICT, "spec.name: '%s' is a kernel folder's of this server",
                     k->name);
        kt_error_hint(&err, "choose another name (GET /v1/kernels lists the names taken)");
        goto fail;
    }
    if (!(spec_json = json_dumps(spec, JSON_COMPACT)) ||
        !(files_json = json_dumps(files, JSON_COMPACT))) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    json_t *canonical_data = k->data ? kernel_data_json(k->data) : NULL;
    data_json = canonical_data ? json_dumps(canonical_data, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(canonical_data);
    if (k->data && !data_json) {
        kt_error_set(&err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    api_caller(svc, req, submitter, sizeof submitter);
    if (!(c = api_db_acquire(svc, res)))
        goto out;
    row = kernel_store_create(c, k->name, k->version, spec_json,
                              kernel_files_get(k->files, "spec.json", NULL), files_json, data_json,
                              submitter, &created, &err);
    api_db_release(svc, c);
    if (!row)
        goto fail;
    if (created)
        log_info("kernel %s version %s submitted by %s", k->name, k->version, submitter);
    char location[160];
    snprintf(location, sizeof location, "/v1/kernels/%s", k->name);
    http_response_add_header(res, "Location", location);
    http_reply_json(res, created ? 201 : 200, row);
    row = NULL;
    goto out;
fail:
    api_fail(res, &err);
out:
    json_decref(body);
    json_decref(row);
    kernel_spec_free(k);
    free(spec_json);
    free(files_json);
    free(data_json);
}

/* The versions of a kernel folder this process loaded, newest first (origin "folder"). */
static json_t *folder_versions(const catalog *c, const char *name)
{
    char versions[CATALOG_KERNEL_VERSIONS][KFILES_VERSION_LEN + 1];
    int n = catalog_kernel_versions(c, name, versions, CATALOG_KERNEL_VERSIONS);
    json_t *arr = json_array();
    const kernel_spec *current = catalog_find_kernel(c, name);
    for (int i = 0; arr && i < n; i++) {
        const kernel_spec *k = catalog_find_kernel_version(c, name, versions[i]);
        json_t *spec =
            k ? json_loads(kernel_files_get(k->files, "spec.json", NULL), 0, NULL) : NULL;
        json_array_append_new(
            arr, json_pack("{s:s, s:n, s:s, s:s, s:n, s:b, s:o}", "version", versions[i],
                           "created_at", "submitter", "folder", "status", "ready", "log", "retired",
                           current && k != current, "spec", spec ? spec : json_null()));
    }
    return arr;
}

void api_kernel_get(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    json_t *versions = NULL;
    const char *name = req->n_params > 0 ? req->params[0] : "";
    static const char *const allowed[] = {NULL};
    kt_error_clear(&err);
    if (api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    if (catalog_is_folder_kernel(svc->cat, name)) {
        if (catalog_kernel_invalid(svc->cat, name, &err))
            return api_fail(res, &err);
        versions = folder_versions(svc->cat, name);
        http_reply_json(res, 200,
                        json_pack("{s:s, s:s, s:o}", "name", name, "origin", "folder", "versions",
                                  versions ? versions : json_array()));
        return;
    }
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    versions = kernel_store_versions_json(c, name, &err);
    api_db_release(svc, c);
    if (!versions)
        return api_fail(res, &err);
    if (json_array_size(versions) == 0) {
        json_decref(versions);
        kt_error_set(&err, KT_ERR_NOT_FOUND, "no kernel named '%.100s'", name);
        kt_error_hint(&err, "GET /v1/kernels lists them; POST /v1/kernels adds one");
        return api_fail(res, &err);
    }
    http_reply_json(
        res, 200,
        json_pack("{s:s, s:s, s:o}", "name", name, "origin", "stored", "versions", versions));
}

void api_kernel_retire(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    const char *name = req->n_params > 0 ? req->params[0] : "";
    const char *version = req->n_params > 1 ? req->params[1] : "";
    static const char *const allowed[] = {NULL};
    kt_error_clear(&err);
    if (api_authorize(svc, req, res, API_SCOPE_KERNELS) < 0)
        return;
    if (api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    if (catalog_is_folder_kernel(svc->cat, name)) {
        kt_error_set(&err, KT_ERR_CONFLICT, "kernel %.100s is a kernel folder's", name);
        kt_error_hint(&err, "a kernel folder's current version is its files: edit them, and the "
                            "older version is no longer taken");
        return api_fail(res, &err);
    }
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *row = kernel_store_retire(c, name, version, &err);
    api_db_release(svc, c);
    if (!row) {
        if (err.code == KT_ERR_NOT_FOUND) {
            kt_error_set(&err, KT_ERR_NOT_FOUND, "kernel %.100s has no version %.64s", name,
                         version);
            kt_error_hint(&err, "GET /v1/kernels/%.100s lists its versions", name);
        }
        return api_fail(res, &err);
    }
    log_info("kernel %s version %s retired", name, version);
    http_reply_json(res, 200, row);
}

void api_kernels(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    if (api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    json_t *list = catalog_kernels_json(svc->cat);
    PGconn *c = api_db_acquire(svc, res);
    if (!c) {
        json_decref(list);
        return;
    }
    json_t *stored = kernel_store_names_json(c, &err);
    api_db_release(svc, c);
    if (!stored) {
        json_decref(list);
        return api_fail(res, &err);
    }
    /* Each stored kernel: its newest version and status; the devices of its newest ready one. */
    size_t i;
    json_t *e;
    json_array_foreach(stored, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const kernel_spec *k = catalog_find_kernel(svc->cat, name);
        json_object_set_new(e, "origin", json_string("stored"));
        json_object_set_new(e, "devices",
                            k ? catalog_kernel_devices_json(svc->cat, k) : json_array());
        json_object_set_new(e, "ready_version", k ? json_string(k->version) : json_null());
        json_array_append(list, e);
    }
    json_decref(stored);
    http_reply_json(res, 200, json_pack("{s:o}", "kernels", list));
}
