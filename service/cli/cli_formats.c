#include "cli/cli_formats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_render.h"
#include "core/device_name.h"

#define KEY_MAX           4096 /* characters of one Kernel Tuner cache key */
#define KT_ERROR_VALUE    1e20 /* Kernel Tuner's old caches store failures as this time */
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
        if (!v || cli_value_text(v, 0, text, sizeof text) < 0)
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
                    cli_value_text(v, 0, value, sizeof value);
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

json_t *cli_export_kerneltuner(const json_t *job, const json_t *params, const json_t *restrictions,
                               const json_t *constants, const json_t *args, const json_t *trials,
                               kt_error *err)
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
                     "problem_size holds integers only (use --format t4)");
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

json_t *cli_export_t4(const json_t *job, const json_t *trials, kt_error *err)
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
        const char *status = NULL;
        for (size_t s = 0; inv && s < N_STATUSES; s++) {
            if (strcmp(statuses[s].t4, inv) == 0)
                status = statuses[s].ktune;
        }
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
