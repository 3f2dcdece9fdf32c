/* measure/accel_backend — the accel backend: a configuration of an accel device ("accel:<name>") is
 * decoded into a mapping and evaluated by the analytical cost model (accel/accel_model.h) in this
 * process: no runner, no lock, deterministic. The trial's time_ms is the objective, the mapping's
 * energy-delay product over the algorithmic minimum's (>= 1: 1 would be the minimum); measure_ms
 * is the evaluation's wall time, so a seconds budget counts the model's cost. */
#include "measure/backend_impl.h"

#include <stdlib.h>
#include <string.h>

#include "accel/accel_model.h"
#include "core/clock.h"

/* The problem of the last target measured, so that a job's trials parse it once. */
typedef struct accel_backend {
    const catalog *cat;
    const accel_device *dev;
    char device[64];
    char *problem_key; /* of prob; NULL before the first measure */
    char kernel[64];
    accel_problem prob;
} accel_backend;

void *accel_open(const catalog *c, const char *device, kt_error *err)
{
    const accel_device *d = catalog_find_accel(c, device);
    accel_backend *b = backend_state_new(d && strlen(device) < sizeof b->device ? d : NULL, device,
                                         sizeof *b, err);
    if (!b)
        return NULL;
    b->cat = c;
    b->dev = d;
    memcpy(b->device, device, strlen(device) + 1);
    return b;
}

/* The problem of t: the cached one when t's kernel and problem are the last target's. */
static int problem_of(accel_backend *b, const target *t, kt_error *err)
{
    if (b->problem_key && strcmp(b->problem_key, t->key.problem_key) == 0 &&
        strcmp(b->kernel, t->key.kernel) == 0)
        return 0;
    free(b->problem_key);
    b->problem_key = NULL;
    if (strlen(t->key.kernel) >= sizeof b->kernel)
        return kt_error_set(err, KT_ERR_INTERNAL, "kernel name %.100s is too long", t->key.kernel);
    if (catalog_accel_problem(b->cat, t, &b->prob, err) < 0)
        return -1;
    if (!(b->problem_key = strdup(t->key.problem_key)))
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    memcpy(b->kernel, t->key.kernel, strlen(t->key.kernel) + 1);
    return 0;
}

/* The extras of a valid mapping: the cost model's statistics, then the meta-statistics a surrogate
 * learns (catalog_accel_meta gives the same numbers), their objective weights and names. */
static json_t *valid_extras(const accel_problem *p, const accel_stats *s, const accel_stats *lb)
{
    double meta[CATALOG_ACCEL_META_MAX], w[CATALOG_ACCEL_META_MAX];
    int n = accel_meta(p, s, lb, meta, CATALOG_ACCEL_META_MAX);
    int nw = accel_meta_objective(p, w, CATALOG_ACCEL_META_MAX);
    json_t *o = accel_stats_json(p, s, lb);
    json_t *jm = json_array(), *jw = json_array(), *jn = json_array();
    for (int i = 0; jm && jw && jn && i < n; i++) {
        const char *name = accel_meta_name(p, i);
        json_array_append_new(jm, json_real(meta[i]));
        json_array_append_new(jw, json_real(i < nw ? w[i] : 0.0));
        json_array_append_new(jn, json_string(name ? name : ""));
    }
    if (!o || !jm || !jw || !jn || json_object_set(o, "meta", jm) < 0 ||
        json_object_set(o, "meta_objective", jw) < 0 || json_object_set(o, "meta_names", jn) < 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(jm);
    json_decref(jw);
    json_decref(jn);
    return o;
}

int accel_measure(void *impl, const target *t, config_id id, const backend_stop *stop,
                  trial_result *out, kt_error *err)
{
    accel_backend *b = impl;
    accel_mapping m;
    accel_stats s, lb;
    (void)stop; /* microseconds: nothing to stop */

    trial_result_init(out);
    if (!t || !t->sp || !t->key.device || strcmp(t->key.device, b->device) != 0)
        return kt_error_set(err, KT_ERR_INTERNAL, "target is not a target of device %s", b->device);
    if (id >= space_count(t->sp))
        return kt_error_set(
            err, KT_ERR_INTERNAL, "configuration id %llu is outside the space of %s (%llu)",
            (unsigned long long)id, b->device, (unsigned long long)space_count(t->sp));
    if (problem_of(b, t, err) < 0)
        return -1;
    double start = kt_clock_s();
    if (accel_mapping_decode(&b->prob, t->sp, id, &m, err) < 0)
        return -1;
    int valid = accel_evaluate(b->dev, &b->prob, &m, &s);
    if (valid)
        accel_lower_bound(b->dev, &b->prob, &lb);
    out->measure_ms = (kt_clock_s() - start) * 1e3;
    out->compile_ms = 0;
    out->noise_cv = 0;
    if (!valid) {
        out->status = TRIAL_INVALID;
        out->extras = json_pack("{s:s}", "reason", s.reason);
        return 0;
    }
    double ratio = lb.edp > 0 ? s.edp / lb.edp : 0;
    if (!(ratio > 0)) {
        out->status = TRIAL_RUNTIME_ERROR;
        out->extras = json_pack("{s:s, s:f, s:f}", "reason", "the cost model gave no energy-delay",
                                "edp", s.edp, "min_edp", lb.edp);
        return 0;
    }
    /* The minimum is never above a valid mapping's cost (accel/README.md); a ratio below 1 by a
     * rounding error of the products is the minimum itself. */
    if (ratio < 1 && ratio > 1 - 1e-9)
        ratio = 1;
    out->status = TRIAL_OK;
    out->time_ms = ratio;
    out->repeats = 1;
    out->extras = valid_extras(&b->prob, &s, &lb);
    return 0;
}

void accel_close(void *impl)
{
    accel_backend *b = impl;
    if (!b)
        return;
    free(b->problem_key);
    free(b);
}

int accel_quick_check(const catalog *c, const target *t, config_id id)
{
    accel_problem p;
    accel_mapping m;
    accel_stats s;
    kt_error err;
    kt_error_clear(&err);
    const accel_device *d = t ? catalog_find_accel(c, t->key.device) : NULL;
    if (!d || !t->sp || id >= space_count(t->sp) || catalog_accel_problem(c, t, &p, &err) < 0 ||
        accel_mapping_decode(&p, t->sp, id, &m, &err) < 0)
        return -1;
    return accel_evaluate(d, &p, &m, &s);
}
