/* catalog/kernel_spec_neural — a variant's "neural" section (kernels/README.md): the parameters
 * that change what the kernel computes (issue 14: GROUPS, BOTTLENECK, SEQ of
 * neural/nn_transform.h), their identity values and the named transformations with the expression
 * saying when each is applied. Loading (kspec_scan_neural before the buffers, kspec_load_neural per
 * variant), the space restricted to the allowed transformations (kspec_neural_restrict,
 * kernel_spec_space_neural in kernel_spec_space.c) and the queries of kernel_spec.h. */
#include "core/strbuf.h"
#include "catalog/kernel_spec_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most text of one restriction built here: every "when" and the identity test. */
#define KSPEC_NEURAL_TEXT_MAX (KSPEC_MAX_NEURAL * (KSPEC_MAX_EXPR_LEN + 16) + 1024)

/* The head of a section: its parameters and identity, validated. Returns the count, -1 after
 * kspec_bad. */
static int read_head(kspec_loader *L, const kernel_spec *k, const json_t *n, const char *where,
                     char names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1], long long *ident)
{
    if (!json_is_object(n))
        return kspec_bad(
            L, "%s: must be an object {\"parameters\", \"identity\", \"transformations\"}", where);
    const json_t *params = kspec_need(L, n, where, "parameters");
    const json_t *id = kspec_need(L, n, where, "identity");
    if (!params || !id)
        return -1;
    if (!json_is_array(params) || json_array_size(params) < 1 ||
        json_array_size(params) > KSPEC_MAX_NEURAL)
        return kspec_bad(L, "%s.parameters: must be an array of 1 to %d parameter names", where,
                         KSPEC_MAX_NEURAL);
    if (!json_is_object(id) || json_object_size(id) != json_array_size(params))
        return kspec_bad(
            L, "%s.identity: must be an object giving every neural parameter its value", where);
    int count = (int)json_array_size(params);
    for (int j = 0; j < count; j++) {
        const char *s = json_string_value(json_array_get(params, (size_t)j));
        char pf[128];
        snprintf(pf, sizeof pf, "%s.parameters[%d]", where, j);
        if (kspec_check_ident(L, json_array_get(params, (size_t)j), pf) < 0)
            return -1;
        for (int i = 0; i < j; i++)
            if (strcmp(names[i], s) == 0)
                return kspec_bad(L, "%s.parameters: lists '%s' twice", where, s);
        for (int a = 0; a < k->n_args; a++)
            if (strcmp(k->args[a].name, s) == 0)
                return kspec_bad(L, "%s.parameters: '%s' is a problem argument", where, s);
        snprintf(names[j], KSPEC_MAX_NAME + 1, "%s", s);
        const json_t *val = json_object_get(id, s);
        if (!json_is_integer(val))
            return kspec_bad(L, "%s.identity.%s: missing or not an integer", where, s);
        ident[j] = (long long)json_integer_value(val);
    }
    return count;
}

int kspec_scan_neural(kspec_loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const kinds[] = {"cpu", "cuda"};
    const json_t *variants = json_object_get(root, "variants");
    for (int kind = 0; kind < KSPEC_N_KINDS && json_is_object(variants); kind++) {
        const json_t *obj = json_object_get(variants, kinds[kind]);
        const json_t *n = json_is_object(obj) ? json_object_get(obj, "neural") : NULL;
        char where[48], names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1];
        long long ident[KSPEC_MAX_NEURAL];
        if (!n)
            continue;
        snprintf(where, sizeof where, "variants.%s.neural", kinds[kind]);
        int count = read_head(L, k, n, where, names, ident);
        if (count < 0)
            return -1;
        if (k->n_neural == 0) {
            memcpy(k->neural_names, names, sizeof names);
            memcpy(k->neural_identity, ident, sizeof ident);
            k->n_neural = count;
            continue;
        }
        int same = count == k->n_neural;
        for (int j = 0; same && j < count; j++)
            same = strcmp(names[j], k->neural_names[j]) == 0 && ident[j] == k->neural_identity[j];
        if (!same)
            return kspec_bad(L,
                             "%s: parameters and identity must be those of variants.cpu.neural "
                             "(buffers and flops see one list)",
                             where);
    }
    return 0;
}

/* The neural values of a configuration as expression slots. */
static void neural_slots(const kernel_spec *k, const long long *values, expr_value *slots)
{
    for (int j = 0; j < k->n_neural; j++)
        slots[j] = (expr_value){.type = EXPR_INT, .u.i = values[j]};
}

/* The variant's section names the parameters and identity of spec.json's (kspec_scan_neural). */
static int check_same_head(kspec_loader *L, const kernel_spec *k, const char *nw, int count,
                           char names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1], const long long *ident)
{
    int same = count == k->n_neural;
    for (int j = 0; same && j < count; j++)
        same = strcmp(names[j], k->neural_names[j]) == 0 && ident[j] == k->neural_identity[j];
    if (!same)
        return kspec_bad(
            L,
            "%s: a neural section belongs in spec.json's variants, with the same parameters "
            "and identity in each",
            nw);
    return 0;
}

