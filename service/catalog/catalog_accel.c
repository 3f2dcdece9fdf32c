/* catalog/catalog_accel — the accel devices ("accel:<name>", issue 13): analytical accelerators of
 * a devices file (accel/accel_device.h), each offering every accel kernel (accel/accel_kernel.h).
 * Loading (the key strings targets borrow, the /v1/kernels entries built once), resolution (a
 * problem or preset validated into canonical form, the mapping space built), the lookups the cost
 * model's users need (the problem of a target, a sampled problem, the meta-statistics of a
 * configuration) and the JSON views' accel parts. Config, not probed: every role loads the file. */
#include "catalog/catalog_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_model.h"
#include "core/log.h"
#include "core/suggest.h"

/* The kernel's index among the accel kernels, or -1. */
static int kernel_index(const accel_kernel *k)
{
    for (int i = 0; k && i < accel_kernel_count(); i++) {
        if (accel_kernel_at(i) == k)
            return i;
    }
    return -1;
}

/* The problem canonical JSON with sorted keys into a malloc'd string, or NULL. */
static char *problem_key_of(const json_t *canon)
{
    return canon ? json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

/* Copies member name of o into e; when o has none, an empty array (or, with object 1, object). */
static int set_copy(json_t *e, const char *name, const json_t *o, int object)
{
    const json_t *v = json_object_get(o, name);
    return json_object_set_new(e, name,
                               v        ? json_deep_copy(v)
                               : object ? json_object()
                                        : json_array());
}

/* The /v1/kernels entry of kernel k on device a: the default problem, its arguments and presets,
 * the mapping space of the default problem (parameters, restrictions, configurations; null when it
 * cannot be counted in 64 bits) and the hash. NULL when out of memory. */
static json_t *kernel_entry(const accel_kernel *k, const catalog_accel_dev *a, const char *hash)
{
    accel_problem p;
    kt_error e;
    space *sp = NULL;
    json_t *kj = accel_kernel_json(k), *problem = NULL, *params = json_array();
    json_t *restr = json_array(), *o = json_object();
    kt_error_clear(&e);
    if (accel_problem_parse(k, NULL, &p, &e) == 0 && (problem = accel_problem_json(&p)))
        sp = accel_space_new(&p, &a->dev, &e);
    if (!sp)
        log_warn("catalog: kernel %s on %s: the space of the default problem cannot be built: %s",
                 accel_kernel_name(k), a->name, e.message);
    for (int i = 0; sp && params && i < space_num_params(sp); i++) {
        json_t *vals = json_array();
        for (int v = 0; vals && v < space_param_num_values(sp, i); v++)
            json_array_append_new(vals, space_param_value_json(sp, i, v));
        json_array_append_new(params, json_pack("{s:s, s:o}", "name", space_param_name(sp, i),
                                                "values", vals ? vals : json_array()));
    }
    for (int r = 0; sp && restr && r < space_num_restrictions(sp); r++)
        json_array_append_new(restr, json_string(space_restriction_text(sp, r)));
    uint64_t count = sp ? space_count(sp) : 0;
    json_t *pj = problem ? problem : json_object();
    if (!o || !kj || !params || !restr || json_object_set(o, "problem", pj) < 0 ||
        json_object_set_new(o, "device", json_string(a->name)) < 0 ||
        set_copy(o, "problem_arguments", kj, 0) < 0 || set_copy(o, "presets", kj, 1) < 0 ||
        json_object_set(o, "parameters", params) < 0 ||
        json_object_set(o, "restrictions", restr) < 0 ||
        json_object_set_new(o, "configurations",
                            sp && count <= (uint64_t)INT64_MAX ? json_integer((json_int_t)count)
                                                               : json_null()) < 0 ||
        json_object_set_new(o, "hash", json_string(hash)) < 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(pj);
    json_decref(kj);
    json_decref(params);
    json_decref(restr);
    space_free(sp);
    return o;
}

int catalog_accel_load(catalog *c, const char *path, kt_error *err)
{
    accel_device *devs = NULL;
    int n = 0, rc = -1, nk = accel_kernel_count();
    if (!path || !path[0])
        return 0;
    if (accel_devices_load(path, &devs, &n, err) < 0)
        goto out;
    c->accel = calloc((size_t)(n > 0 ? n : 1), sizeof *c->accel);
    c->accel_hash = calloc((size_t)(nk > 0 ? nk : 1), sizeof *c->accel_hash);
    c->accel_kernels = calloc((size_t)(nk * n > 0 ? nk * n : 1), sizeof *c->accel_kernels);
    if (!c->accel || !c->accel_hash || !c->accel_kernels) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < nk; i++)
        snprintf(c->accel_hash[i], sizeof c->accel_hash[i], "%016" PRIx64,
                 accel_kernel_hash(accel_kernel_at(i)));
    for (int i = 0; i < n; i++) {
        catalog_accel_dev *a = &c->accel[i];
        a->dev = devs[i];
        snprintf(a->name, sizeof a->name, "accel:%s", devs[i].name);
        snprintf(a->klass, sizeof a->klass, "accel:%s:%016" PRIx64, devs[i].name,
                 accel_device_hash(&devs[i]));
        c->n_accel = i + 1;
        log_info("catalog: %s from %s (class %s)", a->name, path, a->klass);
    }
    for (int k = 0; k < nk; k++) {
        for (int d = 0; d < n; d++) {
            json_t *e = kernel_entry(accel_kernel_at(k), &c->accel[d], c->accel_hash[k]);
            c->accel_kernels[k * n + d] = e ? json_dumps(e, JSON_COMPACT) : NULL;
            json_decref(e);
            if (!c->accel_kernels[k * n + d]) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
        }
    }
    rc = 0;
out:
    accel_devices_free(devs, n);
    return rc;
}

void catalog_accel_free(catalog *c)
{
    int nk = accel_kernel_count();
    for (int i = 0; c->accel_kernels && i < nk * c->n_accel; i++)
        free(c->accel_kernels[i]);
    free(c->accel_kernels);
    free(c->accel_hash);
    free(c->accel);
    c->accel = NULL;
    c->accel_kernels = NULL;
    c->accel_hash = NULL;
    c->n_accel = 0;
}

const catalog_accel_dev *catalog_accel_find(const catalog *c, const char *device)
{
    for (int i = 0; c && device && i < c->n_accel; i++) {
        if (strcmp(c->accel[i].name, device) == 0)
            return &c->accel[i];
    }
    return NULL;
}

const accel_device *catalog_find_accel(const catalog *c, const char *device)
{
    const catalog_accel_dev *a = catalog_accel_find(c, device);
    return a ? &a->dev : NULL;
}

/* "cnn_layer, mttkrp": the kernels every accel device offers. */
static void kernel_list(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < accel_kernel_count() && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "",
                         accel_kernel_name(accel_kernel_at(i)));
        used += w > 0 ? (size_t)w : 0;
    }
}

