/* catalog/catalog_external — the "external" device (issue 27): a target whose space comes inline
 * with the request (parameters, restrictions in the kernel specs' expression syntax, a default)
 * and whose trials the caller's own harness measures through ask/tell. Resolution checks every
 * member with its JSON path, builds the space with the problem's arguments as constants, and keys
 * the target by the caller's kernel_version or a hash of the canonical space; reopening rebuilds
 * it from the space stored with the job. */
#include "catalog/catalog_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "space/expr.h"
#include "catalog/kernel_spec_impl.h"

int catalog_is_external(const char *device)
{
    return kt_device_kind_of(device) == KT_DEVICE_EXTERNAL;
}

int catalog_external_check_names(const char *version, const char *device_class, kt_error *err)
{
    size_t n = device_class ? strlen(device_class) : 0;
    if (n < 1 || n > CATALOG_EXTERNAL_MAX_CLASS) {
        kt_error_set(err, device_class ? KT_ERR_OUT_OF_RANGE : KT_ERR_MISSING_FIELD,
                     "field 'device_class' must be 1 to %d characters on device external",
                     CATALOG_EXTERNAL_MAX_CLASS);
        kt_error_hint(err, "name the class of device your harness measures on, e.g. "
                           "\"laptop-rtx4060\": results are shared by every host of that class");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)device_class[i];
        if (ch < 0x20 || ch > 0x7e) {
            kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                         "field 'device_class' has a character that is not printable ASCII at "
                         "position %zu",
                         i + 1);
            return -1;
        }
    }
    if (!version)
        return 0;
    n = strlen(version);
    int ok = n >= 1 && n <= CATALOG_EXTERNAL_MAX_VERSION;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = version[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == ':' || ch == '-';
    }
    if (!ok) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "field 'kernel_version' must be 1 to %d characters of A-Z a-z 0-9 . _ : -",
                     CATALOG_EXTERNAL_MAX_VERSION);
        kt_error_hint(err, "a version names your kernel's code, e.g. a git hash or \"v2\"; leave "
                           "it out to key results by the space's hash");
        return -1;
    }
    return 0;
}

/* A problem argument: a finite number, or (Kernel Tuner's problem_size) an array of 1 to
 * CATALOG_EXTERNAL_MAX_DIMS finite numbers, which restrictions do not see. */
static int check_problem_value(const char *k, const json_t *v, kt_error *err)
{
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        int ok = n >= 1 && n <= CATALOG_EXTERNAL_MAX_DIMS;
        for (size_t i = 0; ok && i < n; i++) {
            const json_t *x = json_array_get(v, i);
            ok = json_is_number(x) && isfinite(json_number_value(x));
        }
        if (!ok) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem.%s: a list must hold 1 to %d numbers", k,
                         CATALOG_EXTERNAL_MAX_DIMS);
            kt_error_hint(err, "a list is for sizes such as Kernel Tuner's problem_size: "
                               "{\"problem_size\": [4096, 4096]}");
            return -1;
        }
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem.%s: must be a number", k);
        kt_error_hint(err, "problem arguments are numbers such as {\"n\": 1000000}, or lists "
                           "of numbers such as {\"problem_size\": [4096, 4096]}");
        return -1;
    }
    return 0;
}

/* The numeric problem arguments, the constants restrictions may read (a new reference). */
static json_t *numeric_constants(const json_t *problem)
{
    json_t *out = json_object(), *v;
    const char *k;
    json_object_foreach((json_t *)problem, k, v)
    {
        if (out && json_is_number(v) && json_object_set(out, k, v) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *catalog_external_problem(const json_t *problem, char **key_out, kt_error *err)
{
    const char *k;
    json_t *v, *out = NULL;
    *key_out = NULL;
    if (problem && !json_is_null(problem) && !json_is_object(problem)) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem must be an object of numbers");
        return NULL;
    }
    if (problem && json_object_size(problem) > CATALOG_EXTERNAL_MAX_ARGS) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem has %zu arguments; at most %d",
                     json_object_size(problem), CATALOG_EXTERNAL_MAX_ARGS);
        return NULL;
    }
    if (problem && !json_is_null(problem)) {
        json_object_foreach((json_t *)problem, k, v)
        {
            if (!kspec_valid_ident(k)) {
                kt_error_set(err, KT_ERR_BAD_PROBLEM,
                             "problem.%.80s: a problem argument must be an identifier of at most "
                             "%d characters (not a Python keyword)",
                             k, KSPEC_MAX_NAME);
                return NULL;
            }
            if (check_problem_value(k, v, err) < 0)
                return NULL;
        }
        out = json_deep_copy(problem);
    } else {
        out = json_object();
    }
    if (!out || !(*key_out = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS))) {
        json_decref(out);
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    return out;
}

