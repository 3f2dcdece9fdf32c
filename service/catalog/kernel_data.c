/* catalog/kernel_data — a submitted kernel's data files (kernel_data.h). */
#include "catalog/kernel_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/sha256.h"
#include "catalog/kernel_files.h"

typedef struct kdatum {
    char *name;
    kt_dtype dtype;
    unsigned char *bytes;
    size_t len;
    char sha[KDATA_SHA_LEN + 1];
} kdatum;

struct kernel_data {
    kdatum files[KDATA_MAX_FILES];
    int n;
    size_t total;
};

void kernel_data_free(kernel_data *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++) {
        free(d->files[i].name);
        free(d->files[i].bytes);
    }
    free(d);
}

/* One entry {"dtype", "encoding", "data"} of the set, added as d->files[d->n]. */
static int add_entry(kernel_data *d, const char *name, const json_t *v, const char *where,
                     kt_error *err)
{
    const char *key;
    const json_t *f;
    if (!kernel_files_valid_name(name))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "%s.%.80s: not a plain file name: 1 to %d of letters, digits, '.', "
                            "'_', '-', not starting with '.'",
                            where, name, KFILES_MAX_NAME);
    if (!json_is_object(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "%s.%s: must be an object {\"dtype\": \"f32\", \"encoding\": "
                            "\"base64\", \"data\": \"<base64 of the raw little-endian values>\"}",
                            where, name);
    json_object_foreach((json_t *)v, key, f)
    {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "encoding") != 0 && strcmp(key, "data") != 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s.%s.%.64s: unknown field; accepted: dtype, encoding, data",
                                where, name, key);
    }
    const json_t *dt = json_object_get(v, "dtype"), *enc = json_object_get(v, "encoding"),
                 *data = json_object_get(v, "data");
    int t = json_is_string(dt) ? kt_dtype_parse(json_string_value(dt)) : -1;
    if (t < 0)
        return kt_error_set(err, dt ? KT_ERR_BAD_REQUEST : KT_ERR_MISSING_FIELD,
                            "%s.%s.dtype: %s; one of %s (the buffer's dtype)", where, name,
                            dt ? "unknown" : "missing", kt_dtype_names());
    if (enc && !(json_is_string(enc) && strcmp(json_string_value(enc), "base64") == 0))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "%s.%s.encoding: must be \"base64\" (the one encoding accepted)", where,
                            name);
    if (!json_is_string(data))
        return kt_error_set(err, data ? KT_ERR_WRONG_TYPE : KT_ERR_MISSING_FIELD,
                            "%s.%s.data: %s: the base64 of the raw little-endian values", where,
                            name, data ? "must be a string" : "missing");
    size_t n = json_string_length(data), bad = 0;
    if (kt_base64_decoded_max(n) > (size_t)KDATA_MAX_BYTES - d->total + 2)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE,
                            "%s.%s.data: about %zu bytes take the kernel's data past %d bytes "
                            "(512 KiB) in all",
                            where, name, d->total + kt_base64_decoded_max(n), KDATA_MAX_BYTES);
    kdatum *e = &d->files[d->n];
    if (!(e->bytes = malloc(kt_base64_decoded_max(n) + 1)) || !(e->name = strdup(name))) {
        free(e->bytes);
        e->bytes = NULL;
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    }
    d->n++; /* from here kernel_data_free releases it */
    long long got = kt_base64_decode(json_string_value(data), n, e->bytes, &bad);
    if (got < 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "%s.%s.data: not base64 at character %zu (the standard alphabet, "
                            "'=' padding, no line breaks)",
                            where, name, bad);
    e->len = (size_t)got;
    e->dtype = (kt_dtype)t;
    if (d->total + e->len > (size_t)KDATA_MAX_BYTES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE,
                            "%s.%s.data: %zu bytes take the kernel's data past %d bytes (512 KiB) "
                            "in all",
                            where, name, d->total + e->len, KDATA_MAX_BYTES);
    d->total += e->len;
    size_t es = kt_dtype_size(e->dtype);
    if (e->len == 0 || e->len % es != 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "%s.%s.data: %zu bytes are not a whole number of %s elements (%zu "
                            "bytes each), at least one",
                            where, name, e->len, kt_dtype_name(e->dtype), es);
    unsigned char digest[KT_SHA256_SIZE];
    kt_sha256(e->bytes, e->len, digest);
    for (int i = 0; i < KT_SHA256_SIZE; i++)
        snprintf(e->sha + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

kernel_data *kernel_data_from_json(const json_t *obj, const char *where, kt_error *err)
{
    kernel_data *d = NULL;
    const char *name;
    const json_t *v;
    int ok = 0;
    if (!json_is_object(obj)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE,
                     "%s: must be an object of file name -> {\"dtype\", \"encoding\", \"data\"}",
                     where);
        goto out;
    }
    if (json_object_size(obj) > KDATA_MAX_FILES) {
        kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "%s: %zu files; a kernel has at most %d", where,
                     json_object_size(obj), KDATA_MAX_FILES);
        goto out;
    }
    if (!(d = calloc(1, sizeof *d))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    json_object_foreach((json_t *)obj, name, v)
    {
        if (add_entry(d, name, v, where, err) < 0)
            goto out;
    }
    ok = 1;
out:
    if (!ok) {
        kernel_data_free(d);
        d = NULL;
    }
    return d;
}

int kernel_data_count(const kernel_data *d)
{
    return d ? d->n : 0;
}

int kernel_data_find(const kernel_data *d, const char *name)
{
    for (int i = 0; d && name && i < d->n; i++)
        if (strcmp(d->files[i].name, name) == 0)
            return i;
    return -1;
}

const char *kernel_data_name(const kernel_data *d, int i)
{
    return d->files[i].name;
}

kt_dtype kernel_data_dtype(const kernel_data *d, int i)
{
    return d->files[i].dtype;
}

const unsigned char *kernel_data_bytes(const kernel_data *d, int i, size_t *len)
{
    if (len)
        *len = d->files[i].len;
    return d->files[i].bytes;
}

const char *kernel_data_sha256(const kernel_data *d, int i)
{
    return d->files[i].sha;
}

json_t *kernel_data_json(const kernel_data *d)
{
    json_t *o = json_object();
    for (int i = 0; o && d && i < d->n; i++) {
        size_t n = 0;
        char *text = kt_base64_encode(d->files[i].bytes, d->files[i].len, &n);
        json_t *e = text ? json_pack("{s:s, s:s, s:s%}", "dtype", kt_dtype_name(d->files[i].dtype),
                                     "encoding", "base64", "data", text, n)
                         : NULL;
        free(text);
        if (!e || json_object_set_new(o, d->files[i].name, e) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}