/* The accel kernel of that name that a offers (every one), or NULL with KT_ERR_UNKNOWN_KERNEL. */
static const accel_kernel *find_kernel(const catalog_accel_dev *a, const char *kernel,
                                       kt_error *err)
{
    char list[KT_ERROR_HINT_MAX - 64];
    const accel_kernel *k = kernel ? accel_kernel_find(kernel) : NULL;
    if (k)
        return k;
    kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "device %s does not offer kernel '%.100s'", a->name,
                 kernel ? kernel : "");
    kernel_list(list, sizeof list);
    kt_error_hint(err, "device %s offers: %s", a->name, list);
    kt_suggest s;
    kt_suggest_init(&s, kernel);
    kt_suggest_add_list(&s, list);
    kt_suggest_hint(&s, err);
    return NULL;
}

int catalog_accel_resolve(const catalog *c, const catalog_accel_dev *a, const char *kernel,
                          const json_t *problem, int with_space, target *out, kt_error *err)
{
    accel_problem p;
    json_t *canon = NULL;
    space *sp = NULL;
    char *problem_key = NULL;
    int rc = -1;
    const accel_kernel *k = find_kernel(a, kernel, err);
    int ki = kernel_index(k);

    memset(out, 0, sizeof *out);
    if (!k)
        goto out;
    if (ki < 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "accel kernel %s is not listed", kernel);
        goto out;
    }
    if (accel_problem_parse(k, json_is_null(problem) ? NULL : problem, &p, err) < 0)
        goto out;
    if (!(canon = accel_problem_json(&p)) || !(problem_key = problem_key_of(canon))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (with_space && !(sp = accel_space_new(&p, &a->dev, err))) {
        kt_error_prefix(err, "kernel %s on %s", accel_kernel_name(k), a->name);
        goto out;
    }
    out->key = (target_key){.kernel = accel_kernel_name(k),
                            .device = a->name,
                            .device_class = a->klass,
                            .kernel_hash = c->accel_hash[ki],
                            .problem_key = problem_key,
                            .toolchain = CATALOG_ACCEL_TOOLCHAIN};
    out->problem = canon;
    out->sp = sp;
    out->owns_space = sp != NULL;
    canon = NULL;
    problem_key = NULL;
    sp = NULL;
    rc = 0;
out:
    json_decref(canon);
    space_free(sp);
    free(problem_key);
    return rc;
}

