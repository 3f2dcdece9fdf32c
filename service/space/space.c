/* space — definition side: validates parameters, constants and restrictions, hands the build to
 * space_build.c, and answers the read-only accessors. */
#include "space/expr_internal.h"
#include "space/space_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const space_limits default_limits = {
    .max_params = 64,
    .max_values = 4096,
    .max_restrictions = 256,
    .max_expr_len = 4096,
    .max_group_nodes = 200000000,
    .max_group_valid = 50000000,
};

static space_limits effective_limits(const space_limits *in)
{
    space_limits l = default_limits;
    if (in) {
        if (in->max_params > 0)
            l.max_params = in->max_params;
        if (in->max_values > 0)
            l.max_values = in->max_values;
        if (in->max_restrictions > 0)
            l.max_restrictions = in->max_restrictions;
        if (in->max_expr_len > 0)
            l.max_expr_len = in->max_expr_len;
        if (in->max_group_nodes > 0)
            l.max_group_nodes = in->max_group_nodes;
        if (in->max_group_valid > 0)
            l.max_group_valid = in->max_group_valid;
    }
    if (l.max_params > SPACE_HARD_MAX_PARAMS)
        l.max_params = SPACE_HARD_MAX_PARAMS;
    if (l.max_values > SPACE_HARD_MAX_VALUES)
        l.max_values = SPACE_HARD_MAX_VALUES;
    if (l.max_expr_len > EXPR_MAX_LEN)
        l.max_expr_len = EXPR_MAX_LEN;
    return l;
}

