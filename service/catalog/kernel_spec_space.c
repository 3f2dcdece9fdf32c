/* catalog/kernel_spec_space — a kernel's variants: their parameters, restrictions and default
 * configuration as loaded from spec.json (or cuda.json), and the space of a variant for one problem
 * on one device (kernel_spec_space). */
#include "catalog/kernel_spec_impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_params(kspec_loader *L, const kernel_spec *k, kspec_kind kind, kspec_variant *v,
                       const json_t *arr, const char *where)
{
    static const char *const fields[] = {"name", "values", NULL};
    int n_limits = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);
    json_t *out = NULL;
    int rc = -1;

    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > KSPEC_MAX_PARAMS) {
        kspec_bad(L, "%s.parameters: must be an array of 1 to %d parameters", where,
                  KSPEC_MAX_PARAMS);
        goto out;
    }
    if (!(out = json_array())) {
        kspec_bad(L, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *p = json_array_get(arr, i);
        char pw[96];
        snprintf(pw, sizeof pw, "%s.parameters[%zu]", where, i);
        if (!json_is_object(p)) {
            kspec_bad(L, "%s: must be an object", pw);
            goto out;
        }
        if (kspec_check_fields(L, p, pw, fields) < 0)
            goto out;
        const json_t *name = kspec_need(L, p, pw, "name"), *vals = kspec_need(L, p, pw, "values");
        if (!name || !vals)
            goto out;
        const char *ns = json_string_value(name);
        char nf[112];
        snprintf(nf, sizeof nf, "%s.name", pw);
        if (kspec_check_ident(L, name, nf) < 0)
            goto out;
        for (int j = 0; j < v->n_params; j++) {
            if (strcmp(v->param_names[j], ns) == 0) {
                kspec_bad(L, "%s.name: '%s' is listed twice", pw, ns);
                goto out;
            }
        }
        for (int j = 0; j < k->n_args; j++) {
            if (strcmp(k->args[j].name, ns) == 0) {
                kspec_bad(L, "%s.name: '%s' is also a problem argument", pw, ns);
                goto out;
            }
        }
        for (int j = 0; j < n_limits; j++) {
            if (strcmp(limit_names[j], ns) == 0) {
                kspec_bad(L, "%s.name: '%s' is also a device limit", pw, ns);
                goto out;
            }
        }
        if (!json_is_array(vals) || json_array_size(vals) < 1 ||
            json_array_size(vals) > KSPEC_MAX_VALUES) {
            kspec_bad(L, "%s.values: must be an array of 1 to %d integers", pw, KSPEC_MAX_VALUES);
            goto out;
        }
        for (size_t a = 0; a < json_array_size(vals); a++) {
            const json_t *x = json_array_get(vals, a);
            if (!json_is_integer(x)) {
                kspec_bad(L, "%s.values[%zu]: must be an integer (values become -D defines)", pw,
                          a);
                goto out;
            }
            for (size_t b = 0; b < a; b++) {
                if (json_integer_value(json_array_get(vals, b)) == json_integer_value(x)) {
                    kspec_bad(L, "%s.values: lists %lld twice", pw,
                              (long long)json_integer_value(x));
                    goto out;
                }
            }
        }
        snprintf(v->param_names[v->n_params], sizeof v->param_names[0], "%s", ns);
        v->n_params++;
        if (json_array_append_new(out, json_pack("{s:s, s:O}", "name", ns, "values", vals)) < 0) {
            kspec_bad(L, "out of memory");
            goto out;
        }
    }
    if (!(v->params_text = json_dumps(out, JSON_COMPACT))) {
        kspec_bad(L, "out of memory");
        goto out;
    }
    rc = 0;
out:
    json_decref(out);
    return rc;
}

/* Restrictions parse with the parameters as slots and the problem arguments and device limits as
 * constants (plausible values: only names and syntax are checked here). */
