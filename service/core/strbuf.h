/* core/strbuf — a growable string buffer with a cap, for text built piece by piece (response
 * headers, the /metrics page, JSON pages written row by row, HTTP bodies being received).
 *
 * Call order: strbuf_init(&b, max), then strbuf_append/puts/appendf any number of times, then
 * either strbuf_take (the caller owns and frees the text) or strbuf_release (frees it). The buffer
 * owns b.data until taken. A failure is sticky: once an append would pass max bytes, or memory runs
 * out, b.failed says why and every later append does nothing, so a builder checks once at the end.
 * b.data is NUL-terminated whenever it is not NULL; strbuf_str never returns NULL. */
#ifndef KT_CORE_STRBUF_H
#define KT_CORE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

enum { STRBUF_OK = 0, STRBUF_TOO_LONG = 1, STRBUF_NO_MEMORY = 2 };

typedef struct strbuf {
    char *data; /* NUL-terminated text, or NULL before the first append; owned */
    size_t len; /* bytes of text, never above max */
    size_t cap; /* bytes allocated */
    size_t max; /* the most bytes of text the buffer may hold */
    int failed; /* STRBUF_OK, or why an append was refused (sticky) */
} strbuf;

/* An empty buffer holding at most max bytes of text (the NUL not counted). */
void strbuf_init(strbuf *b, size_t max);
/* Frees the text and leaves b empty, ready for strbuf_init or another use with the same max. */
void strbuf_release(strbuf *b);
/* Room for extra more bytes; 0, or -1 with b->failed set. */
int strbuf_reserve(strbuf *b, size_t extra);
/* Appends n bytes of s; 0, or -1 (nothing appended) with b->failed set. */
int strbuf_append(strbuf *b, const char *s, size_t n);
int strbuf_puts(strbuf *b, const char *s);
int strbuf_appendf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vappendf(strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The text so far ("" when empty). Valid until the next append or release. */
const char *strbuf_str(const strbuf *b);
/* Hands the text to the caller (free it; "" allocated when empty) and resets b. NULL when an append
 * failed or memory ran out: the text would be incomplete. */
char *strbuf_take(strbuf *b);

#endif