/* A 400 bad_space whose message starts with the JSON path. */
#define BAD(err, ...) kt_error_set(err, KT_ERR_BAD_SPACE, __VA_ARGS__)

/* space.parameters: 1..MAX of {"name": identifier, "values": [distinct numbers, strings or
 * booleans]}, names unique and not problem arguments. The canonical copy into *out. */
static int check_parameters(const json_t *arr, const json_t *problem, json_t **out, kt_error *err)
{
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > CATALOG_EXTERNAL_MAX_PARAMS)
        return BAD(err, "space.parameters: must be an array of 1 to %d parameters",
                   CATALOG_EXTERNAL_MAX_PARAMS);
    json_t *copy = json_array();
    for (size_t i = 0; copy && i < json_array_size(arr); i++) {
        const json_t *p = json_array_get(arr, i);
        const char *k;
        json_t *v;
        if (!json_is_object(p)) {
            BAD(err, "space.parameters[%zu]: must be an object {\"name\", \"values\"}", i);
            goto fail;
        }
        json_object_foreach((json_t *)p, k, v)
        {
            if (strcmp(k, "name") != 0 && strcmp(k, "values") != 0) {
                BAD(err, "space.parameters[%zu]: unknown field '%.64s'", i, k);
                kt_error_hint(err, "a parameter is {\"name\": \"BS\", \"values\": [32, 64]}");
                goto fail;
            }
        }
        const char *name = json_string_value(json_object_get(p, "name"));
        const json_t *vals = json_object_get(p, "values");
        if (!name || !kspec_valid_ident(name)) {
            BAD(err,
                "space.parameters[%zu].name: must be an identifier of at most %d characters "
                "(letters, digits, _; not a Python keyword)",
                i, KSPEC_MAX_NAME);
            goto fail;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(json_string_value(json_object_get(json_array_get(arr, j), "name")), name) ==
                0) {
                BAD(err, "space.parameters[%zu].name: '%s' is listed twice", i, name);
                goto fail;
            }
        }
        if (json_object_get(problem, name)) {
            BAD(err, "space.parameters[%zu].name: '%s' is also a problem argument", i, name);
            goto fail;
        }
        if (!json_is_array(vals) || json_array_size(vals) < 1 ||
            json_array_size(vals) > CATALOG_EXTERNAL_MAX_VALUES) {
            BAD(err, "space.parameters[%zu].values: must be an array of 1 to %d values", i,
                CATALOG_EXTERNAL_MAX_VALUES);
            goto fail;
        }
        for (size_t a = 0; a < json_array_size(vals); a++) {
            const json_t *x = json_array_get(vals, a);
            if (!(json_is_number(x) || json_is_string(x) || json_is_boolean(x)) ||
                (json_is_real(x) && !isfinite(json_real_value(x)))) {
                BAD(err,
                    "space.parameters[%zu].values[%zu]: must be a number, a string or a boolean", i,
                    a);
                goto fail;
            }
            for (size_t b = 0; b < a; b++) {
                if (json_equal(json_array_get(vals, b), (json_t *)x)) {
                    BAD(err, "space.parameters[%zu].values[%zu]: repeats values[%zu]", i, a, b);
                    goto fail;
                }
            }
        }
        if (json_array_append_new(copy, json_pack("{s:s, s:O}", "name", name, "values", vals)) <
            0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto fail;
        }
    }
    if (!copy)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    *out = copy;
    return 0;
