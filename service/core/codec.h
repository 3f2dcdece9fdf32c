/* core/codec — the byte codec of stored models (model/seq2seq_io.c, model/surrogate_io.c): unsigned
 * integers of 1 to 8 bytes and doubles, little-endian whatever the host, and u32-length texts,
 * appended to a strbuf; read back through a cursor that fails, and stays failed, at the first read
 * past the end (the caller checks `bad` once, after a run of reads).
 *
 * Writers append to a caller's strbuf (its own failure flag records a full buffer). A reader
 * borrows its buffer; codec_get_text returns a malloc'd copy the caller frees. */
#ifndef KT_CORE_CODEC_H
#define KT_CORE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

void codec_put_uint(strbuf *out, uint64_t v, int bytes);
void codec_put_f64(strbuf *out, double d);
/* u32 length, then the bytes (no NUL). */
void codec_put_text(strbuf *out, const char *t);

typedef struct codec_reader {
    const unsigned char *buf;
    size_t len, pos;
    int bad; /* a read ran past the end or found a bad text: every later read answers 0 */
} codec_reader;

/* A reader of len bytes of buf from pos. */
codec_reader codec_reader_at(const void *buf, size_t len, size_t pos);
uint64_t codec_get_uint(codec_reader *r, int bytes);
double codec_get_f64(codec_reader *r);
/* A NUL-terminated copy of a u32-length text of 1 to max bytes without an embedded NUL; NULL
 * (and r->bad) otherwise. Owned by the caller. */
char *codec_get_text(codec_reader *r, size_t max);

#endif
