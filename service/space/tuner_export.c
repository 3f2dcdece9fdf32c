#include "space/tuner_export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/config_render.h"

#define KEY_MAX           4096 /* characters of one Kernel Tuner cache key */
#define T4_SCHEMA_VERSION "1.0.0"

/* Kernel Tuner's error names, and T4's invalidity values, per ktune status. */
typedef struct status_names {
    const char *ktune, *kerneltuner, *t4;
} status_names;

static const status_names statuses[] = {
    {"ok", NULL, "correct"},
    {"compile_error", "CompilationFailedConfig", "compile"},
    {"runtime_error", "RuntimeFailedConfig", "runtime"},
    {"timeout", "RuntimeFailedConfig", "timeout"},
    {"wrong_result", "InvalidConfig", "correctness"},
    {"illegal", "InvalidConfig", "constraints"},
    {"invalid", "InvalidConfig", "constraints"},
};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

static const status_names *status_of(const char *ktune)
{
    for (size_t i = 0; i < N_STATUSES; i++) {
        if (ktune && strcmp(statuses[i].ktune, ktune) == 0)
            return &statuses[i];
    }
    return &statuses[N_STATUSES - 1];
}

static double num_or(const json_t *v, double def)
{
    return json_is_number(v) ? json_number_value(v) : def;
}

/* {"job", "kernel", "device", "device_class", "kernel_hash", "toolchain", "problem", "strategy"} of
 * the job: imports find the target in it, and it says what measured the trials. */
static json_t *ktune_meta(const json_t *job)
{
    json_t *m = json_object();
    static const char *const keys[] = {"kernel",    "device",  "device_class", "kernel_hash",
                                       "toolchain", "problem", "strategy"};
    json_object_set(m, "job", json_object_get(job, "id"));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(job, keys[i]);
        if (v)
            json_object_set(m, keys[i], v);
    }
    return m;
}

/* Parameter names in order and their values: from params, or gathered from the trials. */
static int kt_params(const json_t *params, const json_t *trials, json_t *keys, json_t *values)
{
    size_t i;
    json_t *p;
    if (json_is_array(params) && json_array_size(params) > 0) {
        json_array_foreach(params, i, p)
        {
            const char *name = json_string_value(json_object_get(p, "name"));
            json_t *vals = json_object_get(p, "values");
            if (!name || !json_is_array(vals))
                return -1;
            json_array_append_new(keys, json_string(name));
            json_object_set(values, name, vals);
        }
        return 0;
    }
    json_t *t;
    json_array_foreach(trials, i, t)
    {
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(t, "config"), name, v)
        {
            json_t *list = json_object_get(values, name);
            if (!list) {
                list = json_array();
                json_object_set_new(values, name, list);
                json_array_append_new(keys, json_string(name));
            }
            size_t k;
            json_t *seen;
            int found = 0;
            json_array_foreach(list, k, seen) found |= json_equal(seen, v);
            if (!found)
                json_array_append(list, v);
        }
    }
    return 0;
}

