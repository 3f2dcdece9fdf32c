/* http/prepared — see prepared.h. Our reference count holds libmicrohttpd's first reference to
 * the response; every queue adds one of its own, so the last release here and the last connection
 * done with it free it in whichever order they come. */
#include "http/prepared.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

struct http_prepared {
    _Atomic long refs;
    int status;
    struct MHD_Response *mr;
};

/* Adds the "Name: value\r\n" lines of headers to mr; -1 on a malformed or refused line. */
static int add_headers(struct MHD_Response *mr, const char *headers)
{
    char name[128], value[1024];
    for (const char *line = headers; line && *line;) {
        const char *end = strstr(line, "\r\n"), *colon = strchr(line, ':');
        if (!end || !colon || colon > end || (size_t)(colon - line) >= sizeof name)
            return -1;
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        if ((size_t)(end - v) >= sizeof value)
            return -1;
        memcpy(name, line, (size_t)(colon - line));
        name[colon - line] = '\0';
        memcpy(value, v, (size_t)(end - v));
        value[end - v] = '\0';
        for (const unsigned char *p = (const unsigned char *)value; *p; p++)
            if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
                return -1; /* no response splitting */
        if (MHD_add_response_header(mr, name, value) != MHD_YES)
            return -1;
        line = end + 2;
    }
    return 0;
}

http_prepared *http_prepared_new(int status, const char *content_type, const char *headers,
                                 const char *body, size_t body_len)
{
    if (status < 100 || status > 599)
        return NULL;
    http_prepared *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->status = status;
    p->mr = MHD_create_response_from_buffer(body_len, (void *)(body_len ? body : ""),
                                            MHD_RESPMEM_MUST_COPY);
    if (!p->mr ||
        MHD_add_response_header(p->mr, MHD_HTTP_HEADER_CONTENT_TYPE,
                                content_type ? content_type : "application/octet-stream") !=
            MHD_YES ||
        add_headers(p->mr, headers) < 0) {
        log_warn("http: a prepared reply could not be made (out of memory or a bad header)");
        if (p->mr)
            MHD_destroy_response(p->mr);
        free(p);
        return NULL;
    }
    atomic_init(&p->refs, 1);
    return p;
}

void http_prepared_retain(http_prepared *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

void http_prepared_release(http_prepared *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
        MHD_destroy_response(p->mr); /* freed by MHD once no connection sends it any more */
        free(p);
    }
}

int http_prepared_status(const http_prepared *p)
{
    return p->status;
}

struct MHD_Response *http_prepared_response(http_prepared *p)
{
    return p->mr;
}

void http_reply_prepared(http_response *res, http_prepared *p)
{
    free(res->content_type);
    free(res->body);
    free(res->extra_headers);
    http_prepared_release(res->prepared);
    memset(res, 0, sizeof *res);
    res->status = p->status;
    res->prepared = p;
}

http_prepared *http_response_take_prepared(http_response *res)
{
    http_prepared *p = res->prepared;
    res->prepared = NULL;
    return p;
}
