/* catalog/catalog_json — the catalog's JSON views: GET /v1/devices (catalog_devices_json) and
 * GET /v1/kernels (catalog_kernels_json), also synced into the store at start-up. Kernel folders
 * are listed as they are now (catalog_folders_list: rescanned, at most every CATALOG_RESCAN_MS). */
#include "catalog/catalog_impl.h"

#include <stdlib.h>
#include <string.h>

json_t *catalog_real_device_json(const catalog *c, const catalog_device *d)
{
    int n = 0;
    catalog_folder_item *folders = catalog_folders_list(c, &n); /* as they are now */
    json_t *kernels = json_array();
    for (int s = 0; kernels && s < n; s++) {
        if (folders[s].k && catalog_offers(d, folders[s].k))
            json_array_append_new(kernels, json_string(folders[s].name));
    }
    free(folders);
    json_t *desc = json_loads(d->description_text ? d->description_text : "{}", 0, NULL);
    json_t *dev =
        json_pack("{s:s, s:s, s:s, s:s?, s:b, s:o, s:o}", "name", d->name, "kind",
                  kernel_spec_kind_name(d->kind), "class", d->klass, "toolchain", d->toolchain,
                  "available", d->available, "description", desc ? desc : json_object(), "kernels",
                  kernels ? kernels : json_array());
    if (dev && d->reason)
        json_object_set_new(dev, "reason", json_string(d->reason));
    return dev;
}

json_t *catalog_devices_json(const catalog *c)
{
    json_t *arr = json_array();
    for (int i = 0; arr && c && i < c->n; i++) {
        const replay_dataset *ds = c->ds[i];
        json_t *problem = catalog_canonical_problem(ds);
        json_t *desc = json_pack("{s:s, s:s, s:O?, s:s, s:I, s:I}", "gpu", ds->gpu,
                                 "recorded_kernel", ds->recorded_kernel, "problem_size",
                                 problem ? json_object_get(problem, "problem_size") : NULL, "file",
                                 ds->file, "configurations", (json_int_t)ds->n_records, "valid",
                                 (json_int_t)ds->n_valid);
        json_decref(problem);
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:[s]}", "name", ds->device, "kind",
                           "replay", "class", ds->device, "toolchain", ds->toolchain, "available",
                           1, "description", desc ? desc : json_object(), "kernels", ds->kernel));
    }
    for (int i = 0; arr && c && i < c->n_devs; i++)
        json_array_append_new(arr, catalog_real_device_json(c, &c->devs[i]));
    catalog_accel_devices_json(c, arr);
    return arr;
}

static json_t *kernel_device_json(const replay_dataset *ds)
{
    json_t *params = json_array(), *restr = json_array();
    for (int p = 0; params && p < space_num_params(ds->sp); p++) {
        json_t *vals = json_array();
        for (int v = 0; vals && v < space_param_num_values(ds->sp, p); v++)
            json_array_append_new(vals, space_param_value_json(ds->sp, p, v));
        json_array_append_new(params, json_pack("{s:s, s:o}", "name", space_param_name(ds->sp, p),
                                                "values", vals ? vals : json_array()));
    }
    for (int r = 0; restr && r < space_num_restrictions(ds->sp); r++)
        json_array_append_new(restr, json_string(space_restriction_text(ds->sp, r)));
    json_t *problem = catalog_canonical_problem(ds);
    return json_pack("{s:s, s:o, s:o, s:o, s:I}", "device", ds->device, "problem",
                     problem ? problem : json_object(), "parameters",
                     params ? params : json_array(), "restrictions", restr ? restr : json_array(),
                     "configurations", (json_int_t)space_count(ds->sp));
}

/* The kernel interface (issue 27): how trials are verified, the buffers' dtypes, the scalars and
 * the user metrics. */
