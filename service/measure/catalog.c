/* measure/catalog — scans the dataset folders into replay devices, resolves (kernel, device,
 * problem) requests into tuning targets and renders the device and kernel lists for the API. */
#include "measure_impl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/log.h"

#define CATALOG_MAX_FILES    4096 /* dataset files per folder */
#define CATALOG_HINT_DEVICES 8    /* devices named in an unknown-device hint */

struct catalog {
    replay_dataset **ds;
    int n, cap;
    double replay_speed;
};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const replay_dataset *catalog_find_replay(const catalog *c, const char *device)
{
    for (int i = 0; c && device && i < c->n; i++) {
        if (strcmp(c->ds[i]->device, device) == 0)
            return c->ds[i];
    }
    return NULL;
}

static int add_dataset(catalog *c, replay_dataset *ds)
{
    const replay_dataset *old = catalog_find_replay(c, ds->device);
    if (old) {
        log_warn("dataset %s: device %s is already loaded from %s; skipped", ds->file, ds->device,
                 old->file);
        dataset_free(ds);
        return 0;
    }
    if (c->n == c->cap) {
        int ncap = c->cap ? c->cap * 2 : 16;
        replay_dataset **nd = realloc(c->ds, (size_t)ncap * sizeof *nd);
        if (!nd) {
            dataset_free(ds);
            return -1;
        }
        c->ds = nd;
        c->cap = ncap;
    }
    c->ds[c->n++] = ds;
    log_info("catalog: %s from %s (%llu configurations, %llu valid)", ds->device, ds->file,
             (unsigned long long)space_count(ds->sp), (unsigned long long)ds->n_valid);
    return 0;
}

/* Loads every *.json / *.json.gz of one folder, in name order so that duplicates resolve the same
 * way on every start. */
static int scan_dir(catalog *c, const char *dir, kt_error *err)
{
    char **names = NULL;
    int n = 0, rc = -1;
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d) {
        kt_error_set(err, KT_ERR_CONFIG, "dataset folder %.300s cannot be read: %s", dir,
                     strerror(errno));
        goto out;
    }
    names = calloc(CATALOG_MAX_FILES, sizeof *names);
    if (!names) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' ||
            !(ends_with(e->d_name, ".json") || ends_with(e->d_name, ".json.gz")))
            continue;
        if (n == CATALOG_MAX_FILES) {
            log_warn("dataset folder %s: more than %d dataset files; the rest are ignored", dir,
                     CATALOG_MAX_FILES);
            break;
        }
        if (!(names[n] = strdup(e->d_name))) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        n++;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX], base[256], why[512];
        struct stat st;
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (w < 0 || (size_t)w >= sizeof path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            log_warn("dataset %s/%s: not a readable regular file; skipped", dir, names[i]);
            continue;
        }
        size_t blen = strlen(names[i]) - (ends_with(names[i], ".gz") ? 8 : 5);
        snprintf(base, sizeof base, "%.*s", (int)(blen < sizeof base ? blen : sizeof base - 1),
                 names[i]);
        why[0] = '\0';
        replay_dataset *ds = dataset_load(path, base, why, sizeof why);
        if (!ds) {
            log_warn("dataset %s: %s; skipped", path, why);
            continue;
        }
        if (add_dataset(c, ds) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    rc = 0;
out:
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    if (d)
        closedir(d);
    return rc;
}

catalog *catalog_new(const catalog_options *opt, kt_error *err)
{
    catalog *c = NULL;
    int ok = 0;

    if (!opt || opt->n_dataset_dirs < 0 || (opt->n_dataset_dirs > 0 && !opt->dataset_dirs)) {
        kt_error_set(err, KT_ERR_CONFIG, "no dataset folders given");
        goto out;
    }
    if (!isfinite(opt->replay_speed) || opt->replay_speed < 0) {
        kt_error_set(err, KT_ERR_CONFIG, "replay speed must be a number >= 0");
        goto out;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    c->replay_speed = opt->replay_speed;
    for (int i = 0; i < opt->n_dataset_dirs; i++) {
        if (!opt->dataset_dirs[i] || scan_dir(c, opt->dataset_dirs[i], err) < 0) {
            if (!opt->dataset_dirs[i])
                kt_error_set(err, KT_ERR_CONFIG, "dataset folder %d is not named", i);
            goto out;
        }
    }
    ok = 1;
out:
    if (!ok) {
        catalog_free(c);
        c = NULL;
    }
    return c;
}

void catalog_free(catalog *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        dataset_free(c->ds[i]);
    free(c->ds);
    free(c);
}

int catalog_num_devices(const catalog *c)
{
    return c ? c->n : 0;
}

double catalog_replay_speed(const catalog *c)
{
    return c ? c->replay_speed : 0.0;
}

void catalog_device_hint(const catalog *c, char *buf, size_t cap)
{
    size_t len;
    int n = catalog_num_devices(c);
    int w = snprintf(buf, cap, "%s", n ? "devices: " : "no devices are loaded");
    len = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < n && i < CATALOG_HINT_DEVICES && len < cap; i++) {
        w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", c->ds[i]->device);
        len += w > 0 ? (size_t)w : 0;
    }
    if (n > CATALOG_HINT_DEVICES && len < cap)
        snprintf(buf + len, cap - len, ", ... (%d more)", n - CATALOG_HINT_DEVICES);
}

