/* catalog/kernel_spec_problem — a kernel's problem: loading its arguments, problem restrictions,
 * buffers and FLOP count from spec.json, and validating a request's problem against them
 * (kernel_spec_problem, kernel_spec_problem_json). */
#include "catalog/kernel_spec_impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float argument's "min", "max" and "default": numbers. */
static int load_float_arg(kspec_loader *L, kspec_arg *arg, const json_t *a, const char *where)
{
    static const char *const keys[] = {"min", "max", "default"};
    double *out[] = {&arg->fmin, &arg->fmax, &arg->fdef};
    for (int i = 0; i < 3; i++) {
        const json_t *v = kspec_need(L, a, where, keys[i]);
        if (!v)
            return -1;
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return kspec_bad(L, "%s.%s: must be a finite number", where, keys[i]);
        *out[i] = json_number_value(v);
    }
    if (arg->fmin > arg->fmax)
        return kspec_bad(L, "%s: min %g is greater than max %g", where, arg->fmin, arg->fmax);
    if (arg->fdef < arg->fmin || arg->fdef > arg->fmax)
        return kspec_bad(L, "%s.default: %g is outside [%g, %g]", where, arg->fdef, arg->fmin,
                         arg->fmax);
    arg->is_float = 1;
    return 0;
}

int kspec_load_args(kspec_loader *L, kernel_spec *k, const json_t *arr)
{
    static const char *const fields[] = {"name", "min", "max", "default", "type", NULL};
    if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > KSPEC_MAX_ARGS)
        return kspec_bad(L, "problem: must be an array of 1 to %d arguments", KSPEC_MAX_ARGS);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[64], field[96];
        const json_t *a = kspec_entry(L, arr, i, "problem", "", fields, where, sizeof where);
        if (!a)
            return -1;
        const json_t *name = kspec_need(L, a, where, "name");
        if (!name || kspec_entry_name(L, arr, i, name, where) < 0)
            return -1;
        kspec_arg *arg = &k->args[i];
        snprintf(arg->name, sizeof arg->name, "%s", json_string_value(name));
        const json_t *type = json_object_get(a, "type");
        const char *ts = json_string_value(type);
        if (type && (!ts || (strcmp(ts, "int") != 0 && strcmp(ts, "float") != 0)))
            return kspec_bad(L, "%s.type: must be \"int\" (the default) or \"float\"", where);
        if (ts && strcmp(ts, "float") == 0) {
            if (load_float_arg(L, arg, a, where) < 0)
                return -1;
            k->n_args++;
            continue;
        }
        const json_t *mn = kspec_need(L, a, where, "min"), *mx = kspec_need(L, a, where, "max"),
                     *df = kspec_need(L, a, where, "default");
        if (!mn || !mx || !df)
            return -1;
        snprintf(field, sizeof field, "%s.min", where);
        if (kspec_get_int(L, mn, field, &arg->min) < 0)
            return -1;
        snprintf(field, sizeof field, "%s.max", where);
        if (kspec_get_int(L, mx, field, &arg->max) < 0)
            return -1;
        snprintf(field, sizeof field, "%s.default", where);
        if (kspec_get_int(L, df, field, &arg->def) < 0)
            return -1;
        if (arg->min > arg->max)
            return kspec_bad(L, "%s: min %lld is greater than max %lld", where, arg->min, arg->max);
        if (arg->def < arg->min || arg->def > arg->max)
            return kspec_bad(L, "%s.default: %lld is outside [%lld, %lld]", where, arg->def,
                             arg->min, arg->max);
        k->n_args++;
    }
    return 0;
}

int kspec_arg_names(const kernel_spec *k, const char **names)
{
    for (int i = 0; i < k->n_args; i++)
        names[i] = k->args[i].name;
    for (int j = 0; j < k->n_neural; j++)
        names[k->n_args + j] = k->neural_names[j];
    return k->n_args + k->n_neural;
}

