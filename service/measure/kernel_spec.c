/* measure/kernel_spec — loads and validates kernels/<name>/spec.json (kernels/README.md): every
 * field checked with a message naming the file and the field, unknown fields refused, expressions
 * parsed once with exactly the names they may see. Problems are validated and the per-problem space
 * and launch geometry computed from the parsed spec. */
#include "../core/hash.h"
#include "kernel_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KSPEC_MAX_VALUES  4096 /* values of one parameter */
#define KSPEC_MAX_SUMMARY 1024
#define KSPEC_MAX_INTEXPR 9007199254740992.0 /* 2^53: reals beyond are not exact integers */

static const char *const cpu_limit_names[] = {"cores", "l1d_bytes", "l2_bytes", "l3_bytes",
                                              "vector_bits"};
static const char *const cuda_limit_names[] = {
    "max_threads_per_block", "max_shared_memory_per_block", "max_registers_per_block", "warp_size",
    "compute_capability"};
/* Plausible limits used to parse restrictions when no device of the kind is known. */
static const kspec_limits typical_limits[KSPEC_N_KINDS] = {
    {{8, 32768, 1048576, 33554432, 256}},
    {{1024, 49152, 65536, 32, 80}},
};

const char *kernel_spec_kind_name(kspec_kind kind)
{
    return kind == KSPEC_CUDA ? "cuda" : "cpu";
}

const char *const *kernel_spec_limit_names(kspec_kind kind, int *n)
{
    if (kind == KSPEC_CUDA) {
        *n = (int)(sizeof cuda_limit_names / sizeof cuda_limit_names[0]);
        return cuda_limit_names;
    }
    *n = (int)(sizeof cpu_limit_names / sizeof cpu_limit_names[0]);
    return cpu_limit_names;
}

/* --- loading helpers ------------------------------------------------------------------------ */

typedef struct loader {
    const char *file; /* the file being validated, named in messages */
    char *why;
    size_t cap;
    int failed;
} loader;