fail:
    json_decref(copy);
    return -1;
}

/* The problem's arguments as expression constants (names borrowed from problem). */
static int problem_constants(const json_t *problem, const char **names, expr_value *vals)
{
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach((json_t *)problem, k, v)
    {
        if (!json_is_number(v))
            continue; /* a list (problem_size) is no constant */
        names[n] = k;
        vals[n] = json_is_integer(v)
                      ? (expr_value){.type = EXPR_INT, .u.i = (int64_t)json_integer_value(v)}
                      : (expr_value){.type = EXPR_FLOAT, .u.f = json_number_value(v)};
        n++;
    }
    return n;
}

/* space.restrictions: 0..MAX strings, each parsed now so that an error names its index and
 * column. */
static int check_restrictions(const json_t *arr, const json_t *params, const json_t *problem,
                              json_t **out, kt_error *err)
{
    const char *pnames[CATALOG_EXTERNAL_MAX_PARAMS], *cnames[CATALOG_EXTERNAL_MAX_ARGS];
    expr_value cvals[CATALOG_EXTERNAL_MAX_ARGS];
    if (!arr || json_is_null(arr)) {
        *out = json_array();
        return *out ? 0 : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
    if (!json_is_array(arr) || json_array_size(arr) > CATALOG_EXTERNAL_MAX_RESTRICTIONS)
        return BAD(err, "space.restrictions: must be an array of at most %d expressions",
                   CATALOG_EXTERNAL_MAX_RESTRICTIONS);
    int np = (int)json_array_size(params);
    for (int i = 0; i < np; i++)
        pnames[i] = json_string_value(json_object_get(json_array_get(params, i), "name"));
    int nc = problem_constants(problem, cnames, cvals);
    expr_names en = {.n_params = np,
                     .params = pnames,
                     .n_consts = nc,
                     .const_names = cnames,
                     .const_values = cvals};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *text = json_string_value(json_array_get(arr, i));
        kt_error e;
        kt_error_clear(&e);
        if (!text)
            return BAD(err, "space.restrictions[%zu]: must be an expression (a string)", i);
        if (strlen(text) > CATALOG_EXTERNAL_MAX_EXPR)
            return BAD(err, "space.restrictions[%zu]: is longer than %d characters", i,
                       CATALOG_EXTERNAL_MAX_EXPR);
        expr *x = expr_parse(text, &en, CATALOG_EXTERNAL_MAX_EXPR, &e);
        if (!x) {
            BAD(err, "space.restrictions[%zu]: %s%s%.300s", i, e.message, e.hint[0] ? ": " : "",
                e.hint);
            kt_error_hint(err, "restrictions are Python expressions over the parameters and the "
                               "problem's arguments, e.g. \"BS * T <= 1024 and n %% BS == 0\"");
            return -1;
        }
        expr_free(x);
    }
    *out = json_deep_copy(arr);
    return *out ? 0 : kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
}

/* space.configurations: the explicit list of valid configurations (a Kernel Tuner cache whose
 * restrictions are unknown), 1..MAX arrays of one value per parameter, in parameter order; each
 * value's membership is checked when the space is built. Instead of restrictions, never with. */
static int check_configurations(const json_t *arr, const json_t *params, const json_t *restr,
                                kt_error *err)
{
    size_t np = json_array_size(params);
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > CATALOG_EXTERNAL_MAX_CONFIGS)
        return BAD(err, "space.configurations: must be an array of 1 to %d configurations",
                   CATALOG_EXTERNAL_MAX_CONFIGS);
    if (json_array_size(restr) > 0) {
        BAD(err, "space.configurations: an explicit list of configurations replaces "
                 "restrictions; send one or the other");
        kt_error_hint(err, "leave space.restrictions out (or []) when listing configurations");
        return -1;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *c = json_array_get(arr, i);
        if (!json_is_array(c) || json_array_size(c) != np) {
            BAD(err,
                "space.configurations[%zu]: must be an array of %zu values, one per parameter "
                "in the order of space.parameters",
                i, np);
            return -1;
        }
    }
    return 0;
}

