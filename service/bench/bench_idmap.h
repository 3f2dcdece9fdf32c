/* bench/bench_idmap — a map from configuration id to a non-negative int (an index into the caller's
 * array), open addressing, grown as needed. Used by `ktune bench --device` for the measurement
 * cache (id -> entry) and for each run's distinct evaluations (id -> evaluation), whose spaces are
 * too large for a flag per configuration.
 *
 * Lifecycle: bench_idmap_init -> bench_idmap_put / bench_idmap_get -> bench_idmap_release. The map
 * owns its table; nothing it returns needs freeing. */
#ifndef KT_BENCH_IDMAP_H
#define KT_BENCH_IDMAP_H

#include <stddef.h>

#include "space/space.h"

typedef struct bench_idmap {
    config_id *keys;
    int *vals; /* -1: empty slot */
    size_t cap;
    size_t n;
} bench_idmap;

void bench_idmap_init(bench_idmap *m);
/* Sets id -> val (val >= 0), replacing an earlier value. Returns 0, or -1 when out of memory. */
int bench_idmap_put(bench_idmap *m, config_id id, int val);
/* The value of id, or -1 when absent. */
int bench_idmap_get(const bench_idmap *m, config_id id);
void bench_idmap_release(bench_idmap *m);

#endif
