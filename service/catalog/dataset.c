/* catalog/dataset — loads one Kernel Tuner cache file (plain or gzipped JSON) into a replay
 * dataset: its space, a sorted table of recorded results by config id, and a hash of its
 * definition; the accessors of dataset.h. */
#include "core/file.h"
#include "core/hash.h"
#include "catalog/catalog_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define REPLAY_MAX_FILE_BYTES   ((size_t)512 << 20) /* uncompressed size cap per dataset file */
#define REPLAY_MAX_FAILURE_TEXT 64                  /* stored length of a failure string */
#define REPLAY_MAX_PARAMS       64                  /* tuning parameters per dataset */

/* Reads the whole file (plain or gzipped) and parses it. NULL with why on failure. */
static json_t *read_json_file(const char *path, char *why, size_t why_cap)
{
    kt_error err;
    size_t len = 0;
    char *buf = kt_file_read_gz(path, REPLAY_MAX_FILE_BYTES, &len, &err);

    if (!buf) {
        snprintf(why, why_cap, "%s", err.message);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, 0, &jerr);
    if (!root)
        snprintf(why, why_cap, "not valid JSON (line %d: %s)", jerr.line, jerr.text);
    free(buf);
    return root;
}

/* Same value, with numbers compared by value (1 == 1.0). */
static int value_match(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

static int value_index(const json_t *values, const json_t *v)
{
    size_t n = json_array_size(values);
    for (size_t i = 0; i < n; i++) {
        if (value_match(json_array_get(values, i), v))
            return (int)i;
    }
    return -1;
}

static double number_or_zero(const json_t *rec, const char *key)
{
    const json_t *v = json_object_get(rec, key);
    double x = json_is_number(v) ? json_number_value(v) : 0.0;
    return x > 0.0 ? x : 0.0; /* costs feed a clock: never negative */
}

static int fill_record(replay_record *r, config_id id, const json_t *rec)
{
    const json_t *t = json_object_get(rec, "time");
    const json_t *times = json_object_get(rec, "times");
    memset(r, 0, sizeof *r);
    r->id = id;
    r->compile_ms = number_or_zero(rec, "compile_time");
    r->measure_ms =
        number_or_zero(rec, "verification_time") + number_or_zero(rec, "benchmark_time");
    if (json_is_number(t)) {
        r->time_kind = REPLAY_TIME_NUMBER;
        r->status = TRIAL_OK;
        r->time_ms = json_number_value(t);
        r->repeats = 1;
        size_t n = json_array_size(times);
        if (n > 0) {
            double sum = 0, sq = 0;
            for (size_t i = 0; i < n; i++)
                sum += json_number_value(json_array_get(times, i));
            double mean = sum / (double)n;
            for (size_t i = 0; i < n; i++) {
                double d = json_number_value(json_array_get(times, i)) - mean;
                sq += d * d;
            }
            r->repeats = n > 1000000 ? 1000000 : (int)n;
            r->noise_cv = mean > 0 ? sqrt(sq / (double)n) / mean : 0.0;
        }
    } else if (json_is_string(t)) {
        const char *s = json_string_value(t);
        r->time_kind = REPLAY_TIME_STRING;
        r->status = strcmp(s, "CompilationFailedConfig") == 0 ? TRIAL_COMPILE_ERROR
                    : strcmp(s, "RuntimeFailedConfig") == 0   ? TRIAL_RUNTIME_ERROR
                                                              : TRIAL_INVALID;
        r->time_text = strndup(s, REPLAY_MAX_FAILURE_TEXT);
        if (!r->time_text)
            return -1;
    } else {
        r->time_kind = t ? REPLAY_TIME_OTHER : REPLAY_TIME_ABSENT;
        r->status = TRIAL_INVALID;
    }
    return 0;
}

static int record_cmp(const void *a, const void *b)
{
    const replay_record *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const replay_record *dataset_record(const replay_dataset *ds, config_id id)
{
    uint64_t lo = 0, hi = ds->n_records;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ds->records[mid].id < id)
            lo = mid + 1;
        else if (ds->records[mid].id > id)
            hi = mid;
        else
            return &ds->records[mid];
    }
    return NULL;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > REPLAY_MAX_NAME)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.+", s[i]))
            return 0;
    }
    return 1;
}

/* Hash of what fixes the space and its ids: parameter order and values, restrictions, and for an
 * explicit space its configuration list. */