void space_quote(const char *text, char *buf, size_t cap)
{
    size_t n = strlen(text);
    if (n > 80)
        snprintf(buf, cap, "'%.77s...'", text);
    else
        snprintf(buf, cap, "'%s'", text);
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SPACE_MAX_NAME || expr_is_keyword(s, n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

/* Converts a JSON scalar to a value and its cache-key text (owned; strings share it). */
static int json_to_value(const json_t *jv, expr_value *v, char **key)
{
    char buf[64];
    const char *text = buf;
    memset(v, 0, sizeof *v);
    switch (json_typeof(jv)) {
    case JSON_INTEGER:
        v->type = EXPR_INT;
        v->u.i = (int64_t)json_integer_value(jv);
        snprintf(buf, sizeof buf, "%lld", (long long)v->u.i);
        break;
    case JSON_REAL:
        v->type = EXPR_FLOAT;
        v->u.f = json_real_value(jv);
        if (!isfinite(v->u.f) || expr_format_float(v->u.f, buf, sizeof buf) < 0)
            return -1;
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        v->type = EXPR_BOOL;
        v->u.i = json_is_true(jv);
        text = v->u.i ? "True" : "False";
        break;
    case JSON_STRING:
        if (json_string_length(jv) > SPACE_MAX_STRING ||
            strlen(json_string_value(jv)) != json_string_length(jv))
            return -1;
        v->type = EXPR_STR;
        v->len = (uint32_t)json_string_length(jv);
        text = json_string_value(jv);
        break;
    default:
        return -1;
    }
    if (!(*key = strdup(text)))
        return -2;
    if (v->type == EXPR_STR)
        v->u.s = *key;
    return 0;
}

/* Orders values: numbers (exactly, across ints, floats and bools) before strings. */
static int value_order(const expr_value *a, const expr_value *b)
{
    if ((a->type == EXPR_STR) != (b->type == EXPR_STR))
        return a->type == EXPR_STR ? 1 : -1;
    expr_value x = *a, y = *b;
    if (x.type == EXPR_STR) {
        uint32_t n = x.len < y.len ? x.len : y.len;
        int c = n ? memcmp(x.u.s, y.u.s, n) : 0;
        return c ? c : (x.len > y.len) - (x.len < y.len);
    }
    if (expr_value_equal(&x, &y))
        return 0;
    double dx = x.type == EXPR_FLOAT ? x.u.f : (double)x.u.i;
    double dy = y.type == EXPR_FLOAT ? y.u.f : (double)y.u.i;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    /* Equal as doubles but not exactly (ints beyond 2^53): the int side decides. */
    if (x.type != EXPR_FLOAT && y.type != EXPR_FLOAT)
        return x.u.i < y.u.i ? -1 : 1;
    return x.type == EXPR_FLOAT ? (dx < (double)y.u.i ? -1 : 1) : ((double)x.u.i < dy ? -1 : 1);
}

typedef struct {
    expr_value v;
    int idx;
} sorted_value;

static int sorted_value_cmp(const void *x, const void *y)
{
    return value_order(&((const sorted_value *)x)->v, &((const sorted_value *)y)->v);
}

/* Index of target among sorted (n entries), or -1. */
static int sorted_find(const sorted_value *sorted, int n, const expr_value *target)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = value_order(&sorted[mid].v, target);
        if (c == 0)
            return sorted[mid].idx;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Checks distinctness and fills the PAIR_SCALE tables of parameter p. */
static int index_values(space_param *par, kt_error *err)
{
    int rc = -1;
    sorted_value *sorted = malloc((size_t)par->n * sizeof *sorted);
    if (!sorted) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    par->numeric = 1;
    for (int v = 0; v < par->n; v++) {
        sorted[v].v = par->vals[v];
        sorted[v].idx = v;
        if (par->vals[v].type != EXPR_INT && par->vals[v].type != EXPR_FLOAT)
            par->numeric = 0;
    }
    qsort(sorted, (size_t)par->n, sizeof *sorted, sorted_value_cmp);
    for (int v = 1; v < par->n; v++) {
        if (value_order(&sorted[v - 1].v, &sorted[v].v) == 0) {
            kt_error_set(err, KT_ERR_BAD_SPACE, "parameter '%s' lists the value %s twice",
                         par->name, par->keys[sorted[v].idx]);
            goto out;
        }
    }
    if (par->numeric) {
        par->twice = malloc((size_t)par->n * sizeof *par->twice);
        par->half = malloc((size_t)par->n * sizeof *par->half);
        if (!par->twice || !par->half) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto out;
        }
        const expr_value two = {.type = EXPR_INT, .u.i = 2};
        for (int v = 0; v < par->n; v++) {
            expr_value t, h;
            par->twice[v] = -1;
            par->half[v] = -1;
            /* Zero maps to itself: not a move. */
            if (!expr_truthy(&par->vals[v]))
                continue;
            if (expr_binary_op(EOP_MUL, &par->vals[v], &two, &t) == 0)
                par->twice[v] = sorted_find(sorted, par->n, &t);
            if (expr_binary_op(EOP_DIV, &par->vals[v], &two, &h) == 0)
                par->half[v] = sorted_find(sorted, par->n, &h);
        }
    }
    rc = 0;
out:
    free(sorted);
    return rc;
}

static const char params_hint[] = "params is an array of {\"name\": identifier, \"values\": "
                                  "[distinct numbers, strings or booleans]}";

static int parse_param(space *sp, int p, const json_t *jp, kt_error *err)
{
    space_param *par = &sp->params[p];
    const json_t *jname = json_object_get(jp, "name");
    const json_t *jvals = json_object_get(jp, "values");
    const char *key;
    const json_t *unused;
    if (!json_is_object(jp) || !json_is_string(jname) || !json_is_array(jvals)) {
        kt_error_set(err, KT_ERR_BAD_SPACE,
                     "params[%d] needs a string \"name\" and a \"values\" array", p);
        goto fail;
    }
    json_object_foreach((json_t *)jp, key, unused)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "values") != 0) {
            kt_error_set(err, KT_ERR_BAD_SPACE, "params[%d] has an unknown field '%.64s'", p, key);
            goto fail;
        }
    }
    const char *name = json_string_value(jname);
    if (!valid_name(name)) {
        kt_error_set(
            err, KT_ERR_BAD_SPACE,
            "params[%d]: '%.64s' is not a usable parameter name (an identifier of at most %d "
            "characters, not a Python keyword)",
            p, name, SPACE_MAX_NAME);
        goto fail;
    }
    for (int q = 0; q < p; q++) {
        if (strcmp(sp->params[q].name, name) == 0) {
            kt_error_set(err, KT_ERR_BAD_SPACE, "parameter '%s' is listed twice", name);
            goto fail;
        }
    }
    size_t n = json_array_size(jvals);
    if (n == 0 || n > (size_t)sp->lim.max_values) {
        kt_error_set(err, KT_ERR_BAD_SPACE, "parameter '%s' has %zu values (allowed: 1 to %d)",
                     name, n, sp->lim.max_values);
        goto fail;
    }
    if (!(par->name = strdup(name)) || !(par->vals = calloc(n, sizeof *par->vals)) ||
        !(par->keys = calloc(n, sizeof *par->keys))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    par->n = (int)n;
    sp->names[p] = par->name;
    for (size_t v = 0; v < n; v++) {
        int rc = json_to_value(json_array_get(jvals, v), &par->vals[v], &par->keys[v]);
        if (rc == -2) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            goto fail;
        }
        if (rc < 0) {
            kt_error_set(
                err, KT_ERR_BAD_SPACE,
                "parameter '%s': value %zu is not an integer, real, boolean or string of at "
                "most %d bytes",
                name, v, SPACE_MAX_STRING);
            goto fail;
        }
    }
    return index_values(par, err);