static int load_restrictions(kspec_loader *L, const kernel_spec *k, kspec_kind kind,
                             kspec_variant *v, const json_t *arr, const char *where,
                             const kspec_limits *lim)
{
    const char *params[KSPEC_MAX_PARAMS], *cnames[KSPEC_MAX_ARGS + KSPEC_MAX_LIMITS];
    expr_value cvals[KSPEC_MAX_ARGS + KSPEC_MAX_LIMITS];
    int n_limits = 0, nc = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);
    char field[128];

    if (!arr) {
        v->restrictions_text = strdup("[]");
        return v->restrictions_text ? 0 : kspec_bad(L, "out of memory");
    }
    if (!json_is_array(arr) || json_array_size(arr) > KSPEC_MAX_RESTRICTIONS)
        return kspec_bad(L, "%s.restrictions: must be an array of at most %d expressions", where,
                         KSPEC_MAX_RESTRICTIONS);
    for (int i = 0; i < v->n_params; i++)
        params[i] = v->param_names[i];
    for (int i = 0; i < k->n_args; i++, nc++) {
        cnames[nc] = k->args[i].name;
        cvals[nc] = (expr_value){.type = EXPR_INT, .u.i = k->args[i].def};
    }
    for (int i = 0; i < n_limits; i++, nc++) {
        cnames[nc] = limit_names[i];
        cvals[nc] = (expr_value){.type = EXPR_INT, .u.i = lim->v[i]};
    }
    expr_names en = {.n_params = v->n_params,
                     .params = params,
                     .n_consts = nc,
                     .const_names = cnames,
                     .const_values = cvals};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        kspec_expr x = {0};
        snprintf(field, sizeof field, "%s.restrictions[%zu]", where, i);
        if (!json_is_string(json_array_get(arr, i)))
            return kspec_bad(L, "%s: must be an expression (a string)", field);
        int rc = kspec_parse_expr(L, &x, json_array_get(arr, i), field, &en);
        kspec_expr_release(&x);
        if (rc < 0)
            return -1;
    }
    if (!(v->restrictions_text = json_dumps(arr, JSON_COMPACT)))
        return kspec_bad(L, "out of memory");
    return 0;
}

/* One configuration object: every parameter named once with one of its values. *text: compact
 * JSON, sorted keys (malloc'd). */
static int load_config(kspec_loader *L, const kspec_variant *v, const json_t *def,
                       const json_t *params, const char *where, char **text)
{
    const char *key;
    json_t *val;
    if (!json_is_object(def))
        return kspec_bad(L, "%s: must be an object of parameter -> value", where);
    json_object_foreach((json_t *)def, key, val)
    {
        int p = -1;
        for (int i = 0; i < v->n_params && p < 0; i++)
            p = strcmp(v->param_names[i], key) == 0 ? i : -1;
        if (p < 0)
            return kspec_bad(L, "%s: names '%.64s', which is not a parameter", where, key);
        const json_t *vals = json_object_get(json_array_get(params, (size_t)p), "values");
        int found = 0;
        for (size_t a = 0; a < json_array_size(vals) && !found; a++)
            found = json_is_integer(val) &&
                    json_integer_value(val) == json_integer_value(json_array_get(vals, a));
        if (!found)
            return kspec_bad(L, "%s: is not valid: %s is not one of the values of parameter %s",
                             where, json_is_integer(val) ? "its value" : "a non-integer value",
                             key);
    }
    for (int i = 0; i < v->n_params; i++) {
        if (!json_object_get(def, v->param_names[i]))
            return kspec_bad(L, "%s: is not valid: it lacks parameter %s", where,
                             v->param_names[i]);
    }
    if (!(*text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS)))
        return kspec_bad(L, "out of memory");
    return 0;
}

/* "default": a configuration object, or a list of 1 to KSPEC_MAX_DEFAULTS entries {"when":
 * expression over the device limits, "config": object}, the last without "when" (the fallback
 * when none holds), the others with one. */
