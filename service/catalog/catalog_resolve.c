/* catalog/catalog_resolve — turns a request's (kernel, device, problem) into a tuning target: a
 * replay device's recorded problem and space, or a real device's kernel spec with the problem
 * validated and (unless only the key is wanted) the space built for it (an accel device's:
 * catalog_accel.c); every error names what is accepted. */
#include "catalog/catalog_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/suggest.h"

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

/* The canonical problem of a dataset: {"problem_size": recorded}, or {} (see catalog_impl.h). */
json_t *catalog_canonical_problem(const replay_dataset *ds)
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

/* The hint of an unknown or unavailable device: the devices there are. */
static void hint_devices(const catalog *c, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    catalog_device_hint(c, hint, sizeof hint);
    kt_error_hint(err, "%s", hint);
}

/* "did you mean 'gemm'?" before the hint when a kernel of list is close to kernel (issue 31). */
static void suggest_kernel(const char *kernel, const char *list, kt_error *err)
{
    kt_suggest s;
    kt_suggest_init(&s, kernel);
    kt_suggest_add_list(&s, list);
    kt_suggest_hint(&s, err);
}

/* "gemm, conv2d" — the kernels a real device offers. */
static void real_kernel_list(const catalog *c, const catalog_device *d, char *buf, size_t cap)
{
    size_t used = 0;
    int n = 0, n_folders = 0;
    catalog_folder_item *folders = catalog_folders_list(c, &n_folders); /* as they are now */
    buf[0] = '\0';
    for (int i = 0; i < n_folders && used < cap; i++) {
        if (!folders[i].k || !catalog_offers(d, folders[i].k))
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", n++ ? ", " : "", folders[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
    free(folders);
    if (!n)
        snprintf(buf, cap, "no kernels");
}

/* with_space 0: the key and problem only (a lookup); the space is what costs (enumeration). */
/* any_status: exactly version, whatever its status (a stored job's target, a validation). */
static int resolve_real(const catalog *c, const catalog_device *d, const char *kernel,
                        const char *version, int any_status, const json_t *problem, int with_space,
                        target *out, kt_error *err)
{
    char list[KT_ERROR_HINT_MAX - 64];
    kspec_problem p;
    json_t *canon = NULL, *plain = NULL, *neural_canon = NULL;
    catalog_neural *neural = NULL;
    space *sp = NULL;
    char *problem_key = NULL;
    int rc = -1;
    const kernel_spec *k = NULL;
    kt_error picked;
    kt_error_clear(&picked);
    int got = -1;
    if (any_status && version && (k = catalog_find_kernel_version(c, kernel, version)))
        got = 0;
    else
        got = catalog_kernel_pick(c, kernel, version, &k, &picked);

    if (!d->available) {
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device %s is not available: %.300s", d->name,
                     d->reason ? d->reason : "unknown reason");
        hint_devices(c, err);
        goto out;
    }
    if (!k && catalog_kernel_invalid(c, kernel, err))
        goto out; /* a folder of that name failed to load: say why, not "no such kernel" */
    if (got < 0 && (picked.code != KT_ERR_UNKNOWN_KERNEL || version)) {
        if (err)
            *err = picked; /* invalid, validating, or no such version: with the log or versions */
        goto out;
    }
    if (!k || !catalog_offers(d, k)) {
        kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "device %s does not offer kernel '%.100s'",
                     d->name, kernel ? kernel : "");
        real_kernel_list(c, d, list, sizeof list);
        kt_error_hint(err, "device %s offers: %s", d->name, list);
        suggest_kernel(kernel, list, err);
        goto out;
    }
    /* A "neural" member (catalog_neural.h) is split off, checked and kept in the canonical
     * problem: the transformations it allows widen the space. */
    if (catalog_neural_parse(c, k, d->kind, problem, &plain, &neural, &neural_canon, err) < 0 ||
        kernel_spec_problem(k, plain, &p, err) < 0)
        goto out;
    if (!(canon = kernel_spec_problem_json(k, &p)) ||
        (neural_canon && json_object_set(canon, "neural", neural_canon) < 0) ||
        !(problem_key = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (with_space && !(sp = kernel_spec_space_neural(k, d->kind, &p, &d->limits,
                                                      neural ? neural->allow_mask : 0, err))) {
        kt_error_prefix(err, "kernel %s on %s", k->name, d->name);
        goto out;
    }
    out->key = (target_key){.kernel = k->name,
                            .device = d->name,
                            .device_class = d->klass,
                            .kernel_hash = k->version,
                            .problem_key = problem_key,
                            .toolchain = d->toolchain};
    out->problem = canon;
    out->sp = sp;
    out->owns_space = sp != NULL;
    out->neural = neural;
    problem_key = NULL;
    canon = NULL;
    sp = NULL;
    neural = NULL;
    rc = 0;
out:
    json_decref(canon);
    json_decref(plain);
    json_decref(neural_canon);
    catalog_neural_free(neural);
    space_free(sp);
    free(problem_key);
    return rc;
}

static int resolve(const catalog *c, const char *kernel, const char *version, int any_status,
                   const char *device, const json_t *problem, int with_space,
                   const target_key *want, target *out, kt_error *err)
{
    json_t *canon = NULL;
    int rc = -1;
    catalog_found_device found;
    char *problem_key = NULL;
    memset(out, 0, sizeof *out);
    if (catalog_find_device(c, device, CATALOG_FIND_FLEET, want, &found, err) < 0)
        return -1;
    if (found.accel || found.real) {
        rc = found.accel
                 ? catalog_accel_resolve(c, found.accel, kernel, problem, with_space, out, err)
                 : resolve_real(c, found.real, kernel, version, any_status, problem, with_space,
                                out, err);
        if (rc == 0)
            out->key.dev = found.dev; /* the name parsed once, by catalog_find_device */
        return rc;
    }
    const replay_dataset *ds = found.replay;
    if (!kernel || strcmp(kernel, ds->kernel) != 0) {
        kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "device %s does not offer kernel '%.100s'",
                     ds->device, kernel ? kernel : "");
        kt_error_hint(err, "device %s offers: %s", ds->device, ds->kernel);
        suggest_kernel(kernel, ds->kernel, err);
        goto out;
    }
    canon = catalog_canonical_problem(ds);
    if (!canon) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (check_problem(ds, problem, canon, err) < 0)
        goto out;
    problem_key = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    if (!problem_key) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    /* A replay device is its own class: results recorded on one GPU are keyed by that dataset. */
    out->key = (target_key){.kernel = ds->kernel,
                            .device = ds->device,
                            .device_class = ds->device,
                            .kernel_hash = ds->kernel_hash,
                            .problem_key = problem_key,
                            .toolchain = ds->toolchain,
                            .dev = found.dev};
    out->sp = with_space ? ds->sp : NULL; /* borrowed either way: nothing to build */
    out->problem = canon;
    canon = NULL;
    problem_key = NULL;
    rc = 0;
out:
    json_decref(canon);
    free(problem_key);
    return rc;
}