/* The accel device of t, or NULL with KT_ERR_BAD_REQUEST. */
static const catalog_accel_dev *target_device(const catalog *c, const target *t, kt_error *err)
{
    const catalog_accel_dev *a = t ? catalog_accel_find(c, t->key.device) : NULL;
    if (!a)
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "device %.200s has no cost model (not an accel device)",
                     t && t->key.device ? t->key.device : "(none)");
    return a;
}

int catalog_accel_problem(const catalog *c, const target *t, accel_problem *out, kt_error *err)
{
    int rc = -1;
    json_t *problem = NULL;
    const catalog_accel_dev *a = target_device(c, t, err);
    const accel_kernel *k = a ? find_kernel(a, t->key.kernel, err) : NULL;
    if (!k)
        goto out;
    /* From the key's text: a target's json_t may be read by other threads meanwhile. */
    problem = t->key.problem_key ? json_loads(t->key.problem_key, 0, NULL) : NULL;
    if (!problem) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "the target of kernel %s on %s has no problem",
                     t->key.kernel, t->key.device);
        goto out;
    }
    rc = accel_problem_parse(k, problem, out, err);
out:
    json_decref(problem);
    return rc;
}

json_t *catalog_sample_problem(const catalog *c, const char *kernel, const char *device,
                               kt_rng *rng, kt_error *err)
{
    accel_problem p;
    const catalog_accel_dev *a = catalog_accel_find(c, device);
    if (!a) {
        kt_error_set(err, KT_ERR_NOT_IMPLEMENTED,
                     "device %.200s has no cost model: problems are sampled on accel devices only",
                     device ? device : "(none)");
        return NULL;
    }
    const accel_kernel *k = find_kernel(a, kernel, err);
    if (!k)
        return NULL;
    accel_problem_sample(k, rng, &p);
    json_t *o = accel_problem_json(&p);
    if (!o)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return o;
}

