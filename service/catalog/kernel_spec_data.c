/* catalog/kernel_spec_data — the kernel interface beyond fp32 buffers and integer arguments
 * (kernels/README.md, issue 27): a buffer's dtype, tolerance and init, the scalar arguments, the
 * user metrics, "verify", and a cpu variant's generated call (entry + arguments), openmp and
 * threads. Data files (init "file", answers) are read through kspec_data_file like sources. */
#include "catalog/kernel_spec_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tolerances of a floating dtype when neither the buffer nor the kernel gives one. */
static void dtype_tolerance(kt_dtype t, double *rtol, double *atol)
{
    switch (t) {
    case KT_F16:
        *rtol = 1e-2, *atol = 1e-3;
        break;
    case KT_BF16:
        *rtol = 2e-2, *atol = 1e-2;
        break;
    case KT_F64:
        *rtol = 1e-9, *atol = 1e-12;
        break;
    case KT_F32:
        *rtol = 1e-4, *atol = 1e-5;
        break;
    default: /* integers: exact */
        *rtol = 0, *atol = 0;
    }
}

const char *kernel_spec_verify_name(kspec_verify_kind v)
{
    static const char *const names[] = {"reference", "default", "answer", "none"};
    return (unsigned)v < 4 ? names[v] : "?";
}

/* {"rtol", "atol"} into rtol, atol. */
static int load_tol(kspec_loader *L, const json_t *t, const char *where, double *rtol, double *atol)
{
    static const char *const fields[] = {"rtol", "atol", NULL};
    if (!json_is_object(t))
        return kspec_bad(L, "%s: must be an object {\"rtol\", \"atol\"}", where);
    if (kspec_check_fields(L, t, where, fields) < 0)
        return -1;
    const json_t *rt = kspec_need(L, t, where, "rtol"), *at = kspec_need(L, t, where, "atol");
    if (!rt || !at)
        return -1;
    if (!json_is_number(rt) || !isfinite(json_number_value(rt)) || json_number_value(rt) < 0)
        return kspec_bad(L, "%s.rtol: must be a number >= 0", where);
    if (!json_is_number(at) || !isfinite(json_number_value(at)) || json_number_value(at) < 0)
        return kspec_bad(L, "%s.atol: must be a number >= 0", where);
    *rtol = json_number_value(rt);
    *atol = json_number_value(at);
    return 0;
}

static int get_number(kspec_loader *L, const json_t *obj, const char *where, const char *key,
                      double *out)
{
    const json_t *v = kspec_need(L, obj, where, key);
    if (!v)
        return -1;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return kspec_bad(L, "%s.%s: must be a finite number", where, key);
    *out = json_number_value(v);
    return 0;
}