/* Each neural parameter is a parameter of the variant (v->neural_param) whose values hold its
 * identity value; slot_names gets the names the transformations' expressions see. */
static int bind_params(kspec_loader *L, const kernel_spec *k, kspec_variant *v, const char *nw,
                       int count, char names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1],
                       const long long *ident, const char **slot_names)
{
    json_t *params = json_loads(v->params_text, 0, NULL);
    int rc = -1;
    if (!params) {
        kspec_bad(L, "out of memory");
        goto out;
    }
    for (int j = 0; j < count; j++) {
        int p = -1;
        for (int i = 0; i < v->n_params && p < 0; i++)
            p = strcmp(v->param_names[i], names[j]) == 0 ? i : -1;
        if (p < 0) {
            kspec_bad(L, "%s.parameters: '%s' is not a parameter of the variant", nw, names[j]);
            goto out;
        }
        const json_t *vals = json_object_get(json_array_get(params, (size_t)p), "values");
        int found = 0;
        for (size_t a = 0; a < json_array_size(vals) && !found; a++)
            found = json_integer_value(json_array_get(vals, a)) == ident[j];
        if (!found) {
            kspec_bad(L, "%s.identity.%s: %lld is not one of the parameter's values", nw, names[j],
                      ident[j]);
            goto out;
        }
        v->neural_param[j] = p;
        slot_names[j] = k->neural_names[j];
    }
    rc = 0;
out:
    json_decref(params);
    return rc;
}

/* Transformation i of the array tr (section: "<where>.neural.transformations"): its name and its
 * "when", an expression over the neural parameters (en) that does not hold for their identity
 * values (slots). */
static int load_transformation(kspec_loader *L, kspec_variant *v, const json_t *tr, size_t i,
                               const char *section, const expr_names *en, const expr_value *slots)
{
    static const char *const tfields[] = {"name", "when", NULL};
    char tw[160], fw[176];
    const json_t *t =
        kspec_entry(L, tr, i, section, " {\"name\", \"when\"}", tfields, tw, sizeof tw);
    if (!t)
        return -1;
    const json_t *name = kspec_need(L, t, tw, "name"), *when = kspec_need(L, t, tw, "when");
    if (!name || !when || kspec_entry_name(L, tr, i, name, tw) < 0)
        return -1;
    snprintf(v->trans_names[i], sizeof v->trans_names[i], "%s", json_string_value(name));
    v->n_trans++; /* kernel_spec_free releases the expression from here on */
    snprintf(fw, sizeof fw, "%s.when", tw);
    if (!json_is_string(when))
        return kspec_bad(L, "%s: must be an expression (a string) over the neural parameters", fw);
    if (kspec_parse_expr(L, &v->trans_when[i], when, fw, en) < 0)
        return -1;
    if (expr_test(v->trans_when[i].e, slots) != 0)
        return kspec_bad(L,
                         "%s: '%.200s' holds (or fails) for the identity, which transforms nothing",
                         fw, v->trans_when[i].text);
    return 0;
}

int kspec_load_neural(kspec_loader *L, kernel_spec *k, kspec_kind kind, kspec_variant *v,
                      const json_t *obj, const char *where)
{
    static const char *const fields[] = {"parameters", "identity", "transformations", NULL};
    char nw[64], section[96], names[KSPEC_MAX_NEURAL][KSPEC_MAX_NAME + 1];
    const char *slot_names[KSPEC_MAX_NEURAL];
    long long ident[KSPEC_MAX_NEURAL];

    (void)kind;
    if (!obj)
        return 0;
    snprintf(nw, sizeof nw, "%s.neural", where);
    if (json_is_object(obj) && kspec_check_fields(L, obj, nw, fields) < 0)
        return -1;
    int count = read_head(L, k, obj, nw, names, ident);
    if (count < 0 || check_same_head(L, k, nw, count, names, ident) < 0 ||
        bind_params(L, k, v, nw, count, names, ident, slot_names) < 0)
        return -1;
    const json_t *tr = kspec_need(L, obj, nw, "transformations");
    if (!tr)
        return -1;
    if (!json_is_array(tr) || json_array_size(tr) < 1 || json_array_size(tr) > KSPEC_MAX_NEURAL)
        return kspec_bad(L,
                         "%s.transformations: must be an array of 1 to %d objects {\"name\", "
                         "\"when\"}",
                         nw, KSPEC_MAX_NEURAL);
    expr_names en = {.n_params = count, .params = slot_names};
    expr_value slots[KSPEC_MAX_NEURAL];
    neural_slots(k, k->neural_identity, slots);
    snprintf(section, sizeof section, "%s.transformations", nw);
    for (size_t i = 0; i < json_array_size(tr); i++) {
        if (load_transformation(L, v, tr, i, section, &en, slots) < 0)
            return -1;
    }
    v->has_neural = 1;
    return 0;
}