/* The canonical definition {"default", "parameters", "restrictions"[, "configurations"]} of a
 * request's space. */
static json_t *canonical_space(const json_t *space, const json_t *problem, kt_error *err)
{
    json_t *params = NULL, *restr = NULL, *def = NULL, *out = NULL;
    const char *k;
    json_t *v;
    if (!json_is_object(space)) {
        BAD(err, "space: must be an object {\"parameters\", \"restrictions\", \"default\"}");
        kt_error_hint(err, "the device external needs the space inline: {\"parameters\": "
                           "[{\"name\": \"BS\", \"values\": [32, 64, 128]}], \"restrictions\": "
                           "[\"BS <= n\"], \"default\": {\"BS\": 64}}");
        return NULL;
    }
    json_object_foreach((json_t *)space, k, v)
    {
        if (strcmp(k, "parameters") != 0 && strcmp(k, "restrictions") != 0 &&
            strcmp(k, "default") != 0 && strcmp(k, "configurations") != 0) {
            BAD(err, "space: unknown field '%.64s'", k);
            kt_error_hint(err, "a space has \"parameters\", \"restrictions\" and \"default\" "
                               "(or \"configurations\", an explicit list, for restrictions)");
            return NULL;
        }
    }
    const json_t *configs = json_object_get(space, "configurations");
    if (configs && json_is_null(configs))
        configs = NULL;
    if (check_parameters(json_object_get(space, "parameters"), problem, &params, err) < 0 ||
        check_restrictions(json_object_get(space, "restrictions"), params, problem, &restr, err) <
            0 ||
        (configs && check_configurations(configs, params, restr, err) < 0))
        goto out;
    def = json_object_get(space, "default");
    if (def && !json_is_null(def) && !json_is_object(def)) {
        BAD(err, "space.default: must be an object of parameter values");
        goto out;
    }
    out = json_pack("{s:O, s:O}", "parameters", params, "restrictions", restr);
    if (out && def && !json_is_null(def))
        json_object_set(out, "default", def);
    if (out && configs) /* only when sent: the hash of a space without it is unchanged */
        json_object_set(out, "configurations", (json_t *)configs);
    if (!out)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    json_decref(params);
    json_decref(restr);
    return out;
}

/* Builds the space of a canonical definition with the problem's arguments as constants, and
 * checks its default against it. */
static space *build_space(const json_t *def, const json_t *problem, kt_error *err)
{
    const json_t *configs = json_object_get(def, "configurations");
    json_t *consts = configs ? NULL : numeric_constants(problem);
    space *sp = NULL;
    if (configs)
        sp = space_new_explicit(json_object_get(def, "parameters"), configs, err);
    else if (consts)
        sp = space_new(json_object_get(def, "parameters"), json_object_get(def, "restrictions"),
                       consts, NULL, err);
    else
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    json_decref(consts);
    if (!sp) {
        kt_error_prefix(err, configs ? "space.configurations" : "space");
        return NULL;
    }
    const json_t *d = json_object_get(def, "default");
    config_id id;
    if (d && space_config_from_json(sp, d, &id, err) < 0) {
        err->code = KT_ERR_BAD_SPACE;
        kt_error_prefix(err, "space.default");
        space_free(sp);
        return NULL;
    }
    return sp;
}

/* Fills out's key with owned copies of kernel, class and hash. */
static int own_key(target *out, const char *kernel, const char *klass, const char *hash,
                   kt_error *err)
{
    size_t lk = strlen(kernel) + 1, lc = strlen(klass) + 1, lh = strlen(hash) + 1;
    char *s = malloc(lk + lc + lh);
    if (!s)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    memcpy(s, kernel, lk);
    memcpy(s + lk, klass, lc);
    memcpy(s + lk + lc, hash, lh);
    out->owned_strings = s;
    out->key.kernel = s;
    out->key.device_class = s + lk;
    out->key.kernel_hash = s + lk + lc;
    out->key.device = CATALOG_EXTERNAL_DEVICE;
    out->key.dev = (kt_device){.kind = KT_DEVICE_EXTERNAL};
    out->key.toolchain = CATALOG_EXTERNAL_TOOLCHAIN;
    return 0;
}

