/* Request heads checked before libmicrohttpd or a handler sees them: the request line (method,
 * target length, version) and the header fields (count, bytes, Content-Length and
 * Transfer-Encoding framing). Pure functions over bytes, shared by the gate (a connection's first
 * head, raw) and the access handler (every request, from MHD's parsed fields); fuzzed by
 * tests/fuzz/fuzz_http_head.c. */
#include "http/http_internal.h"

#include <string.h>
#include <strings.h>

static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

void http_fields_init(http_fields *f)
{
    memset(f, 0, sizeof *f);
}

static int name_is(const char *name, size_t nlen, const char *want)
{
    return nlen == strlen(want) && strncasecmp(name, want, nlen) == 0;
}

void http_fields_add(http_fields *f, const char *name, size_t nlen, const char *value, size_t vlen)
{
    f->count++;
    f->bytes += nlen + vlen;
    if (name_is(name, nlen, "Content-Length")) {
        f->n_content_length++;
        while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
            vlen--;
        while (vlen > 0 && (*value == ' ' || *value == '\t')) {
            value++;
            vlen--;
        }
        int digits = vlen > 0 && vlen <= 18;
        for (size_t i = 0; digits && i < vlen; i++)
            digits = value[i] >= '0' && value[i] <= '9';
        if (!digits)
            f->bad_content_length = 1;
    } else if (name_is(name, nlen, "Transfer-Encoding")) {
        f->n_transfer_encoding++;
        while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
            vlen--;
        while (vlen > 0 && (*value == ' ' || *value == '\t')) {
            value++;
            vlen--;
        }
        if (!(vlen == 7 && strncasecmp(value, "chunked", 7) == 0))
            f->bad_transfer_encoding = 1;
    } else if (name_is(name, nlen, "Expect")) {
        while (vlen > 0 && (*value == ' ' || *value == '\t')) {
            value++;
            vlen--;
        }
        if (vlen >= 12 && strncasecmp(value, "100-continue", 12) == 0)
            f->expect_continue = 1;
    }
}

int http_fields_verdict(const http_fields *f, kt_error *err)
{
    if (f->count > HTTP_MAX_HEADERS) {
        kt_error_set(err, KT_ERR_HEADERS_TOO_LARGE, "the request has more than %d header fields",
                     HTTP_MAX_HEADERS);
        kt_error_hint(err, "send fewer headers");
        return -1;
    }
    if (f->bytes > HTTP_MAX_HEADER_BYTES) {
        kt_error_set(err, KT_ERR_HEADERS_TOO_LARGE, "the request's header fields exceed %d bytes",
                     HTTP_MAX_HEADER_BYTES);
        kt_error_hint(err, "send shorter headers");
        return -1;
    }
    if (f->n_content_length > 1) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "the request has %d Content-Length headers; one is allowed",
                     f->n_content_length);
        kt_error_hint(err, "a request with more than one length could be read two ways (request "
                           "smuggling); send exactly one");
        return -1;
    }
    if (f->bad_content_length) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "Content-Length must be a decimal number of bytes");
        return -1;
    }
    if (f->n_transfer_encoding > 0 && f->n_content_length > 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "the request has both Transfer-Encoding and Content-Length");
        kt_error_hint(err, "send one of them: a request framed two ways could be read two ways "
                           "(request smuggling)");
        return -1;
    }
    if (f->n_transfer_encoding > 1 || f->bad_transfer_encoding) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "Transfer-Encoding must be a single 'chunked'; other codings are refused");
        return -1;
    }
    return 0;
}

int http_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80             ? 0
                : (c & 0xe0) == 0xc0 ? 1
                : (c & 0xf0) == 0xe0 ? 2
                : (c & 0xf8) == 0xf0 ? 3
                                     : -1;
        if (n < 0 || (n == 1 && c < 0xc2) || (n == 3 && c > 0xf4))
            return 0;
        unsigned cp = n == 0 ? c : c & (0x3fu >> n);
        p++;
        for (int i = 0; i < n; i++, p++) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (*p & 0x3fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
    }
    return 1;
}

int http_version_check(const char *version, kt_error *err)
{
    if (version && (strcmp(version, "HTTP/1.1") == 0 || strcmp(version, "HTTP/1.0") == 0))
        return 0;
    char printable[32];
    http_printable(printable, sizeof printable, version ? version : "");
    kt_error_set(err, KT_ERR_HTTP_VERSION,
                 "HTTP version '%s' is not supported; only HTTP/1.1 and HTTP/1.0 are", printable);
    kt_error_hint(err, "send HTTP/1.1");
    return -1;
}

/* "HTTP/d.d" — a version, supported or not. */
static int looks_like_version(const char *v, size_t n)
{
    return n == 8 && strncmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
           v[7] >= '0' && v[7] <= '9';
}

static int bad_line(kt_error *err)
{
    kt_error_set(err, KT_ERR_BAD_REQUEST, "malformed request line");
    kt_error_hint(err, "the first line of a request is 'METHOD /path HTTP/1.1'");
    return -1;
}

static int too_long(kt_error *err)
{
    kt_error_set(err, KT_ERR_URI_TOO_LONG, "the request target exceeds %d bytes", HTTP_MAX_URL);
    kt_error_hint(err, "shorten the path and query string");
    return -1;
}

