/* core/base64 — RFC 4648 base64 (the standard alphabet, '=' padding), the one encoding of binary
 * data in JSON: a kernel's uploaded data files (POST /v1/kernels "data", the kernel_versions
 * table) and the runner's measure requests. Pure functions; the caller frees what they return. */
#ifndef KT_CORE_BASE64_H
#define KT_CORE_BASE64_H

#include <stddef.h>

/* Bytes that base64 text of n characters decodes to at most (n / 4 * 3). */
size_t kt_base64_decoded_max(size_t n);
/* The text of len bytes, NUL-terminated (malloc'd; *out_len its length when out_len is not NULL),
 * or NULL when out of memory. */
char *kt_base64_encode(const void *bytes, size_t len, size_t *out_len);
/* Decodes n characters of text (whitespace not accepted; padding required: a multiple of 4) into
 * out, which holds at least kt_base64_decoded_max(n) bytes. Returns the byte count, or -1 when the
 * text is not base64; *bad_at then the offset of the first character that is wrong. */
long long kt_base64_decode(const char *text, size_t n, unsigned char *out, size_t *bad_at);

#endif
