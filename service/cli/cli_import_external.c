/* cli/cli_import_external — the target of a genuine Kernel Tuner cache (issue 27): a kernel ktune
 * has no folder for, imported onto the device "external" under the file's own kernel_name, with
 * the space made from the file (cli_formats.h, cli_import_external). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_formats.h"

#include "core/class_name.h"
#include "space/space.h"

/* Bytes of the explicit list of configurations sent with the first request: the rest of the
 * 1 MiB body is left for trials. A longer list is replaced by the full grid of tune_params. */
#define EXTERNAL_MAX_LIST_BYTES  524288
#define EXTERNAL_MAX_DIMS        8       /* numbers of problem_size (CATALOG_EXTERNAL_MAX_DIMS) */
#define EXTERNAL_MAX_CHECK_NODES 5000000 /* enumeration steps of the restrictions' check */

void cli_device_class_of(const char *name, char *out, size_t cap)
{
    kt_class_name_part(name, out, cap);
}

/* {"parameters": [{"name", "values"}]} in the order of tune_params_keys; every key's values
 * required. NULL with err naming what is missing. */
static json_t *parameters_of(const json_t *file, kt_error *err)
{
    const json_t *keys = json_object_get(file, "tune_params_keys");
    const json_t *tp = json_object_get(file, "tune_params");
    if (!json_is_array(keys) || json_array_size(keys) == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "tune_params_keys is %s: a Kernel Tuner cache lists its parameter names there",
                     keys ? "not a list of names" : "missing");
        kt_error_hint(err, "the names in the order of the cache's keys, e.g. "
                           "\"tune_params_keys\": [\"block_size_x\", \"block_size_y\"]");
        return NULL;
    }
    if (!json_is_object(tp)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "tune_params is %s: a Kernel Tuner cache lists each parameter's values there",
                     tp ? "not an object" : "missing");
        kt_error_hint(err, "e.g. \"tune_params\": {\"block_size_x\": [16, 32, 64]}");
        return NULL;
    }
    json_t *params = json_array();
    size_t i;
    const json_t *k;
    json_array_foreach(keys, i, k)
    {
        const char *name = json_string_value(k);
        const json_t *vals = name ? json_object_get(tp, name) : NULL;
        if (!name) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "tune_params_keys[%zu] is not a name", i);
            goto fail;
        }
        if (!json_is_array(vals)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "tune_params[\"%.100s\"] is %s", name,
                         vals ? "not a list of values" : "missing");
            kt_error_hint(err, "every name of tune_params_keys needs its list of values in "
                               "tune_params");
            goto fail;
        }
        if (json_array_append_new(params, json_pack("{s:s,s:O}", "name", name, "values", vals)) < 0)
            goto fail;
    }
    return params;
fail:
    json_decref(params);
    return NULL;
}

/* The recorded configurations as value arrays in parameter order. */
static json_t *recorded_configs(const json_t *params, const json_t *trials)
{
    json_t *out = json_array(), *t, *p;
    size_t i, k;
    json_array_foreach(trials, i, t)
    {
        json_t *row = json_array();
        json_array_foreach(params, k, p)
        {
            json_array_append(row, json_object_get(json_object_get(t, "config"),
                                                   json_string_value(json_object_get(p, "name"))));
        }
        json_array_append_new(out, row);
    }
    return out;
}

/* Whether the file's restrictions (an array of strings, parsed by ktune's expression engine) hold
 * for every recorded configuration: then they make the space. */
static int restrictions_fit(const json_t *params, const json_t *restr, const json_t *trials)
{
    kt_error e;
    kt_error_clear(&e);
    /* Bounded: a space too large to enumerate here is sent as the recorded list instead. */
    space_limits lim = {.max_group_nodes = EXTERNAL_MAX_CHECK_NODES};
    space *sp = space_new(params, restr, NULL, &lim, &e);
    int ok = sp != NULL;
    size_t i;
    json_t *t;
    json_array_foreach(trials, i, t)
    {
        config_id id;
        if (!ok)
            break;
        ok = space_config_from_json(sp, json_object_get(t, "config"), &id, &e) == 0;
    }
    space_free(sp);
    return ok;
}

