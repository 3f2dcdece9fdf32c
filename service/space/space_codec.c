/* space_codec — config ids to and from value indices, JSON objects and Kernel Tuner cache keys, and
 * uniform sampling. id = sum over groups g of position_g * stride_g (see space.h). */
#include "space/space_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int row_cmp(const uint16_t *a, const uint16_t *b, int k)
{
    for (int c = 0; c < k; c++)
        if (a[c] != b[c])
            return a[c] < b[c] ? -1 : 1;
    return 0;
}

int64_t space_group_find(const space_group *g, const uint16_t *row)
{
    uint64_t lo = 0, hi = g->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = row_cmp(g->rows + mid * (uint64_t)g->k, row, g->k);
        if (c == 0)
            return (int64_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int space_decode(const space *sp, config_id id, int *idx)
{
    if (id >= sp->count)
        return -1;
    for (int g = 0; g < sp->n_groups; g++) {
        const space_group *grp = &sp->groups[g];
        uint64_t pos = (id / grp->stride) % grp->n;
        const uint16_t *row = grp->rows + pos * (uint64_t)grp->k;
        for (int c = 0; c < grp->k; c++)
            idx[grp->params[c]] = row[c];
    }
    return 0;
}

int space_encode(const space *sp, const int *idx, config_id *out)
{
    uint16_t row[SPACE_HARD_MAX_PARAMS];
    config_id id = 0;
    if (sp->count == 0)
        return -1;
    for (int p = 0; p < sp->n_params; p++)
        if (idx[p] < 0 || idx[p] >= sp->params[p].n)
            return -1;
    for (int g = 0; g < sp->n_groups; g++) {
        const space_group *grp = &sp->groups[g];
        for (int c = 0; c < grp->k; c++)
            row[c] = (uint16_t)idx[grp->params[c]];
        int64_t pos = space_group_find(grp, row);
        if (pos < 0)
            return -1;
        id += (uint64_t)pos * grp->stride;
    }
    *out = id;
    return 0;
}

/* First position in g's sorted rows whose first m columns are >= prefix (lexicographically). */
static uint64_t group_lower_bound(const space_group *g, const uint16_t *prefix, int m)
{
    uint64_t lo = 0, hi = g->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (row_cmp(g->rows + mid * (uint64_t)g->k, prefix, m) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int space_prefix_feasible(const space *sp, const int *idx, int len)
{
    uint16_t prefix[SPACE_HARD_MAX_PARAMS];
    if (!sp || sp->count == 0 || len < 0 || len > sp->n_params || (len > 0 && !idx))
        return 0;
    for (int p = 0; p < len; p++)
        if (idx[p] < 0 || idx[p] >= sp->params[p].n)
            return 0;
    /* Groups are independent, and a group's parameters ascend, so the assigned ones (index < len)
     * are a prefix of its columns: the group can be completed iff some sorted row starts with
     * them, and such rows are contiguous from the lower bound. */
    for (int g = 0; g < sp->n_groups; g++) {
        const space_group *grp = &sp->groups[g];
        int m = 0;
        while (m < grp->k && grp->params[m] < len) {
            prefix[m] = (uint16_t)idx[grp->params[m]];
            m++;
        }
        if (m == 0)
            continue;
        uint64_t pos = group_lower_bound(grp, prefix, m);
        if (pos >= grp->n || row_cmp(grp->rows + pos * (uint64_t)grp->k, prefix, m) != 0)
            return 0;
    }
    return 1;
}

json_t *space_config_json(const space *sp, config_id id)
{
    int idx[SPACE_HARD_MAX_PARAMS];
    if (space_decode(sp, id, idx) < 0)
        return NULL;
    json_t *obj = json_object();
    for (int p = 0; obj && p < sp->n_params; p++) {
        if (json_object_set_new(obj, sp->params[p].name, space_param_value_json(sp, p, idx[p])) <
            0) {
            json_decref(obj);
            obj = NULL;
        }
    }
    return obj;
}

int space_config_key(const space *sp, config_id id, char *buf, size_t cap)
{
    int idx[SPACE_HARD_MAX_PARAMS];
    if (space_decode(sp, id, idx) < 0)
        return -1;
    size_t used = 0;
    for (int p = 0; p < sp->n_params; p++) {
        const char *key = sp->params[p].keys[idx[p]];
        size_t n = strlen(key);
        if (used + n + (p > 0) + 1 > cap)
            return -1;
        if (p > 0)
            buf[used++] = ',';
        memcpy(buf + used, key, n);
        used += n;
    }
    if (cap == 0)
        return -1;
    buf[used] = '\0';
    return (int)used;
}

/* Names the first restriction the configuration idx fails (for config_from_json's message). */
static void explain_invalid(const space *sp, const int *idx, kt_error *err)
{
    expr_value slots[SPACE_HARD_MAX_PARAMS];
    char q[96];
    if (sp->is_explicit) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "the configuration is not one of the space's listed "
                     "configurations");
        return;
    }
    for (int p = 0; p < sp->n_params; p++)
        slots[p] = sp->params[p].vals[idx[p]];
    for (int r = 0; r < sp->n_restr; r++) {
        int t = expr_test(sp->restr[r], slots);
        if (t != 1) {
            space_quote(sp->restr_text[r], q, sizeof q);
            kt_error_set(err, KT_ERR_BAD_REQUEST, "the configuration violates restriction %d %s%s",
                         r, q, t < 0 ? " (its evaluation fails, e.g. a division by zero)" : "");
            return;
        }
    }
    kt_error_set(err, KT_ERR_BAD_REQUEST, "the configuration is not in the space");
}

static void list_params_hint(const space *sp, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    size_t used = (size_t)snprintf(hint, sizeof hint, "parameters:");
    for (int p = 0; p < sp->n_params && used < sizeof hint; p++)
        used += (size_t)snprintf(hint + used, sizeof hint - used, "%s %s", p ? "," : "",
                                 sp->params[p].name);
    kt_error_hint(err, "%s", hint);
}

static void list_values_hint(const space *sp, int p, kt_error *err)
{
    char hint[KT_ERROR_HINT_MAX];
    const space_param *par = &sp->params[p];
    size_t used = (size_t)snprintf(hint, sizeof hint, "values of %s:", par->name);
    for (int v = 0; v < par->n && used < sizeof hint; v++)
        used +=
            (size_t)snprintf(hint + used, sizeof hint - used, "%s %s", v ? "," : "", par->keys[v]);
    kt_error_hint(err, "%s", hint);
}

int space_config_from_json(const space *sp, const json_t *obj, config_id *out, kt_error *err)
{
    int idx[SPACE_HARD_MAX_PARAMS];
    const char *key;
    const json_t *jv;
    if (!json_is_object(obj))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "a configuration must be an object of "
                            "parameter -> value");
    json_object_foreach((json_t *)obj, key, jv)
    {
        if (space_param_index(sp, key) < 0) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "unknown parameter '%.64s'", key);
            list_params_hint(sp, err);
            return -1;
        }
    }
    for (int p = 0; p < sp->n_params; p++) {
        jv = json_object_get(obj, sp->params[p].name);
        if (!jv) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "the configuration lacks parameter '%s'",
                         sp->params[p].name);
            list_params_hint(sp, err);
            return -1;
        }
        idx[p] = space_find_value(sp, p, jv);
        if (idx[p] < 0) {
            char *text = json_dumps(jv, JSON_ENCODE_ANY | JSON_COMPACT);
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "value %.64s of parameter '%s' is not in its list", text ? text : "?",
                         sp->params[p].name);
            free(text);
            list_values_hint(sp, p, err);
            return -1;
        }
    }
    if (space_encode(sp, idx, out) < 0) {
        explain_invalid(sp, idx, err);
        return -1;
    }
    return 0;
}

config_id space_sample(const space *sp, kt_rng *rng)
{
    /* Uniform over valid configurations because ids are dense. */
    return sp->count ? kt_rng_below(rng, sp->count) : 0;
}