int kspec_load_problem_exprs(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const bfields[] = {"name",      "elements", "role", "dtype",
                                          "tolerance", "init",     NULL};
    const char *names[KSPEC_MAX_ARGS + KSPEC_MAX_NEURAL];
    int n_names = kspec_arg_names(k, names);
    expr_names en = {.n_params = n_names, .params = names};
    char field[96];

    /* problem restrictions see the problem arguments only */
    en.n_params = k->n_args;
    const json_t *pr = json_object_get(root, "problem_restrictions");
    if (pr) {
        if (!json_is_array(pr) || json_array_size(pr) > KSPEC_MAX_RESTRICTIONS)
            return kspec_bad(L, "problem_restrictions: must be an array of at most %d expressions",
                             KSPEC_MAX_RESTRICTIONS);
        size_t n = json_array_size(pr);
        k->problem_restrictions = calloc(n ? n : 1, sizeof *k->problem_restrictions);
        if (!k->problem_restrictions)
            return kspec_bad(L, "out of memory");
        for (size_t i = 0; i < n; i++) {
            snprintf(field, sizeof field, "problem_restrictions[%zu]", i);
            k->n_problem_restrictions++;
            if (kspec_parse_expr(L, &k->problem_restrictions[i], json_array_get(pr, i), field,
                                 &en) < 0)
                return -1;
        }
    }

    en.n_params = n_names;
    const json_t *bufs = kspec_need(L, root, "", "buffers");
    if (!bufs)
        return -1;
    if (!json_is_array(bufs) || json_array_size(bufs) < 1 ||
        json_array_size(bufs) > KSPEC_MAX_BUFFERS)
        return kspec_bad(L, "buffers: must be an array of 1 to %d buffers", KSPEC_MAX_BUFFERS);
    int outputs = 0;
    for (size_t i = 0; i < json_array_size(bufs); i++) {
        char where[64];
        const json_t *b = kspec_entry(L, bufs, i, "buffers", "", bfields, where, sizeof where);
        if (!b)
            return -1;
        const json_t *name = kspec_need(L, b, where, "name"),
                     *el = kspec_need(L, b, where, "elements"),
                     *role = kspec_need(L, b, where, "role");
        if (!name || !el || !role || kspec_entry_name(L, bufs, i, name, where) < 0)
            return -1;
        kspec_buffer *buf = &k->buffers[i];
        snprintf(buf->name, sizeof buf->name, "%s", json_string_value(name));
        const char *r = json_string_value(role);
        if (r && strcmp(r, "input") == 0) {
            buf->role = KSPEC_INPUT;
        } else if (r && strcmp(r, "output") == 0) {
            buf->role = KSPEC_OUTPUT;
            outputs++;
        } else {
            return kspec_bad(L, "%s.role: must be \"input\" or \"output\"", where);
        }
        k->n_buffers++;
        snprintf(field, sizeof field, "%s.elements", where);
        if (kspec_parse_expr(L, &buf->elements, el, field, &en) < 0 ||
            kspec_load_buffer_data(L, k, buf, b, where) < 0)
            return -1;
    }
    if (!outputs)
        return kspec_bad(L,
                         "buffers: no buffer has the role \"output\" (nothing could be verified)");

    const json_t *flops = kspec_need(L, root, "", "flops");
    if (!flops || kspec_parse_expr(L, &k->flops, flops, "flops", &en) < 0)
        return -1;
    return kspec_load_scalars(L, k, root);
}

/* An integral value: ints and bools, and reals that are whole and exact. */
int kspec_value_to_ll(const expr_value *v, long long *out)
{
    if (v->type == EXPR_INT || v->type == EXPR_BOOL) {
        *out = (long long)v->u.i;
        return 0;
    }
    if (v->type == EXPR_FLOAT && isfinite(v->u.f) && v->u.f == floor(v->u.f) &&
        fabs(v->u.f) <= KSPEC_MAX_INTEXPR) {
        *out = (long long)v->u.f;
        return 0;
    }
    return -1;
}

static void accepted_args(const kernel_spec *k, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n_args && used < cap; i++) {
        const kspec_arg *a = &k->args[i];
        int w = a->is_float ? snprintf(buf + used, cap - used, "%s%s [%g..%g, default %g]",
                                       i ? ", " : "", a->name, a->fmin, a->fmax, a->fdef)
                            : snprintf(buf + used, cap - used, "%s%s [%lld..%lld, default %lld]",
                                       i ? ", " : "", a->name, a->min, a->max, a->def);
        used += w > 0 ? (size_t)w : 0;
    }
}

expr_value kernel_spec_arg_value(const kernel_spec *k, const kspec_problem *p, int i)
{
    if (k->args[i].is_float)
        return (expr_value){.type = EXPR_FLOAT, .u.f = p->fvalues[i]};
    return (expr_value){.type = EXPR_INT, .u.i = p->values[i]};
}

json_t *kernel_spec_arg_json(const kernel_spec *k, const kspec_problem *p, int i)
{
    return k->args[i].is_float ? json_real(p->fvalues[i]) : json_integer(p->values[i]);
}

