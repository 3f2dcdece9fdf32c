/* bench/bench_idmap — configuration id -> int map (see bench_idmap.h). */
#include "bench/bench_idmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_IDMAP_MIN_CAP 64

static size_t idmap_slot(config_id id, size_t cap)
{
    uint64_t h = id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing spreads dense ids */
    return (size_t)(h >> 17) & (cap - 1);
}

void bench_idmap_init(bench_idmap *m)
{
    memset(m, 0, sizeof *m);
}

void bench_idmap_release(bench_idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static void idmap_insert(config_id *keys, int *vals, size_t cap, config_id id, int val, int *added)
{
    size_t i = idmap_slot(id, cap);
    while (vals[i] >= 0 && keys[i] != id)
        i = (i + 1) & (cap - 1);
    *added = vals[i] < 0;
    keys[i] = id;
    vals[i] = val;
}

/* Doubles the table (keeps the load at most 1/2, so probes stay short). */
static int idmap_grow(bench_idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : BENCH_IDMAP_MIN_CAP;
    config_id *keys = malloc(cap * sizeof *keys);
    int *vals = malloc(cap * sizeof *vals);
    int rc = -1, added;

    if (!keys || !vals || cap < m->cap)
        goto out;
    for (size_t i = 0; i < cap; i++)
        vals[i] = -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->vals[i] >= 0)
            idmap_insert(keys, vals, cap, m->keys[i], m->vals[i], &added);
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    keys = NULL;
    vals = NULL;
    rc = 0;
out:
    free(keys);
    free(vals);
    return rc;
}

int bench_idmap_put(bench_idmap *m, config_id id, int val)
{
    int added = 0;
    if (val < 0)
        return -1;
    if ((m->n + 1) * 2 > m->cap && idmap_grow(m) < 0)
        return -1;
    idmap_insert(m->keys, m->vals, m->cap, id, val, &added);
    m->n += (size_t)added;
    return 0;
}

int bench_idmap_get(const bench_idmap *m, config_id id)
{
    if (!m->cap)
        return -1;
    size_t i = idmap_slot(id, m->cap);
    while (m->vals[i] >= 0) {
        if (m->keys[i] == id)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}