static int bad(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first error as "<file>: <message>"; returns -1. */
static int bad(loader *L, const char *fmt, ...)
{
    if (!L->failed && L->why && L->cap) {
        int w = snprintf(L->why, L->cap, "%s: ", L->file);
        size_t used = w > 0 ? (size_t)w : 0;
        if (used < L->cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(L->why + used, L->cap - used, fmt, ap);
            va_end(ap);
        }
    }
    L->failed = 1;
    return -1;
}

/* Reads a regular file of at most KSPEC_MAX_FILE_BYTES (NUL-terminated copy in *out). */
static int read_small_file(const char *path, char **out, size_t *len, char *why, size_t cap)
{
    int rc = -1, fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    struct stat st;
    size_t got = 0;

    *out = NULL;
    if (fd < 0) {
        snprintf(why, cap, "cannot be opened: %s", strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, cap, "is not a regular file");
        goto out;
    }
    if (st.st_size > KSPEC_MAX_FILE_BYTES) {
        snprintf(why, cap, "is larger than %d bytes", KSPEC_MAX_FILE_BYTES);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        snprintf(why, cap, "out of memory");
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(why, cap, "cannot be read: %s", n < 0 ? strerror(errno) : "short read");
            goto out;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int valid_ident(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KSPEC_MAX_NAME ||
        !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return !expr_is_keyword(s, n);
}

static int valid_kernel_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KSPEC_MAX_NAME || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

/* Refuses fields of obj not in accepted (NULL-terminated). */
static int check_fields(loader *L, const json_t *obj, const char *where,
                        const char *const *accepted)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        int ok = 0;
        for (int i = 0; accepted[i] && !ok; i++)
            ok = strcmp(key, accepted[i]) == 0;
        if (!ok) {
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (int i = 0; accepted[i] && used < sizeof list; i++) {
                int w =
                    snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", accepted[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            return bad(L, "%s: unknown field '%.64s'; accepted: %s", where, key, list);
        }
    }
    return 0;
}

static const json_t *need(loader *L, const json_t *obj, const char *where, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        bad(L, "%s%s%s: missing", where, where[0] ? "." : "", key);
    return v;
}

static int get_int(loader *L, const json_t *v, const char *field, long long *out)
{
    if (!json_is_integer(v))
        return bad(L, "%s must be an integer", field);
    *out = (long long)json_integer_value(v);
    return 0;
}

/* Parses an expression field (a string, or an integer taken as its text). */
static int parse_expr(loader *L, kspec_expr *out, const json_t *v, const char *field,
                      const expr_names *names)
{
    char num[32];
    const char *text = NULL;
    kt_error e;

    if (json_is_string(v)) {
        text = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        text = num;
    } else {
        return bad(L, "%s must be an expression (a string)", field);
    }
    if (strlen(text) > KSPEC_MAX_EXPR_LEN)
        return bad(L, "%s is longer than %d characters", field, KSPEC_MAX_EXPR_LEN);
    if (!(out->text = strdup(text)))
        return bad(L, "out of memory");
    kt_error_clear(&e);
    out->e = expr_parse(text, names, KSPEC_MAX_EXPR_LEN, &e);
    if (!out->e)
        return bad(L, "%s '%.200s': %s%s%.300s%s", field, text, e.message, e.hint[0] ? " (" : "",
                   e.hint, e.hint[0] ? ")" : "");
    return 0;
}

static void expr_release(kspec_expr *x)
{
    free(x->text);
    expr_free(x->e);
    x->text = NULL;
    x->e = NULL;
}

/* A plain file name inside dir: its absolute path in *abs and its bytes hashed into *h. */
static int source_file(loader *L, const char *dir, const json_t *v, const char *field, char **abs,
                       uint64_t *h)
{
    char path[PATH_MAX], resolved[PATH_MAX], why[256];
    char *bytes = NULL;
    size_t len = 0;
    const char *name = json_string_value(v);

    if (!name)
        return bad(L, "%s must be a file name (a string)", field);
    if (!name[0] || strlen(name) > 255 || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return bad(L, "%s '%.255s' must be a plain file name in the kernel's folder", field, name);
    int w = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof path)
        return bad(L, "%s: path too long", field);
    if (!realpath(path, resolved))
        return bad(L, "%s '%s': %s", field, name, strerror(errno));
    if (read_small_file(resolved, &bytes, &len, why, sizeof why) < 0)
        return bad(L, "%s '%s' %s", field, name, why);
    *h = kt_fnv1a_field(*h, bytes, len);
    free(bytes);
    if (!(*abs = strdup(resolved)))
        return bad(L, "out of memory");
    return 0;
}

/* --- problem part --------------------------------------------------------------------------- */

static int load_args(loader *L, kernel_spec *k, const json_t *arr)
{
    static const char *const fields[] = {"name", "min", "max", "default", NULL};
    if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > KSPEC_MAX_ARGS)
        return bad(L, "problem must be an array of 1 to %d arguments", KSPEC_MAX_ARGS);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *a = json_array_get(arr, i);
        char where[64];
        snprintf(where, sizeof where, "problem[%zu]", i);
        if (!json_is_object(a))
            return bad(L, "%s must be an object", where);
        if (check_fields(L, a, where, fields) < 0)
            return -1;
        const json_t *name = need(L, a, where, "name");
        if (!name)
            return -1;
        if (!json_is_string(name) || !valid_ident(json_string_value(name)))
            return bad(L,
                       "%s.name must be an identifier of at most %d characters (not a Python "
                       "keyword)",
                       where, KSPEC_MAX_NAME);
        kspec_arg *arg = &k->args[i];
        snprintf(arg->name, sizeof arg->name, "%s", json_string_value(name));
        for (size_t j = 0; j < i; j++) {
            if (strcmp(k->args[j].name, arg->name) == 0)
                return bad(L, "%s.name '%s' is listed twice", where, arg->name);
        }
        char field[96];
        const json_t *mn = need(L, a, where, "min"), *mx = need(L, a, where, "max"),
                     *df = need(L, a, where, "default");
        if (!mn || !mx || !df)
            return -1;
        snprintf(field, sizeof field, "%s.min", where);
        if (get_int(L, mn, field, &arg->min) < 0)
            return -1;
        snprintf(field, sizeof field, "%s.max", where);
        if (get_int(L, mx, field, &arg->max) < 0)
            return -1;
        snprintf(field, sizeof field, "%s.default", where);
        if (get_int(L, df, field, &arg->def) < 0)
            return -1;
        if (arg->min > arg->max)
            return bad(L, "%s: min %lld is greater than max %lld", where, arg->min, arg->max);
        if (arg->def < arg->min || arg->def > arg->max)
            return bad(L, "%s.default %lld is outside [%lld, %lld]", where, arg->def, arg->min,
                       arg->max);
        k->n_args++;
    }
    return 0;
}

static void arg_names(const kernel_spec *k, const char **names)
{
    for (int i = 0; i < k->n_args; i++)
        names[i] = k->args[i].name;
}

