/* The wire side of ktune-runner: request lines in, validated requests out, replies written as one
 * JSON line each (PROTOCOL.md). Every field is checked for presence, type and range, and every
 * error message names the field. */
#include "core/early_stop.h"
#include "core/hash.h"
#include "runner/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every field a measure request may carry; the CUDA-only ones are accepted and ignored on the CPU.
 */
static const char *const measure_fields[] = {
    "id",           "op",          "kernel",        "source",      "entry",
    "defines",      "problem",     "problem_names", "buffers",     "reference",
    "tolerance",    "flops",       "block",         "grid",        "shared_bytes",
    "min_repeats",  "max_repeats", "min_seconds",   "max_seconds", "compile_timeout_s",
    "call_limit_s", "scalars",     "verify",        "call",        "openmp",
    "threads",      "files",       "data",          "early_stop",  "core_shared",
};

int runner_read_line(FILE *in, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;
    int any = 0, too_long = 0, c;
    while ((c = getc(in)) != EOF) {
        any = 1;
        if (c == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = (char)c;
        else
            too_long = 1;
    }
    buf[n] = '\0';
    *len = n;
    if (!any)
        return 0;
    return too_long ? -1 : 1;
}

json_t *runner_parse_line(const char *line, size_t len, kt_error *err)
{
    json_error_t jerr;
    json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req) {
        kt_error_set(err, KT_ERR_BAD_JSON, "request is not valid JSON: %s at column %d", jerr.text,
                     jerr.column);
        return NULL;
    }
    if (!json_is_object(req)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "request must be a JSON object");
        json_decref(req);
        return NULL;
    }
    return req;
}

json_t *runner_request_id(const json_t *req)
{
    json_t *id = json_object_get(req, "id");
    return json_is_integer(id) ? json_incref(id) : json_null();
}

static int field_allowed(const char *key, const char *const *allowed, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, allowed[i]) == 0)
            return 1;
    return 0;
}

static int check_fields(const json_t *obj, const char *where, const char *const *allowed, size_t n,
                        kt_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        (void)v;
        if (!field_allowed(key, allowed, n))
            return kt_error_set(err, KT_ERR_UNKNOWN_FIELD, "%s has an unknown field '%.100s'",
                                where, key);
    }
    return 0;
}

int runner_parse_header(const json_t *req, const char **op, kt_error *err)
{
    static const char *const probe_fields[] = {"id", "op"};
    json_t *id = json_object_get(req, "id");
    json_t *jop = json_object_get(req, "op");
    if (!id)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "request lacks field 'id'");
    if (!json_is_integer(id))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'id' must be an integer");
    if (!jop)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "request lacks field 'op'");
    if (!json_is_string(jop))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'op' must be a string");
    *op = json_string_value(jop);
    if (strcmp(*op, "probe") == 0)
        return check_fields(req, "probe request", probe_fields,
                            sizeof probe_fields / sizeof *probe_fields, err);
    if (strcmp(*op, "measure") == 0 || strcmp(*op, "compile") == 0 ||
        strcmp(*op, "compile_check") == 0)
        return 0; /* fields checked by the op's parser */
    return kt_error_set(err, KT_ERR_BAD_REQUEST,
                        "unknown op '%.64s' (accepted: probe, measure, compile, compile_check)",
                        *op);
}

int runner_is_identifier(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= RUNNER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        int digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return 0;
    }
    return 1;
}

/* Kernel names seed the inputs and appear in logs: letters, digits, '_', '-', '.'. */
static int is_kernel_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= RUNNER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static int get_string(const json_t *obj, const char *where, const char *key, char *out, size_t cap,
                      kt_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "%s lacks field '%s'", where, key);
    if (!json_is_string(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s' must be a string", key);
    size_t n = json_string_length(v);
    if (n == 0 || n >= cap || memchr(json_string_value(v), '\0', n))
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field '%s' must be a non-empty string of at most %zu bytes", key,
                            cap - 1);
    memcpy(out, json_string_value(v), n + 1);
    return 0;
}

static int get_path(const json_t *obj, const char *where, const char *key, char *out, kt_error *err)
{
    if (get_string(obj, where, key, out, RUNNER_PATH_MAX, err) < 0)
        return -1;
    if (out[0] != '/')
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field '%s' must be an absolute path (got '%.200s')", key, out);
    return 0;
}

