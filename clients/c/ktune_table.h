/* ktune_table.h — a single-header C99 reader of ktune's deploy table: the best configurations
 * exported once (`ktune best --all --format table > best.tsv`, or the Python client's
 * Client.export_table), looked up at run time without a server.
 *
 * In exactly one C file:
 *     #define KTUNE_TABLE_IMPLEMENTATION
 *     #include "ktune_table.h"
 * elsewhere include it plainly. Standard C99 and its library only (malloc, strtod, log1p, sqrt:
 * link with -lm).
 *
 * Call order:
 *     char err[256];
 *     ktune_table *t = ktune_table_load("best.tsv", err, sizeof err);   (NULL + err on failure)
 *     ktune_match m;
 *     int rc = ktune_table_lookup(t, "gemm", "cpu:AMD_EPYC:256", "{\"M\":512,\"N\":512,\"K\":512}",
 *                                 NULL, &m, err, sizeof err);
 *     rc 1: m.exact says whether the entry was tuned for this very problem (else m.problem is the
 *           nearest tuned problem, m.distance how far); ktune_match_int(&m, "MR", &v) reads the
 *           configuration. rc 0: nothing comparable in the table. rc -1: the problem is not a JSON
 *           object (err says where).
 *     ktune_table_free(t);   (the match's strings belong to the table: valid until then)
 *
 * The format (clients/README.md): UTF-8 text, the line "# ktune-table 1", the line of the column
 * names kernel, device_class, kernel_hash, toolchain, origin, time_ms, problem, config, measured_at
 * (tab-separated), then one entry a line with those fields separated by single tabs; problem and
 * config are JSON objects; rows are newest first; later lines starting with '#' are comments.
 *
 * Lookup: the rows of the kernel and device class (and kernel_hash, when not NULL); of those, the
 * version (kernel_hash and toolchain) of the first such row, the newest. An exact match is a row
 * whose problem equals the one asked (same names; numbers compared as numbers, booleans only with
 * booleans, lists element by element). Else the nearest: the least
 * sqrt(sum over arguments of (s(a) - s(b))^2), s(x) = sign(x) log(1 + |x|), lists element by
 * element, other values required equal, the same argument names required (GET
 * /v1/best?fallback=nearest's distance); ties go to the earlier row. The table has no parameter
 * space: a nearest answer's configuration is not checked against the problem asked.
 *
 * Numbers are parsed with strtod: run in the "C" locale (the default of a program that never calls
 * setlocale). */
#ifndef KTUNE_TABLE_H
#define KTUNE_TABLE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ktune_table ktune_table;

typedef struct ktune_match {
    int exact;               /* 1: tuned for this problem; 0: the nearest tuned problem */
    double distance;         /* 0 when exact */
    double time_ms;          /* the entry's measured time */
    const char *kernel_hash; /* the kernel version it was measured for */
    const char *toolchain;
    const char *origin; /* "measured" or "imported" */
    const char *measured_at;
    const char *problem; /* JSON text of the problem it was tuned for */
    const char *config;  /* JSON text of the configuration */
    const void *row_;    /* internal: the row, for ktune_match_int and friends */
} ktune_match;

ktune_table *ktune_table_load(const char *path, char *err, size_t err_cap);
ktune_table *ktune_table_parse(const char *text, size_t len, char *err, size_t err_cap);
void ktune_table_free(ktune_table *t);
size_t ktune_table_size(const ktune_table *t);
int ktune_table_lookup(const ktune_table *t, const char *kernel, const char *device_class,
                       const char *problem_json, const char *kernel_hash, ktune_match *out,
                       char *err, size_t err_cap);
/* A configuration value: 0 and *out, or -1 when the parameter is missing or of another type
 * (ktune_match_int: an integral number, booleans as 0/1; ktune_match_string: copied, truncated to
 * cap - 1 bytes, -1 also when it does not fit). */