static int load_problem_exprs(loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const bfields[] = {"name", "elements", "role", NULL};
    const char *names[KSPEC_MAX_ARGS];
    arg_names(k, names);
    expr_names en = {.n_params = k->n_args, .params = names};
    char field[96];

    const json_t *pr = json_object_get(root, "problem_restrictions");
    if (pr) {
        if (!json_is_array(pr) || json_array_size(pr) > KSPEC_MAX_RESTRICTIONS)
            return bad(L, "problem_restrictions must be an array of at most %d expressions",
                       KSPEC_MAX_RESTRICTIONS);
        size_t n = json_array_size(pr);
        k->problem_restrictions = calloc(n ? n : 1, sizeof *k->problem_restrictions);
        if (!k->problem_restrictions)
            return bad(L, "out of memory");
        for (size_t i = 0; i < n; i++) {
            snprintf(field, sizeof field, "problem_restrictions[%zu]", i);
            k->n_problem_restrictions++;
            if (parse_expr(L, &k->problem_restrictions[i], json_array_get(pr, i), field, &en) < 0)
                return -1;
        }
    }

    const json_t *bufs = need(L, root, "", "buffers");
    if (!bufs)
        return -1;
    if (!json_is_array(bufs) || json_array_size(bufs) < 1 ||
        json_array_size(bufs) > KSPEC_MAX_BUFFERS)
        return bad(L, "buffers must be an array of 1 to %d buffers", KSPEC_MAX_BUFFERS);
    int outputs = 0;
    for (size_t i = 0; i < json_array_size(bufs); i++) {
        const json_t *b = json_array_get(bufs, i);
        char where[64];
        snprintf(where, sizeof where, "buffers[%zu]", i);
        if (!json_is_object(b))
            return bad(L, "%s must be an object", where);
        if (check_fields(L, b, where, bfields) < 0)
            return -1;
        const json_t *name = need(L, b, where, "name"), *el = need(L, b, where, "elements"),
                     *role = need(L, b, where, "role");
        if (!name || !el || !role)
            return -1;
        if (!json_is_string(name) || !valid_ident(json_string_value(name)))
            return bad(L, "%s.name must be an identifier of at most %d characters", where,
                       KSPEC_MAX_NAME);
        kspec_buffer *buf = &k->buffers[i];
        snprintf(buf->name, sizeof buf->name, "%s", json_string_value(name));
        for (size_t j = 0; j < i; j++) {
            if (strcmp(k->buffers[j].name, buf->name) == 0)
                return bad(L, "%s.name '%s' is listed twice", where, buf->name);
        }
        const char *r = json_string_value(role);
        if (r && strcmp(r, "input") == 0) {
            buf->role = KSPEC_INPUT;
        } else if (r && strcmp(r, "output") == 0) {
            buf->role = KSPEC_OUTPUT;
            outputs++;
        } else {
            return bad(L, "%s.role must be \"input\" or \"output\"", where);
        }
        k->n_buffers++;
        snprintf(field, sizeof field, "%s.elements", where);
        if (parse_expr(L, &buf->elements, el, field, &en) < 0)
            return -1;
    }
    if (!outputs)
        return bad(L, "buffers: no buffer has the role \"output\" (nothing could be verified)");

    const json_t *flops = need(L, root, "", "flops");
    if (!flops || parse_expr(L, &k->flops, flops, "flops", &en) < 0)
        return -1;
    return 0;
}

static int load_tolerance(loader *L, kernel_spec *k, const json_t *root)
{
    static const char *const fields[] = {"rtol", "atol", NULL};
    const json_t *t = need(L, root, "", "tolerance");
    if (!t)
        return -1;
    if (!json_is_object(t))
        return bad(L, "tolerance must be an object {\"rtol\", \"atol\"}");
    if (check_fields(L, t, "tolerance", fields) < 0)
        return -1;
    const json_t *rt = need(L, t, "tolerance", "rtol"), *at = need(L, t, "tolerance", "atol");
    if (!rt || !at)
        return -1;
    if (!json_is_number(rt) || !isfinite(json_number_value(rt)) || json_number_value(rt) < 0)
        return bad(L, "tolerance.rtol must be a number >= 0");
    if (!json_is_number(at) || !isfinite(json_number_value(at)) || json_number_value(at) < 0)
        return bad(L, "tolerance.atol must be a number >= 0");
    k->rtol = json_number_value(rt);
    k->atol = json_number_value(at);
    return 0;
}