/* Optional integer in [lo, hi]; def when absent. */
static int get_int(const json_t *obj, const char *key, long long lo, long long hi, long long def,
                   long long *out, kt_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s' must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field '%s' must be in [%lld, %lld] (got %lld)", key, lo, hi, x);
    *out = x;
    return 0;
}

/* Optional (or required when def is NAN) number in [lo, hi]. */
static int get_real(const json_t *obj, const char *where, const char *key, double lo, double hi,
                    double def, double *out, kt_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (isnan(def))
            return kt_error_set(err, KT_ERR_MISSING_FIELD, "%s lacks field '%s'", where, key);
        *out = def;
        return 0;
    }
    if (!json_is_number(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s' must be a number", key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field '%s' must be in [%g, %g] (got %g)",
                            key, lo, hi, x);
    *out = x;
    return 0;
}

static int cmp_define(const void *a, const void *b)
{
    return strcmp(((const runner_define *)a)->name, ((const runner_define *)b)->name);
}

static int parse_defines(const json_t *req, runner_measure_req *q, kt_error *err)
{
    json_t *d = json_object_get(req, "defines");
    if (!d)
        return 0;
    if (!json_is_object(d))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'defines' must be an object");
    if (json_object_size(d) > RUNNER_MAX_DEFINES)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'defines' has more than %d entries",
                            RUNNER_MAX_DEFINES);
    const char *key;
    json_t *v;
    json_object_foreach(d, key, v)
    {
        if (!runner_is_identifier(key))
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "define '%.100s' is not a C identifier of at most %d characters",
                                key, RUNNER_NAME_MAX - 1);
        if (!json_is_integer(v))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "define '%s' must be an integer", key);
        runner_define *def = &q->defines[q->n_defines++];
        memcpy(def->name, key, strlen(key) + 1);
        def->value = json_integer_value(v);
    }
    qsort(q->defines, (size_t)q->n_defines, sizeof *q->defines, cmp_define);
    return 0;
}

static int parse_problem(const json_t *req, runner_measure_req *q, kt_error *err)
{
    json_t *p = json_object_get(req, "problem");
    if (!p)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "measure request lacks field 'problem'");
    if (!json_is_array(p))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'problem' must be an array of numbers");
    if (json_array_size(p) > RUNNER_MAX_PROBLEM)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'problem' has more than %d entries",
                            RUNNER_MAX_PROBLEM);
    size_t i;
    json_t *v;
    json_array_foreach(p, i, v)
    {
        if (json_is_real(v) && isfinite(json_real_value(v))) {
            /* a float argument: the bits of the double in its ABI word */
            double d = json_real_value(v);
            memcpy(&q->problem[q->n_problem], &d, sizeof d);
            q->problem_float[q->n_problem++] = 1;
            continue;
        }
        if (!json_is_integer(v))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "problem[%zu] must be an integer (or a real: a float argument)", i);
        q->problem[q->n_problem++] = json_integer_value(v);
    }
    json_t *names = json_object_get(req, "problem_names");
    if (names) {
        if (!json_is_array(names) || json_array_size(names) != json_array_size(p))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "field 'problem_names' must be an array of %zu strings (one per "
                                "problem argument)",
                                json_array_size(p));
        json_array_foreach(names, i, v)
        {
            if (!json_is_string(v) || !runner_is_identifier(json_string_value(v)))
                return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                    "problem_names[%zu] must be an identifier", i);
        }
    }
    return 0;
}