int ktune_match_int(const ktune_match *m, const char *name, long long *out);
int ktune_match_double(const ktune_match *m, const char *name, double *out);
int ktune_match_string(const ktune_match *m, const char *name, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#ifdef KTUNE_TABLE_IMPLEMENTATION

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KTT_FORMAT_LINE "# ktune-table 1"
#define KTT_COLUMNS                                                                                \
    "kernel\tdevice_class\tkernel_hash\ttoolchain\torigin\ttime_ms\tproblem\tconfig\tmeasured_at"
#define KTT_NCOLS     9
#define KTT_MAX_DEPTH 32
#define KTT_MAX_FILE  ((size_t)1 << 30)

enum { KTT_NULL, KTT_BOOL, KTT_NUM, KTT_STR, KTT_ARR, KTT_OBJ };

typedef struct ktt_json {
    int type;
    double num;             /* KTT_NUM; KTT_BOOL: 0 or 1 */
    char *str;              /* KTT_STR */
    size_t n;               /* items of KTT_ARR and KTT_OBJ */
    char **keys;            /* KTT_OBJ */
    struct ktt_json *items; /* KTT_ARR and KTT_OBJ */
} ktt_json;

typedef struct ktt_row {
    char *field[KTT_NCOLS]; /* each its own string */
    double time_ms;
    ktt_json problem, config;
} ktt_row;

struct ktune_table {
    ktt_row *rows;
    size_t n;
};

static void ktt_err(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    if (!err || cap == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static void ktt_json_free(ktt_json *j)
{
    size_t i;
    if (j->type == KTT_STR)
        free(j->str);
    if (j->type == KTT_ARR || j->type == KTT_OBJ) {
        for (i = 0; i < j->n; i++) {
            ktt_json_free(&j->items[i]);
            if (j->keys)
                free(j->keys[i]);
        }
        free(j->items);
        free(j->keys);
    }
    memset(j, 0, sizeof *j);
}

typedef struct ktt_parser {
    const char *p, *end, *start;
    char *err;
    size_t cap;
} ktt_parser;

static void ktt_ws(ktt_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int ktt_fail(ktt_parser *ps, const char *what)
{
    ktt_err(ps->err, ps->cap, "%s at column %d", what, (int)(ps->p - ps->start) + 1);
    return -1;
}

static int ktt_put_utf8(char *out, size_t *n, unsigned long cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 0;
}

static int ktt_hex4(ktt_parser *ps, unsigned long *out)
{
    int i;
    *out = 0;
    if (ps->end - ps->p < 4)
        return ktt_fail(ps, "a short \\u escape");
    for (i = 0; i < 4; i++) {
        char c = *ps->p++;
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return ktt_fail(ps, "a bad \\u escape");
        *out = *out * 16 + (unsigned long)v;
    }
    return 0;
}

/* A string after its opening quote: *out malloc'd (UTF-8, NUL-terminated). */
static int ktt_string(ktt_parser *ps, char **out)
{
    /* Escapes never make a string longer than its source text, \u of 6 bytes at most 4 of UTF-8. */
    const char *q = ps->p;
    size_t n = 0;
    char *s;
    while (q < ps->end && *q != '"') {
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    }
    if (q >= ps->end)
        return ktt_fail(ps, "an unterminated string");
    s = (char *)malloc((size_t)(q - ps->p) + 1);
    if (!s)
        return ktt_fail(ps, "out of memory");
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) {
            free(s);
            return ktt_fail(ps, "a control character in a string");
        }
        if (c != '\\') {
            s[n++] = (char)c;
            continue;
        }
        c = (unsigned char)*ps->p++;
        switch (c) {
        case '"':
            s[n++] = '"';
            break;
        case '\\':
            s[n++] = '\\';
            break;
        case '/':
            s[n++] = '/';
            break;
        case 'b':
            s[n++] = '\b';
            break;
        case 'f':
            s[n++] = '\f';
            break;
        case 'n':
            s[n++] = '\n';
            break;
        case 'r':
            s[n++] = '\r';
            break;
        case 't':
            s[n++] = '\t';
            break;
        case 'u': {
            unsigned long cp, lo;
            if (ktt_hex4(ps, &cp) < 0) {
                free(s);
                return -1;
            }
            if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                ps->p += 2;
                if (ktt_hex4(ps, &lo) < 0) {
                    free(s);
                    return -1;
                }
                if (lo >= 0xDC00 && lo < 0xE000)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else
                    cp = 0xFFFD;
            } else if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            ktt_put_utf8(s, &n, cp);
            break;
        }
        default:
            free(s);
            return ktt_fail(ps, "a bad escape");
        }
    }
    ps->p++;
    s[n] = '\0';
    *out = s;
    return 0;
}

static int ktt_value(ktt_parser *ps, ktt_json *j, int depth);

static int ktt_append(ktt_parser *ps, ktt_json *j, size_t *cap, char *key)
{
    if (j->n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        ktt_json *items = (ktt_json *)realloc(j->items, c * sizeof *items);
        char **keys;
        if (!items)
            return ktt_fail(ps, "out of memory");
        j->items = items;
        if (j->type == KTT_OBJ) {
            keys = (char **)realloc(j->keys, c * sizeof *keys);
            if (!keys)
                return ktt_fail(ps, "out of memory");
            j->keys = keys;
        }
        *cap = c;
    }
    memset(&j->items[j->n], 0, sizeof j->items[j->n]);
    if (j->type == KTT_OBJ)
        j->keys[j->n] = key;
    j->n++;
    return 0;
}

static int ktt_container(ktt_parser *ps, ktt_json *j, int depth)
{
    char close = j->type == KTT_OBJ ? '}' : ']';
    size_t cap = 0;
    ktt_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        ktt_ws(ps);
        if (j->type == KTT_OBJ) {
            if (ps->p >= ps->end || *ps->p != '"')
                return ktt_fail(ps, "expected a member name");
            ps->p++;
            if (ktt_string(ps, &key) < 0)
                return -1;
            ktt_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                return ktt_fail(ps, "expected ':'");
            }
            ps->p++;
        }
        if (ktt_append(ps, j, &cap, key) < 0) {
            free(key);
            return -1;
        }
        if (ktt_value(ps, &j->items[j->n - 1], depth + 1) < 0)
            return -1;
        ktt_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return ktt_fail(ps, j->type == KTT_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int ktt_value(ktt_parser *ps, ktt_json *j, int depth)
{
    ktt_ws(ps);
    if (depth > KTT_MAX_DEPTH)
        return ktt_fail(ps, "nested too deep");
    if (ps->p >= ps->end)
        return ktt_fail(ps, "a missing value");
    if (*ps->p == '{' || *ps->p == '[') {
        j->type = *ps->p == '{' ? KTT_OBJ : KTT_ARR;
        ps->p++;
        return ktt_container(ps, j, depth);
    }
    if (*ps->p == '"') {
        ps->p++;
        j->type = KTT_STR;
        return ktt_string(ps, &j->str);
    }
    if (ps->end - ps->p >= 4 && memcmp(ps->p, "true", 4) == 0) {
        j->type = KTT_BOOL;
        j->num = 1;
        ps->p += 4;
        return 0;
    }
    if (ps->end - ps->p >= 5 && memcmp(ps->p, "false", 5) == 0) {
        j->type = KTT_BOOL;
        ps->p += 5;
        return 0;
    }
    if (ps->end - ps->p >= 4 && memcmp(ps->p, "null", 4) == 0) {
        j->type = KTT_NULL;
        ps->p += 4;
        return 0;
    }
    if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
        char buf[64], *e = NULL;
        size_t n = 0;
        while (ps->p + n < ps->end && n + 1 < sizeof buf &&
               strchr("+-0123456789.eE", ps->p[n]) != NULL)
            n++;
        memcpy(buf, ps->p, n);
        buf[n] = '\0';
        j->num = strtod(buf, &e);
        if (e != buf + n || n == 0)
            return ktt_fail(ps, "a bad number");
        j->type = KTT_NUM;
        ps->p += n;
        return 0;
    }
    return ktt_fail(ps, "an unexpected character");
}

/* Parses exactly one JSON object from [text, text + len). */
static int ktt_parse_object(const char *text, size_t len, ktt_json *j, char *err, size_t cap)
{
    ktt_parser ps;
    ps.p = ps.start = text;
    ps.end = text + len;
    ps.err = err;
    ps.cap = cap;
    memset(j, 0, sizeof *j);
    if (ktt_value(&ps, j, 0) < 0) {
        ktt_json_free(j);
        return -1;
    }
    ktt_ws(&ps);
    if (ps.p != ps.end) {
        ktt_json_free(j);
        return ktt_fail(&ps, "text after the value");
    }
    if (j->type != KTT_OBJ) {
        ktt_json_free(j);
        ktt_err(err, cap, "not a JSON object");
        return -1;
    }
    return 0;
}

static const ktt_json *ktt_get(const ktt_json *obj, const char *key)
{
    size_t i;
    for (i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

static int ktt_same(const ktt_json *a, const ktt_json *b)
{
    size_t i;
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case KTT_NULL:
        return 1;
    case KTT_BOOL:
    case KTT_NUM:
        return a->num == b->num;
    case KTT_STR:
        return strcmp(a->str, b->str) == 0;
    case KTT_ARR:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++)
            if (!ktt_same(&a->items[i], &b->items[i]))
                return 0;
        return 1;
    default:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++) {
            const ktt_json *v = ktt_get(b, a->keys[i]);
            if (!v || !ktt_same(&a->items[i], v))
                return 0;
        }
        return 1;
    }
}

