#include "core/hash.h"

uint64_t kt_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t kt_fnv1a_field(uint64_t h, const void *data, size_t n)
{
    uint64_t len = n;
    h = kt_fnv1a(h, &len, sizeof len);
    return kt_fnv1a(h, data, n);
}