/* Resolution from a definition that is canonical already (stored) or made from a request. */
static int resolve_def(const char *kernel, const char *version, const char *klass, json_t *def,
                       const json_t *problem, int with_space, target *out, kt_error *err)
{
    char *problem_key = NULL, *def_text = NULL, hash[24];
    json_t *canon = NULL;
    space *sp = NULL;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (!(canon = catalog_external_problem(problem, &problem_key, err)))
        goto out;
    if (with_space && !(sp = build_space(def, canon, err)))
        goto out;
    if (!version) {
        if (!(def_text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS))) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        snprintf(hash, sizeof hash, "space:%016" PRIx64,
                 kt_fnv1a(KT_FNV1A_OFFSET, def_text, strlen(def_text)));
        version = hash;
    }
    if (own_key(out, kernel, klass, version, err) < 0)
        goto out;
    out->key.problem_key = problem_key;
    out->problem = canon;
    out->sp = sp;
    out->owns_space = sp != NULL;
    out->space_def = def ? json_incref(def) : NULL;
    problem_key = NULL;
    canon = NULL;
    sp = NULL;
    rc = 0;
out:
    free(problem_key);
    free(def_text);
    json_decref(canon);
    space_free(sp);
    return rc;
}

int catalog_external_resolve(const char *kernel, const char *kernel_version,
                             const char *device_class, const json_t *space, const json_t *problem,
                             int with_space, target *out, kt_error *err)
{
    char *ignored = NULL;
    memset(out, 0, sizeof *out);
    if (!kernel || !*kernel)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "field 'kernel' is required");
    if (catalog_external_check_names(kernel_version, device_class, err) < 0)
        return -1;
    json_t *p = catalog_external_problem(problem, &ignored, err);
    free(ignored);
    if (!p)
        return -1;
    json_t *def = space ? canonical_space(space, p, err) : NULL;
    if (!space)
        kt_error_set(err, KT_ERR_MISSING_FIELD,
                     "field 'space' is required on device external (the harness's parameters)");
    json_decref(p);
    if (!def)
        return -1;
    int rc = resolve_def(kernel, kernel_version, device_class, def, problem, with_space, out, err);
    json_decref(def);
    return rc;
}

int catalog_external_key(const char *kernel, const char *kernel_version, const char *device_class,
                         const json_t *problem, target *out, kt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!kernel_version)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "an external key needs kernel_version");
    if (catalog_external_check_names(kernel_version, device_class, err) < 0)
        return -1;
    return resolve_def(kernel, kernel_version, device_class, NULL, problem, 0, out, err);
}

int catalog_reopen_space(const catalog *c, const target_key *stored, const json_t *problem,
                         const json_t *space, target *out, kt_error *err)
{
    if (!catalog_is_external(stored->device))
        return catalog_reopen(c, stored, problem, out, err);
    if (!space) {
        memset(out, 0, sizeof *out);
        return kt_error_set(err, KT_ERR_BAD_SPACE,
                            "job of kernel %s on external has no stored "
                            "space",
                            stored->kernel);
    }
    /* The stored definition is canonical already; the stored hash is kept (it may be the
     * caller's kernel_version). */
    if (resolve_def(stored->kernel, stored->kernel_hash, stored->device_class, (json_t *)space,
                    problem, 1, out, err) < 0)
        return -1;
    if (strcmp(out->key.problem_key, stored->problem_key) != 0) {
        kt_error_set(err, KT_ERR_BAD_PROBLEM, "problem %.200s of kernel %s now reads %.200s",
                     stored->problem_key, stored->kernel, out->key.problem_key);
        target_release(out);
        return -1;
    }
    return 0;
}

json_t *catalog_external_default(const target *t)
{
    const json_t *d = t && t->space_def ? json_object_get(t->space_def, "default") : NULL;
    return d ? json_deep_copy(d) : NULL;
}