static double ktt_scale(double x)
{
    return x >= 0 ? log1p(x) : -log1p(-x);
}

/* Adds the squared distance of two values to *sum; -1 when they are not comparable. */
static int ktt_add(const ktt_json *a, const ktt_json *b, double *sum)
{
    size_t i;
    if (a->type == KTT_NUM && b->type == KTT_NUM) {
        double d = ktt_scale(a->num) - ktt_scale(b->num);
        *sum += d * d;
        return 0;
    }
    if (a->type == KTT_ARR && b->type == KTT_ARR) {
        if (a->n != b->n)
            return -1;
        for (i = 0; i < a->n; i++)
            if (ktt_add(&a->items[i], &b->items[i], sum) < 0)
                return -1;
        return 0;
    }
    return ktt_same(a, b) ? 0 : -1;
}

/* The distance of two problems (objects); -1 when they are not comparable. */
static double ktt_distance(const ktt_json *a, const ktt_json *b)
{
    double sum = 0;
    size_t i;
    if (a->n != b->n)
        return -1;
    for (i = 0; i < a->n; i++) {
        const ktt_json *v = ktt_get(b, a->keys[i]);
        if (!v || ktt_add(&a->items[i], v, &sum) < 0)
            return -1;
    }
    return sqrt(sum);
}

