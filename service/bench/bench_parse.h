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

/* The predictors of --predictors when it is not given. */
#define BENCH_PREDICTORS_ALL "seq2seq,nearest,common,xgb,local,ensemble"

/* One mode's arguments. selectors: the flags that choose the mode (NULL-terminated; NULL: the
 * default mode). defaults fills the options struct; check (NULL: none) runs once every option is
 * read (required options, exclusions): 0, or -1 with msg; usage prints the mode's --help (NULL:
 * kt_opt_usage of table; the offline mode's prints every mode's). */
typedef struct bench_args {
    const char *const *selectors;
    const kt_opt_table *table;
    void (*defaults)(void *opts);
    int (*check)(void *opts, char *msg, size_t cap);
    void (*usage)(FILE *out);
} bench_args;

/* Rows that several modes' option tables share (core/options.h's rows), T the mode's options
 * struct; fl the KT_OPT_* flags, h the help (NULL: not in --help). */
#define BENCH_OPT_BUDGET(T, fl, h)                                                                 \
    KT_OPT_ROW_INT("--budget", offsetof(T, budget), 1, BENCH_MAX_BUDGET, fl, "--budget N", h)
#define BENCH_OPT_SEEDS(T, fl, h)                                                                  \
    KT_OPT_ROW_INT("--seeds", offsetof(T, seeds), 1, BENCH_MAX_SEEDS, fl, "--seeds N", h)
#define BENCH_OPT_SEED(T, h) KT_OPT_ROW_SEED("--seed", offsetof(T, seed), "--seed N", h)
#define BENCH_OPT_JSON(T, fl, h)                                                                   \
    KT_OPT_ROW_STRING("--json", offsetof(T, json_path), 0, fl, "--json FILE", h)
#define BENCH_OPT_FROM_JSON(T, h)                                                                  \
    KT_OPT_ROW_STRING("--from-json", offsetof(T, from_json), 0, 0, "--from-json FILE", h)
#define BENCH_OPT_HYPER(T, h)                                                                      \
    KT_OPT_ROW_STRING("--hyper", offsetof(T, hyper), 0, 0, "--hyper JSON", h)
#define BENCH_OPT_LOG_LEVEL(T, fl, h)                                                              \
    KT_OPT_ROW_CALLBACK("--log-level", offsetof(T, log_level), 0, fl, bench_opt_log_level,         \
                        "--log-level L", h)
#define BENCH_OPT_TEST_FRACTION(T, h)                                                              \
    KT_OPT_ROW_DOUBLE("--test-fraction", offsetof(T, test_fraction), 0, 1,                         \
                      KT_OPT_OPEN_LO | KT_OPT_OPEN_HI, "--test-fraction F", h)
/* --strategies: cb bench_opt_strategies or bench_opt_strategies_new; h may hold a %s, the
 * strategies there are (searcher_names, search/searcher.h). */
#define BENCH_OPT_STRATEGIES(T, fl, cb_, h)                                                        \
    {                                                                                              \
        .name = "--strategies", .kind = KT_OPT_CALLBACK, .offset = offsetof(T, strategies),        \
        .count_offset = offsetof(T, n_strategies), .flags = (fl), .cb = (cb_),                     \
        .arg = "--strategies LIST", .help = (h), .help_arg = searcher_names                        \
    }
/* --predictors into char names[cap][BENCH_PREDICTOR_NAME] with its int count; h holds a %s, the
 * predictors there are (predictor_kinds, model/predictor.h). */
#define BENCH_OPT_PREDICTORS(T, names, count, cap, h)                                              \
    {                                                                                              \
        .name = "--predictors", .kind = KT_OPT_CALLBACK, .offset = offsetof(T, names),             \
        .count_offset = offsetof(T, count), .hi = (cap), .cb = bench_opt_predictors,               \
        .arg = "--predictors LIST", .help = (h), .help_arg = predictor_kinds                       \
    }
#define BENCH_PREDICTOR_NAME 16

/* Parses the arguments after "bench" (argv[0]) into opts. Returns 0, 1 when --help was asked
 * (usage printed to out), or -1 with a message in msg (a usage error: exit code 2). opts keeps
 * pointers into argv. */
int bench_args_parse(const bench_args *a, int argc, char **argv, void *opts, char *msg, size_t cap,
                     FILE *out);
/* 1 when argv[1..argc-1] holds one of the names (NULL-terminated). */
int bench_args_has(int argc, char **argv, const char *const *names);
/* 1 when the arguments after "bench" ask for a's mode (one of its selectors is given). */
int bench_args_wanted(const bench_args *a, int argc, char **argv);
/* a's part of `ktune bench --help`. */
void bench_args_usage(const bench_args *a, FILE *out);

/* A comma-separated list of names (each shorter than width, at most cap, none twice unless dups)
 * into names[cap][width] (flat), *n set: 0, or -1 with a message naming flag in msg ("bad list",
 * "given twice", "trailing comma", "empty list"). */
int bench_parse_list(const char *flag, const char *list, char *names, int width, int cap, int *n,
                     int dups, char *msg, size_t mcap);
/* A --predictors list (bench_parse_list, each a predictor_kind_exists) into
 * names[cap][BENCH_PREDICTOR_NAME]: 0, or -1 with msg. */
int bench_parse_predictors(const char *list, char (*names)[BENCH_PREDICTOR_NAME], int cap, int *n,
                           char *msg, size_t mcap);

/* Parses a comma-separated list of strategies (each a name known to searcher_exists or a named
 * variant STRATEGY/KEY=VALUE..., bench_strategy.h; none twice) into
 * names[*n_names...], at most BENCH_MAX_STRATEGIES in all. Returns 0, or -1 with a message in msg.
 */
int bench_parse_strategy_list(const char *list, char (*names)[64], int *n_names, char *msg,
                              size_t cap);
/* Option callbacks (core/options.h, KT_OPT_CALLBACK). bench_opt_strategies: a --strategies list
 * appended to char [BENCH_MAX_STRATEGIES][64] at o->offset, its int count at o->count_offset;
 * bench_opt_strategies_new: the same, the list given last replacing any before;
 * bench_opt_log_level: debug, info, warn or error, kept as const char * at o->offset;
 * bench_opt_predictors: bench_parse_predictors into the names at o->offset, o->hi of them at most,
 * the count at o->count_offset. */
int bench_opt_predictors(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
int bench_opt_strategies(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
int bench_opt_strategies_new(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
int bench_opt_log_level(void *opts, const kt_option *o, const char *v, char *msg, size_t cap);
/* The value val of the flag name ("--budget"), a decimal integer in lo..hi (core/number.h's
 * strict rule); 0, or -1 with "<name>: '<val>' is not an integer in lo-hi" in msg (the message
 * of kt_opt_parse's KT_OPT_INT), for values inside a list. */
int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap);

#endif
