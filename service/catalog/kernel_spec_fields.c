/* catalog/kernel_spec_fields — the spec loader's field checks (kernel_spec_impl.h): the first error
 * recorded as "<file>: <field>: <what is wrong>", unknown fields refused, integers, identifiers and
 * expressions parsed with exactly the names they may see, source files read (bounded) and hashed.
 */
#include "core/file.h"
#include "core/hash.h"
#include "catalog/kernel_spec_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records the first error as "<file>: <message>"; returns -1. */
int kspec_bad(kspec_loader *L, const char *fmt, ...)
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

_Static_assert(KSPEC_MAX_NAME == 64, "ident_problem's message names the limit");

/* Why a JSON value is not an identifier (kspec_valid_ident), as the end of a message, or NULL. */
static const char *ident_problem(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!s)
        return "must be an identifier (a string)";
    if (n == 0)
        return "is empty; write an identifier";
    if (n > KSPEC_MAX_NAME)
        return "is longer than 64 characters"; /* KSPEC_MAX_NAME, asserted above */
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return "must start with a letter or '_'";
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return "may hold only letters, digits and '_'";
    }
    if (expr_is_keyword(s, n))
        return "is a Python keyword; expressions could not name it: choose another name";
    return NULL;
}

int kspec_valid_ident(const char *s)
{
    return ident_problem(s) == NULL;
}

int kspec_check_ident(kspec_loader *L, const json_t *v, const char *field)
{
    const char *s = json_string_value(v);
    const char *why = ident_problem(s);
    if (!why)
        return 0;
    if (!s)
        return kspec_bad(L, "%s: %s", field, why);
    return kspec_bad(L, "%s: \"%.64s\" %s", field, s, why);
}

/* names (NULL-terminated) as "a, b, c" in list (cut at cap). */
static void join_names(const char *const *names, char *list, size_t cap)
{
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; names[i] && used < cap; i++) {
        int w = snprintf(list + used, cap - used, "%s%s", i ? ", " : "", names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

int kspec_kind_of(kspec_loader *L, const json_t *obj, const char *where, const char *const *kinds)
{
    char list[512];
    const json_t *kind = kspec_need(L, obj, where, "kind");
    if (!kind)
        return -1;
    for (int i = 0; kinds[i]; i++) {
        if (json_is_string(kind) && strcmp(json_string_value(kind), kinds[i]) == 0)
            return i;
    }
    join_names(kinds, list, sizeof list);
    return kspec_bad(L, "%s.kind: must be one of %s", where, list);
}

/* Refuses fields of obj not in accepted (NULL-terminated); where: obj's path ("" at the top). */
int kspec_check_fields(kspec_loader *L, const json_t *obj, const char *where,
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
            join_names(accepted, list, sizeof list);
            return kspec_bad(L, "%s%s%.64s: unknown field; accepted: %s", where,
                             where[0] ? "." : "", key, list);
        }
    }
    return 0;
}

const json_t *kspec_need(kspec_loader *L, const json_t *obj, const char *where, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        kspec_bad(L, "%s%s%s: missing", where, where[0] ? "." : "", key);
    return v;
}

const json_t *kspec_entry(kspec_loader *L, const json_t *arr, size_t i, const char *section,
                          const char *shape, const char *const *fields, char *where, size_t cap)
{
    const json_t *e = json_array_get(arr, i);
    snprintf(where, cap, "%s[%zu]", section, i);
    if (!json_is_object(e)) {
        kspec_bad(L, "%s: must be an object%s", where, shape);
        return NULL;
    }
    return kspec_check_fields(L, e, where, fields) < 0 ? NULL : e;
}

int kspec_entry_name(kspec_loader *L, const json_t *arr, size_t i, const json_t *name,
                     const char *where)
{
    char field[256];
    snprintf(field, sizeof field, "%s.name", where);
    if (kspec_check_ident(L, name, field) < 0)
        return -1;
    /* the entries before i passed this check: each has an identifier for a name */
    for (size_t j = 0; j < i; j++) {
        const char *before = json_string_value(json_object_get(json_array_get(arr, j), "name"));
        if (before && strcmp(before, json_string_value(name)) == 0)
            return kspec_bad(L, "%s: '%s' is listed twice", field, before);
    }
    return 0;
}

int kspec_get_int(kspec_loader *L, const json_t *v, const char *field, long long *out)
{
    if (!json_is_integer(v))
        return kspec_bad(L, "%s: must be an integer", field);
    *out = (long long)json_integer_value(v);
    return 0;
}

/* Parses an expression field (a string, or an integer taken as its text). */
int kspec_parse_expr(kspec_loader *L, kspec_expr *out, const json_t *v, const char *field,
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
        return kspec_bad(L, "%s: must be an expression (a string)", field);
    }
    if (strlen(text) > KSPEC_MAX_EXPR_LEN)
        return kspec_bad(L, "%s: is longer than %d characters", field, KSPEC_MAX_EXPR_LEN);
    if (!(out->text = strdup(text)))
        return kspec_bad(L, "out of memory");
    kt_error_clear(&e);
    out->e = expr_parse(text, names, KSPEC_MAX_EXPR_LEN, &e);
    if (!out->e)
        return kspec_bad(L, "%s: %s%s%.300s (in '%.200s')", field, e.message, e.hint[0] ? ": " : "",
                         e.hint, text);
    return 0;
}