static void ktt_row_free(ktt_row *r)
{
    int i;
    for (i = 0; i < KTT_NCOLS; i++)
        free(r->field[i]);
    ktt_json_free(&r->problem);
    ktt_json_free(&r->config);
}

void ktune_table_free(ktune_table *t)
{
    size_t i;
    if (!t)
        return;
    for (i = 0; i < t->n; i++)
        ktt_row_free(&t->rows[i]);
    free(t->rows);
    free(t);
}

size_t ktune_table_size(const ktune_table *t)
{
    return t ? t->n : 0;
}

static char *ktt_strndup(const char *s, size_t n)
{
    char *d = (char *)malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* One data line into r; -1 with err (naming the line) when it is not one. */
static int ktt_row_parse(const char *line, size_t len, size_t lineno, ktt_row *r, char *err,
                         size_t cap)
{
    const char *p = line, *end = line + len;
    char why[200];
    int i;
    char *e = NULL;
    memset(r, 0, sizeof *r);
    for (i = 0; i < KTT_NCOLS; i++) {
        const char *tab = (const char *)memchr(p, '\t', (size_t)(end - p));
        const char *stop = tab ? tab : end;
        if ((i < KTT_NCOLS - 1 && !tab) || (i == KTT_NCOLS - 1 && tab)) {
            ktt_err(err, cap, "line %lu: not %d tab-separated fields", (unsigned long)lineno,
                    KTT_NCOLS);
            ktt_row_free(r);
            return -1;
        }
        r->field[i] = ktt_strndup(p, (size_t)(stop - p));
        if (!r->field[i]) {
            ktt_err(err, cap, "out of memory");
            ktt_row_free(r);
            return -1;
        }
        p = stop + 1;
    }
    r->time_ms = strtod(r->field[5], &e);
    if (e == r->field[5] || *e != '\0') {
        ktt_err(err, cap, "line %lu: time_ms '%.40s' is not a number", (unsigned long)lineno,
                r->field[5]);
        ktt_row_free(r);
        return -1;
    }
    if (ktt_parse_object(r->field[6], strlen(r->field[6]), &r->problem, why, sizeof why) < 0 ||
        ktt_parse_object(r->field[7], strlen(r->field[7]), &r->config, why, sizeof why) < 0) {
        ktt_err(err, cap, "line %lu: %s of %s", (unsigned long)lineno, why,
                r->problem.type == KTT_OBJ ? "config" : "problem");
        ktt_row_free(r);
        return -1;
    }
    return 0;
}

ktune_table *ktune_table_parse(const char *text, size_t len, char *err, size_t err_cap)
{
    ktune_table *t = (ktune_table *)calloc(1, sizeof *t);
    const char *p = text, *end = text + len;
    size_t lineno = 0, cap = 0;
    if (!t) {
        ktt_err(err, err_cap, "out of memory");
        return NULL;
    }
    while (p < end) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        lineno++;
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (lineno == 1 && (n != strlen(KTT_FORMAT_LINE) || memcmp(p, KTT_FORMAT_LINE, n) != 0)) {
            ktt_err(err, err_cap,
                    "not a ktune table: the first line must be '" KTT_FORMAT_LINE "'");
            goto fail;
        }
        if (lineno == 2 && (n != strlen(KTT_COLUMNS) || memcmp(p, KTT_COLUMNS, n) != 0)) {
            ktt_err(err, err_cap, "line 2: the columns must be " KTT_COLUMNS);
            goto fail;
        }
        if (lineno > 2 && n > 0 && p[0] != '#') {
            if (t->n == cap) {
                size_t c = cap ? cap * 2 : 64;
                ktt_row *rows = (ktt_row *)realloc(t->rows, c * sizeof *rows);
                if (!rows) {
                    ktt_err(err, err_cap, "out of memory");
                    goto fail;
                }
                t->rows = rows;
                cap = c;
            }
            if (ktt_row_parse(p, n, lineno, &t->rows[t->n], err, err_cap) < 0)
                goto fail;
            t->n++;
        }
        p = nl ? nl + 1 : end;
    }
    if (lineno < 2) {
        ktt_err(err, err_cap, "not a ktune table: fewer than two lines");
        goto fail;
    }
    return t;
fail:
    ktune_table_free(t);
    return NULL;
}

