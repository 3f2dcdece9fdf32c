/* training/trainer_data — what the trainer needs from the catalog and the store before training:
 * the device of the model's class that offers its kernel (and the kernel hash check), the training
 * set built from the stored trials, and the held-out spaces for predictor_evaluate. See trainer.h.
 */
#include "training/trainer_internal.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/array.h"

/* The first available device of class device_class that offers kernel, into buf; 0 or -1. */
static int device_of_class(const catalog *cat, const char *kernel, const char *device_class,
                           char *buf, size_t cap)
{
    int rc = -1;
    json_t *devs = catalog_devices_json(cat);
    size_t i;
    json_t *d, *k;
    json_array_foreach(devs, i, d)
    {
        const char *cls = json_string_value(json_object_get(d, "class"));
        const char *name = json_string_value(json_object_get(d, "name"));
        if (!cls || !name || strcmp(cls, device_class) != 0 ||
            json_is_false(json_object_get(d, "available")))
            continue;
        size_t j;
        json_array_foreach(json_object_get(d, "kernels"), j, k)
        {
            const char *kn = json_string_value(k);
            if (rc < 0 && kn && strcmp(kn, kernel) == 0 && strlen(name) < cap) {
                memcpy(buf, name, strlen(name) + 1);
                rc = 0;
            }
        }
    }
    json_decref(devs);
    return rc;
}

int trainer_open_target(const catalog *cat, const model_claim *m, trainer_target *out,
                        const char **reason, kt_error *err)
{
    memset(out, 0, sizeof *out);
    out->cat = cat;
    if (device_of_class(cat, m->kernel, m->device_class, out->device, sizeof out->device) < 0) {
        *reason = "target_unavailable";
        kt_error_set(err, KT_ERR_UNKNOWN_DEVICE,
                     "no device of class %s offering kernel %s is served by this ktuned",
                     m->device_class, m->kernel);
        kt_error_hint(err, "a ktuned serving such a device trains it; this one let it fail");
        return -1;
    }
    if (catalog_resolve(cat, m->kernel, out->device, NULL, &out->def, err) < 0) {
        *reason = "target_unavailable";
        kt_error_prefix(err, "resolving kernel %s on %s", m->kernel, out->device);
        return -1;
    }
    if (strcmp(out->def.key.kernel_hash, m->kernel_hash) != 0) {
        *reason = "kernel_changed";
        kt_error_set(err, KT_ERR_CONFLICT,
                     "kernel %s changed since the model was queued (hash %s, now %s)", m->kernel,
                     m->kernel_hash, out->def.key.kernel_hash);
        kt_error_hint(err, "queue a new model: it learns from the trials of the current kernel");
        trainer_target_release(out);
        return -1;
    }
    if (strcmp(out->def.key.toolchain ? out->def.key.toolchain : "", m->toolchain) != 0) {
        *reason = "toolchain_changed";
        kt_error_set(err, KT_ERR_TOOLCHAIN_CHANGED,
                     "the toolchain of %s changed since the model was queued (%s, now %s)",
                     out->device, m->toolchain, out->def.key.toolchain);
        kt_error_hint(err, "queue a new model: it learns from the trials of the current toolchain");
        trainer_target_release(out);
        return -1;
    }
    return 0;
}

int trainer_open_external(const model_claim *m, const json_t *space, const json_t *problem,
                          trainer_target *out, const char **reason, kt_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", CATALOG_EXTERNAL_DEVICE);
    if (catalog_external_resolve(m->kernel, m->kernel_hash, m->device_class, space, problem, 1,
                                 &out->def, err) < 0) {
        *reason = "target_unavailable";
        kt_error_prefix(err, "the stored space of kernel %s on external, class %s", m->kernel,
                        m->device_class);
        return -1;
    }
    return 0;
}

void trainer_target_release(trainer_target *t)
{
    for (int i = 0; i < t->n_held; i++)
        target_release(&t->held[i]);
    free(t->held);
    target_release(&t->def);
    memset(t, 0, sizeof *t);
}

/* The problem argument names in spec order: the catalog kernel's, else the canonical problem's
 * keys (a replay dataset's or an external key's problem), a list member by its elements
 * ("problem_size[0]", "problem_size[1]": model/training_set.c reads them so). New reference. */
static json_t *arg_names(const trainer_target *t, const char *kernel)
{
    json_t *names = json_array();
    const kernel_spec *k = t->cat ? catalog_find_kernel(t->cat, kernel) : NULL;
    if (k) {
        for (int i = 0; i < k->n_args; i++)
            json_array_append_new(names, json_string(k->args[i].name));
        return names;
    }
    const char *key;
    json_t *v;
    json_object_foreach(t->def.problem, key, v)
    {
        if (!json_is_array(v)) {
            json_array_append_new(names, json_string(key));
            continue;
        }
        for (size_t i = 0; i < json_array_size(v); i++) {
            char name[160];
            snprintf(name, sizeof name, "%.128s[%zu]", key, i);
            json_array_append_new(names, json_string(name));
        }
    }
    return names;
}

training_set *trainer_training_set(const trainer_target *t, const model_claim *m,
                                   const model_training_data *data, int *added, kt_error *err)
{
    json_t *names = arg_names(t, m->kernel);
    const kernel_spec *k = t->cat ? catalog_find_kernel(t->cat, m->kernel) : NULL;
    json_t *derived = k ? kernel_spec_derived_json(k) : NULL; /* model/derived.h */
    training_set *ts = training_set_new_from_space(t->def.sp, names, err);
    if (ts && training_set_set_derived(ts, derived, err) < 0) {
        training_set_free(ts);
        ts = NULL;
    }
    json_decref(names);
    json_decref(derived);
    *added = 0;
    for (int i = 0; ts && i < data->n; i++) {
        const model_trial_row *row = &data->rows[i];
        kt_error why;
        kt_error_clear(&why);
        /* A neural problem's (issue 14) configurations may change the network: the models learn
         * semantics-preserving ones only, of plain problems. */
        if (json_object_get(row->problem, "neural"))
            continue;
        int p = training_set_add_problem(ts, row->problem, &why);
        if (p < 0) {
            /* A problem the current kernel no longer reads the same way: skipped, not fatal. */
            log_warn("model %lld: trial %lld skipped: %s", m->id, row->trial_id, why.message);
            continue;
        }
        *added += training_set_add_trial(ts, p, row->config, row->time_ms) == 1;
    }
    return ts;
}

const space *trainer_space_for(void *ctx, const json_t *problem, kt_error *err)
{
    trainer_target *t = ctx;
    kt_error why;
    kt_error_clear(&why);
    if (kt_array_resize((void **)&t->held, (size_t)t->n_held + 1, sizeof *t->held) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory resolving held-out problems");
        return NULL;
    }
    /* An external key's problems are built from its stored space (cat is NULL there). */
    int rc = t->cat ? catalog_resolve(t->cat, t->def.key.kernel, t->device, problem,
                                      &t->held[t->n_held], &why)
                    : catalog_external_resolve(t->def.key.kernel, t->def.key.kernel_hash,
                                               t->def.key.device_class, t->def.space_def, problem,
                                               1, &t->held[t->n_held], &why);
    if (rc < 0) {
        /* Skipped (err stays KT_OK): the catalog no longer accepts this problem here. */
        char *text = json_dumps(problem, JSON_COMPACT | JSON_SORT_KEYS);
        log_warn("held-out problem %s skipped: %s", text ? text : "?", why.message);
        free(text);
        return NULL;
    }
    return t->held[t->n_held++].sp;
}