static int load_default(kspec_loader *L, kspec_kind kind, kspec_variant *v, const json_t *def,
                        const json_t *params, const char *where)
{
    static const char *const fields[] = {"when", "config", NULL};
    char field[128];
    snprintf(field, sizeof field, "%s.default", where);
    if (!json_is_array(def))
        return load_config(L, v, def, params, field, &v->default_text);
    size_t n = json_array_size(def);
    if (n < 1 || n > KSPEC_MAX_DEFAULTS)
        return kspec_bad(L,
                         "%s: must be a configuration object or a list of 1 to %d entries "
                         "{\"when\": expression, \"config\": object}",
                         field, KSPEC_MAX_DEFAULTS);
    int n_limits = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);
    expr_names en = {.n_params = n_limits, .params = limit_names};
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(def, i);
        snprintf(field, sizeof field, "%s.default[%zu]", where, i);
        if (!json_is_object(e))
            return kspec_bad(L, "%s: must be an object {\"when\": expression, \"config\": object}",
                             field);
        if (kspec_check_fields(L, e, field, fields) < 0)
            return -1;
        const json_t *when = json_object_get(e, "when");
        if (i + 1 < n && !when)
            return kspec_bad(L, "%s.when: missing (only the last entry may leave it out)", field);
        if (i + 1 == n && when)
            return kspec_bad(L, "%s.when: the last entry is the fallback and has no \"when\"",
                             field);
        v->n_defaults = (int)i + 1; /* kernel_spec_free releases what is set so far */
        char wfield[160];
        snprintf(wfield, sizeof wfield, "%s.when", field);
        if (when && (!json_is_string(when) ||
                     kspec_parse_expr(L, &v->default_when[i], when, wfield, &en) < 0))
            return json_is_string(when)
                       ? -1
                       : kspec_bad(L,
                                   "%s: must be an expression (a string) over the device "
                                   "limits",
                                   wfield);
        const json_t *cfg = kspec_need(L, e, field, "config");
        char cfield[160];
        snprintf(cfield, sizeof cfield, "%s.config", field);
        if (!cfg || load_config(L, v, cfg, params, cfield, &v->default_texts[i]) < 0)
            return -1;
    }
    if (!(v->default_text = strdup(v->default_texts[n - 1])))
        return kspec_bad(L, "out of memory");
    return 0;
}

const char *kernel_spec_default(const kernel_spec *k, kspec_kind kind, const kspec_limits *lim)
{
    const kspec_variant *v = &k->variants[kind];
    if (v->n_defaults == 0 || !lim)
        return v->default_text;
    expr_value slots[KSPEC_MAX_LIMITS];
    int n_limits = 0;
    kernel_spec_limit_names(kind, &n_limits);
    for (int i = 0; i < n_limits; i++)
        slots[i] = (expr_value){.type = EXPR_INT, .u.i = lim->v[i]};
    for (int i = 0; i + 1 < v->n_defaults; i++) {
        if (expr_test(v->default_when[i].e, slots) == 1)
            return v->default_texts[i];
    }
    return v->default_text;
}

/* What the CUDA half does not do (kernels/README.md, "CUDA kernel ABI"): verification other than
 * against a reference (the default configuration's outputs or an answer file), and inits of data
 * uploaded with the kernel (the CUDA runner asks for no data: runner/main.c). Dtypes, other inits,
 * scalars and float problem arguments it carries (runner/cuda_args.h). */
static int cuda_unsupported(kspec_loader *L, const kernel_spec *k, const char *where)
{
    for (int i = 0; i < k->n_buffers; i++)
        if (k->buffers[i].init.kind == KSPEC_INIT_FILE && k->buffers[i].init.file.sha256[0])
            return kspec_bad(L,
                             "%s: a CUDA variant takes no uploaded data yet (buffer %s's init); "
                             "use a cpu variant for this kernel, or another init",
                             where, k->buffers[i].name);
    if (k->verify != KSPEC_VERIFY_REFERENCE)
        return kspec_bad(L,
                         "%s: a CUDA variant verifies against a reference only (verify is "
                         "\"%s\")",
                         where, kernel_spec_verify_name(k->verify));
    return 0;
}

