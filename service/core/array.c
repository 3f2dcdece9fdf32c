/* core/array — see array.h. */
#include "core/array.h"

#include <stdint.h>
#include <stdlib.h>

size_t kt_array_next_cap(size_t cap, size_t need, size_t max)
{
    if (need > max)
        return 0;
    if (need <= cap)
        return cap;
    size_t n = cap ? cap : KT_ARRAY_FIRST;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    return n > max ? max : n;
}

int kt_array_resize(void **items, size_t n, size_t elem_size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, elem_size, &bytes) || bytes == 0)
        return -1;
    void *p = realloc(*items, bytes);
    if (!p)
        return -1;
    *items = p;
    return 0;
}

int kt_array_grow(void **items, size_t *cap, size_t need, size_t elem_size, size_t max)
{
    if (need <= *cap)
        return 0;
    size_t n = kt_array_next_cap(*cap, need, max);
    if (n == 0 || kt_array_resize(items, n, elem_size) != 0)
        return -1;
    *cap = n;
    return 0;
}
