/* accel/accel_space — the mapping space of a (problem, device) on the space engine, and decoding a
 * configuration back into a mapping (accel_kernel.h). Parameters, in this order: per dim d
 * <d>_L1, <d>_PE, <d>_L2; order_L1, order_L2, order_DRAM; buf_L1_<t> per tensor; buf_L2_<t> per
 * tensor. Value lists are pruned only where no valid mapping can lie (a tile extent larger than
 * the biggest allocation any tensor can get, a dim spread over more PEs than the device has, an
 * allocation leaving another tensor no bank), so the space loses no valid mapping. */
#include "accel/accel_kernel_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NAME_CAP 160

static json_t *divisors(long long n, long long max)
{
    json_t *a = json_array();
    for (long long v = 1; v <= n && v <= max; v++)
        if (n % v == 0)
            json_array_append_new(a, json_integer(v));
    return a;
}

static json_t *param(const char *name, json_t *values)
{
    return json_pack("{s:s, s:o}", "name", name, "values", values);
}

static void add_restriction(json_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_restriction(json_t *r, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(r, json_string(text));
}

/* The largest extent of one dim in a tile at a level: what the biggest allocation a tensor can
 * have (every other tensor one bank) holds in words. */
static long long extent_max(long long bytes, int banks, int n_tensors, int word_bytes)
{
    double words = (double)bytes / word_bytes * (banks - (n_tensors - 1)) / banks;
    return (long long)floor(words);
}

space *accel_space_new(const accel_problem *p, const accel_device *d, kt_error *err)
{
    const accel_kernel *k = p->kernel;
    space *sp = NULL;
    json_t *params = json_array();
    json_t *restr = json_array();
    json_t *consts = json_object();
    char name[NAME_CAP];
    long long l1max = extent_max(d->l1_bytes, d->l1_banks, k->n_tensors, d->word_bytes);
    long long l2max = extent_max(d->l2_bytes, d->l2_banks, k->n_tensors, d->word_bytes);
    json_object_set_new(consts, "l2_extent_max", json_integer(l2max));
    json_object_set_new(consts, "l1_banks", json_integer(d->l1_banks));
    json_object_set_new(consts, "l2_banks", json_integer(d->l2_banks));
    for (int i = 0; i < k->n_dims; i++) {
        const char *dn = k->dims[i];
        json_object_set_new(consts, dn, json_integer(p->dim[i]));
        snprintf(name, sizeof name, "%s_L1", dn);
        json_array_append_new(params, param(name, divisors(p->dim[i], l1max)));
        snprintf(name, sizeof name, "%s_PE", dn);
        json_array_append_new(params, param(name, divisors(p->dim[i], d->pes)));
        snprintf(name, sizeof name, "%s_L2", dn);
        json_array_append_new(params, param(name, divisors(p->dim[i], p->dim[i])));
        /* Two restrictions, so that the engine prunes as soon as L1 and PE are bound. */
        add_restriction(restr, "%s %% (%s_L1 * %s_PE) == 0", dn, dn, dn);
        add_restriction(restr,
                        "%s %% (%s_L1 * %s_PE * %s_L2) == 0 and %s_L1 * %s_PE * %s_L2 <= "
                        "l2_extent_max",
                        dn, dn, dn, dn, dn, dn, dn);
    }
    static const char *const lvl[3] = {"L1", "L2", "DRAM"};
    for (int l = 0; l < 3; l++) {
        json_t *vals = json_array();
        for (int v = 0; v < accel_num_orders(k); v++) {
            accel_order_name(k, v, name, sizeof name);
            json_array_append_new(vals, json_string(name));
        }
        snprintf(name, sizeof name, "order_%s", lvl[l]);
        json_array_append_new(params, param(name, vals));
    }
    for (int l = 0; l < 2; l++) {
        int banks = l == 0 ? d->l1_banks : d->l2_banks;
        char sum[NAME_CAP * 2];
        size_t used = 0;
        sum[0] = '\0';
        for (int t = 0; t < k->n_tensors; t++) {
            json_t *vals = json_array();
            for (int b = 1; b <= banks - (k->n_tensors - 1); b++)
                json_array_append_new(vals, json_integer(b));
            snprintf(name, sizeof name, "buf_%s_%s", lvl[l], k->tensors[t].name);
            json_array_append_new(params, param(name, vals));
            int w = snprintf(sum + used, sizeof sum - used, "%s%s", t ? " + " : "", name);
            used += w > 0 ? (size_t)w : 0;
        }
        add_restriction(restr, "%s <= %s_banks", sum, l == 0 ? "l1" : "l2");
    }
    sp = space_new(params, restr, consts, NULL, err);
    if (!sp)
        kt_error_prefix(err, "accel %s on accel:%s", k->name, d->name);
    if (!sp && err && err->code == KT_ERR_SPACE_TOO_LARGE)
        kt_error_hint(err, "the mapping space's configuration ids must fit a signed 64-bit "
                           "integer: smaller dims, or dims with fewer prime factors (the space "
                           "grows with each dim's divisors); GET /v1/kernels lists the presets");
    json_decref(params);
    json_decref(restr);
    json_decref(consts);
    return sp;
}

/* 1 when parameter i of sp is named <prefix><suffix>. */
static int named(const space *sp, int i, const char *prefix, const char *suffix)
{
    const char *n = space_param_name(sp, i);
    size_t lp = strlen(prefix);
    return n && strncmp(n, prefix, lp) == 0 && strcmp(n + lp, suffix) == 0;
}

static int not_ours(const accel_problem *p, kt_error *err, const char *why)
{
    return kt_error_set(err, KT_ERR_INTERNAL,
                        "accel %s: the space is not one of this problem's (%s)", p->kernel->name,
                        why);
}

int accel_mapping_decode(const accel_problem *p, const space *sp, config_id id, accel_mapping *out,
                         kt_error *err)
{
    const accel_kernel *k = p->kernel;
    int idx[3 * ACCEL_MAX_DIMS + 3 + 2 * ACCEL_MAX_TENSORS];
    int np = 3 * k->n_dims + 3 + 2 * k->n_tensors;
    static const char *const lvl[3] = {"_L1", "_PE", "_L2"};
    static const char *const ord[3] = {"L1", "L2", "DRAM"};
    if (space_num_params(sp) != np)
        return not_ours(p, err, "parameter count");
    /* Cheap checks (decoding runs millions of times): the count, the first dim's and the buffers'
     * names, the order lists' lengths and every dim's divisor list. */
    for (int l = 0; l < 3; l++)
        if (!named(sp, l, k->dims[0], lvl[l]))
            return not_ours(p, err, "parameter names");
    for (int d = 0; d < k->n_dims; d++) {
        /* <d>_L2 lists every divisor of the dim: its last value is the dim */
        int nv = space_param_num_values(sp, 3 * d + 2);
        if (space_param_value_number(sp, 3 * d + 2, nv - 1) != (double)p->dim[d])
            return not_ours(p, err, "dims");
    }
    for (int l = 0; l < 3; l++)
        if (!named(sp, 3 * k->n_dims + l, "order_", ord[l]) ||
            space_param_num_values(sp, 3 * k->n_dims + l) != accel_num_orders(k))
            return not_ours(p, err, "loop orders");
    for (int t = 0; t < k->n_tensors; t++)
        if (!named(sp, 3 * k->n_dims + 3 + t, "buf_L1_", k->tensors[t].name) ||
            !named(sp, 3 * k->n_dims + 3 + k->n_tensors + t, "buf_L2_", k->tensors[t].name))
            return not_ours(p, err, "buffer allocations");
    if (space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL, "accel %s: configuration id %llu out of range",
                            k->name, (unsigned long long)id);
    memset(out, 0, sizeof *out);
    for (int d = 0; d < k->n_dims; d++) {
        long long prod = 1;
        for (int l = 0; l < 3; l++) {
            out->factor[d][l] = llround(space_param_value_number(sp, 3 * d + l, idx[3 * d + l]));
            prod *= out->factor[d][l];
        }
        if (prod < 1 || p->dim[d] % prod != 0)
            return not_ours(p, err, "factors do not divide the dims");
        out->factor[d][3] = p->dim[d] / prod;
    }
    for (int l = 0; l < 3; l++) {
        int cls[ACCEL_MAX_CLASSES];
        accel_order_classes(k, idx[3 * k->n_dims + l], cls);
        int n = 0;
        for (int c = 0; c < k->n_classes; c++)
            for (int d = 0; d < k->n_dims; d++)
                if (k->class_mask[cls[c]] & (1u << d))
                    out->order[l][n++] = d;
    }
    for (int l = 0; l < 2; l++)
        for (int t = 0; t < k->n_tensors; t++) {
            int pi = 3 * k->n_dims + 3 + l * k->n_tensors + t;
            out->banks[l][t] = (int)llround(space_param_value_number(sp, pi, idx[pi]));
        }
    return 0;
}