static int load_init(kspec_loader *L, kernel_spec *k, kspec_buffer *buf, const json_t *init,
                     const char *where)
{
    /* "data" is "file" by its other name: an uploaded data file of a kernel given over HTTP, a
     * folder's own file otherwise (kspec_data_file) */
    static const char *const kinds[] = {"uniform", "normal", "constant", "iota",
                                        "zeros",   "file",   "data",     NULL};
    static const char *const f_uniform[] = {"kind", "min", "max", NULL},
                             *const f_normal[] = {"kind", "mean", "std", NULL},
                             *const f_constant[] = {"kind", "value", NULL},
                             *const f_plain[] = {"kind", NULL},
                             *const f_file[] = {"kind", "file", NULL};
    static const char *const *const fields[] = {f_uniform, f_normal, f_constant, f_plain,
                                                f_plain,   f_file,   f_file};
    if (!json_is_object(init))
        return kspec_bad(L, "%s: must be an object {\"kind\": ...}", where);
    int which = kspec_kind_of(L, init, where, kinds);
    if (which < 0 || kspec_check_fields(L, init, where, fields[which]) < 0)
        return -1;
    kspec_init *in = &buf->init;
    in->kind = (kspec_init_kind)((which > 5 ? 5 : which) + KSPEC_INIT_UNIFORM);
    char field[128];
    switch (in->kind) {
    case KSPEC_INIT_UNIFORM:
        if (get_number(L, init, where, "min", &in->a) < 0 ||
            get_number(L, init, where, "max", &in->b) < 0)
            return -1;
        if (in->a > in->b)
            return kspec_bad(L, "%s: min %g is greater than max %g", where, in->a, in->b);
        return 0;
    case KSPEC_INIT_NORMAL:
        if (get_number(L, init, where, "mean", &in->a) < 0 ||
            get_number(L, init, where, "std", &in->b) < 0)
            return -1;
        if (in->b < 0)
            return kspec_bad(L, "%s.std: must be >= 0", where);
        return 0;
    case KSPEC_INIT_CONSTANT:
        return get_number(L, init, where, "value", &in->a);
    case KSPEC_INIT_FILE:
        snprintf(field, sizeof field, "%s.file", where);
        {
            const json_t *f = kspec_need(L, init, where, "file");
            if (!f || kspec_data_file(L, k, f, field, buf->dtype, &in->file) < 0)
                return -1;
        }
        if (in->file.bytes == 0 || in->file.bytes % (long long)kt_dtype_size(buf->dtype) != 0)
            return kspec_bad(L,
                             "%s: holds %lld bytes, not a whole number of %s elements (%zu bytes "
                             "each, raw little-endian)",
                             field, in->file.bytes, kt_dtype_name(buf->dtype),
                             kt_dtype_size(buf->dtype));
        return 0;
    default:
        return 0;
    }
}

int kspec_load_buffer_data(kspec_loader *L, kernel_spec *k, kspec_buffer *buf, const json_t *b,
                           const char *where)
{
    char field[96];
    const json_t *dt = json_object_get(b, "dtype");
    buf->dtype = KT_F32;
    if (dt) {
        int t = json_is_string(dt) ? kt_dtype_parse(json_string_value(dt)) : -1;
        if (t < 0)
            return kspec_bad(L, "%s.dtype: must be one of %s", where, kt_dtype_names());
        buf->dtype = (kt_dtype)t;
    }
    buf->rtol = buf->atol = -1; /* none of its own: kspec_load_verify fills the default */
    const json_t *tol = json_object_get(b, "tolerance");
    snprintf(field, sizeof field, "%s.tolerance", where);
    if (tol && load_tol(L, tol, field, &buf->rtol, &buf->atol) < 0)
        return -1;
    if (tol && buf->role != KSPEC_OUTPUT)
        return kspec_bad(L, "%s: only an output buffer is compared", field);
    const json_t *init = json_object_get(b, "init");
    snprintf(field, sizeof field, "%s.init", where);
    if (init && load_init(L, k, buf, init, field) < 0)
        return -1;
    return 0;
}

static int load_metrics(kspec_loader *L, kernel_spec *k, const json_t *arr)
{
    static const char *const fields[] = {"name", "value", NULL};
    const char *names[KSPEC_MAX_ARGS + KSPEC_MAX_NEURAL + 1];
    int n = kspec_arg_names(k, names);
    names[n] = "time_ms";
    expr_names en = {.n_params = n + 1, .params = names};
    if (!json_is_array(arr) || json_array_size(arr) > KSPEC_MAX_METRICS)
        return kspec_bad(L, "metrics: must be an array of at most %d {\"name\", \"value\"}",
                         KSPEC_MAX_METRICS);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[48], field[64];
        const json_t *m = kspec_entry(L, arr, i, "metrics", " {\"name\", \"value\"}", fields, where,
                                      sizeof where);
        if (!m)
            return -1;
        const json_t *name = kspec_need(L, m, where, "name"),
                     *val = kspec_need(L, m, where, "value");
        if (!name || !val || kspec_entry_name(L, arr, i, name, where) < 0)
            return -1;
        kspec_metric *me = &k->metrics[i];
        snprintf(me->name, sizeof me->name, "%s", json_string_value(name));
        k->n_metrics++;
        snprintf(field, sizeof field, "%s.value", where);
        if (kspec_parse_expr(L, &me->value, val, field, &en) < 0)
            return -1;
    }
    return 0;
}

