/* core/sha256 — SHA-256 (FIPS 180-4), for API token hashes (store/token_store.c, api/tokens.c),
 * and a constant-time comparison of digests. Pure functions, nothing to free. */
#ifndef KT_CORE_SHA256_H
#define KT_CORE_SHA256_H

#include <stddef.h>

#define KT_SHA256_SIZE 32

/* out = SHA-256 of n bytes of data. */
void kt_sha256(const void *data, size_t n, unsigned char out[KT_SHA256_SIZE]);
/* 1 when the digests are equal; the time taken does not depend on where they differ. */
int kt_sha256_equal(const unsigned char a[KT_SHA256_SIZE], const unsigned char b[KT_SHA256_SIZE]);

#endif