/* {"problem_size": ...} as recorded (a number or a list of numbers), or {}. */
static json_t *problem_of(const json_t *file, kt_error *err)
{
    const json_t *ps = json_object_get(file, "problem_size");
    if (!ps || json_is_null(ps))
        return json_object();
    int ok = json_is_number(ps);
    if (json_is_array(ps)) {
        size_t n = json_array_size(ps);
        ok = n >= 1 && n <= EXTERNAL_MAX_DIMS;
        for (size_t i = 0; ok && i < n; i++)
            ok = json_is_number(json_array_get(ps, i));
    }
    if (!ok) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "problem_size must be a number or a list of 1 to %d numbers",
                     EXTERNAL_MAX_DIMS);
        kt_error_hint(err, "as Kernel Tuner writes it, e.g. \"problem_size\": [4096, 4096]");
        return NULL;
    }
    return json_pack("{s:O}", "problem_size", ps);
}

int cli_import_external(const json_t *file, const char *kernel, const char *device_class,
                        cli_import *im, kt_error *err)
{
    json_t *params = NULL, *problem = NULL;
    const char *name = kernel ? kernel : json_string_value(json_object_get(file, "kernel_name"));
    const char *device_name = json_string_value(json_object_get(file, "device_name"));
    const json_t *restr = json_object_get(file, "restrictions");
    char klass[sizeof im->device_class];
    int rc = -1;
    if (!name || !*name) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "kernel_name is missing: a Kernel Tuner cache names its kernel there");
        kt_error_hint(err, "give --kernel NAME");
        goto out;
    }
    if (device_class) {
        snprintf(klass, sizeof klass, "%s", device_class);
    } else {
        cli_device_class_of(device_name, klass, sizeof klass);
        if (!klass[0]) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "device_name is %s: the device class of the results is made from it",
                         device_name ? "empty" : "missing");
            kt_error_hint(err, "give --device-class C, the class of device the cache was "
                               "measured on, e.g. --device-class NVIDIA_GeForce_RTX_3090");
            goto out;
        }
    }
    if (!(params = parameters_of(file, err)) ||
        !(problem = im->problem ? json_incref(im->problem) : problem_of(file, err)))
        goto out;
    json_t *space = json_pack("{s:O}", "parameters", params);
    if (!space) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    json_t *list = recorded_configs(params, im->trials);
    char *list_text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    size_t list_bytes = list_text ? strlen(list_text) : (size_t)-1;
    free(list_text);
    int has_restr = json_is_array(restr) && json_array_size(restr) > 0;
    if (json_is_array(restr) && (!has_restr || restrictions_fit(params, restr, im->trials))) {
        if (has_restr) {
            json_object_set(space, "restrictions", (json_t *)restr);
            snprintf(im->space_note, sizeof im->space_note,
                     "the file's %zu restrictions over tune_params", json_array_size(restr));
        } else {
            snprintf(im->space_note, sizeof im->space_note,
                     "the full grid of tune_params (the file's restrictions are empty)");
        }
    } else if (list_bytes <= EXTERNAL_MAX_LIST_BYTES) {
        json_object_set(space, "configurations", list);
        snprintf(im->space_note, sizeof im->space_note,
                 "the %zu recorded configurations (the file's restrictions are %s)",
                 json_array_size(list),
                 restr ? "not ktune expressions or exclude some" : "unknown");
    } else {
        snprintf(im->space_note, sizeof im->space_note,
                 "the full grid of tune_params (the file's restrictions are %s and the list of its "
                 "%zu configurations is too long to send)",
                 restr ? "not ktune expressions" : "unknown", json_array_size(list));
    }
    json_decref(list);
    snprintf(im->kernel, sizeof im->kernel, "%s", name);
    snprintf(im->device, sizeof im->device, "external");
    snprintf(im->device_class, sizeof im->device_class, "%s", klass);
    json_decref(im->space);
    im->space = space;
    json_decref(im->problem);
    im->problem = problem;
    problem = NULL;
    rc = 0;
out:
    json_decref(params);
    json_decref(problem);
    return rc;
}