/* A buffer's dtype, init and tolerance (PROTOCOL.md). */
static int parse_buffer_data(const json_t *b, const char *where, runner_buffer *out, kt_error *err)
{
    static const char *const init_fields[] = {"kind", "min",   "max",  "mean",
                                              "std",  "value", "file", "sha256"};
    static const char *const kinds[] = {"uniform", "normal", "constant", "iota",
                                        "zeros",   "file",   "data"};
    static const char *const tol_fields[] = {"rtol", "atol"};
    char s[16], w[96];
    out->dtype = KT_F32;
    out->rtol = out->atol = -1;
    if (json_object_get(b, "dtype")) {
        if (get_string(b, where, "dtype", s, sizeof s, err) < 0)
            return -1;
        int t = kt_dtype_parse(s);
        if (t < 0)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s dtype must be one of %s (got \"%s\")",
                                where, kt_dtype_names(), s);
        out->dtype = (kt_dtype)t;
    }
    json_t *t = json_object_get(b, "tolerance");
    if (t) {
        snprintf(w, sizeof w, "%s.tolerance", where);
        if (!json_is_object(t) || check_fields(t, w, tol_fields, 2, err) < 0)
            return json_is_object(t)
                       ? -1
                       : kt_error_set(err, KT_ERR_WRONG_TYPE, "%s must be an object", w);
        if (get_real(t, w, "rtol", 0, 1e6, NAN, &out->rtol, err) < 0 ||
            get_real(t, w, "atol", 0, 1e30, NAN, &out->atol, err) < 0)
            return -1;
    }
    json_t *in = json_object_get(b, "init");
    if (!in)
        return 0;
    snprintf(w, sizeof w, "%s.init", where);
    if (!json_is_object(in))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s must be an object", w);
    if (check_fields(in, w, init_fields, 8, err) < 0 ||
        get_string(in, w, "kind", s, sizeof s, err) < 0)
        return -1;
    int k = -1;
    for (int j = 0; j < 7 && k < 0; j++)
        k = strcmp(s, kinds[j]) == 0 ? j : -1;
    if (k < 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "%s kind must be uniform, normal, constant, iota, zeros, file or data",
                            w);
    out->init = (runner_init_kind)(k + RUNNER_INIT_UNIFORM);
    switch (out->init) {
    case RUNNER_INIT_UNIFORM:
        if (get_real(in, w, "min", -1e300, 1e300, NAN, &out->init_a, err) < 0 ||
            get_real(in, w, "max", out->init_a, 1e300, NAN, &out->init_b, err) < 0)
            return -1;
        break;
    case RUNNER_INIT_NORMAL:
        if (get_real(in, w, "mean", -1e300, 1e300, NAN, &out->init_a, err) < 0 ||
            get_real(in, w, "std", 0, 1e300, NAN, &out->init_b, err) < 0)
            return -1;
        break;
    case RUNNER_INIT_CONSTANT:
        if (get_real(in, w, "value", -1e300, 1e300, NAN, &out->init_a, err) < 0)
            return -1;
        break;
    case RUNNER_INIT_FILE:
        if (get_path(in, w, "file", out->init_file, err) < 0)
            return -1;
        break;
    case RUNNER_INIT_DATA:
        if (get_string(in, w, "sha256", out->init_file, RUNNER_DATA_SHA_LEN + 1, err) < 0)
            return -1;
        if (!runner_data_is_sha(out->init_file))
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "%s sha256 must be 64 lowercase hex digits", w);
        break;
    default:
        break;
    }
    return 0;
}

static int parse_buffer(const json_t *b, size_t i, runner_buffer *out, kt_error *err)
{
    static const char *const fields[] = {"name", "elements", "role", "dtype", "init", "tolerance"};
    char where[48];
    snprintf(where, sizeof where, "buffers[%zu]", i);
    if (!json_is_object(b))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s must be an object", where);
    if (check_fields(b, where, fields, 6, err) < 0)
        return -1;
    if (get_string(b, where, "name", out->name, sizeof out->name, err) < 0)
        return -1;
    if (!runner_is_identifier(out->name))
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s name '%s' is not an identifier", where,
                            out->name);
    json_t *e = json_object_get(b, "elements");
    if (!e)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "%s lacks field 'elements'", where);
    if (!json_is_integer(e))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s elements must be an integer", where);
    out->elements = json_integer_value(e);
    if (out->elements < 1 || out->elements > RUNNER_MAX_ELEMENTS)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s elements must be in [1, %lld] (got %lld)",
                            where, RUNNER_MAX_ELEMENTS, out->elements);
    char role[16];
    if (get_string(b, where, "role", role, sizeof role, err) < 0)
        return -1;
    if (strcmp(role, "input") == 0)
        out->output = 0;
    else if (strcmp(role, "output") == 0)
        out->output = 1;
    else
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "%s role must be \"input\" or \"output\" (got \"%s\")", where, role);
    return parse_buffer_data(b, where, out, err);
}

