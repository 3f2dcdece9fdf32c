/* bench/bench_parse — the limits of `ktune bench` and the argument helpers both modes share
 * (offline: bench_args.h, device: bench_device_args.h). */
#ifndef KT_BENCH_PARSE_H
#define KT_BENCH_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_BUDGET     100000
#define BENCH_MAX_SEEDS      1000
#define BENCH_MAX_SPACES     256
#define BENCH_MAX_STRATEGIES 32
#define BENCH_MAX_PATH       4096

/* Parses a comma-separated list of strategies (each known to searcher_exists, none twice) into
 * names[*n_names...], at most BENCH_MAX_STRATEGIES in all. Returns 0, or -1 with a message in msg.
 * Shared with the device mode (bench_device.h). */
int bench_parse_strategy_list(const char *list, char (*names)[64], int *n_names, char *msg,
                              size_t cap);
/* The value val of the flag name ("--budget"), a decimal integer in lo..hi (core/number.h's
 * strict rule); 0, or -1 with "<name>: '<val>' is not an integer in lo-hi" in msg. */
int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap);
/* The same for a finite number in [lo, hi]. */
int bench_double_flag(const char *name, const char *val, double lo, double hi, double *out,
                      char *msg, size_t cap);
/* The same for a seed: a non-negative integer up to 2^64 - 1. */
int bench_seed_flag(const char *name, const char *val, uint64_t *out, char *msg, size_t cap);

#endif
