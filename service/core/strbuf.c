/* core/strbuf — see strbuf.h. Growth doubles from STRBUF_FIRST bytes, never past max + 1. */
#include "core/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRBUF_FIRST 256

void strbuf_init(strbuf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

void strbuf_release(strbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = STRBUF_OK;
}

int strbuf_reserve(strbuf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra > b->max || b->len > b->max - extra) {
        b->failed = STRBUF_TOO_LONG;
        return -1;
    }
    size_t need = b->len + extra + 1; /* cannot overflow: len + extra <= max < SIZE_MAX */
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : STRBUF_FIRST;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1 && b->max < SIZE_MAX)
        cap = b->max + 1 > need ? b->max + 1 : need;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = STRBUF_NO_MEMORY;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int strbuf_append(strbuf *b, const char *s, size_t n)
{
    if (strbuf_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int strbuf_puts(strbuf *b, const char *s)
{
    return strbuf_append(b, s, strlen(s));
}

int strbuf_vappendf(strbuf *b, const char *fmt, va_list ap)
{
    int rc = -1;
    char small[512];
    va_list again;
    va_copy(again, ap);
    if (b->failed)
        goto out;
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        b->failed = STRBUF_NO_MEMORY; /* vsnprintf fails on allocation or an encoding error */
        goto out;
    }
    if ((size_t)n < sizeof small) {
        rc = strbuf_append(b, small, (size_t)n);
        goto out;
    }
    /* Longer than the stack buffer: format straight into the reserved tail. */
    if (strbuf_reserve(b, (size_t)n) != 0)
        goto out;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    b->len += (size_t)n;
    rc = 0;
out:
    va_end(again);
    return rc;
}

int strbuf_appendf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = strbuf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *strbuf_str(const strbuf *b)
{
    return b->data ? b->data : "";
}

char *strbuf_take(strbuf *b)
{
    char *p = NULL;
    if (!b->failed) {
        p = b->data ? b->data : calloc(1, 1);
        b->data = NULL;
    }
    strbuf_release(b);
    return p;
}