static int check_request_line(const char *line, size_t n, kt_error *err)
{
    if (n > 0 && line[n - 1] == '\r')
        n--;
    const char *sp1 = memchr(line, ' ', n);
    if (!sp1 || sp1 == line || sp1 - line > 32)
        return bad_line(err);
    for (const char *p = line; p < sp1; p++) {
        if (!is_tchar((unsigned char)*p))
            return bad_line(err);
    }
    const char *sp2 = line + n;
    while (sp2 > sp1 + 1 && sp2[-1] != ' ')
        sp2--;
    sp2--; /* the last space */
    if (sp2 <= sp1 + 1)
        return bad_line(err); /* no target, or no version */
    const char *target = sp1 + 1, *version = sp2 + 1;
    size_t tlen = (size_t)(sp2 - target), vlen = (size_t)(line + n - version);
    if (tlen > HTTP_MAX_URL)
        return too_long(err);
    for (size_t i = 0; i < tlen; i++) {
        unsigned char c = (unsigned char)target[i];
        if (c <= 0x20 || c == 0x7f)
            return bad_line(err);
    }
    if (!looks_like_version(version, vlen))
        return bad_line(err);
    char v[9];
    memcpy(v, version, 8);
    v[8] = '\0';
    return http_version_check(v, err);
}

/* One header line (no line end): "name: value", name a token right before the colon. */
static int add_field_line(http_fields *f, const char *line, size_t n, kt_error *err)
{
    if (n > 0 && line[n - 1] == '\r')
        n--;
    const char *colon = memchr(line, ':', n);
    int ok = colon && colon > line && !memchr(line, '\0', n);
    for (const char *p = line; ok && p < colon; p++)
        ok = is_tchar((unsigned char)*p);
    if (!ok) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "malformed header line");
        kt_error_hint(err, "header lines are 'Name: value'; continuation lines are refused");
        return -1;
    }
    const char *value = colon + 1;
    http_fields_add(f, line, (size_t)(colon - line), value, (size_t)(line + n - value));
    return 0;
}

int http_head_check(const char *buf, size_t n, kt_error *err)
{
    http_head_info info;
    return http_head_scan(buf, n, &info, err);
}

int http_head_scan(const char *buf, size_t n, http_head_info *info, kt_error *err)
{
    /* The request line plus its CRLF, then at most the header bytes and each field's ": " and
     * CRLF. */
    const size_t line_max = HTTP_MAX_URL + 64;
    const size_t head_max = HTTP_MAX_HEADER_BYTES + (size_t)HTTP_MAX_HEADERS * 4 + 2;
    const char *nl = memchr(buf, '\n', n);
    if (!nl) {
        if (n > line_max)
            return too_long(err);
        return memchr(buf, '\0', n) ? bad_line(err) : 0;
    }
    if (check_request_line(buf, (size_t)(nl - buf), err) < 0)
        return -1;
    http_fields f;
    http_fields_init(&f);
    const char *p = nl + 1, *end = buf + n;
    for (;;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            if ((size_t)(end - (nl + 1)) > head_max) {
                kt_error_set(err, KT_ERR_HEADERS_TOO_LARGE,
                             "the request's header fields exceed %d bytes", HTTP_MAX_HEADER_BYTES);
                return -1;
            }
            return 0; /* more to come */
        }
        size_t len = (size_t)(eol - p);
        if (len == 0 || (len == 1 && p[0] == '\r')) {
            p = eol + 1;
            break; /* the blank line */
        }
        if (add_field_line(&f, p, len, err) < 0 || http_fields_verdict(&f, err) < 0)
            return -1;
        p = eol + 1;
    }
    if (http_fields_verdict(&f, err) < 0)
        return -1;
    info->len = (size_t)(p - buf);
    info->chunked = f.n_transfer_encoding > 0;
    info->expect_continue = f.expect_continue;
    return 1;
}

int http_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_chunks_check(const char *buf, size_t n, kt_error *err)
{
    size_t at = 0, total = 0;
    int seen = 0; /* whole size lines read */
    while (at < n) {
        const char *eol = memchr(buf + at, '\n', n - at);
        size_t size = 0, digits = 0, i = at;
        int d;
        /* The digits, as far as they have arrived: a size past the cap is refused before its
         * line ends (a client need not finish "ffffffffffffffff" for it to be too large). */
        for (; i < n && (d = http_hex_digit(buf[i])) >= 0; i++, digits++) {
            if (size > HTTP_MAX_BODY) /* already too large: stop growing it */
                continue;
            size = size * 16 + (size_t)d;
        }
        if (digits > 0 && (size > HTTP_MAX_BODY || total + size > HTTP_MAX_BODY)) {
            kt_error_set(err, KT_ERR_BODY_TOO_LARGE,
                         "a chunk of the request body is larger than %d bytes, the most a body may "
                         "have",
                         HTTP_MAX_BODY);
            kt_error_hint(err, "send bodies of at most 1 MiB");
            return -1;
        }
        if (!eol)
            return seen > 0 ? 1 : 0;
        if (digits == 0)
            return 1; /* malformed: libmicrohttpd answers it */
        seen++;
        total += size;
        if (size == 0)
            return 1;                        /* the last chunk */
        at = (size_t)(eol - buf) + 1 + size; /* past the data; its CRLF starts the next line */
        if (at + 2 > n)
            return 1;
        at += buf[at] == '\r' ? 2 : 1;
    }
    return seen > 0 ? 1 : 0;
}
