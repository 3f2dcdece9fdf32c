/* GET /v1/jobs/{id}/export?format= — a job's results as files (issue 31, the dashboard's export
 * buttons): "kerneltuner" (a Kernel Tuner cache file of its finished trials) and "t4" (a T4 results
 * file), made by space/tuner_export.h from the documents GET /v1/jobs/{id}, /trials, /v1/kernels
 * and /v1/devices answer, exactly as `ktune export` makes them from those replies; "header" and
 * "flags" (the job's best configuration as `ktune best --format` writes it, space/config_render.h).
 * One exporter and one renderer each, so the download and the command's file never drift.
 *
 * Call order: format checked (400 before anything is read), the job (404), its finished trials
 * page by page (a heavy route: the server limits these), then the file; nothing is kept. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "space/config_render.h"
#include "space/tuner_export.h"
#include "store/trial_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/job_view.h"

#define EXPORT_PAGE 10000
#define EXPORT_MAX_TRIALS                                                                          \
    1000000 /* past this the file is no use in a browser; ktune export pages */

static const char *const formats[] = {"kerneltuner", "t4", "header", "flags", NULL};

/* Every finished trial of the job in finishing order, as GET /v1/jobs/{id}/trials pages them. */
static json_t *all_trials(PGconn *c, long long id, kt_error *err)
{
    json_t *trials = json_array();
    long long after = 0;
    while (trials) {
        json_t *page = trial_store_list_json(c, id, after, EXPORT_PAGE, err);
        if (!page) {
            json_decref(trials);
            return NULL;
        }
        json_t *list = json_object_get(page, "trials");
        size_t n = json_array_size(list);
        json_array_extend(trials, list);
        after = (long long)json_integer_value(json_object_get(page, "next_after"));
        json_decref(page);
        if (n < EXPORT_PAGE)
            break;
        if (json_array_size(trials) >= EXPORT_MAX_TRIALS) {
            json_decref(trials);
            kt_error_set(err, KT_ERR_OUT_OF_RANGE, "job %lld has more than %d finished trials", id,
                         EXPORT_MAX_TRIALS);
            kt_error_hint(err, "ktune export %lld --format kerneltuner writes any size", id);
            return NULL;
        }
    }
    return trials;
}

/* GET /v1/kernels's document as the exporter reads it: the catalog's kernels, and the job's kernel
 * when it is a stored one (POST /v1/kernels), with its devices. */
static json_t *kernels_doc(const api_context *svc, const char *kernel)
{
    json_t *list = catalog_kernels_json(svc->cat), *e;
    size_t i;
    int found = 0;
    json_array_foreach(list, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        found |= name && kernel && strcmp(name, kernel) == 0;
    }
    const kernel_spec *k = !found && kernel ? catalog_find_kernel(svc->cat, kernel) : NULL;
    if (k && list)
        json_array_append_new(list, json_pack("{s:s,s:o}", "name", kernel, "devices",
                                              catalog_kernel_devices_json(svc->cat, k)));
    return json_pack("{s:o}", "kernels", list ? list : json_array());
}

/* The job's best as GET /v1/best answers a measurement, for the renderer. NULL: no best yet. */
static json_t *best_answer(const json_t *job)
{
    const json_t *best = json_object_get(job, "best");
    if (!json_is_object(best) || !json_is_object(json_object_get(best, "config")))
        return NULL;
    const char *strategy = json_string_value(json_object_get(job, "strategy"));
    return json_pack("{s:O,s:O,s:O,s:O,s:s,s:O,s:O,s:O}", "kernel", json_object_get(job, "kernel"),
                     "device", json_object_get(job, "device"), "problem",
                     json_object_get(job, "problem"), "config", json_object_get(best, "config"),
                     "source",
                     strategy && strcmp(strategy, "import") == 0 ? "imported" : "measured",
                     "time_ms", json_object_get(best, "time_ms"), "job_id",
                     json_object_get(job, "id"), "trial_id", json_object_get(best, "trial_id"));
}

/* The file of one format into text (malloc'd) and its content type. -1 with err. */
static int export_text(api_context *svc, PGconn *c, long long id, const char *format,
                       const json_t *job, char **text, const char **type, kt_error *err)
{
    json_t *doc = NULL, *trials = NULL, *kernels = NULL, *devices = NULL;
    int rc = -1;
    if (strcmp(format, "header") == 0 || strcmp(format, "flags") == 0) {
        json_t *answer = best_answer(job);
        if (!answer) {
            kt_error_set(err, KT_ERR_NO_BEST, "job %lld has no best configuration yet", id);
            kt_error_hint(err, "it has no ok trial: wait for one, or export format=kerneltuner "
                               "for every trial it has");
            return -1;
        }
        *text = config_render_best(answer, format, err);
        *type = "text/plain; charset=utf-8";
        json_decref(answer);
        return *text ? 0 : -1;
    }
    if (!(trials = all_trials(c, id, err)))
        goto out;
    if (strcmp(format, "kerneltuner") == 0) {
        kernels = kernels_doc(svc, json_string_value(json_object_get(job, "kernel")));
        devices = json_pack("{s:o}", "devices", catalog_fleet_devices_json(svc->cat));
    }
    if (!(doc = tuner_export_job(format, job, trials, kernels, devices, err)))
        goto out;
    *text = json_dumps(doc, JSON_COMPACT);
    *type = "application/json";
    rc = *text ? 0 : kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory writing the file");
out:
    json_decref(doc);
    json_decref(trials);
    json_decref(kernels);
    json_decref(devices);
    return rc;
}

void api_job_export(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {"format", NULL};
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    long long id;
    const char *format = http_query(req, "format");
    if (api_path_id(req, 0, "job", &id, &err) < 0 || api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    int known = 0;
    for (int i = 0; format && formats[i]; i++)
        known |= strcmp(format, formats[i]) == 0;
    if (!known) {
        if (format)
            kt_error_set(&err, KT_ERR_OUT_OF_RANGE, "unknown export format '%.40s'", format);
        else
            kt_error_set(&err, KT_ERR_MISSING_FIELD, "query parameter 'format' is required");
        kt_error_hint(&err, "format=kerneltuner (a Kernel Tuner cache of the job's trials), t4 (a "
                            "T4 results file), header (the job's best as a C header) or flags "
                            "(its -Dname=value compiler flags)");
        return api_fail(res, &err);
    }
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    char *text = NULL;
    const char *type = NULL;
    json_t *job = job_view_get(c, id, &err);
    int rc = job ? export_text(svc, c, id, format, job, &text, &type, &err) : -1;
    api_db_release(svc, c);
    if (rc < 0) {
        json_decref(job);
        return api_fail(res, &err);
    }
    char disposition[160];
    const char *kernel = json_string_value(json_object_get(job, "kernel"));
    char name[80];
    size_t n = 0;
    for (const char *p = kernel ? kernel : "job"; *p && n + 1 < sizeof name; p++)
        name[n++] = (isalnum((unsigned char)*p) || *p == '_' || *p == '-') ? *p : '_';
    name[n] = '\0';
    snprintf(disposition, sizeof disposition, "attachment; filename=\"ktune_job%lld_%s%s\"", id,
             name,
             strcmp(format, "header") == 0  ? ".h"
             : strcmp(format, "flags") == 0 ? ".flags"
             : strcmp(format, "t4") == 0    ? "_t4.json"
                                            : "_kerneltuner.json");
    http_reply_text(res, 200, type, text);
    http_response_add_header(res, "Content-Disposition", disposition);
    free(text);
    json_decref(job);
}