/* "16,1,2" from the configuration's values in key order; -1 when a value cannot be written. */
static int kt_key(const json_t *keys, const json_t *config, char *buf, size_t cap)
{
    size_t used = 0, i;
    json_t *k;
    buf[0] = '\0';
    json_array_foreach(keys, i, k)
    {
        char text[512];
        json_t *v = json_object_get(config, json_string_value(k));
        if (!v || config_value_text(v, 0, text, sizeof text) < 0)
            return -1;
        int n = snprintf(buf + used, cap - used, "%s%s", i ? "," : "", text);
        if (n < 0 || (size_t)n >= cap - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

/* Whether c may continue an identifier. */
static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* expr with every name of constants (an object of name -> number) written as its value, so that a
 * tool without ktune's device and problem constants can evaluate it. Numeric literals (1e3, 0x10)
 * and quoted text are copied as they are. NULL when the result would exceed EXPR_MAX. */
#define EXPR_MAX 4096
static json_t *substitute_constants(const char *expr, const json_t *constants)
{
    char out[EXPR_MAX];
    size_t used = 0;
    for (const char *s = expr; *s;) {
        const char *start = s;
        char value[64];
        const char *piece = NULL;
        size_t len;
        if (*s == '\'' || *s == '"') {
            char q = *s++;
            while (*s && *s != q)
                s++;
            if (*s)
                s++;
        } else if (*s >= '0' && *s <= '9') {
            /* a number: digits, '.', letters (exponent, hex digits) and an exponent's sign */
            while (ident_char(*s) || *s == '.' ||
                   ((*s == '+' || *s == '-') && (s[-1] == 'e' || s[-1] == 'E')))
                s++;
        } else if (ident_char(*s)) {
            while (ident_char(*s))
                s++;
            char name[128];
            len = (size_t)(s - start);
            if (len < sizeof name) {
                memcpy(name, start, len);
                name[len] = '\0';
                const json_t *v = json_object_get(constants, name);
                if (json_is_number(v)) {
                    config_value_text(v, 0, value, sizeof value);
                    piece = value;
                }
            }
        } else {
            s++;
        }
        if (!piece)
            len = (size_t)(s - start);
        else
            len = strlen(piece);
        if (used + len >= sizeof out)
            return NULL;
        memcpy(out + used, piece ? piece : start, len);
        used += len;
    }
    out[used] = '\0';
    return json_string(out);
}

/* Kernel Tuner's "problem_size": an array of integers. A replay job's recorded one (an integer is
 * made a one-element array); else the values of the problem's arguments in the kernel's order
 * (args: [{"name"}], NULL: the problem's own key order); NULL when a value is not an integer. */
static json_t *kt_problem_size(const json_t *problem, const json_t *args)
{
    json_t *size = json_object_get(problem, "problem_size");
    if (json_is_integer(size))
        return json_pack("[O]", size);
    if (json_is_array(size))
        return json_incref(size);
    json_t *out = json_array();
    size_t i;
    json_t *a;
    if (json_is_array(args) && json_array_size(args) > 0) {
        json_array_foreach(args, i, a)
        {
            json_t *v = json_object_get(problem, json_string_value(json_object_get(a, "name")));
            if (!json_is_integer(v))
                goto bad;
            json_array_append(out, v);
        }
        return out;
    }
    const char *name;
    json_object_foreach((json_t *)problem, name, a)
    {
        if (!json_is_integer(a))
            goto bad;
        json_array_append(out, a);
    }
    return out;
bad:
    json_decref(out);
    return NULL;
}

json_t *tuner_export_kerneltuner(const json_t *job, const json_t *params,
                                 const json_t *restrictions, const json_t *constants,
                                 const json_t *args, const json_t *trials, kt_error *err)
{
    json_t *out = json_object(), *keys = json_array(), *values = json_object(),
           *cache = json_object();
    char key[KEY_MAX];
    if (kt_params(params, trials, keys, values) < 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the kernel's parameters are malformed");
        goto fail;
    }
    size_t i;
    json_t *t;
    json_array_foreach(trials, i, t)
    {
        const json_t *config = json_object_get(t, "config");
        const char *st = json_string_value(json_object_get(t, "status"));
        const status_names *names = status_of(st);
        if (kt_key(keys, config, key, sizeof key) < 0) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "trial %lld: its configuration cannot be written as a cache key",
                         (long long)json_integer_value(json_object_get(t, "id")));
            goto fail;
        }
        json_t *rec = json_object();
        size_t k;
        json_t *name;
        json_array_foreach(keys, k, name)
        {
            json_object_set(rec, json_string_value(name),
                            json_object_get(config, json_string_value(name)));
        }
        if (names->kerneltuner)
            json_object_set_new(rec, "time", json_string(names->kerneltuner));
        else
            json_object_set_new(rec, "time", json_real(num_or(json_object_get(t, "time_ms"), NAN)));
        json_object_set_new(rec, "compile_time",
                            json_real(num_or(json_object_get(t, "compile_ms"), 0)));
        json_object_set_new(rec, "verification_time", json_real(0));
        json_object_set_new(rec, "benchmark_time",
                            json_real(num_or(json_object_get(t, "measure_ms"), 0)));
        json_object_set_new(rec, "strategy_time", json_real(0));
        json_object_set_new(rec, "framework_time", json_real(0));
        json_t *ts = json_object_get(t, "finished_at");
        json_object_set_new(rec, "timestamp", json_is_string(ts) ? json_copy(ts) : json_string(""));
        if (st && (strcmp(st, "timeout") == 0 || strcmp(st, "wrong_result") == 0))
            json_object_set_new(rec, "ktune_status", json_string(st));
        json_object_set_new(cache, key, rec);
    }
    const json_t *problem = json_object_get(job, "problem");
    json_t *size = kt_problem_size(problem, args);
    if (!size) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "the job's problem has an argument that is not an integer; Kernel Tuner's "
                     "problem_size holds integers only (use the t4 format)");
        goto fail;
    }
    json_object_set_new(out, "schema_version", json_string("1.0.0"));
    json_object_set(out, "device_name", json_object_get(job, "device"));
    json_object_set(out, "kernel_name", json_object_get(job, "kernel"));
    json_object_set_new(out, "problem_size", size);
    json_object_set(out, "tune_params_keys", keys);
    json_object_set(out, "tune_params", values);
    if (json_is_array(restrictions)) {
        json_t *list = json_array();
        json_t *r;
        json_array_foreach(restrictions, i, r)
        {
            json_t *text = json_is_string(r) && constants
                               ? substitute_constants(json_string_value(r), constants)
                               : json_incref(r);
            if (!text) {
                json_decref(list);
                kt_error_set(err, KT_ERR_BAD_REQUEST,
                             "restriction %zu is too long once its constants are written out", i);
                goto fail;
            }
            json_array_append_new(list, text);
        }
        json_object_set_new(out, "restrictions", list);
    }
    json_object_set_new(out, "objective", json_string("time"));
    json_object_set_new(out, "ktune", ktune_meta(job));
    json_object_set_new(out, "cache", cache);
    json_decref(keys);
    json_decref(values);
    return out;
fail:
    json_decref(out);
    json_decref(keys);
    json_decref(values);
    json_decref(cache);
    return NULL;
}