int kspec_load_variant(kspec_loader *L, kernel_spec *k, kspec_kind kind, const json_t *obj,
                       const char *where, const kspec_limits *lim)
{
    static const char *const cpu_fields[] = {"source",  "parameters", "restrictions", "default",
                                             "neural",  "entry",      "arguments",    "openmp",
                                             "threads", NULL};
    static const char *const cuda_fields[] = {"source", "entry", "parameters",   "restrictions",
                                              "block",  "grid",  "shared_bytes", "default",
                                              "neural", NULL};
    kspec_variant *v = &k->variants[kind];

    if (!json_is_object(obj))
        return kspec_bad(L, "%s: must be an object", where);
    if (kspec_check_fields(L, obj, where, kind == KSPEC_CUDA ? cuda_fields : cpu_fields) < 0)
        return -1;
    v->present = 1;
    if (!(v->file = strdup(L->file)))
        return kspec_bad(L, "out of memory");
    char field[96];
    snprintf(field, sizeof field, "%s.source", where);
    const json_t *src = kspec_need(L, obj, where, "source");
    if (!src || kspec_source_file(L, k, src, field, &v->source) < 0)
        return -1;
    if (kind == KSPEC_CUDA) {
        const json_t *entry = kspec_need(L, obj, where, "entry");
        if (!entry)
            return -1;
        if (!json_is_string(entry) || !kspec_valid_ident(json_string_value(entry)))
            return kspec_bad(
                L, "%s.entry: must be an identifier (the extern \"C\" __global__ function)", where);
        snprintf(v->entry, sizeof v->entry, "%s", json_string_value(entry));
    }
    const json_t *params = kspec_need(L, obj, where, "parameters");
    if (!params || load_params(L, k, kind, v, params, where) < 0)
        return -1;
    if (load_restrictions(L, k, kind, v, json_object_get(obj, "restrictions"), where, lim) < 0)
        return -1;
    if (kspec_load_neural(L, k, kind, v, json_object_get(obj, "neural"), where) < 0)
        return -1;
    if (kind == KSPEC_CPU && kspec_load_call(L, k, v, obj, where) < 0)
        return -1;
    if (kind == KSPEC_CUDA) {
        v->n_call_args = -1;
        v->threads_param = -1;
        if (cuda_unsupported(L, k, where) < 0)
            return -1;
    }
    if (kind == KSPEC_CUDA && kspec_load_geometry(L, k, v, obj, where) < 0)
        return -1;
    const json_t *def = kspec_need(L, obj, where, "default");
    if (!def)
        return -1;
    return load_default(L, kind, v, def, params, where);
}

space *kernel_spec_space(const kernel_spec *k, kspec_kind kind, const kspec_problem *p,
                         const kspec_limits *lim, kt_error *err)
{
    return kernel_spec_space_neural(k, kind, p, lim, 0, err);
}

space *kernel_spec_space_neural(const kernel_spec *k, kspec_kind kind, const kspec_problem *p,
                                const kspec_limits *lim, unsigned allow_mask, kt_error *err)
{
    const kspec_variant *v = &k->variants[kind];
    json_t *params = NULL, *restr = NULL, *consts = NULL;
    space *sp = NULL;
    int n_limits = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);

    if (!v->present) {
        kt_error_set(err, KT_ERR_INTERNAL, "kernel %s has no %s variant", k->name,
                     kernel_spec_kind_name(kind));
        goto out;
    }
    params = json_loads(v->params_text, 0, NULL);
    restr = json_loads(v->restrictions_text, 0, NULL);
    consts = json_object();
    if (!params || !restr || !consts) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (kspec_neural_restrict(k, kind, allow_mask, restr) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < k->n_args; i++) {
        if (json_object_set_new(consts, k->args[i].name, kernel_spec_arg_json(k, p, i)) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    for (int i = 0; lim && i < n_limits; i++) {
        if (json_object_set_new(consts, limit_names[i], json_integer(lim->v[i])) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    sp = space_new(params, restr, consts, NULL, err);
out:
    json_decref(params);
    json_decref(restr);
    json_decref(consts);
    return sp;
}