fail:
    return -1;
}

static int parse_constants(space *sp, const json_t *constants, kt_error *err)
{
    const char *name;
    const json_t *jv;
    if (!constants || json_is_null(constants))
        return 0;
    if (!json_is_object(constants))
        return kt_error_set(err, KT_ERR_BAD_SPACE, "constants must be an object of name -> number");
    size_t n = json_object_size(constants);
    if (n > SPACE_MAX_CONSTANTS)
        return kt_error_set(err, KT_ERR_BAD_SPACE, "more than %d constants", SPACE_MAX_CONSTANTS);
    sp->const_names = calloc(n + 1, sizeof *sp->const_names);
    sp->const_values = calloc(n + 1, sizeof *sp->const_values);
    sp->const_strings = calloc(n + 1, sizeof *sp->const_strings);
    if (!sp->const_names || !sp->const_values || !sp->const_strings)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    json_object_foreach((json_t *)constants, name, jv)
    {
        int i = sp->n_consts;
        if (!valid_name(name))
            return kt_error_set(err, KT_ERR_BAD_SPACE, "'%.64s' is not a usable constant name",
                                name);
        if (space_param_index(sp, name) >= 0)
            return kt_error_set(err, KT_ERR_BAD_SPACE, "'%s' is both a parameter and a constant",
                                name);
        if (!(sp->const_names[i] = strdup(name)))
            return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        sp->n_consts++;
        int rc = json_to_value(jv, &sp->const_values[i], &sp->const_strings[i]);
        if (rc == -2)
            return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        if (rc < 0)
            return kt_error_set(err, KT_ERR_BAD_SPACE,
                                "constant '%s' is not a number, boolean or short string", name);
    }
    return 0;
}

static int parse_restrictions(space *sp, const json_t *restrictions, kt_error *err)
{
    if (!restrictions || json_is_null(restrictions))
        return 0;
    if (!json_is_array(restrictions))
        return kt_error_set(err, KT_ERR_BAD_EXPRESSION, "restrictions must be an array of strings");
    size_t n = json_array_size(restrictions);
    if (n > (size_t)sp->lim.max_restrictions)
        return kt_error_set(err, KT_ERR_BAD_EXPRESSION, "%zu restrictions (at most %d allowed)", n,
                            sp->lim.max_restrictions);
    sp->restr_text = calloc(n + 1, sizeof *sp->restr_text);
    sp->restr = calloc(n + 1, sizeof *sp->restr);
    if (!sp->restr_text || !sp->restr)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    expr_names names = {sp->n_params, sp->names, sp->n_consts, (const char *const *)sp->const_names,
                        sp->const_values};
    for (size_t i = 0; i < n; i++) {
        const json_t *jr = json_array_get(restrictions, i);
        if (!json_is_string(jr))
            return kt_error_set(err, KT_ERR_BAD_EXPRESSION, "restriction %zu is not a string", i);
        if (strlen(json_string_value(jr)) != json_string_length(jr))
            return kt_error_set(err, KT_ERR_BAD_EXPRESSION,
                                "restriction %zu contains a NUL character", i);
        if (json_string_length(jr) > sp->lim.max_expr_len)
            return kt_error_set(err, KT_ERR_BAD_EXPRESSION,
                                "restriction %zu is longer than %zu characters", i,
                                sp->lim.max_expr_len);
        if (!(sp->restr_text[i] = strdup(json_string_value(jr))))
            return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        sp->n_restr++;
        sp->restr[i] = expr_parse(sp->restr_text[i], &names, sp->lim.max_expr_len, err);
        if (!sp->restr[i]) {
            char q[96];
            space_quote(sp->restr_text[i], q, sizeof q);
            kt_error_prefix(err, "restriction %zu %s", i, q);
            return -1;
        }
    }
    return 0;
}