static int parse_buffers(const json_t *req, runner_measure_req *q, kt_error *err)
{
    json_t *a = json_object_get(req, "buffers");
    if (!a)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "measure request lacks field 'buffers'");
    if (!json_is_array(a) || json_array_size(a) == 0)
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'buffers' must be a non-empty array");
    if (json_array_size(a) > RUNNER_MAX_BUFFERS)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'buffers' has more than %d entries",
                            RUNNER_MAX_BUFFERS);
    size_t i;
    json_t *b;
    int outputs = 0;
    json_array_foreach(a, i, b)
    {
        if (parse_buffer(b, i, &q->buffers[i], err) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->buffers[j].name, q->buffers[i].name) == 0)
                return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "buffer name '%s' appears twice",
                                    q->buffers[i].name);
        outputs += q->buffers[i].output;
        q->n_buffers++;
    }
    if (outputs == 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field 'buffers' has no buffer with role \"output\"");
    return 0;
}

static int parse_reference(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"kind", "source"};
    json_t *r = json_object_get(req, "reference");
    if (!r && q->verify != RUNNER_VERIFY_REFERENCE)
        return 0;
    if (!r)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "measure request lacks field 'reference'");
    q->has_reference = 1;
    if (!json_is_object(r))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'reference' must be an object");
    if (check_fields(r, "reference", fields, 2, err) < 0)
        return -1;
    char kind[32];
    if (get_string(r, "reference", "kind", kind, sizeof kind, err) < 0)
        return -1;
    if (strcmp(kind, "c") == 0) {
        q->ref_kind = RUNNER_REF_C;
        return get_path(r, "reference", "source", q->ref_source, err);
    }
    if (strcmp(kind, "openblas_sgemm") != 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "reference kind must be \"c\" or \"openblas_sgemm\" (got \"%s\")",
                            kind);
    if (json_object_get(r, "source"))
        return kt_error_set(err, KT_ERR_UNKNOWN_FIELD,
                            "reference kind \"openblas_sgemm\" takes no 'source'");
    q->ref_kind = RUNNER_REF_OPENBLAS_SGEMM;
    return 0;
}

static int buffer_index(const runner_measure_req *q, const char *name)
{
    for (int i = 0; i < q->n_buffers; i++)
        if (strcmp(q->buffers[i].name, name) == 0)
            return i;
    return -1;
}

/* "verify": {"kind": "reference"} (also when absent), {"kind": "default", "defines": {...}},
 * {"kind": "answer", "buffers": {"<output>": "/abs/file"}}, {"kind": "none"}. */
static int parse_verify(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"kind", "defines", "buffers"};
    static const char *const kinds[] = {"reference", "default", "answer", "none"};
    json_t *v = json_object_get(req, "verify");
    char kind[16];
    q->verify = RUNNER_VERIFY_REFERENCE;
    if (!v)
        return 0;
    if (!json_is_object(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'verify' must be an object");
    if (check_fields(v, "verify", fields, 3, err) < 0 ||
        get_string(v, "verify", "kind", kind, sizeof kind, err) < 0)
        return -1;
    int k = -1;
    for (int i = 0; i < 4 && k < 0; i++)
        k = strcmp(kind, kinds[i]) == 0 ? i : -1;
    if (k < 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "verify kind must be reference, default, answer or none (got \"%s\")",
                            kind);
    q->verify = (runner_verify_kind)k;
    if (q->verify == RUNNER_VERIFY_DEFAULT) {
        runner_measure_req tmp; /* parse_defines fills a request's defines */
        json_t *d = json_object_get(v, "defines");
        if (!d)
            return kt_error_set(err, KT_ERR_MISSING_FIELD, "verify \"default\" lacks 'defines'");
        json_t *wrap = json_pack("{s:O}", "defines", d);
        memset(&tmp, 0, sizeof tmp);
        int rc = wrap ? parse_defines(wrap, &tmp, err)
                      : kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        json_decref(wrap);
        if (rc < 0) {
            kt_error_prefix(err, "verify");
            return -1;
        }
        q->n_verify_defines = tmp.n_defines;
        memcpy(q->verify_defines, tmp.defines, sizeof tmp.defines);
    }
    if (q->verify == RUNNER_VERIFY_ANSWER) {
        json_t *bufs = json_object_get(v, "buffers"), *path;
        const char *name;
        if (!json_is_object(bufs))
            return kt_error_set(err, KT_ERR_WRONG_TYPE,
                                "verify \"answer\" needs 'buffers': {\"<output>\": \"/abs/file\"}");
        json_object_foreach(bufs, name, path)
        {
            int b = buffer_index(q, name);
            if (b < 0 || !q->buffers[b].output)
                return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                    "verify.buffers.%.64s: not an output buffer", name);
            if (json_is_object(path)) { /* {"sha256"}: an uploaded data file (data.c) */
                q->buffers[b].answer_data = 1;
                if (get_string(path, "verify.buffers", "sha256", q->buffers[b].answer,
                               RUNNER_DATA_SHA_LEN + 1, err) < 0)
                    return -1;
                if (!runner_data_is_sha(q->buffers[b].answer))
                    return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                        "verify.buffers.%.64s sha256 must be 64 lowercase hex "
                                        "digits",
                                        name);
                continue;
            }
            json_t *wrap = json_pack("{s:O}", "file", path);
            int rc = wrap ? get_path(wrap, "verify.buffers", "file", q->buffers[b].answer, err)
                          : kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
            json_decref(wrap);
            if (rc < 0)
                return -1;
        }
        for (int i = 0; i < q->n_buffers; i++)
            if (q->buffers[i].output && !q->buffers[i].answer[0])
                return kt_error_set(err, KT_ERR_MISSING_FIELD,
                                    "verify.buffers lacks output buffer '%s'", q->buffers[i].name);
    }
    return 0;
}

