/* core/base64 — RFC 4648 base64 encode and decode (base64.h). */
#include "core/base64.h"

#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t kt_base64_decoded_max(size_t n)
{
    return n / 4 * 3;
}

char *kt_base64_encode(const void *bytes, size_t len, size_t *out_len)
{
    const unsigned char *p = bytes;
    size_t n = (len + 2) / 3 * 4, o = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

static int value_of(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long long kt_base64_decode(const char *text, size_t n, unsigned char *out, size_t *bad_at)
{
    size_t o = 0;
    if (n % 4 != 0) {
        if (bad_at)
            *bad_at = n;
        return -1;
    }
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = text[i + j];
            /* '=' only at the end: the last one or two characters of the last group */
            if (c == '=' && i + 4 == n && j >= 2 && (j == 3 || text[i + 3] == '=')) {
                v[j] = 0;
                pad++;
                continue;
            }
            if ((v[j] = value_of(c)) < 0 || pad) {
                if (bad_at)
                    *bad_at = i + (size_t)j;
                return -1;
            }
        }
        unsigned w =
            (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    return (long long)o;
}