/* Parses params into sp (shared by space_new and space_new_explicit). */
static int parse_params(space *sp, const json_t *params, kt_error *err)
{
    if (!json_is_array(params) || json_array_size(params) == 0)
        return kt_error_set(err, KT_ERR_BAD_SPACE, "params must be a non-empty array");
    size_t n = json_array_size(params);
    if (n > (size_t)sp->lim.max_params)
        return kt_error_set(err, KT_ERR_BAD_SPACE, "%zu parameters (at most %d allowed)", n,
                            sp->lim.max_params);
    sp->params = calloc(n, sizeof *sp->params);
    sp->names = calloc(n, sizeof *sp->names);
    if (!sp->params || !sp->names)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    sp->raw = 1.0;
    for (size_t p = 0; p < n; p++) {
        sp->n_params++;
        if (parse_param(sp, (int)p, json_array_get(params, p), err) < 0) {
            if (err && err->code == KT_ERR_BAD_SPACE)
                kt_error_hint(err, "%s", params_hint);
            return -1;
        }
        sp->raw *= sp->params[p].n;
    }
    return 0;
}

static space *space_alloc(const space_limits *limits, kt_error *err)
{
    space *sp = calloc(1, sizeof *sp);
    if (!sp) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    sp->lim = effective_limits(limits);
    sp->false_restriction = -1;
    return sp;
}

space *space_new(const json_t *params, const json_t *restrictions, const json_t *constants,
                 const space_limits *limits, kt_error *err)
{
    space *sp = space_alloc(limits, err);
    if (!sp)
        return NULL;
    if (parse_params(sp, params, err) < 0 || parse_constants(sp, constants, err) < 0 ||
        parse_restrictions(sp, restrictions, err) < 0 || space_build_groups(sp, err) < 0) {
        space_free(sp);
        return NULL;
    }
    return sp;
}

space *space_new_explicit(const json_t *params, const json_t *configs, kt_error *err)
{
    uint16_t *rows = NULL;
    space *sp = space_alloc(NULL, err);
    if (!sp)
        return NULL;
    if (parse_params(sp, params, err) < 0)
        goto fail;
    if (!json_is_array(configs)) {
        kt_error_set(err, KT_ERR_BAD_SPACE, "configs must be an array of value arrays");
        goto fail;
    }
    size_t n = json_array_size(configs), k = (size_t)sp->n_params;
    if (n > sp->lim.max_group_valid) {
        kt_error_set(err, KT_ERR_SPACE_TOO_LARGE, "%zu configurations (at most %llu allowed)", n,
                     (unsigned long long)sp->lim.max_group_valid);
        goto fail;
    }
    if (!(rows = malloc((n ? n : 1) * k * sizeof *rows))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *jc = json_array_get(configs, i);
        if (!json_is_array(jc) || json_array_size(jc) != k) {
            kt_error_set(err, KT_ERR_BAD_SPACE, "configs[%zu] is not an array of %zu values", i, k);
            goto fail;
        }
        for (size_t p = 0; p < k; p++) {
            int v = space_find_value(sp, (int)p, json_array_get(jc, p));
            if (v < 0) {
                kt_error_set(err, KT_ERR_BAD_SPACE,
                             "configs[%zu][%zu] is not a value of parameter '%s'", i, p,
                             sp->params[p].name);
                goto fail;
            }
            rows[i * k + p] = (uint16_t)v;
        }
    }
    sp->is_explicit = 1;
    uint16_t *taken = rows;
    rows = NULL;
    if (space_build_explicit(sp, taken, n, err) < 0)
        goto fail;
    return sp;
fail:
    free(rows);
    space_free(sp);
    return NULL;
}

