/* Replies (JSON, errors, text, extra headers), request look-ups (query, headers) and JSON body
 * parsing with the nesting check done on the raw bytes before jansson sees them. */
#include "http/http_internal.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

#define HTTP_EXTRA_HEADERS_MAX 8192

void http_printable(char *dst, size_t cap, const char *s)
{
    size_t i = 0;
    if (cap == 0)
        return;
    for (; s && s[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    dst[i] = '\0';
}

void http_response_clear(http_response *res)
{
    free(res->content_type);
    free(res->body);
    free(res->extra_headers);
    memset(res, 0, sizeof *res);
}

void http_response_defer(http_response *res)
{
    res->deferred = 1;
}

/* Replies replace status, type and body; extra headers stay (e.g. Allow set before an error reply).
 */
static void set_body(http_response *res, int status, const char *content_type, char *body,
                     size_t body_len)
{
    free(res->content_type);
    free(res->body);
    res->status = status;
    res->content_type = content_type ? strdup(content_type) : NULL;
    res->body = body;
    res->body_len = body_len;
    if (content_type && !res->content_type) {
        /* Out of memory: make it a bodiless 500 rather than a reply without its type. */
        free(res->body);
        res->body = NULL;
        res->body_len = 0;
        res->status = 500;
    }
}

/* A JSON string for s; bytes that are not valid UTF-8 make jansson refuse it, so those fall back to
 * an ASCII copy with '?' for every non-ASCII byte (paths and messages can hold arbitrary bytes). */
static json_t *json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        copy[i] = ((unsigned char)s[i] >= 0x80) ? '?' : s[i];
    j = json_string(copy);
    free(copy);
    return j;
}

/* Sent when the reply itself cannot be encoded (a failed json_pack upstream, or no memory). */
static const char fallback_500[] =
    "{\"error\":{\"code\":\"internal\",\"message\":\"an internal error occurred\"}}";

void http_reply_json(http_response *res, int status, json_t *body_owned)
{
    char *text = body_owned ? json_dumps(body_owned, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(body_owned);
    if (!text) {
        log_error("http: could not encode a JSON reply (status %d)", status);
        status = 500;
        text = strdup(fallback_500);
    }
    size_t n = text ? strlen(text) : 0;
    char *body = text ? realloc(text, n + 2) : NULL;
    if (body) {
        body[n++] = '\n'; /* JSON replies end with a newline: friendlier for curl and logs */
        body[n] = '\0';
    } else {
        free(text);
        n = 0;
        status = 500;
    }
    set_body(res, status, "application/json", body, n);
}

void http_reply_error(http_response *res, const kt_error *err)
{
    http_reply_error_with(res, err, NULL, NULL);
}

void http_reply_error_with(http_response *res, const kt_error *err, const char *key, json_t *extra)
{
    kt_code code = err ? err->code : KT_ERR_INTERNAL;
    if (code == KT_OK)
        code = KT_ERR_INTERNAL; /* an error reply with "ok" is a bug upstream; do not send 200 */
    int status = kt_error_http_status(code);
    const char *message = (err && err->message[0]) ? err->message : kt_error_default_message(code);
    const char *hint = err ? err->hint : "";
    if (status >= 500 && code != KT_ERR_HTTP_VERSION) { /* 505 is the client's doing */
        char printable[KT_ERROR_MESSAGE_MAX];
        http_printable(printable, sizeof printable, message);
        log_error("http: %d %s: %s", status, kt_error_code_name(code), printable);
    }
    json_t *inner = json_object();
    json_t *outer = json_object();
    if (inner && outer) {
        json_object_set_new(inner, "code", json_string(kt_error_code_name(code)));
        json_object_set_new(inner, "message", json_text(message));
        if (hint[0]) /* an empty hint is left out rather than sent as "" */
            json_object_set_new(inner, "hint", json_text(hint));
        json_object_set(outer, "error", inner);
        if (key && extra)
            json_object_set(outer, key, extra);
    }
    json_decref(inner);
    http_reply_json(res, status, outer);
}

void http_reply_raw_error(int fd, const kt_error *err)
{
    http_response res;
    memset(&res, 0, sizeof res);
    http_reply_error(&res, err);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                      "%zu\r\nConnection: close\r\n\r\n",
                      res.status, kt_error_code_name(err->code), res.body_len);
    if (hn > 0 && (size_t)hn < sizeof head &&
        send(fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_DONTWAIT) == hn && res.body)
        send(fd, res.body, res.body_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    http_response_clear(&res);
}

void http_reply_text(http_response *res, int status, const char *content_type, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    char *body = malloc(n + 1);
    if (body) {
        memcpy(body, text ? text : "", n);
        body[n] = '\0';
    } else {
        n = 0;
        status = 500;
    }
    set_body(res, status, content_type ? content_type : "text/plain; charset=utf-8", body, n);
}

static int is_token_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

void http_response_add_header(http_response *res, const char *name, const char *value)
{
    if (!name || !*name || !value) {
        log_warn("http: header without name or value left out");
        return;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (!is_token_char(*p)) {
            log_warn("http: header name with a forbidden character left out");
            return;
        }
    }
    /* CR or LF in a value would let it start a new header (response splitting). */
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
            log_warn("http: value of header %s has a control character; left out", name);
            return;
        }
    }
    /* Rebuilt whole (a reply has a handful of headers); one over the cap is left out, not cut. */
    strbuf b;
    strbuf_init(&b, HTTP_EXTRA_HEADERS_MAX);
    if (res->extra_headers)
        strbuf_puts(&b, res->extra_headers);
    strbuf_appendf(&b, "%s: %s\r\n", name, value);
    if (b.failed == STRBUF_TOO_LONG)
        log_warn("http: extra headers exceed %d bytes; %s left out", HTTP_EXTRA_HEADERS_MAX, name);
    char *text = strbuf_take(&b);
    if (!text)
        return;
    free(res->extra_headers);
    res->extra_headers = text;
}

