/* model/derived — spec-derived problem features (see derived.h). */
#include "model/derived.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/training_set.h"
#include "space/expr.h"

struct derived {
    json_t *desc;
    int n, na;
    expr *e[DERIVED_MAX];
};

static int derived_bad(kt_error *err, const char *what)
{
    kt_error_set(err, KT_ERR_BAD_REQUEST, "derived features: %s", what);
    kt_error_hint(err,
                  "give [{\"name\": ..., \"expr\": ...}] with at most %d expressions of the "
                  "problem arguments",
                  DERIVED_MAX);
    return -1;
}

derived *derived_new(const json_t *desc, const json_t *arg_names, kt_error *err)
{
    const char *names[TS_MAX_ARGS];
    derived *d = NULL;
    size_t na = json_is_array(arg_names) ? json_array_size(arg_names) : 0;
    size_t n = json_is_array(desc) ? json_array_size(desc) : 0;

    if (!json_is_array(desc) || n > DERIVED_MAX) {
        derived_bad(err, "not an array of at most 16 objects");
        goto fail;
    }
    if (na < 1 || na > TS_MAX_ARGS) {
        derived_bad(err, "1-16 argument names needed");
        goto fail;
    }
    for (size_t a = 0; a < na; a++) {
        if (!(names[a] = json_string_value(json_array_get(arg_names, a)))) {
            derived_bad(err, "an argument name is not a string");
            goto fail;
        }
    }
    if (!(d = calloc(1, sizeof *d)) || !(d->desc = json_deep_copy(desc))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto fail;
    }
    d->na = (int)na;
    expr_names en = {.n_params = (int)na, .params = names};
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(desc, i);
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *text = json_string_value(json_object_get(o, "expr"));
        if (!json_is_object(o) || !name || !*name || !text || json_object_size(o) != 2) {
            derived_bad(err, "each item must be {\"name\": non-empty string, \"expr\": string}");
            goto fail;
        }
        if (!(d->e[i] = expr_parse(text, &en, DERIVED_MAX_EXPR, err))) {
            kt_error_prefix(err, "derived feature %s", name);
            goto fail;
        }
        d->n++;
    }
    return d;
fail:
    derived_free(d);
    return NULL;
}

void derived_free(derived *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++)
        expr_free(d->e[i]);
    json_decref(d->desc);
    free(d);
}

int derived_count(const derived *d)
{
    return d ? d->n : 0;
}

const json_t *derived_desc(const derived *d)
{
    return d ? d->desc : NULL;
}

int derived_eval(const derived *d, const double *args, double *out, kt_error *err)
{
    expr_value slots[TS_MAX_ARGS];
    for (int a = 0; d && a < d->na; a++) {
        double x = args[a];
        slots[a] = x == floor(x) && fabs(x) < 9.0e15
                       ? (expr_value){.type = EXPR_INT, .u.i = (int64_t)x}
                       : (expr_value){.type = EXPR_FLOAT, .u.f = x};
    }
    for (int i = 0; i < derived_count(d); i++) {
        expr_value r;
        double v = NAN;
        if (expr_eval(d->e[i], slots, &r) == 0 && r.type != EXPR_STR)
            v = r.type == EXPR_FLOAT ? r.u.f : (double)r.u.i;
        if (!isfinite(v)) {
            const json_t *o = json_array_get(d->desc, (size_t)i);
            kt_error_set(err, KT_ERR_BAD_PROBLEM,
                         "derived feature %s (%.200s) is not a number "
                         "for this problem",
                         json_string_value(json_object_get(o, "name")),
                         json_string_value(json_object_get(o, "expr")));
            kt_error_hint(err, "the problem must satisfy the kernel's problem restrictions");
            return -1;
        }
        out[i] = v;
    }
    return 0;
}