/* "scalars": [{"name", "type": f32|f64|i32|i64, "value": number}], appended to the ABI words. */
static int parse_scalars(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"name", "type", "value"};
    json_t *a = json_object_get(req, "scalars"), *s;
    size_t i;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > RUNNER_MAX_SCALARS)
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'scalars' must be an array of at most %d objects",
                            RUNNER_MAX_SCALARS);
    json_array_foreach(a, i, s)
    {
        char where[32], type[8];
        runner_scalar *sc = &q->scalars[i];
        snprintf(where, sizeof where, "scalars[%zu]", i);
        if (!json_is_object(s))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "%s must be an object", where);
        if (check_fields(s, where, fields, 3, err) < 0 ||
            get_string(s, where, "name", sc->name, sizeof sc->name, err) < 0 ||
            get_string(s, where, "type", type, sizeof type, err) < 0 ||
            get_real(s, where, "value", -1e308, 1e308, NAN, &sc->value, err) < 0)
            return -1;
        int t = kt_dtype_parse(type);
        if (t != KT_F32 && t != KT_F64 && t != KT_I32 && t != KT_I64)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s type must be f32, f64, i32 or i64",
                                where);
        sc->type = (kt_dtype)t;
        long long *word = &q->problem[q->n_problem + (int)i];
        if (t == KT_I32 || t == KT_I64) {
            double lo, hi;
            kt_dtype_int_range(sc->type, &lo, &hi);
            if (sc->value != floor(sc->value) || sc->value < lo || sc->value > hi)
                return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "%s value must be an %s", where,
                                    type);
            *word = (long long)sc->value;
        } else {
            memcpy(word, &sc->value, sizeof sc->value);
        }
        q->n_scalars++;
    }
    return 0;
}

/* "call": {"entry": "<C function>", "arguments": [{"buffer": i} | {"scalar": i} |
 * {"problem": i}, ...]}; "openmp": bool; "threads": n. */