static int load_reference(loader *L, kernel_spec *k, const json_t *root, uint64_t *ref_hash)
{
    static const char *const blas_fields[] = {"kind", NULL};
    static const char *const c_fields[] = {"kind", "source", NULL};
    static const char *const blas_args[] = {"M", "N", "K"}, *const blas_bufs[] = {"A", "B", "C"};
    const json_t *r = need(L, root, "", "reference");
    if (!r)
        return -1;
    if (!json_is_object(r))
        return bad(L, "reference must be an object {\"kind\", ...}");
    const json_t *kind = need(L, r, "reference", "kind");
    if (!kind)
        return -1;
    const char *ks = json_string_value(kind);
    if (ks && strcmp(ks, "openblas_sgemm") == 0) {
        if (check_fields(L, r, "reference", blas_fields) < 0)
            return -1;
        k->ref_kind = KSPEC_REF_OPENBLAS_SGEMM;
        for (int i = 0; i < 3; i++) {
            if (k->n_args <= i || strcmp(k->args[i].name, blas_args[i]) != 0)
                return bad(L, "reference.kind openblas_sgemm needs the problem arguments M, N, K "
                              "first, in that order");
            if (k->n_buffers <= i || strcmp(k->buffers[i].name, blas_bufs[i]) != 0)
                return bad(L, "reference.kind openblas_sgemm needs the buffers A, B, C first, in "
                              "that order");
        }
        return 0;
    }
    if (ks && strcmp(ks, "c") == 0) {
        if (check_fields(L, r, "reference", c_fields) < 0)
            return -1;
        const json_t *src = need(L, r, "reference", "source");
        if (!src)
            return -1;
        k->ref_kind = KSPEC_REF_C;
        return source_file(L, k->dir, src, "reference.source", &k->ref_source, ref_hash);
    }
    return bad(L, "reference.kind '%.64s' is not known; accepted: openblas_sgemm, c",
               ks ? ks : "(not a string)");
}

/* --- variants ------------------------------------------------------------------------------- */

static int load_params(loader *L, const kernel_spec *k, kspec_kind kind, kspec_variant *v,
                       const json_t *arr, const char *where)
{
    static const char *const fields[] = {"name", "values", NULL};
    int n_limits = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);
    json_t *out = NULL;
    int rc = -1;

    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > KSPEC_MAX_PARAMS) {
        bad(L, "%s.parameters must be an array of 1 to %d parameters", where, KSPEC_MAX_PARAMS);
        goto out;
    }
    if (!(out = json_array())) {
        bad(L, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *p = json_array_get(arr, i);
        char pw[96];
        snprintf(pw, sizeof pw, "%s.parameters[%zu]", where, i);
        if (!json_is_object(p)) {
            bad(L, "%s must be an object", pw);
            goto out;
        }
        if (check_fields(L, p, pw, fields) < 0)
            goto out;
        const json_t *name = need(L, p, pw, "name"), *vals = need(L, p, pw, "values");
        if (!name || !vals)
            goto out;
        const char *ns = json_string_value(name);
        if (!ns || !valid_ident(ns)) {
            bad(L, "%s.name must be an identifier of at most %d characters (not a Python keyword)",
                pw, KSPEC_MAX_NAME);
            goto out;
        }
        for (int j = 0; j < v->n_params; j++) {
            if (strcmp(v->param_names[j], ns) == 0) {
                bad(L, "%s.name '%s' is listed twice", pw, ns);
                goto out;
            }
        }
        for (int j = 0; j < k->n_args; j++) {
            if (strcmp(k->args[j].name, ns) == 0) {
                bad(L, "%s.name '%s' is also a problem argument", pw, ns);
                goto out;
            }
        }
        for (int j = 0; j < n_limits; j++) {
            if (strcmp(limit_names[j], ns) == 0) {
                bad(L, "%s.name '%s' is also a device limit", pw, ns);
                goto out;
            }
        }
        if (!json_is_array(vals) || json_array_size(vals) < 1 ||
            json_array_size(vals) > KSPEC_MAX_VALUES) {
            bad(L, "%s.values must be an array of 1 to %d integers", pw, KSPEC_MAX_VALUES);
            goto out;
        }
        for (size_t a = 0; a < json_array_size(vals); a++) {
            const json_t *x = json_array_get(vals, a);
            if (!json_is_integer(x)) {
                bad(L, "%s.values[%zu] must be an integer (values become -D defines)", pw, a);
                goto out;
            }
            for (size_t b = 0; b < a; b++) {
                if (json_integer_value(json_array_get(vals, b)) == json_integer_value(x)) {
                    bad(L, "%s.values lists %lld twice", pw, (long long)json_integer_value(x));
                    goto out;
                }
            }
        }
        snprintf(v->param_names[v->n_params], sizeof v->param_names[0], "%s", ns);
        v->n_params++;
        if (json_array_append_new(out, json_pack("{s:s, s:O}", "name", ns, "values", vals)) < 0) {
            bad(L, "out of memory");
            goto out;
        }
    }
    if (!(v->params_text = json_dumps(out, JSON_COMPACT))) {
        bad(L, "out of memory");
        goto out;
    }
    rc = 0;
out:
    json_decref(out);
    return rc;
}

/* Restrictions parse with the parameters as slots and the problem arguments and device limits as
 * constants (plausible values: only names and syntax are checked here). */