void space_free(space *sp)
{
    if (!sp)
        return;
    for (int p = 0; p < sp->n_params; p++) {
        space_param *par = &sp->params[p];
        for (int v = 0; par->keys && v < par->n; v++)
            free(par->keys[v]);
        free(par->name);
        free(par->vals);
        free(par->keys);
        free(par->twice);
        free(par->half);
    }
    for (int i = 0; i < sp->n_consts; i++) {
        free(sp->const_names[i]);
        free(sp->const_strings[i]);
    }
    for (int i = 0; i < sp->n_restr; i++) {
        free(sp->restr_text[i]);
        expr_free(sp->restr[i]);
    }
    for (int g = 0; g < sp->n_groups; g++) {
        free(sp->groups[g].params);
        free(sp->groups[g].rows);
    }
    free(sp->params);
    free(sp->names);
    free(sp->const_names);
    free(sp->const_values);
    free(sp->const_strings);
    free(sp->restr_text);
    free(sp->restr);
    free(sp->groups);
    free(sp);
}

int space_find_value(const space *sp, int p, const json_t *jv)
{
    const space_param *par = &sp->params[p];
    for (int v = 0; v < par->n; v++) {
        const expr_value *x = &par->vals[v];
        switch (json_typeof(jv)) {
        case JSON_INTEGER:
        case JSON_REAL: {
            if (x->type != EXPR_INT && x->type != EXPR_FLOAT)
                break;
            expr_value y = {.type = json_is_integer(jv) ? EXPR_INT : EXPR_FLOAT};
            if (json_is_integer(jv))
                y.u.i = (int64_t)json_integer_value(jv);
            else
                y.u.f = json_real_value(jv);
            if (expr_value_equal(x, &y))
                return v;
            break;
        }
        case JSON_TRUE:
        case JSON_FALSE:
            if (x->type == EXPR_BOOL && x->u.i == json_is_true(jv))
                return v;
            break;
        case JSON_STRING:
            if (x->type == EXPR_STR && x->len == json_string_length(jv) &&
                memcmp(x->u.s, json_string_value(jv), x->len) == 0)
                return v;
            break;
        default:
            return -1;
        }
    }
    return -1;
}

int space_num_params(const space *sp)
{
    return sp->n_params;
}

const char *space_param_name(const space *sp, int p)
{
    return p >= 0 && p < sp->n_params ? sp->params[p].name : NULL;
}

int space_param_index(const space *sp, const char *name)
{
    for (int p = 0; name && p < sp->n_params; p++)
        if (strcmp(sp->params[p].name, name) == 0)
            return p;
    return -1;
}

int space_param_num_values(const space *sp, int p)
{
    return p >= 0 && p < sp->n_params ? sp->params[p].n : 0;
}

json_t *space_param_value_json(const space *sp, int p, int v)
{
    if (p < 0 || p >= sp->n_params || v < 0 || v >= sp->params[p].n)
        return NULL;
    const expr_value *x = &sp->params[p].vals[v];
    switch (x->type) {
    case EXPR_INT:
        return json_integer((json_int_t)x->u.i);
    case EXPR_FLOAT:
        return json_real(x->u.f);
    case EXPR_BOOL:
        return json_boolean(x->u.i);
    default:
        return json_stringn(x->u.s, x->len);
    }
}

double space_param_value_number(const space *sp, int p, int v)
{
    if (p < 0 || p >= sp->n_params || v < 0 || v >= sp->params[p].n)
        return NAN;
    const expr_value *x = &sp->params[p].vals[v];
    if (x->type == EXPR_STR)
        return NAN;
    return x->type == EXPR_FLOAT ? x->u.f : (double)x->u.i;
}

int space_num_restrictions(const space *sp)
{
    return sp->n_restr;
}

const char *space_restriction_text(const space *sp, int i)
{
    return i >= 0 && i < sp->n_restr ? sp->restr_text[i] : NULL;
}

uint64_t space_count(const space *sp)
{
    return sp->count;
}

double space_raw_size(const space *sp)
{
    return sp->raw;
}

int space_num_groups(const space *sp)
{
    return sp->n_groups;
}
