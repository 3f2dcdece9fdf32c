/* A growable, capped string buffer: the metrics text and response headers are built with it. */
#include "http/http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_BUF_MAX (16u * 1024 * 1024) /* nothing the server builds comes near this */

void http_buf_init(http_buf *b)
{
    memset(b, 0, sizeof *b);
}

void http_buf_free(http_buf *b)
{
    free(b->data);
    http_buf_init(b);
}

static int buf_reserve(http_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra >= HTTP_BUF_MAX || b->len + extra >= HTTP_BUF_MAX) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void http_buf_append(http_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void http_buf_printf(http_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        http_buf_append(b, small, (size_t)n);
        return;
    }
    /* Longer than the stack buffer: format straight into the reserved tail. */
    if (buf_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *http_buf_take(http_buf *b)
{
    char *p = NULL;
    if (!b->failed) {
        p = b->data ? b->data : calloc(1, 1);
        b->data = NULL;
    }
    http_buf_free(b);
    return p;
}
