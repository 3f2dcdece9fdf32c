/* core/array — growth of heap arrays, written once: capacity doubles, is capped, and the size in
 * bytes is checked for overflow. The caller owns the array and frees it with free().
 *
 * Call order: keep (items, cap) starting at (NULL, 0); before writing element i call
 * KT_ARRAY_GROW(items, cap, i + 1, max). On failure nothing changed: the old array and capacity
 * stay valid. Parallel arrays sharing one capacity take kt_array_next_cap once, then
 * kt_array_resize each array, and store the capacity only when every resize succeeded. */
#ifndef KT_CORE_ARRAY_H
#define KT_CORE_ARRAY_H

#include <stddef.h>

/* First capacity of an empty array. */
#define KT_ARRAY_FIRST 16

/* The capacity to grow to for need elements: cap (or KT_ARRAY_FIRST) doubled until it holds need,
 * then clipped to max. 0 when need > max. Returns cap itself when need <= cap. */
size_t kt_array_next_cap(size_t cap, size_t need, size_t max);
/* realloc(*items, n * elem_size), refusing an overflowing size. 0, or -1 with *items unchanged. */
int kt_array_resize(void **items, size_t n, size_t elem_size);
/* Makes *items hold at least need elements of elem_size bytes, at most max elements. 0, or -1 (need
 * above max, size overflow, out of memory) with *items and *cap unchanged. */
int kt_array_grow(void **items, size_t *cap, size_t need, size_t elem_size, size_t max);

/* arr: a typed pointer lvalue; cap: a size_t lvalue. */
#define KT_ARRAY_GROW(arr, cap, need, max)                                                         \
    kt_array_grow((void **)&(arr), &(cap), (need), sizeof *(arr), (max))

#endif