int catalog_resolve(const catalog *c, const char *kernel, const char *device, const json_t *problem,
                    target *out, kt_error *err)
{
    return resolve(c, kernel, NULL, 0, device, problem, 1, NULL, out, err);
}

int catalog_resolve_version(const catalog *c, const char *kernel, const char *version,
                            const char *device, const json_t *problem, int with_space, target *out,
                            kt_error *err)
{
    return resolve(c, kernel, version, 0, device, problem, with_space, NULL, out, err);
}

int catalog_resolve_any(const catalog *c, const char *kernel, const char *version,
                        const char *device, const json_t *problem, target *out, kt_error *err)
{
    return resolve(c, kernel, version, 1, device, problem, 1, NULL, out, err);
}

int catalog_resolve_key(const catalog *c, const char *kernel, const char *device,
                        const json_t *problem, target *out, kt_error *err)
{
    return resolve(c, kernel, NULL, 0, device, problem, 0, NULL, out, err);
}

/* A key resolved from a device record of a class: its device's name parsed once, here. */
static int with_dev(int rc, target *out)
{
    if (rc == 0)
        kt_device_parse(out->key.device, &out->key.dev, NULL);
    return rc;
}

int catalog_resolve_class_key(const catalog *c, const char *kernel, const char *device_class,
                              const json_t *problem, target *out, kt_error *err)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; device_class && i < c->n_devs; i++) {
        const catalog_device *d = &c->devs[i];
        if (d->available && d->klass && strcmp(d->klass, device_class) == 0)
            return with_dev(resolve_real(c, d, kernel, NULL, 0, problem, 0, out, err), out);
    }
    for (int i = 0; device_class && i < c->n_accel; i++) {
        if (strcmp(c->accel[i].klass, device_class) == 0)
            return with_dev(catalog_accel_resolve(c, &c->accel[i], kernel, problem, 0, out, err),
                            out);
    }
    if (catalog_find_replay(c, device_class)) /* a replay device is its own class */
        return resolve(c, kernel, NULL, 0, device_class, problem, 0, NULL, out, err);
    const catalog_device *f = catalog_fleet_find_class(c, device_class);
    if (f)
        return with_dev(resolve_real(c, f, kernel, NULL, 0, problem, 0, out, err), out);
    kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "no device of class '%.200s' is known here",
                 device_class ? device_class : "");
    kt_error_hint(err, "GET /v1/devices lists each device's class (\"class\"); results of a "
                       "harness's own class are asked with device=external");
    return -1;
}