void kspec_expr_release(kspec_expr *x)
{
    free(x->text);
    expr_free(x->e);
    x->text = NULL;
    x->e = NULL;
}

/* A plain file name inside dir, read (at most cap bytes): its absolute path in *abs and its bytes
 * hashed into *h, its size in *len. The data files of a kernel folder are read here (sources come
 * from the kernel's files: kspec_source_file). */
static int kernel_file(kspec_loader *L, const char *dir, const json_t *v, const char *field,
                       size_t cap, char **abs, uint64_t *h, size_t *size)
{
    char path[PATH_MAX], resolved[PATH_MAX];
    char *bytes = NULL;
    size_t len = 0;
    const char *name = json_string_value(v);

    if (!name)
        return kspec_bad(L, "%s: must be a file name (a string)", field);
    if (!name[0] || strlen(name) > 255 || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return kspec_bad(L, "%s: '%.255s' must be a plain file name in the kernel's folder", field,
                         name);
    if (!dir)
        return kspec_bad(L,
                         "%s: '%.80s' is not among the kernel's \"data\": a kernel registered over "
                         "HTTP uploads its data files there",
                         field, name);
    int w = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof path)
        return kspec_bad(L, "%s: path too long", field);
    if (!realpath(path, resolved))
        return kspec_bad(L, "%s: '%.255s': %s", field, name, strerror(errno));
    kt_error ferr;
    if (!(bytes = kt_file_read_all(resolved, cap, &len, &ferr)))
        return kspec_bad(L, "%s: '%.255s': %s", field, name, ferr.message);
    *h = kt_fnv1a_field(*h, bytes, len);
    free(bytes);
    if (size)
        *size = len;
    if (!(*abs = strdup(resolved)))
        return kspec_bad(L, "out of memory");
    return 0;
}

int kspec_source_file(kspec_loader *L, const kernel_spec *k, const json_t *v, const char *field,
                      char **name)
{
    const char *s = json_string_value(v);

    if (!s)
        return kspec_bad(L, "%s: must be a file name (a string)", field);
    if (!kernel_files_valid_name(s))
        return kspec_bad(L,
                         "%s: '%.255s' must be a plain file name of the kernel's files (letters, "
                         "digits, '.', '_', '-')",
                         field, s);
    if (!kernel_files_get(k->files, s, NULL))
        return kspec_bad(L, "%s: '%.255s': no such file%s", field, s,
                         k->dir ? " in the kernel's folder" : " in \"files\": add it");
    if (!(*name = strdup(s)))
        return kspec_bad(L, "out of memory");
    return 0;
}

/* A kernel given as data: the uploaded data file v names (POST /v1/kernels "data"). */
static int uploaded_file(kspec_loader *L, const kernel_spec *k, const json_t *v, const char *field,
                         kt_dtype dtype, kspec_datafile *out)
{
    const char *name = json_string_value(v);
    int i = kernel_data_find(k->data, name);
    if (!name)
        return kspec_bad(L, "%s: must be the name of a data file (a string)", field);
    if (i < 0)
        return kspec_bad(
            L,
            "%s: '%.80s' is not among the kernel's \"data\": upload it there ({\"%.80s\": "
            "{\"dtype\", \"encoding\": \"base64\", \"data\"}})",
            field, name, name);
    if (kernel_data_dtype(k->data, i) != dtype)
        return kspec_bad(L, "%s: data file '%s' holds %s values, the buffer is %s", field, name,
                         kt_dtype_name(kernel_data_dtype(k->data, i)), kt_dtype_name(dtype));
    size_t len = 0;
    kernel_data_bytes(k->data, i, &len);
    int w = snprintf(L->data_sums + L->data_sums_len, sizeof L->data_sums - L->data_sums_len,
                     "%s %s %s\n", name, kt_dtype_name(dtype), kernel_data_sha256(k->data, i));
    if (w < 0 || (size_t)w >= sizeof L->data_sums - L->data_sums_len)
        return kspec_bad(L, "%s: too many data files named", field);
    L->data_sums_len += (size_t)w;
    if (!(out->path = strdup(name)))
        return kspec_bad(L, "out of memory");
    snprintf(out->sha256, sizeof out->sha256, "%s", kernel_data_sha256(k->data, i));
    out->bytes = (long long)len;
    return 0;
}

int kspec_data_file(kspec_loader *L, const kernel_spec *k, const json_t *v, const char *field,
                    kt_dtype dtype, kspec_datafile *out)
{
    size_t len = 0;
    if (out->path)
        return kspec_bad(L, "%s: a second data file for the same buffer", field);
    if (!k->dir && k->data)
        return uploaded_file(L, k, v, field, dtype, out);
    if (kernel_file(L, k->dir, v, field, (size_t)KSPEC_MAX_DATA_BYTES, &out->path, &L->data_hash,
                    &len) < 0)
        return -1;
    out->bytes = (long long)len;
    return 0;
}