static int hash_definition(replay_dataset *ds, const json_t *keys, const json_t *tp,
                           const json_t *restr)
{
    json_t *def = json_pack("{s:O, s:O, s:O}", "tune_params_keys", keys, "tune_params", tp,
                            "restrictions", restr ? restr : json_null());
    char *text = def ? json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(def);
    if (!text)
        return -1;
    uint64_t h = kt_fnv1a(KT_FNV1A_OFFSET, text, strlen(text));
    free(text);
    char key[4096];
    for (config_id id = 0; ds->explicit_space && id < space_count(ds->sp); id++) {
        int n = space_config_key(ds->sp, id, key, sizeof key);
        if (n > 0)
            h = kt_fnv1a(kt_fnv1a(h, key, (size_t)n), "\n", 1);
    }
    snprintf(ds->kernel_hash, sizeof ds->kernel_hash, "%016llx", (unsigned long long)h);
    return 0;
}

/* Parameters in tune_params_keys order (or the object's order) as [{"name","values"}]; keys gets
 * the names. */
static json_t *build_params(const json_t *root, json_t **keys_out, char *why, size_t why_cap)
{
    const json_t *tp = json_object_get(root, "tune_params");
    const json_t *keys = json_object_get(root, "tune_params_keys");
    json_t *params = json_array(), *keys_copy = json_array();
    const char *k;
    json_t *v;

    if (!params || !keys_copy)
        goto fail;
    if (keys) {
        size_t i;
        json_t *kv;
        if (!json_is_array(keys)) {
            snprintf(why, why_cap, "tune_params_keys is not a list");
            goto fail;
        }
        json_array_foreach(keys, i, kv) json_array_append(keys_copy, kv);
    } else {
        json_object_foreach((json_t *)tp, k, v) json_array_append_new(keys_copy, json_string(k));
    }
    for (size_t i = 0; i < json_array_size(keys_copy); i++) {
        const char *name = json_string_value(json_array_get(keys_copy, i));
        const json_t *values = name ? json_object_get(tp, name) : NULL;
        if (!json_is_array(values)) {
            snprintf(why, why_cap, "parameter %s has no value list in tune_params",
                     name ? name : "(not a string)");
            goto fail;
        }
        json_array_append_new(params, json_pack("{s:s, s:O}", "name", name, "values", values));
    }
    *keys_out = keys_copy;
    return params;
fail:
    json_decref(params);
    json_decref(keys_copy);
    return NULL;
}

/* Fills ds from the parsed file. The cache is scanned twice: value indices first (they build an
 * explicit space when there are no restrictions), then ids and records. */