int catalog_reopen(const catalog *c, const target_key *stored, const json_t *problem, target *out,
                   kt_error *err)
{
    /* The stored version itself (a kernel folder edited since, a stored kernel's older version):
     * the job goes on measuring exactly the bytes its results are keyed by. */
    kt_error first;
    kt_error_clear(&first);
    if (resolve(c, stored->kernel, stored->kernel_hash, 1, stored->device, problem, 1, stored, out,
                &first) < 0) {
        if (first.code != KT_ERR_UNKNOWN_KERNEL || !catalog_find_kernel(c, stored->kernel)) {
            if (err)
                *err = first;
            return -1;
        }
        /* that version is gone (a folder edited before a restart): say so as before */
        if (resolve(c, stored->kernel, NULL, 0, stored->device, problem, 1, stored, out, err) < 0)
            return -1;
    }
    const target_key *now = &out->key;
    if (strcmp(now->kernel_hash, stored->kernel_hash) != 0)
        kt_error_set(err, KT_ERR_CONFLICT, "kernel %s on %s changed (source hash %s, now %s)",
                     stored->kernel, stored->device, stored->kernel_hash, now->kernel_hash);
    else if (strcmp(now->device_class, stored->device_class) != 0)
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "device %s is now a %.200s, not a %.200s",
                     stored->device, now->device_class, stored->device_class);
    else if (strcmp(now->problem_key, stored->problem_key) != 0)
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem %.200s of kernel %s now reads %.200s",
                     stored->problem_key, stored->kernel, now->problem_key);
    else if (!stored->toolchain || strcmp(now->toolchain, stored->toolchain) != 0) {
        kt_error_set(err, KT_ERR_TOOLCHAIN_CHANGED,
                     "the toolchain of device %s changed (results of kernel %s were measured "
                     "with '%.130s', it is now '%.130s')",
                     stored->device, stored->kernel, stored->toolchain ? stored->toolchain : "",
                     now->toolchain);
        kt_error_hint(err,
                      "results measured under another compiler or driver are not mixed with "
                      "this one's: tune the problem again as a new job (it is keyed by '%.130s')",
                      now->toolchain);
    } else
        return 0;
    target_release(out);
    return -1;
}

void target_release(target *t)
{
    if (!t)
        return;
    json_decref(t->problem);
    free((char *)t->key.problem_key); /* the one string of the key the target owns */
    if (t->owns_space)
        space_free((space *)t->sp);
    catalog_neural_free(t->neural);
    json_decref(t->space_def);
    free(t->owned_strings); /* an external target's kernel, class and hash */
    memset(t, 0, sizeof *t);
}

json_t *catalog_default_config(const catalog *c, const target *t)
{
    const kernel_spec *k =
        t ? catalog_find_kernel_version(c, t->key.kernel, t->key.kernel_hash) : NULL;
    const catalog_device *d = NULL;
    const char *text;

    if (t && t->space_def) /* an external target: the space's own default, when it has one */
        return catalog_external_default(t);
    if (!k)
        return NULL;
    d = catalog_find_real(c, t->key.device);
    if (!d)
        d = catalog_fleet_find_known(c, t->key.device);
    if (!d || !catalog_offers(d, k))
        return NULL;
    text = kernel_spec_default(k, d->kind, &d->limits);
    return text ? json_loads(text, 0, NULL) : NULL;
}