static int parse_call(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"entry", "arguments"};
    static const char *const kinds[] = {"buffer", "scalar", "problem"};
    json_t *c = json_object_get(req, "call"), *omp = json_object_get(req, "openmp");
    long long threads = 0;
    q->n_call_args = -1;
    if (omp && !json_is_boolean(omp))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'openmp' must be true or false");
    q->openmp = json_is_true(omp);
    if (get_int(req, "threads", 0, RUNNER_MAX_THREADS, 0, &threads, err) < 0)
        return -1;
    q->threads = (int)threads;
    if (q->threads > 0 && !q->openmp)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'threads' needs \"openmp\": true");
    if (!c)
        return 0;
    if (!json_is_object(c) || check_fields(c, "call", fields, 2, err) < 0)
        return json_is_object(c)
                   ? -1
                   : kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'call' must be an object");
    if (get_string(c, "call", "entry", q->call_entry, sizeof q->call_entry, err) < 0)
        return -1;
    if (!runner_is_identifier(q->call_entry) || strcmp(q->call_entry, "ktune_kernel") == 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "call.entry must be a C identifier other than ktune_kernel");
    json_t *args = json_object_get(c, "arguments"), *a;
    size_t i;
    if (!json_is_array(args) || json_array_size(args) > RUNNER_MAX_CALL_ARGS)
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "call.arguments must be an array of at most %d objects",
                            RUNNER_MAX_CALL_ARGS);
    q->n_call_args = 0;
    json_array_foreach(args, i, a)
    {
        const char *key = NULL;
        json_t *idx = NULL;
        if (json_is_object(a) && json_object_size(a) == 1) {
            void *it = json_object_iter(a);
            key = json_object_iter_key(it);
            idx = json_object_iter_value(it);
        }
        int kind = -1;
        for (int k = 0; key && k < 3 && kind < 0; k++)
            kind = strcmp(key, kinds[k]) == 0 ? k : -1;
        long long n = json_is_integer(idx) ? json_integer_value(idx) : -1;
        long long count = kind == 0 ? q->n_buffers : kind == 1 ? q->n_scalars : q->n_problem;
        if (kind < 0 || n < 0 || n >= count)
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "call.arguments[%zu] must be {\"buffer\"|\"scalar\"|\"problem\": "
                                "index} with an index that exists",
                                i);
        q->call_args[q->n_call_args++] = (runner_call_arg){(runner_arg_kind)kind, (int)n};
    }
    return 0;
}

/* Everything that shapes the problem state (buffers, inits, the ABI words, what is compared),
 * hashed: a request with another value gets another state. */
static int setup_key(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const keys[] = {"problem", "buffers", "scalars", "reference",
                                       "verify",  "call",    "openmp"};
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(req, keys[i]);
        if (v && json_object_set(o, keys[i], v) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text)
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    q->setup_key = kt_fnv1a_field(KT_FNV1A_OFFSET, text, strlen(text));
    if (q->verify == RUNNER_VERIFY_DEFAULT) /* the default configuration is built from source */
        q->setup_key = kt_fnv1a_field(q->setup_key, q->source, strlen(q->source));
    free(text);
    return 0;
}

static int parse_tolerance(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"rtol", "atol"};
    json_t *t = json_object_get(req, "tolerance");
    if (!t)
        return kt_error_set(err, KT_ERR_MISSING_FIELD, "measure request lacks field 'tolerance'");
    if (!json_is_object(t))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'tolerance' must be an object");
    if (check_fields(t, "tolerance", fields, 2, err) < 0)
        return -1;
    if (get_real(t, "tolerance", "rtol", 0, 1e6, NAN, &q->rtol, err) < 0)
        return -1;
    return get_real(t, "tolerance", "atol", 0, 1e30, NAN, &q->atol, err);
}

static int parse_limits(const json_t *req, runner_measure_req *q, kt_error *err)
{
    /* a default never conflicts with the other bound given explicitly */
    long long minr = 0, maxr = 0;
    if (get_int(req, "max_repeats", 1, RUNNER_REPEATS_CAP, 100, &maxr, err) < 0 ||
        get_int(req, "min_repeats", 1, RUNNER_REPEATS_CAP, maxr < 5 ? maxr : 5, &minr, err) < 0)
        return -1;
    if (minr > maxr)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "min_repeats (%lld) must not exceed max_repeats (%lld)", minr, maxr);
    q->min_repeats = (int)minr;
    q->max_repeats = (int)maxr;
    if (get_real(req, "", "max_seconds", 0, RUNNER_SECONDS_CAP, 3.0, &q->max_seconds, err) < 0 ||
        get_real(req, "", "min_seconds", 0, RUNNER_SECONDS_CAP,
                 q->max_seconds < 0.1 ? q->max_seconds : 0.1, &q->min_seconds, err) < 0)
        return -1;
    if (q->min_seconds > q->max_seconds)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "min_seconds (%g) must not exceed max_seconds (%g)", q->min_seconds,
                            q->max_seconds);
    if (get_real(req, "", "compile_timeout_s", 0, RUNNER_SECONDS_CAP, 60.0, &q->compile_timeout_s,
                 err) < 0)
        return -1;
    if (q->compile_timeout_s <= 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'compile_timeout_s' must be > 0");
    if (get_real(req, "", "call_limit_s", 0, RUNNER_SECONDS_CAP, 0, &q->call_limit_s, err) < 0)
        return -1;
    return get_real(req, "", "flops", 0, 1e30, 0, &q->flops, err);
}