static void interface_json(const kernel_spec *k, json_t *o)
{
    json_t *bufs = json_array(), *scalars = json_array(), *metrics = json_array();
    for (int i = 0; bufs && i < k->n_buffers; i++)
        json_array_append_new(bufs,
                              json_pack("{s:s, s:s, s:s}", "name", k->buffers[i].name, "dtype",
                                        kt_dtype_name(k->buffers[i].dtype), "role",
                                        k->buffers[i].role == KSPEC_OUTPUT ? "output" : "input"));
    for (int i = 0; scalars && i < k->n_scalars; i++)
        json_array_append_new(scalars, json_pack("{s:s, s:s, s:s}", "name", k->scalars[i].name,
                                                 "type", kt_dtype_name(k->scalars[i].type), "value",
                                                 k->scalars[i].value.text));
    for (int i = 0; metrics && i < k->n_metrics; i++)
        json_array_append_new(metrics, json_pack("{s:s, s:s}", "name", k->metrics[i].name, "value",
                                                 k->metrics[i].value.text));
    json_object_set_new(o, "verify", json_string(kernel_spec_verify_name(k->verify)));
    json_object_set_new(o, "buffers", bufs ? bufs : json_array());
    json_object_set_new(o, "scalars", scalars ? scalars : json_array());
    json_object_set_new(o, "metrics", metrics ? metrics : json_array());
}

/* count: configurations of the default problem, -1 when not counted (a fleet device). */
static json_t *real_kernel_device_json(const kernel_spec *k, const catalog_device *dev,
                                       long long count)
{
    const kspec_variant *v = &k->variants[dev->kind];
    kspec_problem p;
    json_t *args = json_array(), *prs = json_array();
    for (int i = 0; args && i < k->n_args; i++) {
        const kspec_arg *a = &k->args[i];
        json_array_append_new(args, a->is_float
                                        ? json_pack("{s:s, s:s, s:f, s:f, s:f}", "name", a->name,
                                                    "type", "float", "min", a->fmin, "max", a->fmax,
                                                    "default", a->fdef)
                                        : json_pack("{s:s, s:I, s:I, s:I}", "name", a->name, "min",
                                                    (json_int_t)a->min, "max", (json_int_t)a->max,
                                                    "default", (json_int_t)a->def));
    }
    for (int i = 0; prs && i < k->n_problem_restrictions; i++)
        json_array_append_new(prs, json_string(k->problem_restrictions[i].text));
    json_t *problem = kernel_spec_problem(k, NULL, &p, NULL) == 0 ? kernel_spec_problem_json(k, &p)
                                                                  : json_object();
    json_t *params = json_loads(v->params_text, 0, NULL);
    json_t *restr = json_loads(v->restrictions_text, 0, NULL);
    json_t *def = json_loads(kernel_spec_default(k, dev->kind, &dev->limits), 0, NULL);
    json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "device", dev->name,
                          "problem", problem ? problem : json_object(), "problem_arguments",
                          args ? args : json_array(), "problem_restrictions",
                          prs ? prs : json_array(), "parameters", params ? params : json_array(),
                          "restrictions", restr ? restr : json_array(), "default",
                          def ? def : json_object(), "hash", v->hash);
    if (o)
        json_object_set_new(o, "configurations",
                            count >= 0 ? json_integer((json_int_t)count) : json_null());
    if (o && k->test_problem_text)
        json_object_set_new(o, "test_problem", json_loads(k->test_problem_text, 0, NULL));
    if (o)
        interface_json(k, o);
    if (o && kernel_spec_has_neural(k, dev->kind)) {
        /* What a problem's "neural" member may allow (catalog/catalog_neural.h). */
        json_t *names = json_array();
        for (int i = 0; names && i < kernel_spec_neural_count(k, dev->kind); i++)
            json_array_append_new(names, json_string(kernel_spec_neural_name(k, dev->kind, i)));
        json_object_set_new(o, "neural",
                            json_pack("{s:o}", "transformations", names ? names : json_array()));
    }
    return o;
}

/* Adds a kernel folder's current version k to arr: under the entry of the same name (a replay
 * kernel) or as a new entry, with one element per device that offers it (counts: this process's
 * devices', may be NULL). */