const char *http_query(const http_request *req, const char *key)
{
    if (!req || !req->conn || !key)
        return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct query_iter {
    int (*fn)(void *ctx, const char *key, const char *value);
    void *ctx;
    int stopped;
} query_iter;

static enum MHD_Result query_visit(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    query_iter *it = cls;
    (void)kind;
    if (it->fn(it->ctx, key, value ? value : "") != 0) {
        it->stopped = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

int http_query_each(const http_request *req,
                    int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
    if (!req || !req->conn || !fn)
        return 0;
    query_iter it = {fn, ctx, 0};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_visit, &it);
    return it.stopped;
}

const char *http_header(const http_request *req, const char *name)
{
    if (!req || !req->conn || !name)
        return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* "application/json", any case, optionally followed by parameters ("; charset=utf-8"). */
static int is_json_media(const char *ct)
{
    static const char want[] = "application/json";
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, want, sizeof want - 1) != 0)
        return 0;
    char next = ct[sizeof want - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* Deepest [ / { nesting of the bytes, counting only outside strings; stops once past limit. */
static int json_nesting(const char *p, size_t n, int limit)
{
    int depth = 0, max = 0, in_string = 0, escaped = 0;
    for (size_t i = 0; i < n && max <= limit; i++) {
        char c = p[i];
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max)
                max = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return max;
}

json_t *http_parse_json_body(const http_request *req, kt_error *err)
{
    /* Required of every request that came over HTTP (issue #11): a cross-site form or fetch
     * without it needs no CORS preflight. A request built in-process has no headers to check. */
    const char *ct = req ? http_header(req, "Content-Type") : NULL;
    if (!ct && req && req->conn) {
        kt_error_set(err, KT_ERR_UNSUPPORTED_MEDIA,
                     "the request has no Content-Type; the body must be application/json");
        kt_error_hint(err, "send the header 'Content-Type: application/json'");
        return NULL;
    }
    if (ct && !is_json_media(ct)) {
        char printable[128];
        http_printable(printable, sizeof printable, ct);
        kt_error_set(err, KT_ERR_UNSUPPORTED_MEDIA,
                     "Content-Type \"%s\" is not accepted; the body must be application/json",
                     printable);
        kt_error_hint(err, "send the header 'Content-Type: application/json'");
        return NULL;
    }
    if (!req || !req->body || req->body_len == 0) {
        kt_error_set(err, KT_ERR_BAD_JSON, "request body is empty; a JSON object is expected");
        return NULL;
    }
    if (req->body_len > HTTP_MAX_BODY) {
        kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "the request body exceeds %d bytes",
                     HTTP_MAX_BODY);
        return NULL;
    }
    if (json_nesting(req->body, req->body_len, HTTP_MAX_JSON_DEPTH) > HTTP_MAX_JSON_DEPTH) {
        kt_error_set(err, KT_ERR_JSON_TOO_DEEP,
                     "the request body nests arrays and objects deeper than %d levels",
                     HTTP_MAX_JSON_DEPTH);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!j) {
        kt_error_set(err, KT_ERR_BAD_JSON, "invalid JSON at line %d, column %d: %s", je.line,
                     je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        kt_error_set(err, KT_ERR_BAD_JSON, "the request body must be a JSON object");
        return NULL;
    }
    return j;
}

int http_etag_matches(const char *if_none_match, const char *etag)
{
    /* etag is quoted; a listed one may be weak (W/"...") */
    size_t n = strlen(etag);
    const char *p = if_none_match;
    if (!p)
        return 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            return 0;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, n) == 0 &&
            (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
            return 1;
        p += strcspn(p, ",");
    }
}
