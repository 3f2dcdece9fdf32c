#include "cli/cli_formats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/config_render.h"
#include "space/tuner_export.h"
#include "core/device_name.h"

#define KT_ERROR_VALUE 1e20 /* Kernel Tuner's old caches store failures as this time */

static double num_or(const json_t *v, double def)
{
    return json_is_number(v) ? json_number_value(v) : def;
}

/* repeats and noise_cv (population standard deviation / mean, as replay computes it) of a list
 * of per-run times; repeats 0 when there is none. */
static void runs_stats(const json_t *runs, long long *repeats, double *cv)
{
    size_t n = json_array_size(runs), i;
    json_t *v;
    double sum = 0, sq = 0;
    *repeats = 0;
    *cv = 0;
    json_array_foreach(runs, i, v)
    {
        if (!json_is_number(v))
            return;
        sum += json_number_value(v);
    }
    if (n == 0)
        return;
    double mean = sum / (double)n;
    json_array_foreach(runs, i, v)
    {
        double d = json_number_value(v) - mean;
        sq += d * d;
    }
    *repeats = (long long)n;
    *cv = n > 1 && mean > 0 ? sqrt(sq / (double)n) / mean : 0;
}

static json_t *make_trial(json_t *config, const char *status, double time_ms, long long repeats,
                          double compile_ms, double measure_ms, double cv)
{
    int ok = strcmp(status, "ok") == 0;
    return json_pack("{s:o,s:s,s:o,s:I,s:f,s:f,s:f}", "config", config, "status", status, "time_ms",
                     ok ? json_real(time_ms) : json_null(), "repeats",
                     (json_int_t)(ok && repeats == 0 ? 1 : repeats), "compile_ms", compile_ms,
                     "measure_ms", measure_ms, "noise_cv", cv);
}

static int import_kerneltuner(const json_t *file, json_t *out, kt_error *err)
{
    const json_t *cache = json_object_get(file, "cache");
    json_t *keys = json_object_get(file, "tune_params_keys");
    json_t *own_keys = NULL;
    int rc = -1;
    if (!json_is_array(keys)) {
        const json_t *tp = json_object_get(file, "tune_params");
        if (!json_is_object(tp)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "tune_params_keys is missing (and tune_params too): a Kernel Tuner "
                         "cache names its parameters there");
            kt_error_hint(err, "e.g. \"tune_params_keys\": [\"block_size_x\"], "
                               "\"tune_params\": {\"block_size_x\": [16, 32, 64]}");
            return -1;
        }
        own_keys = keys = json_array();
        const char *name;
        json_t *v;
        json_object_foreach((json_t *)tp, name, v) json_array_append_new(keys, json_string(name));
    }
    const char *ckey;
    json_t *rec;
    json_object_foreach((json_t *)cache, ckey, rec)
    {
        if (!json_is_object(rec)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "cache[\"%.80s\"] is not an object", ckey);
            goto done;
        }
        json_t *config = json_object();
        size_t i;
        json_t *k;
        json_array_foreach(keys, i, k)
        {
            json_t *v = json_object_get(rec, json_string_value(k));
            if (!v) {
                json_decref(config);
                kt_error_set(err, KT_ERR_BAD_REQUEST,
                             "cache[\"%.80s\"].%.100s is missing (tune_params_keys names it)", ckey,
                             json_string_value(k));
                kt_error_hint(err, "each cache entry holds the value of every parameter and its "
                                   "\"time\"");
                goto done;
            }
            json_object_set(config, json_string_value(k), v);
        }
        json_t *time = json_object_get(rec, "time");
        if (!time || !(json_is_number(time) || json_is_string(time))) {
            json_decref(config);
            kt_error_set(err, KT_ERR_BAD_REQUEST, "cache[\"%.80s\"].time is %s", ckey,
                         time ? "neither a number nor an error name" : "missing");
            kt_error_hint(err, "\"time\" is the measured time in ms, or an error name such as "
                               "\"InvalidConfig\" or \"CompilationFailedConfig\"");
            goto done;
        }
        const char *status = "invalid";
        double time_ms = NAN;
        if (json_is_number(time) && isfinite(json_number_value(time)) &&
            json_number_value(time) > 0 && json_number_value(time) < KT_ERROR_VALUE) {
            status = "ok";
            time_ms = json_number_value(time);
        } else if (json_is_string(time)) {
            /* Anything else (InvalidConfig, unknown names) stays invalid. */
            if (strcmp(json_string_value(time), "CompilationFailedConfig") == 0)
                status = "compile_error";
            else if (strcmp(json_string_value(time), "RuntimeFailedConfig") == 0)
                status = "runtime_error";
        }
        const char *own = json_string_value(json_object_get(rec, "ktune_status"));
        if (own && strcmp(status, "ok") != 0 &&
            (strcmp(own, "timeout") == 0 || strcmp(own, "wrong_result") == 0))
            status = own;
        long long repeats;
        double cv;
        runs_stats(json_object_get(rec, "times"), &repeats, &cv);
        json_t *t = make_trial(config, status, time_ms, repeats,
                               num_or(json_object_get(rec, "compile_time"), 0),
                               num_or(json_object_get(rec, "verification_time"), 0) +
                                   num_or(json_object_get(rec, "benchmark_time"), 0),
                               cv);
        if (!t || json_array_append_new(out, t) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory at cache entry '%.80s'", ckey);
            goto done;
        }
    }
    rc = 0;
done:
    json_decref(own_keys);
    return rc;
}