int kspec_load_scalars(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const fields[] = {"name", "type", "value", NULL};
    const char *names[KSPEC_MAX_ARGS + KSPEC_MAX_NEURAL];
    expr_names en = {.n_params = kspec_arg_names(k, names), .params = names};
    const json_t *arr = json_object_get(root, "scalars");
    if (arr && (!json_is_array(arr) || json_array_size(arr) > KSPEC_MAX_SCALARS))
        return kspec_bad(L,
                         "scalars: must be an array of at most %d {\"name\", \"type\", \"value\"}",
                         KSPEC_MAX_SCALARS);
    for (size_t i = 0; arr && i < json_array_size(arr); i++) {
        char where[48], field[64];
        const json_t *s = kspec_entry(L, arr, i, "scalars", " {\"name\", \"type\", \"value\"}",
                                      fields, where, sizeof where);
        if (!s)
            return -1;
        const json_t *name = kspec_need(L, s, where, "name"),
                     *type = kspec_need(L, s, where, "type"),
                     *val = kspec_need(L, s, where, "value");
        /* a name listed twice fails at its first place when it is also an argument or buffer */
        if (!name || !type || !val || kspec_entry_name(L, arr, i, name, where) < 0)
            return -1;
        kspec_scalar *sc = &k->scalars[i];
        snprintf(sc->name, sizeof sc->name, "%s", json_string_value(name));
        snprintf(field, sizeof field, "%s.name", where);
        for (int j = 0; j < k->n_args; j++)
            if (strcmp(k->args[j].name, sc->name) == 0)
                return kspec_bad(L, "%s: '%s' is also a problem argument", field, sc->name);
        for (int j = 0; j < k->n_buffers; j++)
            if (strcmp(k->buffers[j].name, sc->name) == 0)
                return kspec_bad(L, "%s: '%s' is also a buffer", field, sc->name);
        int t = json_is_string(type) ? kt_dtype_parse(json_string_value(type)) : -1;
        if (t != KT_F32 && t != KT_F64 && t != KT_I32 && t != KT_I64)
            return kspec_bad(L, "%s.type: must be one of f32, f64, i32, i64", where);
        sc->type = (kt_dtype)t;
        k->n_scalars++;
        snprintf(field, sizeof field, "%s.value", where);
        if (kspec_parse_expr(L, &sc->value, val, field, &en) < 0)
            return -1;
    }
    const json_t *metrics = json_object_get(root, "metrics");
    return metrics ? load_metrics(L, k, metrics) : 0;
}

static int load_answers(kspec_loader *L, kernel_spec *k, const json_t *bufs)
{
    const char *key;
    json_t *val;
    static const char *const fields[] = {"file", NULL};
    if (!json_is_object(bufs) || json_object_size(bufs) == 0)
        return kspec_bad(L, "verify.buffers: must be an object {\"<output buffer>\": {\"file\": "
                            "\"<name>.bin\"}, ...}");
    json_object_foreach((json_t *)bufs, key, val)
    {
        char where[128], field[160];
        int b = -1;
        snprintf(where, sizeof where, "verify.buffers.%.64s", key);
        for (int i = 0; i < k->n_buffers && b < 0; i++)
            b = strcmp(k->buffers[i].name, key) == 0 ? i : -1;
        if (b < 0 || k->buffers[b].role != KSPEC_OUTPUT)
            return kspec_bad(L, "%s: not an output buffer of the kernel", where);
        if (!json_is_object(val))
            return kspec_bad(L, "%s: must be an object {\"file\": \"<name>.bin\"}", where);
        if (kspec_check_fields(L, val, where, fields) < 0)
            return -1;
        const json_t *f = kspec_need(L, val, where, "file");
        snprintf(field, sizeof field, "%s.file", where);
        if (!f || kspec_data_file(L, k, f, field, k->buffers[b].dtype, &k->buffers[b].answer) < 0)
            return -1;
        size_t es = kt_dtype_size(k->buffers[b].dtype);
        if (k->buffers[b].answer.bytes % (long long)es != 0)
            return kspec_bad(L, "%s: holds %lld bytes, not a whole number of %s elements", field,
                             k->buffers[b].answer.bytes, kt_dtype_name(k->buffers[b].dtype));
    }
    for (int i = 0; i < k->n_buffers; i++)
        if (k->buffers[i].role == KSPEC_OUTPUT && !k->buffers[i].answer.path)
            return kspec_bad(L, "verify.buffers: output buffer %s has no answer file",
                             k->buffers[i].name);
    return 0;
}