int kspec_neural_restrict(const kernel_spec *k, kspec_kind kind, unsigned allow_mask, json_t *restr)
{
    const kspec_variant *v = &k->variants[kind];
    strbuf ident, any;
    int rc = -1;
    if (!v->has_neural)
        return 0;
    strbuf_init(&ident, KSPEC_NEURAL_TEXT_MAX);
    strbuf_init(&any, KSPEC_NEURAL_TEXT_MAX);
    if (strbuf_puts(&ident, "(") < 0)
        goto out;
    for (int j = 0; j < k->n_neural; j++)
        if (strbuf_appendf(&ident, "%s%s == %lld", j ? " and " : "", k->neural_names[j],
                           k->neural_identity[j]) < 0)
            goto out;
    if (strbuf_puts(&ident, ")") < 0 || strbuf_puts(&any, strbuf_str(&ident)) < 0)
        goto out;
    unsigned used = 0;
    for (int i = 0; i < v->n_trans; i++) {
        if (allow_mask & (1u << i)) {
            used |= 1u << i;
            if (strbuf_appendf(&any, " or (%s)", v->trans_when[i].text) < 0)
                goto out;
        } else {
            json_t *s = json_sprintf("not (%s)", v->trans_when[i].text);
            if (!s || json_array_append_new(restr, s) < 0)
                goto out;
        }
    }
    /* a configuration off the identity must apply an allowed transformation: none allowed leaves
     * the identity alone */
    if (json_array_append_new(restr, json_string(strbuf_str(used ? &any : &ident))) < 0)
        goto out;
    rc = 0;
out:
    strbuf_release(&ident);
    strbuf_release(&any);
    return rc;
}

char *kspec_neural_identity_text(const kernel_spec *k, const char *text)
{
    strbuf b;
    strbuf_init(&b, strlen(text) * 24 + 64); /* every name at most "(<long long>)" */
    const char *s = text;
    int ok = 1;
    while (*s && ok) {
        if (*s == '"' || *s == '\'') { /* a string literal, copied as it is */
            const char *e = strchr(s + 1, *s);
            size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
            ok = strbuf_append(&b, s, n) == 0;
            s += n;
        } else if (isdigit((unsigned char)*s)) { /* a number (1e5: not an identifier) */
            const char *e = s;
            while (isalnum((unsigned char)*e) || *e == '_' || *e == '.')
                e++;
            ok = strbuf_append(&b, s, (size_t)(e - s)) == 0;
            s = e;
        } else if (isalpha((unsigned char)*s) || *s == '_') {
            const char *e = s;
            while (isalnum((unsigned char)*e) || *e == '_')
                e++;
            int j = 0;
            while (j < k->n_neural && !(strlen(k->neural_names[j]) == (size_t)(e - s) &&
                                        strncmp(k->neural_names[j], s, (size_t)(e - s)) == 0))
                j++;
            ok = (j < k->n_neural ? strbuf_appendf(&b, "(%lld)", k->neural_identity[j])
                                  : strbuf_append(&b, s, (size_t)(e - s))) == 0;
            s = e;
        } else {
            ok = strbuf_append(&b, s, 1) == 0;
            s++;
        }
    }
    if (!ok) {
        strbuf_release(&b);
        return NULL;
    }
    return strbuf_take(&b);
}

int kernel_spec_has_neural(const kernel_spec *k, kspec_kind kind)
{
    return kind >= 0 && kind < KSPEC_N_KINDS && k->variants[kind].has_neural;
}

int kernel_spec_neural_count(const kernel_spec *k, kspec_kind kind)
{
    return kernel_spec_has_neural(k, kind) ? k->variants[kind].n_trans : 0;
}

const char *kernel_spec_neural_name(const kernel_spec *k, kspec_kind kind, int i)
{
    if (i < 0 || i >= kernel_spec_neural_count(k, kind))
        return NULL;
    return k->variants[kind].trans_names[i];
}

int kernel_spec_neural_applied(const kernel_spec *k, kspec_kind kind, const space *sp, config_id id,
                               unsigned *mask, kt_error *err)
{
    const kspec_variant *v = &k->variants[kind];
    int idx[KSPEC_MAX_PARAMS];
    long long values[KSPEC_MAX_NEURAL];
    expr_value slots[KSPEC_MAX_NEURAL];
    *mask = 0;
    if (!kernel_spec_has_neural(k, kind))
        return 0;
    if (space_num_params(sp) != v->n_params || space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "configuration id %llu is not one of a %s space of kernel %s",
                            (unsigned long long)id, kernel_spec_kind_name(kind), k->name);
    for (int j = 0; j < k->n_neural; j++) {
        int p = space_param_index(sp, k->neural_names[j]);
        if (p < 0)
            return kt_error_set(err, KT_ERR_INTERNAL, "the space lacks neural parameter %s",
                                k->neural_names[j]);
        values[j] = (long long)space_param_value_number(sp, p, idx[p]);
    }
    neural_slots(k, values, slots);
    for (int i = 0; i < v->n_trans; i++) {
        int holds = expr_test(v->trans_when[i].e, slots);
        if (holds < 0)
            return kt_error_set(err, KT_ERR_INTERNAL, "transformation %s: '%.200s' fails",
                                v->trans_names[i], v->trans_when[i].text);
        if (holds)
            *mask |= 1u << i;
    }
    return 0;
}