/* The time of a correct T4 result: the "time" measurement, else the mean of the runtimes. */
static int t4_time(const json_t *r, double *time_ms)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(r, "measurements"), i, m)
    {
        const char *name = json_string_value(json_object_get(m, "name"));
        json_t *v = json_object_get(m, "value");
        if (name && strcmp(name, "time") == 0 && json_is_number(v)) {
            *time_ms = json_number_value(v);
            return 0;
        }
    }
    const json_t *runs = json_object_get(json_object_get(r, "times"), "runtimes");
    double sum = 0;
    size_t n = json_array_size(runs);
    json_array_foreach(runs, i, m)
    {
        if (!json_is_number(m))
            return -1;
        sum += json_number_value(m);
    }
    if (n == 0)
        return -1;
    *time_ms = sum / (double)n;
    return 0;
}

static int import_t4(const json_t *file, json_t *out, kt_error *err)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(file, "results"), i, r)
    {
        json_t *config = json_object_get(r, "configuration");
        const char *inv = json_string_value(json_object_get(r, "invalidity"));
        const json_t *times = json_object_get(r, "times");
        if (!json_is_object(config))
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "results[%zu].configuration is missing",
                                i);
        const char *status = tuner_export_status_of_t4(inv);
        if (!status)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "results[%zu].invalidity '%.40s' is not one of correct, compile, "
                                "runtime, timeout, correctness, constraints",
                                i, inv ? inv : "");
        double time_ms = NAN;
        if (strcmp(status, "ok") == 0 && t4_time(r, &time_ms) < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "results[%zu] is correct but has neither a \"time\" measurement "
                                "nor runtimes",
                                i);
        long long repeats;
        double cv;
        runs_stats(json_object_get(times, "runtimes"), &repeats, &cv);
        /* The schema names compilation_time; Kernel Tuner writes "compilation". */
        const json_t *comp = json_object_get(times, "compilation_time");
        if (!comp)
            comp = json_object_get(times, "compilation");
        json_t *t = make_trial(json_copy(config), status, time_ms, repeats, num_or(comp, 0),
                               num_or(json_object_get(times, "benchmark"), 0) +
                                   num_or(json_object_get(times, "validation"), 0),
                               cv);
        if (!t || json_array_append_new(out, t) < 0)
            return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory at results[%zu]", i);
    }
    return 0;
}

/* kernel, device and problem from the "ktune" object, or a replay device from "space". */
static void import_target(const json_t *file, cli_import *im)
{
    const json_t *meta = json_object_get(file, "ktune");
    const char *kernel = json_string_value(json_object_get(meta, "kernel"));
    const char *device = json_string_value(json_object_get(meta, "device"));
    if (kernel && device) {
        snprintf(im->kernel, sizeof im->kernel, "%s", kernel);
        snprintf(im->device, sizeof im->device, "%s", device);
        json_t *problem = json_object_get(meta, "problem");
        if (json_is_object(problem))
            im->problem = json_incref(problem);
        /* An external job's export: its class and version key the re-import. */
        const char *klass = json_string_value(json_object_get(meta, "device_class"));
        const char *version = json_string_value(json_object_get(meta, "kernel_hash"));
        if (kt_device_kind_of(device) == KT_DEVICE_EXTERNAL && klass && version) {
            snprintf(im->device_class, sizeof im->device_class, "%s", klass);
            snprintf(im->kernel_version, sizeof im->kernel_version, "%s", version);
        }
        return;
    }
    const char *space = json_string_value(json_object_get(file, "space"));
    if (space && strlen(space) < sizeof im->device - 8) {
        /* The catalog's rule: device replay:<space>, kernel = the name up to the first '_'. */
        snprintf(im->device, sizeof im->device, "replay:%s", space);
        snprintf(im->kernel, sizeof im->kernel, "%.*s", (int)strcspn(space, "_"), space);
    }
}

int cli_import_parse(const json_t *file, cli_import *out, kt_error *err)
{
    memset(out, 0, sizeof *out);
    out->trials = json_array();
    if (json_is_object(json_object_get(file, "cache"))) {
        out->format = "kerneltuner";
        if (import_kerneltuner(file, out->trials, err) < 0)
            return -1;
    } else if (json_is_array(json_object_get(file, "results"))) {
        out->format = "t4";
        if (import_t4(file, out->trials, err) < 0)
            return -1;
    } else {
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "neither a Kernel Tuner cache file (a \"cache\" object) nor a T4 "
                            "results file (a \"results\" array)");
    }
    if (json_array_size(out->trials) == 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "the file holds no results");
    import_target(file, out);
    return 0;
}

void cli_import_release(cli_import *im)
{
    json_decref(im->trials);
    json_decref(im->problem);
    json_decref(im->space);
    memset(im, 0, sizeof *im);
}

json_t *cli_import_chunk(const json_t *trials, size_t *pos, size_t max_bytes)
{
    size_t n = json_array_size(trials), used = 0;
    if (*pos >= n)
        return NULL;
    json_t *chunk = json_array();
    while (*pos < n) {
        json_t *t = json_array_get(trials, *pos);
        char *text = json_dumps(t, JSON_COMPACT);
        size_t len = text ? strlen(text) + 1 : 0; /* + the comma */
        free(text);
        if (json_array_size(chunk) > 0 && used + len > max_bytes)
            break;
        json_array_append(chunk, t);
        used += len;
        (*pos)++;
    }
    return chunk;
}