ktune_table *ktune_table_load(const char *path, char *err, size_t err_cap)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    ktune_table *t = NULL;
    if (!f) {
        ktt_err(err, err_cap, "%s cannot be opened", path);
        return NULL;
    }
    for (;;) {
        size_t got;
        if (cap - n < 65536) {
            char *b;
            if (cap >= KTT_MAX_FILE) {
                ktt_err(err, err_cap, "%s is over 1 GiB", path);
                goto out;
            }
            b = (char *)realloc(buf, cap ? cap * 2 : 65536 * 2);
            if (!b) {
                ktt_err(err, err_cap, "out of memory reading %s", path);
                goto out;
            }
            buf = b;
            cap = cap ? cap * 2 : 65536 * 2;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        ktt_err(err, err_cap, "%s cannot be read", path);
        goto out;
    }
    t = ktune_table_parse(buf ? buf : "", n, err, err_cap);
out:
    fclose(f);
    free(buf);
    return t;
}

static void ktt_fill(const ktt_row *r, int exact, double distance, ktune_match *m)
{
    m->exact = exact;
    m->distance = distance;
    m->time_ms = r->time_ms;
    m->kernel_hash = r->field[2];
    m->toolchain = r->field[3];
    m->origin = r->field[4];
    m->problem = r->field[6];
    m->config = r->field[7];
    m->measured_at = r->field[8];
    m->row_ = r;
}