int kspec_load_verify(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const kinds[] = {"reference", "default", "answer", "none", NULL};
    static const char *const f_plain[] = {"kind", NULL}, *const f_answer[] = {"kind", "buffers",
                                                                              NULL};
    for (int i = 0; i < k->n_buffers; i++) {
        kspec_buffer *b = &k->buffers[i];
        if (b->rtol >= 0)
            continue;
        if (k->has_tolerance && kt_dtype_is_float(b->dtype)) {
            b->rtol = k->rtol, b->atol = k->atol;
        } else {
            dtype_tolerance(b->dtype, &b->rtol, &b->atol);
        }
    }
    const json_t *v = json_object_get(root, "verify");
    k->verify = k->ref_kind == KSPEC_REF_NONE ? KSPEC_VERIFY_DEFAULT : KSPEC_VERIFY_REFERENCE;
    if (!v)
        return 0;
    if (!json_is_object(v))
        return kspec_bad(L, "verify: must be an object {\"kind\": reference|default|answer|none}");
    int which = kspec_kind_of(L, v, "verify", kinds);
    if (which < 0)
        return -1;
    k->verify = (kspec_verify_kind)which;
    if (kspec_check_fields(L, v, "verify", k->verify == KSPEC_VERIFY_ANSWER ? f_answer : f_plain) <
        0)
        return -1;
    if (k->verify == KSPEC_VERIFY_REFERENCE && k->ref_kind == KSPEC_REF_NONE)
        return kspec_bad(L, "verify.kind: \"reference\" needs a \"reference\" section: add one, "
                            "or verify against \"default\" or \"answer\"");
    if (k->verify == KSPEC_VERIFY_ANSWER) {
        const json_t *bufs = kspec_need(L, v, "verify", "buffers");
        return bufs ? load_answers(L, k, bufs) : -1;
    }
    return 0;
}

/* The thread count is bounded by the device's cores: "<threads> <= cores" joins the variant's
 * restrictions (the space never proposes more threads than the machine has). */
static int bound_threads(kspec_loader *L, kspec_variant *v)
{
    char rule[KSPEC_MAX_NAME + 16];
    json_t *restr = json_loads(v->restrictions_text, 0, NULL);
    snprintf(rule, sizeof rule, "%s <= cores", v->param_names[v->threads_param]);
    char *text = restr && json_array_append_new(restr, json_string(rule)) == 0
                     ? json_dumps(restr, JSON_COMPACT)
                     : NULL;
    json_decref(restr);
    if (!text)
        return kspec_bad(L, "out of memory");
    free(v->restrictions_text);
    v->restrictions_text = text;
    return 0;
}

