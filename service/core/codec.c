/* core/codec — little-endian integers, doubles and texts for stored models (see codec.h). */
#include "core/codec.h"

#include <stdlib.h>
#include <string.h>

void codec_put_uint(strbuf *out, uint64_t v, int bytes)
{
    char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (char)(unsigned char)(v >> (8 * i));
    strbuf_append(out, b, (size_t)bytes);
}

void codec_put_f64(strbuf *out, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    codec_put_uint(out, v, 8);
}

void codec_put_text(strbuf *out, const char *t)
{
    codec_put_uint(out, strlen(t), 4);
    strbuf_append(out, t, strlen(t));
}

codec_reader codec_reader_at(const void *buf, size_t len, size_t pos)
{
    codec_reader r = {.buf = buf, .len = len, .pos = pos, .bad = pos > len};
    return r;
}

uint64_t codec_get_uint(codec_reader *r, int bytes)
{
    uint64_t v = 0;
    if (r->bad || r->len - r->pos < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->buf[r->pos + (size_t)i] << (8 * i);
    r->pos += (size_t)bytes;
    return v;
}

double codec_get_f64(codec_reader *r)
{
    uint64_t v = codec_get_uint(r, 8);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

char *codec_get_text(codec_reader *r, size_t max)
{
    char *t = NULL;
    uint64_t n = codec_get_uint(r, 4);
    if (r->bad || n == 0 || n > max || r->len - r->pos < n)
        goto bad;
    if (!(t = malloc((size_t)n + 1)))
        goto bad;
    memcpy(t, r->buf + r->pos, (size_t)n);
    t[n] = '\0';
    if (strlen(t) != (size_t)n) /* an embedded NUL */
        goto bad;
    r->pos += (size_t)n;
    return t;
bad:
    free(t);
    r->bad = 1;
    return NULL;
}
