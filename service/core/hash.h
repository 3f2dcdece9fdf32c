/* core/hash — 64-bit FNV-1a, the one hash behind cache keys and result keys (compiled-kernel cache
 * names, kernel and dataset hashes). Not cryptographic: it names things, it does not defend against
 * forgery. Pure functions, nothing to free. */
#ifndef KT_CORE_HASH_H
#define KT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KT_FNV1A_OFFSET 0xcbf29ce484222325ULL

/* Continues hash h over n bytes of data (start with KT_FNV1A_OFFSET). */
uint64_t kt_fnv1a(uint64_t h, const void *data, size_t n);
/* Hashes the length first, then the bytes, so that a sequence of fields cannot collide with another
 * split of the same bytes. */
uint64_t kt_fnv1a_field(uint64_t h, const void *data, size_t n);

#endif