static int load_restrictions(loader *L, const kernel_spec *k, kspec_kind kind, kspec_variant *v,
                             const json_t *arr, const char *where, const kspec_limits *lim)
{
    const char *params[KSPEC_MAX_PARAMS], *cnames[KSPEC_MAX_ARGS + KSPEC_MAX_LIMITS];
    expr_value cvals[KSPEC_MAX_ARGS + KSPEC_MAX_LIMITS];
    int n_limits = 0, nc = 0;
    const char *const *limit_names = kernel_spec_limit_names(kind, &n_limits);
    char field[128];

    if (!arr) {
        v->restrictions_text = strdup("[]");
        return v->restrictions_text ? 0 : bad(L, "out of memory");
    }
    if (!json_is_array(arr) || json_array_size(arr) > KSPEC_MAX_RESTRICTIONS)
        return bad(L, "%s.restrictions must be an array of at most %d expressions", where,
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
            return bad(L, "%s must be an expression (a string)", field);
        int rc = parse_expr(L, &x, json_array_get(arr, i), field, &en);
        expr_release(&x);
        if (rc < 0)
            return -1;
    }
    if (!(v->restrictions_text = json_dumps(arr, JSON_COMPACT)))
        return bad(L, "out of memory");
    return 0;
}

static int load_default(loader *L, kspec_variant *v, const json_t *def, const json_t *params,
                        const char *where)
{
    const char *key;
    json_t *val;
    if (!json_is_object(def))
        return bad(L, "%s.default must be an object of parameter -> value", where);
    json_object_foreach((json_t *)def, key, val)
    {
        int p = -1;
        for (int i = 0; i < v->n_params && p < 0; i++)
            p = strcmp(v->param_names[i], key) == 0 ? i : -1;
        if (p < 0)
            return bad(L, "%s.default names '%.64s', which is not a parameter", where, key);
        const json_t *vals = json_object_get(json_array_get(params, (size_t)p), "values");
        int found = 0;
        for (size_t a = 0; a < json_array_size(vals) && !found; a++)
            found = json_is_integer(val) &&
                    json_integer_value(val) == json_integer_value(json_array_get(vals, a));
        if (!found)
            return bad(L, "%s.default is not valid: %s is not one of the values of parameter %s",
                       where, json_is_integer(val) ? "its value" : "a non-integer value", key);
    }
    for (int i = 0; i < v->n_params; i++) {
        if (!json_object_get(def, v->param_names[i]))
            return bad(L, "%s.default is not valid: it lacks parameter %s", where,
                       v->param_names[i]);
    }
    if (!(v->default_text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS)))
        return bad(L, "out of memory");
    return 0;
}

static int load_geometry(loader *L, const kernel_spec *k, kspec_variant *v, const json_t *obj,
                         const char *where)
{
    const char *names[KSPEC_MAX_PARAMS + KSPEC_MAX_ARGS];
    int n = 0;
    char field[128];
    for (int i = 0; i < v->n_params; i++)
        names[n++] = v->param_names[i];
    for (int i = 0; i < k->n_args; i++)
        names[n++] = k->args[i].name;
    expr_names en = {.n_params = n, .params = names};
    static const char *const which[] = {"block", "grid"};
    for (int w = 0; w < 2; w++) {
        const json_t *arr = need(L, obj, where, which[w]);
        if (!arr)
            return -1;
        if (!json_is_array(arr) || json_array_size(arr) != 3)
            return bad(L, "%s.%s must be an array of 3 expressions (x, y, z)", where, which[w]);
        for (size_t i = 0; i < 3; i++) {
            snprintf(field, sizeof field, "%s.%s[%zu]", where, which[w], i);
            kspec_expr *x = w == 0 ? &v->block[i] : &v->grid[i];
            if (parse_expr(L, x, json_array_get(arr, i), field, &en) < 0)
                return -1;
        }
    }
    const json_t *sh = json_object_get(obj, "shared_bytes");
    json_t *zero = NULL;
    if (!sh)
        sh = zero = json_string("0");
    snprintf(field, sizeof field, "%s.shared_bytes", where);
    int rc = sh ? parse_expr(L, &v->shared_bytes, sh, field, &en) : bad(L, "out of memory");
    json_decref(zero);
    return rc;
}