/* JSON equality where numbers compare by value, so 4096.0 is accepted for 4096. */
static int json_same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b)) {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++) {
            if (!json_same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        }
        return 1;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!json_same(v, json_object_get(b, k)))
                return 0;
        }
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* The canonical problem of a dataset (new reference): {"problem_size": recorded}, or {} when the
 * file records none. Parsed from text so that threads never share a json_t. */
static json_t *canonical_problem(const replay_dataset *ds)
{
    json_t *p = json_object();
    if (p && ds->problem_text) {
        json_t *v = json_loads(ds->problem_text, JSON_DECODE_ANY, NULL);
        if (!v || json_object_set_new(p, "problem_size", v) < 0) {
            json_decref(p);
            p = NULL;
        }
    }
    return p;
}

static int check_problem(const replay_dataset *ds, const json_t *problem, const json_t *canon,
                         kt_error *err)
{
    const char *k;
    json_t *v;
    if (!problem || json_is_null(problem))
        return 0;
    if (!json_is_object(problem))
        return kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem must be a JSON object");
    json_object_foreach((json_t *)problem, k, v)
    {
        const json_t *want = json_object_get(canon, k);
        if (!want) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "unknown problem argument '%.100s'; accepted: %s",
                         k, ds->problem_text ? "problem_size" : "none");
            return -1;
        }
        if (!json_same(v, want)) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "dataset %s was recorded at %s %.200s only",
                         ds->name, k, ds->problem_display);
            kt_error_hint(err, "omit the problem to use the recorded one");
            return -1;
        }
    }
    return 0;
}

int catalog_resolve(const catalog *c, const char *kernel, const char *device, const json_t *problem,
                    tune_target *out, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    json_t *canon = NULL;
    int rc = -1;
    const replay_dataset *ds = catalog_find_replay(c, device);

    memset(out, 0, sizeof *out);
    if (!ds) {
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "unknown device '%.200s'", device ? device : "");
        catalog_device_hint(c, hint, sizeof hint);
        kt_error_hint(err, "%s", hint);
        goto out;
    }
    if (!kernel || strcmp(kernel, ds->kernel) != 0) {
        kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "device %s does not offer kernel '%.100s'",
                     ds->device, kernel ? kernel : "");
        kt_error_hint(err, "device %s offers: %s", ds->device, ds->kernel);
        goto out;
    }
    canon = canonical_problem(ds);
    if (!canon) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (check_problem(ds, problem, canon, err) < 0)
        goto out;
    out->problem_key = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    if (!out->problem_key) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    out->kernel = ds->kernel;
    out->device = ds->device;
    out->device_class = ds->device;
    out->kernel_hash = ds->kernel_hash;
    out->sp = ds->sp;
    out->problem = canon;
    canon = NULL;
    rc = 0;
out:
    json_decref(canon);
    return rc;
}

void tune_target_release(tune_target *t)
{
    if (!t)
        return;
    json_decref(t->problem);
    free(t->problem_key);
    memset(t, 0, sizeof *t);
}

json_t *catalog_devices_json(const catalog *c)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < catalog_num_devices(c); i++) {
        const replay_dataset *ds = c->ds[i];
        json_t *problem = canonical_problem(ds);
        json_t *desc = json_pack("{s:s, s:s, s:O?, s:s, s:I, s:I}", "gpu", ds->gpu,
                                 "recorded_kernel", ds->recorded_kernel, "problem_size",
                                 problem ? json_object_get(problem, "problem_size") : NULL, "file",
                                 ds->file, "configurations", (json_int_t)ds->n_records, "valid",
                                 (json_int_t)ds->n_valid);
        json_decref(problem);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:o, s:[s]}", "name", ds->device,
                                             "kind", "replay", "class", ds->device, "available", 1,
                                             "description", desc ? desc : json_object(), "kernels",
                                             ds->kernel));
    }
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
    json_t *problem = canonical_problem(ds);
    return json_pack("{s:s, s:o, s:o, s:o, s:I}", "device", ds->device, "problem",
                     problem ? problem : json_object(), "parameters",
                     params ? params : json_array(), "restrictions", restr ? restr : json_array(),
                     "configurations", (json_int_t)space_count(ds->sp));
}

json_t *catalog_kernels_json(const catalog *c)
{
    json_t *arr = json_array();
    int n = catalog_num_devices(c);
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
    return arr;
}