static void add_real_kernel(const catalog *c, json_t *arr, const kernel_spec *k,
                            const long long *counts)
{
    json_t *entry = NULL;
    for (size_t i = 0; i < json_array_size(arr) && !entry; i++) {
        json_t *e = json_array_get(arr, i);
        if (strcmp(json_string_value(json_object_get(e, "name")), k->name) == 0)
            entry = e;
    }
    if (!entry) {
        entry = json_pack("{s:s, s:[]}", "name", k->name, "devices");
        if (!entry || json_array_append_new(arr, entry) < 0)
            return;
    }
    json_object_set_new(entry, "summary", json_string(k->summary));
    json_object_set_new(entry, "version", json_string(k->version));
    json_object_set_new(entry, "origin", json_string("folder"));
    json_t *devs = json_object_get(entry, "devices");
    for (int d = 0; d < c->n_devs; d++) {
        if (catalog_offers(&c->devs[d], k))
            json_array_append_new(devs,
                                  real_kernel_device_json(k, &c->devs[d], counts ? counts[d] : -1));
    }
    /* Devices known from the fleet (catalog_fleet.h): the copy already fetched, not refreshed. */
    const char *names[CATALOG_FLEET_MAX];
    int n = catalog_fleet_names(c, names, CATALOG_FLEET_MAX);
    for (int i = 0; i < n; i++) {
        const catalog_device *d = catalog_fleet_find_known(c, names[i]);
        if (d && catalog_offers(d, k))
            json_array_append_new(devs, real_kernel_device_json(k, d, -1));
    }
}

json_t *catalog_kernel_devices_json(const catalog *c, const kernel_spec *k)
{
    json_t *devs = json_array();
    for (int d = 0; devs && d < c->n_devs; d++)
        if (catalog_offers(&c->devs[d], k))
            json_array_append_new(devs, real_kernel_device_json(k, &c->devs[d], -1));
    const char *names[CATALOG_FLEET_MAX];
    int n = catalog_fleet_names(c, names, CATALOG_FLEET_MAX);
    for (int i = 0; devs && i < n; i++) {
        const catalog_device *d = catalog_fleet_find_known(c, names[i]);
        if (d && catalog_offers(d, k))
            json_array_append_new(devs, real_kernel_device_json(k, d, -1));
    }
    return devs;
}

/* A kernel folder whose files do not load now, with the error a request naming it gets
 * (catalog_kernel_invalid's); none when an entry of arr has its name (a loaded kernel). */
static void add_invalid_kernel(json_t *arr, const catalog_folder_item *it)
{
    int listed = 0;
    for (size_t i = 0; i < json_array_size(arr) && !listed; i++)
        listed = strcmp(json_string_value(json_object_get(json_array_get(arr, i), "name")),
                        it->name) == 0;
    kt_error e;
    kt_error_clear(&e);
    catalog_folder_error(it->name, it->error, &e);
    json_t *error = listed ? NULL
                           : json_pack("{s:s, s:s, s:s}", "code", kt_error_code_name(e.code),
                                       "message", e.message, "hint", e.hint);
    json_t *entry = error ? json_pack("{s:s, s:s, s:s, s:[], s:o}", "name", it->name, "status",
                                      "invalid", "origin", "folder", "devices", "error", error)
                          : NULL;
    if (entry)
        json_array_append_new(arr, entry);
}

json_t *catalog_kernels_json(const catalog *c)
{
    json_t *arr = json_array();
    int n = c ? c->n : 0;
    for (int i = 0; arr && i < n; i++) {
        const char *kernel = c->ds[i]->kernel;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(c->ds[j]->kernel, kernel) == 0;
        if (seen)
            continue; /* grouped under its first device */
        json_t *devs = json_array();
        for (int j = i; devs && j < n; j++) {
            if (strcmp(c->ds[j]->kernel, kernel) == 0)
                json_array_append_new(devs, kernel_device_json(c->ds[j]));
        }
        json_array_append_new(
            arr, json_pack("{s:s, s:o}", "name", kernel, "devices", devs ? devs : json_array()));
    }
    /* The kernel folders as they are now (rescanned: added, edited, fixed, removed ones). */
    int n_folders = 0;
    catalog_folder_item *folders = catalog_folders_list(c, &n_folders);
    for (int s = 0; arr && s < n_folders; s++)
        if (folders[s].k)
            add_real_kernel(c, arr, folders[s].k, catalog_folders_counts(c, folders[s].v));
    catalog_accel_kernels_json(c, arr);
    for (size_t i = 0; i < json_array_size(arr); i++)
        json_object_set_new(json_array_get(arr, i), "status", json_string("ready"));
    for (int s = 0; arr && s < n_folders; s++)
        if (!folders[s].k)
            add_invalid_kernel(arr, &folders[s]);
    free(folders);
    return arr;
}