static int load_records(replay_dataset *ds, const json_t *root, const json_t *params,
                        const json_t *restr, char *why, size_t why_cap)
{
    const json_t *cache = json_object_get(root, "cache");
    int np = (int)json_array_size(params), rc = -1;
    size_t n = json_object_size(cache), rows = 0;
    uint64_t bad = 0, outside = 0, dups = 0;
    int *idx = NULL;
    const json_t **recs = NULL;
    json_t *configs = NULL;
    const char *key;
    json_t *rec;
    kt_error err;

    kt_error_clear(&err);
    ds->n_cache = n;
    if (np < 1 || np > REPLAY_MAX_PARAMS) {
        snprintf(why, why_cap, "%d tuning parameters (1-%d accepted)", np, REPLAY_MAX_PARAMS);
        goto out;
    }
    idx = malloc((n ? n : 1) * (size_t)np * sizeof *idx);
    recs = malloc((n ? n : 1) * sizeof *recs);
    ds->records = calloc(n ? n : 1, sizeof *ds->records);
    if (!idx || !recs || !ds->records) {
        snprintf(why, why_cap, "out of memory");
        goto out;
    }
    json_object_foreach((json_t *)cache, key, rec)
    {
        int *row = idx + rows * (size_t)np, p;
        for (p = 0; p < np && json_is_object(rec); p++) {
            const json_t *pa = json_array_get(params, (size_t)p);
            const json_t *v = json_object_get(rec, json_string_value(json_object_get(pa, "name")));
            if (!v || (row[p] = value_index(json_object_get(pa, "values"), v)) < 0)
                break;
        }
        if (p < np || !json_is_object(rec)) {
            bad++;
            continue;
        }
        recs[rows++] = rec;
    }
    if (restr) {
        ds->sp = space_new(params, restr, NULL, NULL, &err);
    } else {
        configs = json_array();
        for (size_t r = 0; configs && r < rows; r++) {
            json_t *c = json_array();
            for (int p = 0; c && p < np; p++) {
                json_t *vals = json_object_get(json_array_get(params, (size_t)p), "values");
                json_array_append(c, json_array_get(vals, (size_t)idx[r * (size_t)np + p]));
            }
            json_array_append_new(configs, c);
        }
        ds->sp = configs ? space_new_explicit(params, configs, &err) : NULL;
        ds->explicit_space = 1;
    }
    if (!ds->sp) {
        snprintf(why, why_cap, "space not usable: %s",
                 configs || restr ? err.message : "no memory");
        goto out;
    }
    for (size_t r = 0; r < rows; r++) {
        config_id id;
        if (space_encode(ds->sp, idx + r * (size_t)np, &id) < 0) {
            outside++;
            continue;
        }
        if (fill_record(&ds->records[ds->n_records], id, recs[r]) < 0) {
            snprintf(why, why_cap, "out of memory");
            goto out;
        }
        ds->records[ds->n_records].seq = ds->n_records; /* file order: duplicates keep the first */
        ds->n_records++;
    }
    qsort(ds->records, ds->n_records, sizeof *ds->records, record_cmp);
    uint64_t w = 0;
    for (uint64_t r = 0; r < ds->n_records; r++) {
        if (w > 0 && ds->records[w - 1].id == ds->records[r].id) {
            free(ds->records[r].time_text);
            dups++;
            continue;
        }
        ds->records[w++] = ds->records[r];
    }
    ds->n_records = w;
    for (uint64_t r = 0; r < w; r++)
        ds->n_valid += ds->records[r].status == TRIAL_OK;
    if (bad || outside || dups)
        log_warn("dataset %s: ignored %llu cache records with unknown values, %llu outside the "
                 "space, %llu duplicates",
                 ds->file, (unsigned long long)bad, (unsigned long long)outside,
                 (unsigned long long)dups);
    rc = 0;
out:
    json_decref(configs);
    free(idx);
    free(recs);
    return rc;
}

void dataset_free(replay_dataset *ds)
{
    if (!ds)
        return;
    for (uint64_t r = 0; ds->records && r < ds->n_records; r++)
        free(ds->records[r].time_text);
    free(ds->records);
    space_free(ds->sp);
    free(ds->name);
    free(ds->device);
    free(ds->kernel);
    free(ds->gpu);
    free(ds->recorded_kernel);
    free(ds->toolchain);
    free(ds->problem_text);
    free(ds->problem_display);
    free(ds->file);
    free(ds);
}

static char *string_field(const json_t *root, const char *key)
{
    const char *s = json_string_value(json_object_get(root, key));
    return strndup(s ? s : "", 256);
}

/* The toolchain the dataset was measured with: its "toolchain" string (1..TARGET_TOOLCHAIN_MAX
 * printable ASCII characters), or "recorded" when the file names none. -1 with why when the field
 * is there but not such a string. */
static int load_toolchain(replay_dataset *ds, const json_t *root, char *why, size_t why_cap)
{
    const json_t *v = json_object_get(root, "toolchain");
    const char *t = json_string_value(v);
    size_t n = t ? strlen(t) : 0;
    int ok = !v || (n > 0 && n <= TARGET_TOOLCHAIN_MAX);
    for (size_t i = 0; ok && i < n; i++)
        ok = t[i] >= 0x20 && t[i] < 0x7f;
    if (!ok) {
        snprintf(why, why_cap, "toolchain must be a string of 1-%d printable characters",
                 TARGET_TOOLCHAIN_MAX);
        return -1;
    }
    ds->toolchain = strdup(t ? t : "recorded");
    if (!ds->toolchain) {
        snprintf(why, why_cap, "out of memory");
        return -1;
    }
    return 0;
}