/* "early_stop" (optional): {"after": k, "above_ms": x}, the timing stops once, after at least k
 * repeats, even the fastest repeat is above x ms (core/early_stop.h). */
static int parse_early_stop(const json_t *req, runner_measure_req *q, kt_error *err)
{
    static const char *const fields[] = {"after", "above_ms"};
    json_t *e = json_object_get(req, "early_stop");
    long long after = 0;
    if (!e)
        return 0;
    if (!json_is_object(e))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'early_stop' must be an object");
    if (check_fields(e, "early_stop", fields, 2, err) < 0 ||
        get_int(e, "after", 1, RUNNER_REPEATS_CAP, KT_EARLY_STOP_AFTER, &after, err) < 0 ||
        get_real(e, "early_stop", "above_ms", 0, 1e12, NAN, &q->early_above_ms, err) < 0)
        return -1;
    if (!(q->early_above_ms > 0))
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field 'early_stop.above_ms' must be > 0");
    q->early_after = (int)after;
    return 0;
}

int runner_parse_measure(const json_t *req, runner_measure_req *q, kt_error *err)
{
    memset(q, 0, sizeof *q);
    if (check_fields(req, "measure request", measure_fields,
                     sizeof measure_fields / sizeof *measure_fields, err) < 0)
        return -1;
    if (get_string(req, "measure request", "kernel", q->kernel, sizeof q->kernel, err) < 0)
        return -1;
    if (!is_kernel_name(q->kernel))
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "field 'kernel' may hold only letters, digits, '_', '-' and '.'");
    if (get_path(req, "measure request", "source", q->source, err) < 0)
        return -1;
    if (parse_defines(req, q, err) < 0 || parse_problem(req, q, err) < 0 ||
        parse_buffers(req, q, err) < 0 || parse_verify(req, q, err) < 0 ||
        parse_reference(req, q, err) < 0 || parse_tolerance(req, q, err) < 0 ||
        parse_scalars(req, q, err) < 0 || parse_call(req, q, err) < 0 ||
        parse_limits(req, q, err) < 0 || parse_early_stop(req, q, err) < 0 ||
        setup_key(req, q, err) < 0)
        return -1;
    json_t *shared = json_object_get(req, "core_shared");
    if (shared && !json_is_boolean(shared))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'core_shared' must be true or false");
    q->core_shared = json_is_true(shared);
    const char *need[] = {q->source, q->ref_kind == RUNNER_REF_C ? q->ref_source : ""};
    if (runner_sources_parse(req, need, 2, &q->files, err) < 0)
        return -1;
    for (int i = 0; i < q->n_buffers; i++) {
        runner_buffer *b = &q->buffers[i];
        if (b->rtol < 0 && kt_dtype_is_float(b->dtype))
            b->rtol = q->rtol, b->atol = q->atol;
        else if (b->rtol < 0)
            b->rtol = b->atol = 0; /* integers: exact unless the buffer says */
    }
    return 0;
}

int runner_parse_compile_check(const json_t *req, char *source, const json_t **defines,
                               const json_t **files, double *timeout_s, kt_error *err)
{
    static const char *const fields[] = {"id",      "op",    "source",
                                         "defines", "files", "compile_timeout_s"};
    const char *where = "compile_check request";
    *defines = json_object_get(req, "defines");
    if (check_fields(req, where, fields, sizeof fields / sizeof *fields, err) < 0 ||
        get_path(req, where, "source", source, err) < 0 ||
        get_real(req, where, "compile_timeout_s", 0.1, 3600, 60, timeout_s, err) < 0)
        return -1;
    const char *need[] = {source};
    if (runner_sources_parse(req, need, 1, files, err) < 0)
        return -1;
    if (*defines && !json_is_object(*defines))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field 'defines' must be an object");
    return 0;
}
