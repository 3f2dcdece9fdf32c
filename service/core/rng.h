/* core/rng — deterministic pseudo-random numbers (xoshiro256**, seeded by splitmix64). Every
 * searcher and sampler takes its randomness from an rng it owns, so a seed fixes a run. Plain
 * value: no free. */
#ifndef KT_CORE_RNG_H
#define KT_CORE_RNG_H

#include <stdint.h>

typedef struct kt_rng {
    uint64_t s[4];
} kt_rng;

void kt_rng_seed(kt_rng *r, uint64_t seed);
uint64_t kt_rng_next(kt_rng *r);
/* Uniform integer in [0, n); n > 0. Unbiased (rejection). */
uint64_t kt_rng_below(kt_rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double kt_rng_uniform(kt_rng *r);
/* Standard normal (Box–Muller). */
double kt_rng_normal(kt_rng *r);

#endif