json_t *tuner_export_t4(const json_t *job, const json_t *trials, kt_error *err)
{
    (void)err;
    json_t *results = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(trials, i, t)
    {
        const char *st = json_string_value(json_object_get(t, "status"));
        const status_names *names = status_of(st);
        int ok = names->kerneltuner == NULL;
        json_t *measurements = json_array();
        if (ok)
            json_array_append_new(
                measurements, json_pack("{s:s,s:f,s:s}", "name", "time", "value",
                                        num_or(json_object_get(t, "time_ms"), NAN), "unit", "ms"));
        /* ktune keeps no per-run times, so "runtimes" stays empty; "benchmark" is the name Kernel
         * Tuner writes for the benchmarking time. */
        json_t *times = json_pack("{s:f,s:f,s:[],s:f,s:f,s:f}", "compilation_time",
                                  num_or(json_object_get(t, "compile_ms"), 0), "benchmark",
                                  num_or(json_object_get(t, "measure_ms"), 0), "runtimes",
                                  "framework", 0.0, "search_algorithm", 0.0, "validation", 0.0);
        json_t *ts = json_object_get(t, "finished_at");
        json_t *r =
            json_pack("{s:o,s:O,s:[s],s:o,s:s,s:i,s:o}", "timestamp",
                      json_is_string(ts) ? json_incref(ts) : json_string(""), "configuration",
                      json_object_get(t, "config"), "objectives", "time", "times", times,
                      "invalidity", names->t4, "correctness",
                      st && strcmp(st, "wrong_result") == 0 ? 0 : 1, "measurements", measurements);
        json_array_append_new(results, r);
    }
    return json_pack("{s:s,s:o,s:o}", "schema_version", T4_SCHEMA_VERSION, "results", results,
                     "ktune", ktune_meta(job));
}
const char *tuner_export_status_of_t4(const char *invalidity)
{
    const char *status = NULL;
    /* the last match: "constraints" is both illegal and invalid, and reads back as invalid */
    for (size_t s = 0; invalidity && s < N_STATUSES; s++) {
        if (strcmp(statuses[s].t4, invalidity) == 0)
            status = statuses[s].ktune;
    }
    return status;
}

void tuner_export_kernel_params(const json_t *kernels, const char *kernel, const char *device,
                                json_t **params, json_t **restrictions, json_t **args)
{
    size_t i, k;
    json_t *kn, *d;
    *params = *restrictions = *args = NULL;
    json_array_foreach(json_object_get(kernels, "kernels"), i, kn)
    {
        const char *name = json_string_value(json_object_get(kn, "name"));
        if (!name || !kernel || strcmp(name, kernel) != 0)
            continue;
        json_array_foreach(json_object_get(kn, "devices"), k, d)
        {
            const char *dev = json_string_value(json_object_get(d, "device"));
            if (dev && device && strcmp(dev, device) == 0) {
                *params = json_incref(json_object_get(d, "parameters"));
                *restrictions = json_incref(json_object_get(d, "restrictions"));
                *args = json_incref(json_object_get(d, "problem_arguments"));
                return;
            }
        }
    }
}

json_t *tuner_export_constants(const json_t *devices, const json_t *job, const json_t *params)
{
    json_t *out = json_object(), *d, *v;
    size_t i;
    const char *device = json_string_value(json_object_get(job, "device")), *name;
    json_array_foreach(json_object_get(devices, "devices"), i, d)
    {
        const char *n = json_string_value(json_object_get(d, "name"));
        if (!n || !device || strcmp(n, device) != 0)
            continue;
        json_object_foreach(json_object_get(d, "description"), name, v)
        {
            if (json_is_integer(v))
                json_object_set(out, name, v);
            else if (json_is_null(v))
                json_object_set_new(out, name, json_integer(0));
        }
        break;
    }
    json_object_foreach(json_object_get(job, "problem"), name, v)
    {
        if (json_is_number(v))
            json_object_set(out, name, v);
    }
    json_array_foreach(params, i, d)
        json_object_del(out, json_string_value(json_object_get(d, "name")));
    return out;
}

json_t *tuner_export_job(const char *format, const json_t *job, const json_t *trials,
                         const json_t *kernels, const json_t *devices, kt_error *err)
{
    json_t *params = NULL, *restr = NULL, *args = NULL, *constants = NULL, *doc = NULL;
    if (format && strcmp(format, "t4") == 0)
        return tuner_export_t4(job, trials, err);
    if (!format || strcmp(format, "kerneltuner") != 0) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE, "unknown export format '%.40s'",
                     format ? format : "");
        kt_error_hint(err, "kerneltuner (a Kernel Tuner cache file) or t4 (a T4 results file)");
        return NULL;
    }
    tuner_export_kernel_params(kernels, json_string_value(json_object_get(job, "kernel")),
                               json_string_value(json_object_get(job, "device")), &params, &restr,
                               &args);
    constants = tuner_export_constants(devices, job, params);
    doc = tuner_export_kerneltuner(job, params, restr, constants, args, trials, err);
    json_decref(params);
    json_decref(restr);
    json_decref(args);
    json_decref(constants);
    return doc;
}