/* A scalar's value: integer types must be whole and in range. */
static int scalar_value(const kspec_scalar *s, const expr_value *r, double *out)
{
    double d = r->type == EXPR_FLOAT ? r->u.f : (r->type == EXPR_STR ? NAN : (double)r->u.i);
    if (!isfinite(d))
        return -1;
    if (s->type == KT_I32 || s->type == KT_I64) {
        double lo, hi;
        kt_dtype_int_range(s->type, &lo, &hi);
        if (d != floor(d) || d < lo || d > hi)
            return -1;
    }
    *out = d;
    return 0;
}

/* The buffers' elements, the FLOP count and the scalars of p's arguments and neural values; a
 * buffer with an init file must hold exactly the file's elements. */
static int derive(const kernel_spec *k, kspec_problem *out, kt_error *err)
{
    expr_value slots[KSPEC_MAX_ARGS + KSPEC_MAX_NEURAL];
    for (int i = 0; i < k->n_args; i++)
        slots[i] = kernel_spec_arg_value(k, out, i);
    for (int j = 0; j < k->n_neural; j++)
        slots[k->n_args + j] = (expr_value){.type = EXPR_INT, .u.i = out->neural[j]};
    for (int i = 0; i < k->n_buffers; i++) {
        expr_value r;
        long long n = 0;
        if (expr_eval(k->buffers[i].elements.e, slots, &r) < 0 || kspec_value_to_ll(&r, &n) < 0 ||
            n < 1 || n > KSPEC_MAX_ELEMENTS)
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "for this problem buffer %s would have an invalid number of "
                                "elements (%.200s must be an integer from 1 to %lld)",
                                k->buffers[i].name, k->buffers[i].elements.text,
                                (long long)KSPEC_MAX_ELEMENTS);
        out->elements[i] = n;
        const kspec_buffer *b = &k->buffers[i];
        long long bytes = n * (long long)kt_dtype_size(b->dtype);
        const kspec_datafile *f = b->init.kind == KSPEC_INIT_FILE ? &b->init.file
                                  : b->answer.path                ? &b->answer
                                                                  : NULL;
        if (f && f->bytes != bytes) {
            /* the data was made for one problem size: name the buffer and both counts */
            long long es = (long long)kt_dtype_size(b->dtype);
            const char *fname = strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path;
            kt_error_set(err, KT_ERR_BAD_PROBLEM,
                         "buffers.%s: for this problem the buffer has %lld %s elements "
                         "(elements = %.200s), but its data file %s holds %lld (%lld bytes)",
                         b->name, n, kt_dtype_name(b->dtype), b->elements.text, fname,
                         f->bytes / es, f->bytes);
            kt_error_hint(err,
                          "ask for the problem the data was made for, or upload data of %lld "
                          "elements as a new version",
                          n);
            return -1;
        }
    }
    for (int i = 0; i < k->n_scalars; i++) {
        expr_value r;
        if (expr_eval(k->scalars[i].value.e, slots, &r) < 0 ||
            scalar_value(&k->scalars[i], &r, &out->scalars[i]) < 0)
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "for this problem scalar %s = %.200s is not a finite %s value",
                                k->scalars[i].name, k->scalars[i].value.text,
                                kt_dtype_name(k->scalars[i].type));
    }
    expr_value f;
    double fl = NAN;
    if (expr_eval(k->flops.e, slots, &f) == 0)
        fl = f.type == EXPR_FLOAT ? f.u.f : (f.type == EXPR_STR ? NAN : (double)f.u.i);
    if (!isfinite(fl) || fl < 0)
        return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                            "for this problem the FLOP count %.200s is not a number >= 0",
                            k->flops.text);
    out->flops = fl;
    return 0;
}

