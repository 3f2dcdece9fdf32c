/* api/best_cached — see best_cached.h. */
#include "api/best_cached.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "http/prepared.h"

static void prepared_retain(void *p)
{
    http_prepared_retain(p);
}

static void prepared_release(void *p)
{
    http_prepared_release(p);
}

void api_best_cache_init(best_cache *c)
{
    if (c)
        best_cache_set_attach_ops(c, prepared_retain, prepared_release);
}

static int append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > cap)
        return -1;
    memcpy(buf + *len, s, n + 1); /* the NUL is the separator */
    *len += n + 1;
    return 0;
}

size_t best_request_key(char *buf, size_t cap, const char *kernel, const char *device, char source,
                        int nearest, long long k, const best_param *params, int n_params)
{
    char opts[32];
    int order[64];
    size_t len = 0;
    if (n_params < 0 || n_params > (int)(sizeof order / sizeof order[0]) || k < 0)
        return 0;
    /* "<source><fallback><k>", written by hand: this runs on every lookup */
    char digits[24];
    int nd = 0;
    for (unsigned long long v = (unsigned long long)k; nd == 0 || v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    opts[0] = source;
    opts[1] = nearest ? 'n' : '-';
    for (int i = 0; i < nd; i++)
        opts[2 + i] = digits[nd - 1 - i];
    opts[2 + nd] = '\0';
    if (append(buf, cap, &len, kernel) < 0 || append(buf, cap, &len, device) < 0 ||
        append(buf, cap, &len, opts) < 0)
        return 0;
    /* Insertion sort by name (a few arguments; names are unique: repeated ones are not cached). */
    for (int i = 0; i < n_params; i++) {
        int j = i;
        while (j > 0 && strcmp(params[order[j - 1]].name, params[i].name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int i = 0; i < n_params; i++) {
        const best_param *p = &params[order[i]];
        if (append(buf, cap, &len, p->name) < 0 || append(buf, cap, &len, p->value) < 0)
            return 0;
    }
    return len;
}

/* Sets res's status, type and body (body taken over), keeping headers added before. */
static void set_reply(http_response *res, int status, char *body, size_t len)
{
    free(res->content_type);
    free(res->body);
    res->status = status;
    res->content_type = strdup("application/json");
    res->body = body;
    res->body_len = len;
    if (!res->content_type) {
        free(res->body);
        res->body = NULL;
        res->body_len = 0;
        res->status = 500;
    }
}

/* The ETag and Cache-Control lines, appended to the headers res holds (written directly: the
 * etag is ours, quoted hex, so there is nothing to check; this runs on every lookup). */
static void add_etag_headers(http_response *res, const char *etag)
{
    static const char pre[] = "ETag: ", post[] = "\r\nCache-Control: no-cache\r\n";
    size_t had = res->extra_headers ? strlen(res->extra_headers) : 0, n = strlen(etag);
    char *h = realloc(res->extra_headers, had + sizeof pre - 1 + n + sizeof post);
    if (!h)
        return; /* no ETag: the reply is still right, only not revalidatable */
    memcpy(h + had, pre, sizeof pre - 1);
    memcpy(h + had + sizeof pre - 1, etag, n);
    memcpy(h + had + sizeof pre - 1 + n, post, sizeof post);
    res->extra_headers = h;
}

static void add_etag(const http_request *req, http_response *res, const char *etag)
{
    add_etag_headers(res, etag);
    if (http_etag_matches(http_header(req, "If-None-Match"), etag)) {
        /* 304: the headers a 200 would have had, no body */
        free(res->body);
        res->body = NULL;
        res->body_len = 0;
        res->status = 304;
    }
}

void *best_prepare(const http_response *res)
{
    char headers[128];
    size_t n = 0;
    if (res->status == 200) {
        char etag[32];
        best_cache_etag(res->body, res->body_len, etag);
        n = (size_t)snprintf(headers, sizeof headers, "ETag: %s\r\nCache-Control: no-cache\r\n",
                             etag);
    }
    return http_prepared_new(res->status, "application/json", n ? headers : NULL, res->body,
                             res->body_len);
}

void best_reply_cached(const http_request *req, http_response *res, best_cache_hit *hit)
{
    if (!hit->attach) {
        set_reply(res, hit->status, hit->body, hit->body_len);
        hit->body = NULL;
        if (res->status == 200)
            add_etag(req, res, hit->etag);
    } else if (hit->status != 200 ||
               !http_etag_matches(http_header(req, "If-None-Match"), hit->etag)) {
        http_reply_prepared(res, hit->attach); /* the reply made once, sent as it is */
        hit->attach = NULL;
    } else {
        http_prepared_release(hit->attach); /* a 304: made here, it has no body */
        hit->attach = NULL;
        set_reply(res, 304, NULL, 0);
        add_etag(req, res, hit->etag);
    }
}

void best_reply_etag(const http_request *req, http_response *res)
{
    if (res->status != 200 || !res->body)
        return;
    char etag[32];
    best_cache_etag(res->body, res->body_len, etag);
    add_etag(req, res, etag);
}