static int load_variant(loader *L, kernel_spec *k, kspec_kind kind, const json_t *obj,
                        const char *where, const kspec_limits *lim, uint64_t *hash)
{
    static const char *const cpu_fields[] = {"source", "parameters", "restrictions", "default",
                                             NULL};
    static const char *const cuda_fields[] = {"source",       "entry",   "parameters",
                                              "restrictions", "block",   "grid",
                                              "shared_bytes", "default", NULL};
    kspec_variant *v = &k->variants[kind];

    if (!json_is_object(obj))
        return bad(L, "%s must be an object", where);
    if (check_fields(L, obj, where, kind == KSPEC_CUDA ? cuda_fields : cpu_fields) < 0)
        return -1;
    v->present = 1;
    if (!(v->file = strdup(L->file)))
        return bad(L, "out of memory");
    char field[96];
    snprintf(field, sizeof field, "%s.source", where);
    const json_t *src = need(L, obj, where, "source");
    if (!src || source_file(L, k->dir, src, field, &v->source, hash) < 0)
        return -1;
    if (kind == KSPEC_CUDA) {
        const json_t *entry = need(L, obj, where, "entry");
        if (!entry)
            return -1;
        if (!json_is_string(entry) || !valid_ident(json_string_value(entry)))
            return bad(L, "%s.entry must be an identifier (the extern \"C\" __global__ function)",
                       where);
        snprintf(v->entry, sizeof v->entry, "%s", json_string_value(entry));
    }
    const json_t *params = need(L, obj, where, "parameters");
    if (!params || load_params(L, k, kind, v, params, where) < 0)
        return -1;
    if (load_restrictions(L, k, kind, v, json_object_get(obj, "restrictions"), where, lim) < 0)
        return -1;
    if (kind == KSPEC_CUDA && load_geometry(L, k, v, obj, where) < 0)
        return -1;
    const json_t *def = need(L, obj, where, "default");
    if (!def)
        return -1;
    return load_default(L, v, def, params, where);
}

/* The default configuration must be a configuration of the space of the default problem and of the
 * test problem on a device with these limits. */
static int check_default(loader *L, const kernel_spec *k, kspec_kind kind, const kspec_limits *lim,
                         const char *where)
{
    const kspec_variant *v = &k->variants[kind];
    kspec_problem p;
    kt_error e;
    space *sp = NULL;
    json_t *def = json_loads(v->default_text, 0, NULL), *tp = NULL;
    int rc = -1;

    if (!def) {
        bad(L, "out of memory");
        goto out;
    }
    for (int which = 0; which < 2; which++) {
        const char *label = which ? "the test problem" : "the default problem";
        if (which) {
            if (!k->test_problem_text)
                break;
            if (!(tp = json_loads(k->test_problem_text, 0, NULL))) {
                bad(L, "out of memory");
                goto out;
            }
        }
        kt_error_clear(&e);
        if (kernel_spec_problem(k, which ? tp : NULL, &p, &e) < 0) {
            bad(L, "%s: %s", label, e.message);
            goto out;
        }
        space_free(sp);
        config_id id;
        if (!(sp = kernel_spec_space(k, kind, &p, lim, &e)) ||
            space_config_from_json(sp, def, &id, &e) < 0) {
            bad(L, "%s.default is not valid for %s: %s", where, label, e.message);
            goto out;
        }
    }
    rc = 0;
out:
    space_free(sp);
    json_decref(def);
    json_decref(tp);
    return rc;
}

static int load_test_problem(loader *L, kernel_spec *k, const json_t *root)
{
    const json_t *tp = json_object_get(root, "test_problem");
    kspec_problem p;
    kt_error e;
    if (!tp)
        return 0;
    if (!json_is_object(tp))
        return bad(L, "test_problem must be an object of argument -> integer");
    kt_error_clear(&e);
    if (kernel_spec_problem(k, tp, &p, &e) < 0)
        return bad(L, "test_problem: %s", e.message);
    json_t *canon = kernel_spec_problem_json(k, &p);
    k->test_problem_text = canon ? json_dumps(canon, JSON_COMPACT) : NULL;
    json_decref(canon);
    return k->test_problem_text ? 0 : bad(L, "out of memory");
}

