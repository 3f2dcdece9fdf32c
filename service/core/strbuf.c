/* core/strbuf — see strbuf.h. Growth is core/array's (doubling from STRBUF_FIRST bytes, never past
 * max + 1). */
#include "core/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

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
    size_t limit = b->max < SIZE_MAX ? b->max + 1 : SIZE_MAX; /* the text and its NUL */
    if (need <= b->cap)
        return 0;
    if (b->cap == 0 && need < STRBUF_FIRST) /* one first block for the usual short text */
        need = STRBUF_FIRST < limit ? STRBUF_FIRST : limit;
    if (kt_array_grow((void **)&b->data, &b->cap, need, 1, limit) != 0) {
        b->failed = STRBUF_NO_MEMORY;
        return -1;
    }
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