int catalog_accel_meta(const catalog *c, const target *t, config_id id, double *meta, int cap,
                       double *objective_w, int *n_out, kt_error *err)
{
    accel_problem p;
    accel_mapping m;
    accel_stats s, lb;
    double all[CATALOG_ACCEL_META_MAX], w[CATALOG_ACCEL_META_MAX];
    const catalog_accel_dev *a = target_device(c, t, err);
    *n_out = 0;
    if (!a || catalog_accel_problem(c, t, &p, err) < 0)
        return -1;
    if (!t->sp || id >= space_count(t->sp))
        return kt_error_set(err, KT_ERR_INTERNAL, "configuration %llu is outside the space of %s",
                            (unsigned long long)id, t->key.device);
    if (accel_mapping_decode(&p, t->sp, id, &m, err) < 0)
        return -1;
    if (!accel_evaluate(&a->dev, &p, &m, &s))
        return 0;
    accel_lower_bound(&a->dev, &p, &lb);
    int n = accel_meta(&p, &s, &lb, all, CATALOG_ACCEL_META_MAX);
    if (accel_meta_objective(&p, w, CATALOG_ACCEL_META_MAX) != n)
        return kt_error_set(err, KT_ERR_INTERNAL, "the objective's weights are not the meta's");
    if (n > cap)
        return kt_error_set(err, KT_ERR_INTERNAL, "%d meta-statistics do not fit %d", n, cap);
    memcpy(meta, all, (size_t)n * sizeof *meta);
    if (objective_w)
        memcpy(objective_w, w, (size_t)n * sizeof *w);
    *n_out = n;
    return 1;
}

/* /v1/devices and the fleet records: the names of the accel kernels. */
static json_t *kernel_names(void)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < accel_kernel_count(); i++)
        json_array_append_new(arr, json_string(accel_kernel_name(accel_kernel_at(i))));
    return arr;
}

void catalog_accel_devices_json(const catalog *c, json_t *arr)
{
    for (int i = 0; arr && c && i < c->n_accel; i++) {
        const catalog_accel_dev *a = &c->accel[i];
        json_t *desc = accel_device_json(&a->dev), *ks = kernel_names();
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o}", "name", a->name,
                                             "kind", "accel", "class", a->klass, "toolchain",
                                             CATALOG_ACCEL_TOOLCHAIN, "available", 1, "description",
                                             desc ? desc : json_object(), "kernels",
                                             ks ? ks : json_array()));
    }
}

void catalog_accel_records_json(const catalog *c, json_t *arr)
{
    for (int i = 0; arr && c && i < c->n_accel; i++) {
        const catalog_accel_dev *a = &c->accel[i];
        json_t *desc = accel_device_json(&a->dev);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, s:s, s:{}, s:o}", "name",
                                             a->name, "kind", "accel", "ordinal", 0, "class",
                                             a->klass, "toolchain", CATALOG_ACCEL_TOOLCHAIN,
                                             "limits", "description", desc ? desc : json_object()));
    }
}

void catalog_accel_kernels_json(const catalog *c, json_t *arr)
{
    for (int k = 0; arr && c && c->n_accel > 0 && k < accel_kernel_count(); k++) {
        const accel_kernel *ak = accel_kernel_at(k);
        json_t *entry = NULL, *kj = NULL;
        for (size_t i = 0; i < json_array_size(arr) && !entry; i++) {
            json_t *e = json_array_get(arr, i);
            if (strcmp(json_string_value(json_object_get(e, "name")), accel_kernel_name(ak)) == 0)
                entry = e;
        }
        if (!entry) {
            entry = json_pack("{s:s, s:[]}", "name", accel_kernel_name(ak), "devices");
            if (!entry || json_array_append_new(arr, entry) < 0)
                return;
        }
        if (!json_object_get(entry, "summary") && (kj = accel_kernel_json(ak)))
            json_object_set_new(entry, "summary",
                                json_string(json_string_value(json_object_get(kj, "summary"))
                                                ? json_string_value(json_object_get(kj, "summary"))
                                                : ""));
        json_decref(kj);
        json_t *devs = json_object_get(entry, "devices");
        for (int d = 0; d < c->n_accel; d++) {
            const char *text = c->accel_kernels[k * c->n_accel + d];
            json_t *e = text ? json_loads(text, 0, NULL) : NULL;
            if (e)
                json_array_append_new(devs, e);
        }
    }
}
