/* bench/bench_parse — the limits of `ktune bench` and the argument helpers both modes share
 * (offline: bench_args.h, device: bench_device_args.h). */
#ifndef KT_BENCH_PARSE_H
#define KT_BENCH_PARSE_H

#include <stddef.h>

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
/* A decimal integer in lo..hi into *out; 0, or -1 when s is not one. */
int bench_parse_int(const char *s, int lo, int hi, int *out);
/* The value val of the flag name ("--budget") as bench_parse_int; 0, or -1 with "<name>: '<val>'
 * is not an integer in lo-hi" in msg. */
int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap);

#endif