static void hex64(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

kernel_spec *kernel_spec_load(const char *dir, const kspec_limits *const limits[KSPEC_N_KINDS],
                              char *why, size_t why_cap)
{
    static const char *const top_fields[] = {
        "name",      "summary",   "problem",  "problem_restrictions", "buffers", "flops",
        "tolerance", "reference", "variants", "test_problem",         NULL};
    static const char *const variant_kinds[] = {"cpu", "cuda", NULL};
    char spec_path[PATH_MAX], cuda_path[PATH_MAX], rdir[PATH_MAX], fwhy[256];
    char *bytes = NULL, *cuda_bytes = NULL;
    size_t len = 0, cuda_len = 0;
    json_t *root = NULL, *cuda_root = NULL;
    json_error_t jerr;
    kernel_spec *k = NULL;
    loader L = {.file = dir, .why = why, .cap = why_cap};
    uint64_t base = KT_FNV1A_OFFSET, ref_hash = base, var_hash[KSPEC_N_KINDS];
    int ok = 0;

    if (why && why_cap)
        why[0] = '\0';
    if (!realpath(dir, rdir)) {
        bad(&L, "cannot be read: %s", strerror(errno));
        goto out;
    }
    snprintf(spec_path, sizeof spec_path, "%.*s/spec.json", PATH_MAX - 16, rdir);
    snprintf(cuda_path, sizeof cuda_path, "%.*s/cuda.json", PATH_MAX - 16, rdir);
    L.file = spec_path;
    if (read_small_file(spec_path, &bytes, &len, fwhy, sizeof fwhy) < 0) {
        bad(&L, "%s", fwhy);
        goto out;
    }
    if (!(root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &jerr))) {
        bad(&L, "not valid JSON: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
        goto out;
    }
    if (!json_is_object(root)) {
        bad(&L, "the file must hold a JSON object");
        goto out;
    }
    if (!(k = calloc(1, sizeof *k)) || !(k->dir = strdup(rdir)) || !(k->path = strdup(spec_path))) {
        bad(&L, "out of memory");
        goto out;
    }
    if (check_fields(&L, root, "top level", top_fields) < 0)
        goto out;
    const json_t *name = need(&L, root, "", "name");
    if (!name)
        goto out;
    if (!json_is_string(name) || !valid_kernel_name(json_string_value(name))) {
        bad(&L, "name must be 1 to %d characters of letters, digits, '_', '-' and '.'",
            KSPEC_MAX_NAME);
        goto out;
    }
    snprintf(k->name, sizeof k->name, "%s", json_string_value(name));
    const json_t *summary = json_object_get(root, "summary");
    if (summary &&
        (!json_is_string(summary) || strlen(json_string_value(summary)) > KSPEC_MAX_SUMMARY)) {
        bad(&L, "summary must be a string of at most %d characters", KSPEC_MAX_SUMMARY);
        goto out;
    }
    if (!(k->summary = strdup(summary ? json_string_value(summary) : ""))) {
        bad(&L, "out of memory");
        goto out;
    }
    const json_t *problem = need(&L, root, "", "problem");
    if (!problem || load_args(&L, k, problem) < 0 || load_problem_exprs(&L, k, root) < 0 ||
        load_tolerance(&L, k, root) < 0 || load_reference(&L, k, root, &ref_hash) < 0 ||
        load_test_problem(&L, k, root) < 0)
        goto out;

    const json_t *variants = json_object_get(root, "variants");
    if (variants && !json_is_object(variants)) {
        bad(&L, "variants must be an object {\"cpu\": {...}, \"cuda\": {...}}");
        goto out;
    }
    if (variants && check_fields(&L, variants, "variants", variant_kinds) < 0)
        goto out;
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++) {
        const kspec_limits *lim = limits && limits[kind] ? limits[kind] : &typical_limits[kind];
        const json_t *obj = variants ? json_object_get(variants, variant_kinds[kind]) : NULL;
        char where[32];
        var_hash[kind] = kt_fnv1a_field(base, bytes, len);
        snprintf(where, sizeof where, "variants.%s", variant_kinds[kind]);
        if (!obj && kind == KSPEC_CUDA && access(cuda_path, F_OK) == 0) {
            /* The CUDA variant kept beside spec.json until the two are merged. */
            L.file = cuda_path;
            if (read_small_file(cuda_path, &cuda_bytes, &cuda_len, fwhy, sizeof fwhy) < 0) {
                bad(&L, "%s", fwhy);
                goto out;
            }
            if (!(cuda_root = json_loadb(cuda_bytes, cuda_len, JSON_REJECT_DUPLICATES, &jerr))) {
                bad(&L, "not valid JSON: %s at line %d column %d", jerr.text, jerr.line,
                    jerr.column);
                goto out;
            }
            var_hash[kind] = kt_fnv1a_field(var_hash[kind], cuda_bytes, cuda_len);
            obj = cuda_root;
            snprintf(where, sizeof where, "cuda");
        }
        if (!obj)
            continue;
        if (load_variant(&L, k, (kspec_kind)kind, obj, where, lim, &var_hash[kind]) < 0)
            goto out;
        var_hash[kind] = kt_fnv1a_field(var_hash[kind], (const char *)&ref_hash, sizeof ref_hash);
        hex64(var_hash[kind], k->variants[kind].hash);
        if (limits && limits[kind] && check_default(&L, k, (kspec_kind)kind, lim, where) < 0)
            goto out;
        L.file = spec_path;
    }
    if (!k->variants[KSPEC_CPU].present && !k->variants[KSPEC_CUDA].present) {
        bad(&L, "variants: the kernel has neither a cpu nor a cuda variant");
        goto out;
    }
    ok = 1;
out:
    if (!ok) {
        kernel_spec_free(k);
        k = NULL;
    }
    json_decref(root);
    json_decref(cuda_root);
    free(bytes);
    free(cuda_bytes);
    return k;
}