int kspec_load_call(kspec_loader *L, const kernel_spec *k, kspec_variant *v, const json_t *obj,
                    const char *where)
{
    const json_t *entry = json_object_get(obj, "entry"), *args = json_object_get(obj, "arguments");
    const json_t *omp = json_object_get(obj, "openmp"), *threads = json_object_get(obj, "threads");
    v->n_call_args = -1;
    v->threads_param = -1;
    if (!entry != !args)
        return kspec_bad(L,
                         "%s.%s: missing (a generated call needs both \"entry\" and "
                         "\"arguments\")",
                         where, entry ? "arguments" : "entry");
    if (entry) {
        if (!json_is_string(entry) || !kspec_valid_ident(json_string_value(entry)) ||
            strcmp(json_string_value(entry), "ktune_kernel") == 0)
            return kspec_bad(L,
                             "%s.entry: must be an identifier other than ktune_kernel (the "
                             "function the generated ktune_kernel calls)",
                             where);
        snprintf(v->entry, sizeof v->entry, "%s", json_string_value(entry));
        if (!json_is_array(args) || json_array_size(args) > KSPEC_MAX_CALL_ARGS)
            return kspec_bad(L,
                             "%s.arguments: must be an array of at most %d names (buffers, "
                             "scalars, problem arguments)",
                             where, KSPEC_MAX_CALL_ARGS);
        v->n_call_args = 0;
        for (size_t i = 0; i < json_array_size(args); i++) {
            const char *name = json_string_value(json_array_get(args, i));
            kspec_call_arg *a = &v->call_args[v->n_call_args];
            a->index = -1;
            for (int j = 0; name && j < k->n_buffers && a->index < 0; j++)
                if (strcmp(k->buffers[j].name, name) == 0)
                    *a = (kspec_call_arg){KSPEC_CALL_BUFFER, j};
            for (int j = 0; name && j < k->n_scalars && a->index < 0; j++)
                if (strcmp(k->scalars[j].name, name) == 0)
                    *a = (kspec_call_arg){KSPEC_CALL_SCALAR, j};
            for (int j = 0; name && j < k->n_args && a->index < 0; j++)
                if (strcmp(k->args[j].name, name) == 0)
                    *a = (kspec_call_arg){KSPEC_CALL_PROBLEM, j};
            if (a->index < 0)
                return kspec_bad(L,
                                 "%s.arguments[%zu]: '%.64s' is not a buffer, scalar or problem "
                                 "argument of the kernel",
                                 where, i, name ? name : "(not a string)");
            v->n_call_args++;
        }
    }
    if (omp && !json_is_boolean(omp))
        return kspec_bad(L, "%s.openmp: must be true or false", where);
    v->openmp = json_is_true(omp);
    if (threads) {
        const char *t = json_string_value(threads);
        for (int i = 0; t && i < v->n_params && v->threads_param < 0; i++)
            if (strcmp(v->param_names[i], t) == 0)
                v->threads_param = i;
        if (v->threads_param < 0)
            return kspec_bad(L,
                             "%s.threads: must name a parameter of the variant (the thread "
                             "count)",
                             where);
        if (!v->openmp)
            return kspec_bad(L, "%s.threads: needs \"openmp\": true", where);
        return bound_threads(L, v);
    }
    return 0;
}

json_t *kernel_spec_metrics_json(const kernel_spec *k, const kspec_problem *p, double time_ms)
{
    expr_value slots[KSPEC_MAX_ARGS + KSPEC_MAX_NEURAL + 1];
    if (k->n_metrics == 0)
        return NULL;
    for (int i = 0; i < k->n_args; i++)
        slots[i] = kernel_spec_arg_value(k, p, i);
    for (int j = 0; j < k->n_neural; j++)
        slots[k->n_args + j] = (expr_value){.type = EXPR_INT, .u.i = p->neural[j]};
    slots[k->n_args + k->n_neural] = (expr_value){.type = EXPR_FLOAT, .u.f = time_ms};
    json_t *o = json_object();
    for (int i = 0; o && i < k->n_metrics; i++) {
        expr_value r;
        if (expr_eval(k->metrics[i].value.e, slots, &r) < 0 || r.type == EXPR_STR)
            continue;
        double d = r.type == EXPR_FLOAT ? r.u.f : (double)r.u.i;
        if (isfinite(d))
            json_object_set_new(o, k->metrics[i].name, json_real(d));
    }
    return o;
}