int kernel_spec_problem(const kernel_spec *k, const json_t *problem, kspec_problem *out,
                        kt_error *err)
{
    char list[KT_ERROR_HINT_MAX];
    expr_value slots[KSPEC_MAX_ARGS];
    const char *key;
    json_t *val;

    memset(out, 0, sizeof *out);
    for (int i = 0; i < k->n_args; i++) {
        out->values[i] = k->args[i].is_float ? 0 : k->args[i].def;
        out->fvalues[i] = k->args[i].is_float ? k->args[i].fdef : (double)k->args[i].def;
    }
    if (problem && !json_is_null(problem)) {
        if (!json_is_object(problem))
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "the problem must be a JSON object of argument -> integer");
        json_object_foreach((json_t *)problem, key, val)
        {
            int a = -1;
            for (int i = 0; i < k->n_args && a < 0; i++)
                a = strcmp(k->args[i].name, key) == 0 ? i : -1;
            if (a < 0) {
                accepted_args(k, list, sizeof list);
                kt_error_set(err, KT_ERR_BAD_PROBLEM,
                             "unknown problem argument '%.64s' for kernel %s; accepted: %.300s",
                             key, k->name, list);
                kt_error_hint(err, "kernel %s takes %s", k->name, list);
                return -1;
            }
            double d = json_is_number(val) ? json_number_value(val) : NAN;
            long long v;
            if (k->args[a].is_float) {
                const kspec_arg *fa = &k->args[a];
                if (!isfinite(d) || d < fa->fmin || d > fa->fmax) {
                    kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                 "problem argument %s must be a number in [%g, %g]", key, fa->fmin,
                                 fa->fmax);
                    kt_error_hint(err, "kernel %s accepts %s in [%g, %g]", k->name, key, fa->fmin,
                                  fa->fmax);
                    return -1;
                }
                out->fvalues[a] = d;
                continue;
            }
            if (json_is_integer(val)) {
                v = (long long)json_integer_value(val);
            } else if (json_is_real(val) && isfinite(d) && d == floor(d) &&
                       fabs(d) <= KSPEC_MAX_INTEXPR) {
                v = (long long)d;
            } else {
                kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem argument %s must be an integer",
                             key);
                kt_error_hint(err, "%s accepts integers in [%lld, %lld]", key, k->args[a].min,
                              k->args[a].max);
                return -1;
            }
            if (v < k->args[a].min || v > k->args[a].max) {
                kt_error_set(err, KT_ERR_BAD_PROBLEM,
                             "problem argument %s = %lld is outside its range [%lld, %lld]", key, v,
                             k->args[a].min, k->args[a].max);
                kt_error_hint(err, "kernel %s accepts %s in [%lld, %lld]", k->name, key,
                              k->args[a].min, k->args[a].max);
                return -1;
            }
            out->values[a] = v;
            out->fvalues[a] = (double)v;
        }
    }
    for (int i = 0; i < k->n_args; i++)
        slots[i] = kernel_spec_arg_value(k, out, i);
    for (int i = 0; i < k->n_problem_restrictions; i++) {
        if (expr_test(k->problem_restrictions[i].e, slots) != 1) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM,
                         "the problem violates restriction %d of kernel %s: %.300s", i, k->name,
                         k->problem_restrictions[i].text);
            kt_error_hint(err, "choose arguments for which %.300s holds",
                          k->problem_restrictions[i].text);
            return -1;
        }
    }
    for (int j = 0; j < k->n_neural; j++)
        out->neural[j] = k->neural_identity[j];
    out->n_neural = k->n_neural;
    return derive(k, out, err);
}

int kernel_spec_problem_neural(const kernel_spec *k, kspec_kind kind, const space *sp, config_id id,
                               kspec_problem *p, kt_error *err)
{
    const kspec_variant *v = &k->variants[kind];
    int idx[KSPEC_MAX_PARAMS];
    if (k->n_neural == 0)
        return 0;
    if (!v->present || space_num_params(sp) != v->n_params || space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "configuration id %llu is not one of a %s space of kernel %s",
                            (unsigned long long)id, kernel_spec_kind_name(kind), k->name);
    for (int j = 0; j < k->n_neural; j++) {
        int sp_index = v->has_neural ? space_param_index(sp, k->neural_names[j]) : -1;
        p->neural[j] = sp_index < 0
                           ? k->neural_identity[j]
                           : (long long)space_param_value_number(sp, sp_index, idx[sp_index]);
    }
    p->n_neural = k->n_neural;
    return derive(k, p, err);
}

json_t *kernel_spec_problem_json(const kernel_spec *k, const kspec_problem *p)
{
    json_t *o = json_object();
    for (int i = 0; o && i < k->n_args; i++) {
        if (json_object_set_new(o, k->args[i].name, kernel_spec_arg_json(k, p, i)) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

json_t *kernel_spec_derived_json(const kernel_spec *k)
{
    json_t *a = json_array();
    for (int i = 0; a && i <= k->n_buffers; i++) {
        const char *name = i < k->n_buffers ? k->buffers[i].name : "flops";
        char *text = kspec_neural_identity_text(k, i < k->n_buffers ? k->buffers[i].elements.text
                                                                    : k->flops.text);
        json_t *o = text ? json_pack("{s:s, s:s}", "name", name, "expr", text) : NULL;
        free(text);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}