int ktune_table_lookup(const ktune_table *t, const char *kernel, const char *device_class,
                       const char *problem_json, const char *kernel_hash, ktune_match *out,
                       char *err, size_t err_cap)
{
    ktt_json problem;
    const ktt_row *version = NULL, *best = NULL;
    double best_d = 0;
    size_t i;
    int rc = 0;
    char why[200];
    memset(out, 0, sizeof *out);
    if (!problem_json)
        problem_json = "{}";
    if (ktt_parse_object(problem_json, strlen(problem_json), &problem, why, sizeof why) < 0) {
        ktt_err(err, err_cap, "the problem: %s", why);
        return -1;
    }
    for (i = 0; t && i < t->n; i++) {
        const ktt_row *r = &t->rows[i];
        double d;
        if (strcmp(r->field[0], kernel) != 0 || strcmp(r->field[1], device_class) != 0 ||
            (kernel_hash && strcmp(r->field[2], kernel_hash) != 0))
            continue;
        if (!version)
            version = r; /* rows are newest first: the first names the version */
        if (strcmp(r->field[2], version->field[2]) != 0 ||
            strcmp(r->field[3], version->field[3]) != 0)
            continue;
        if (ktt_same(&problem, &r->problem)) {
            ktt_fill(r, 1, 0.0, out);
            rc = 1;
            goto done;
        }
        d = ktt_distance(&problem, &r->problem);
        if (d <= 0 || (best && d >= best_d))
            continue;
        best = r;
        best_d = d;
    }
    if (best) {
        ktt_fill(best, 0, best_d, out);
        rc = 1;
    }
done:
    ktt_json_free(&problem);
    return rc;
}

static const ktt_json *ktt_param(const ktune_match *m, const char *name)
{
    const ktt_row *r = (const ktt_row *)m->row_;
    return r ? ktt_get(&r->config, name) : NULL;
}

int ktune_match_int(const ktune_match *m, const char *name, long long *out)
{
    const ktt_json *v = ktt_param(m, name);
    if (!v || (v->type != KTT_NUM && v->type != KTT_BOOL) || v->num != floor(v->num) ||
        v->num < -9.2e18 || v->num > 9.2e18)
        return -1;
    *out = (long long)v->num;
    return 0;
}

int ktune_match_double(const ktune_match *m, const char *name, double *out)
{
    const ktt_json *v = ktt_param(m, name);
    if (!v || v->type != KTT_NUM)
        return -1;
    *out = v->num;
    return 0;
}

int ktune_match_string(const ktune_match *m, const char *name, char *buf, size_t cap)
{
    const ktt_json *v = ktt_param(m, name);
    size_t n;
    if (!v || v->type != KTT_STR || cap == 0)
        return -1;
    n = strlen(v->str);
    if (n >= cap)
        return -1;
    memcpy(buf, v->str, n + 1);
    return 0;
}

#endif /* KTUNE_TABLE_IMPLEMENTATION */
#endif /* KTUNE_TABLE_H */