/* Names, the recorded problem and the other descriptive fields. */
static int load_header(replay_dataset *ds, const json_t *root, const char *path,
                       const char *fallback_name, char *why, size_t why_cap)
{
    const char *name = json_string_value(json_object_get(root, "space"));
    const json_t *problem = json_object_get(root, "problem_size");
    char dev[REPLAY_MAX_NAME + 16];

    if (!name || !*name)
        name = fallback_name;
    if (!name_ok(name)) {
        snprintf(why, why_cap, "dataset name '%.*s' is not usable (1-%d of A-Z a-z 0-9 - _ . +)",
                 REPLAY_MAX_NAME, name, REPLAY_MAX_NAME);
        return -1;
    }
    snprintf(dev, sizeof dev, "replay:%s", name);
    const char *us = strchr(name, '_');
    ds->name = strdup(name);
    ds->device = strdup(dev);
    /* The file's "kernel" names its kernel (issue 31: gemm_clblast-* says clblast_gemm, so that
     * "gemm" is the cpu catalog's alone); else the name up to its first '_'. */
    const char *kernel = json_string_value(json_object_get(root, "kernel"));
    if (kernel && !name_ok(kernel)) {
        snprintf(why, why_cap, "kernel name '%.*s' is not usable (1-%d of A-Z a-z 0-9 - _ . +)",
                 REPLAY_MAX_NAME, kernel, REPLAY_MAX_NAME);
        return -1;
    }
    ds->kernel = kernel             ? strdup(kernel)
                 : us && us != name ? strndup(name, (size_t)(us - name))
                                    : strdup(name);
    ds->file = strdup(path);
    ds->gpu = string_field(root, "device_name");
    ds->recorded_kernel = string_field(root, "kernel_name");
    if (problem) {
        ds->problem_text = json_dumps(problem, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
        ds->problem_display = json_dumps(problem, JSON_ENCODE_ANY | JSON_SORT_KEYS);
        if (!ds->problem_text || !ds->problem_display)
            goto nomem;
    }
    if (!ds->name || !ds->device || !ds->kernel || !ds->file || !ds->gpu || !ds->recorded_kernel)
        goto nomem;
    return 0;
nomem:
    snprintf(why, why_cap, "out of memory");
    return -1;
}

replay_dataset *dataset_load(const char *path, const char *fallback_name, char *why, size_t why_cap)
{
    replay_dataset *ds = NULL;
    json_t *params = NULL, *keys = NULL, *restr = NULL;
    json_t *root = read_json_file(path, why, why_cap);
    int ok = 0;

    if (!root)
        goto out;
    if (!json_is_object(root) || !json_is_object(json_object_get(root, "tune_params")) ||
        !json_is_object(json_object_get(root, "cache"))) {
        snprintf(why, why_cap, "not a Kernel Tuner cache (needs tune_params and cache objects)");
        goto out;
    }
    const json_t *r = json_object_get(root, "restrictions");
    if (json_is_string(r)) {
        restr = json_pack("[O]", r);
    } else if (json_is_array(r)) {
        restr = json_incref((json_t *)r);
    } else if (r && !json_is_null(r)) {
        snprintf(why, why_cap, "restrictions must be a list of strings");
        goto out;
    }
    ds = calloc(1, sizeof *ds);
    if (!ds) {
        snprintf(why, why_cap, "out of memory");
        goto out;
    }
    if (load_header(ds, root, path, fallback_name, why, why_cap) < 0 ||
        load_toolchain(ds, root, why, why_cap) < 0)
        goto out;
    params = build_params(root, &keys, why, why_cap);
    if (!params)
        goto out;
    if (load_records(ds, root, params, restr, why, why_cap) < 0)
        goto out;
    if (hash_definition(ds, keys, json_object_get(root, "tune_params"), restr) < 0) {
        snprintf(why, why_cap, "out of memory");
        goto out;
    }
    ok = 1;
out:
    json_decref(params);
    json_decref(keys);
    json_decref(restr);
    json_decref(root);
    if (!ok) {
        dataset_free(ds);
        ds = NULL;
    }
    return ds;
}

const char *dataset_name(const replay_dataset *ds)
{
    return ds ? ds->name : NULL;
}

const char *dataset_device(const replay_dataset *ds)
{
    return ds ? ds->device : NULL;
}

const space *dataset_space(const replay_dataset *ds)
{
    return ds ? ds->sp : NULL;
}

uint64_t dataset_num_records(const replay_dataset *ds)
{
    return ds ? ds->n_records : 0;
}

const replay_record *dataset_record_at(const replay_dataset *ds, uint64_t i)
{
    return ds && i < ds->n_records ? &ds->records[i] : NULL;
}
