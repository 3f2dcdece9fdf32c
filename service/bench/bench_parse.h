/* bench/bench_parse — the limits of `ktune bench` and what every mode's argument table shares: the
 * option callbacks of the strategy list and the log level, and bench_args_parse, one mode's
 * parsing (its defaults, the one table parser of core/options.h, its cross-option checks, its
 * --help). Each mode declares a bench_args in its *_args.c. */
#ifndef KT_BENCH_PARSE_H
#define KT_BENCH_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/options.h"

#define BENCH_MAX_BUDGET     100000
#define BENCH_MAX_SEEDS      1000
#define BENCH_MAX_SPACES     256
#define BENCH_MAX_STRATEGIES 32
#define BENCH_MAX_PATH       4096

/* A macro's value as a string literal, for the help texts of the tables. */
#define BENCH_STR_(x) #x
#define BENCH_STR(x)  BENCH_STR_(x)

/* One mode's arguments. defaults fills the options struct; check (NULL: none) runs once every
 * option is read (required options, exclusions): 0, or -1 with msg; usage prints the mode's
 * --help (kt_opt_usage of table, and for the offline mode every mode's). */
typedef struct bench_args {
    const kt_opt_table *table;
    void (*defaults)(void *opts);
    int (*check)(void *opts, char *msg, size_t cap);
    void (*usage)(FILE *out);
} bench_args;

/* Parses the arguments after "bench" (argv[0]) into opts. Returns 0, 1 when --help was asked
 * (usage printed to out), or -1 with a message in msg (a usage error: exit code 2). opts keeps
 * pointers into argv. */
int bench_args_parse(const bench_args *a, int argc, char **argv, void *opts, char *msg, size_t cap,
                     FILE *out);
/* 1 when argv[1..argc-1] holds one of the names (NULL-terminated). */
int bench_args_has(int argc, char **argv, const char *const *names);

/* Parses a comma-separated list of strategies (each known to searcher_exists, none twice) into
 * names[*n_names...], at most BENCH_MAX_STRATEGIES in all. Returns 0, or -1 with a message in msg.
 */
int bench_parse_strategy_list(const char *list, char (*names)[64], int *n_names, char *msg,
                              size_t cap);
/* Option callbacks (core/options.h, KT_OPT_CALLBACK). bench_opt_strategies: a --strategies list
 * appended to char [BENCH_MAX_STRATEGIES][64] at o->offset, its int count at o->count_offset;
 * bench_opt_strategies_new: the same, the list given last replacing any before;
 * bench_opt_log_level: debug, info, warn or error, kept as const char * at o->offset. */
int bench_opt_strategies(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
int bench_opt_strategies_new(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
int bench_opt_log_level(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
/* The value val of the flag name ("--budget"), a decimal integer in lo..hi (core/number.h's
 * strict rule); 0, or -1 with "<name>: '<val>' is not an integer in lo-hi" in msg (the message
 * of kt_opt_parse's KT_OPT_INT), for values inside a list. */
int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap);

#endif