void kernel_spec_free(kernel_spec *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n_problem_restrictions; i++)
        expr_release(&k->problem_restrictions[i]);
    free(k->problem_restrictions);
    for (int i = 0; i < k->n_buffers; i++)
        expr_release(&k->buffers[i].elements);
    expr_release(&k->flops);
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++) {
        kspec_variant *v = &k->variants[kind];
        free(v->file);
        free(v->source);
        free(v->params_text);
        free(v->restrictions_text);
        free(v->default_text);
        for (int i = 0; i < 3; i++) {
            expr_release(&v->block[i]);
            expr_release(&v->grid[i]);
        }
        expr_release(&v->shared_bytes);
    }
    free(k->summary);
    free(k->dir);
    free(k->path);
    free(k->ref_source);
    free(k->test_problem_text);
    free(k);
}

/* --- problems, spaces, launch geometry ------------------------------------------------------ */

/* An integral value: ints and bools, and reals that are whole and exact. */
static int value_to_ll(const expr_value *v, long long *out)
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
        int w = snprintf(buf + used, cap - used, "%s%s [%lld..%lld, default %lld]", i ? ", " : "",
                         k->args[i].name, k->args[i].min, k->args[i].max, k->args[i].def);
        used += w > 0 ? (size_t)w : 0;
    }
}

int kernel_spec_problem(const kernel_spec *k, const json_t *problem, kspec_problem *out,
                        kt_error *err)
{
    char list[KT_ERROR_HINT_MAX];
    expr_value slots[KSPEC_MAX_ARGS];
    const char *key;
    json_t *val;

    memset(out, 0, sizeof *out);
    for (int i = 0; i < k->n_args; i++)
        out->values[i] = k->args[i].def;
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
        }
    }
    for (int i = 0; i < k->n_args; i++)
        slots[i] = (expr_value){.type = EXPR_INT, .u.i = out->values[i]};
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
    for (int i = 0; i < k->n_buffers; i++) {
        expr_value r;
        long long n = 0;
        if (expr_eval(k->buffers[i].elements.e, slots, &r) < 0 || value_to_ll(&r, &n) < 0 ||
            n < 1 || n > KSPEC_MAX_ELEMENTS)
            return kt_error_set(err, KT_ERR_BAD_PROBLEM,
                                "for this problem buffer %s would have an invalid number of "
                                "elements (%.200s must be an integer from 1 to %lld)",
                                k->buffers[i].name, k->buffers[i].elements.text,
                                (long long)KSPEC_MAX_ELEMENTS);
        out->elements[i] = n;
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

json_t *kernel_spec_problem_json(const kernel_spec *k, const kspec_problem *p)
{
    json_t *o = json_object();
    for (int i = 0; o && i < k->n_args; i++) {
        if (json_object_set_new(o, k->args[i].name, json_integer(p->values[i])) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

space *kernel_spec_space(const kernel_spec *k, kspec_kind kind, const kspec_problem *p,
                         const kspec_limits *lim, kt_error *err)
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
    for (int i = 0; i < k->n_args; i++) {
        if (json_object_set_new(consts, k->args[i].name, json_integer(p->values[i])) < 0) {
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

int kernel_spec_launch(const kernel_spec *k, const space *sp, config_id id, const kspec_problem *p,
                       long long block[3], long long grid[3], long long *shared_bytes,
                       kt_error *err)
{
    const kspec_variant *v = &k->variants[KSPEC_CUDA];
    expr_value slots[KSPEC_MAX_PARAMS + KSPEC_MAX_ARGS];
    int idx[KSPEC_MAX_PARAMS];
    int np = space_num_params(sp);

    if (!v->present || np != v->n_params || space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "configuration %llu is not one of the cuda space of kernel %s",
                            (unsigned long long)id, k->name);
    for (int i = 0; i < np; i++) {
        double d = space_param_value_number(sp, i, idx[i]);
        slots[i] = (expr_value){.type = EXPR_INT, .u.i = (int64_t)d};
    }
    for (int i = 0; i < k->n_args; i++)
        slots[np + i] = (expr_value){.type = EXPR_INT, .u.i = p->values[i]};
    const kspec_expr *all[7] = {&v->block[0], &v->block[1], &v->block[2],    &v->grid[0],
                                &v->grid[1],  &v->grid[2],  &v->shared_bytes};
    long long *dst[7] = {&block[0], &block[1], &block[2],   &grid[0],
                         &grid[1],  &grid[2],  shared_bytes};
    for (int i = 0; i < 7; i++) {
        expr_value r;
        long long n = 0;
        long long lo = i == 6 ? 0 : 1;
        if (!all[i]->e || expr_eval(all[i]->e, slots, &r) < 0 || value_to_ll(&r, &n) < 0 ||
            n < lo || n > (1LL << 31) - 1)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s '%.200s' does not give an integer from %lld to 2^31-1",
                                i < 3 ? "block" : (i < 6 ? "grid" : "shared_bytes"),
                                all[i]->text ? all[i]->text : "", lo);
        *dst[i] = n;
    }
    return 0;
}
