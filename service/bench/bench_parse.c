/* bench/bench_parse — what the argument tables of every `ktune bench` mode share (see
 * bench_parse.h). */
#include "bench/bench_parse.h"
#include "bench/bench_strategy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/number.h"
#include "model/predictor.h"
#include "search/searcher.h"

int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap)
{
    if (kt_parse_int(val, lo, hi, out) == 0)
        return 0;
    snprintf(msg, cap, "%s: '%.64s' is not an integer in %d-%d", name, val, lo, hi);
    return -1;
}

int bench_args_parse(const bench_args *a, int argc, char **argv, void *opts, char *msg, size_t cap,
                     FILE *out)
{
    int rc;
    msg[0] = '\0';
    a->defaults(opts);
    rc = kt_opt_parse(a->table, argc, argv, opts, msg, cap);
    if (rc == 1)
        bench_args_usage(a, out);
    else if (rc == 0 && a->check && a->check(opts, msg, cap) < 0)
        rc = -1;
    return rc;
}

int bench_args_has(int argc, char **argv, const char *const *names)
{
    for (int i = 1; i < argc; i++) {
        for (const char *const *n = names; *n; n++) {
            if (strcmp(argv[i], *n) == 0)
                return 1;
        }
    }
    return 0;
}

int bench_args_wanted(const bench_args *a, int argc, char **argv)
{
    return a->selectors && bench_args_has(argc, argv, a->selectors);
}

void bench_args_usage(const bench_args *a, FILE *out)
{
    if (a->usage)
        a->usage(out);
    else
        kt_opt_usage(a->table, out);
}

int bench_parse_list(const char *flag, const char *list, char *names, int width, int cap, int *n,
                     int dups, char *msg, size_t mcap)
{
    const char *p = list;
    *n = 0;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= (size_t)width || *n == cap) {
            snprintf(msg, mcap, "%s: bad list '%.200s' (at most %d names of < %d characters)", flag,
                     list, cap, width);
            return -1;
        }
        char *dst = names + (size_t)*n * (size_t)width;
        memcpy(dst, p, len);
        dst[len] = '\0';
        for (int i = 0; !dups && i < *n; i++) {
            if (strcmp(names + (size_t)i * (size_t)width, dst) == 0) {
                snprintf(msg, mcap, "%s: '%s' given twice", flag, dst);
                return -1;
            }
        }
        (*n)++;
        p += len;
        if (*p == ',' && !*++p) {
            snprintf(msg, mcap, "%s: trailing comma", flag);
            return -1;
        }
    }
    if (*n == 0) {
        snprintf(msg, mcap, "%s: empty list", flag);
        return -1;
    }
    return 0;
}

int bench_parse_predictors(const char *list, char (*names)[BENCH_PREDICTOR_NAME], int cap, int *n,
                           char *msg, size_t mcap)
{
    if (bench_parse_list("--predictors", list, &names[0][0], BENCH_PREDICTOR_NAME, cap, n, 0, msg,
                         mcap) < 0)
        return -1;
    for (int i = 0; i < *n; i++) {
        if (!predictor_kind_exists(names[i])) {
            snprintf(msg, mcap, "--predictors: unknown predictor '%s' (predictors: %s)", names[i],
                     predictor_kinds());
            return -1;
        }
    }
    return 0;
}

int bench_opt_predictors(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    return bench_parse_predictors(v, (char(*)[BENCH_PREDICTOR_NAME])((char *)opts + o->offset),
                                  (int)o->hi, (int *)((char *)opts + o->count_offset), msg, cap);
}

int bench_opt_strategies(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    return bench_parse_strategy_list(v, (char(*)[64])((char *)opts + o->offset),
                                     (int *)((char *)opts + o->count_offset), msg, cap);
}

int bench_opt_strategies_new(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    *(int *)((char *)opts + o->count_offset) = 0;
    return bench_opt_strategies(opts, o, v, msg, cap);
}

int bench_opt_log_level(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    kt_log_level l;
    if (kt_log_parse_level(v, &l) < 0) {
        snprintf(msg, cap, "%s: '%.64s' is not debug, info, warn or error", o->name, v);
        return -1;
    }
    *(const char **)((char *)opts + o->offset) = v;
    return 0;
}

int bench_parse_strategy_list(const char *list, char (*names)[64], int *n_names, char *msg,
                              size_t cap)
{
    const char *p = list;
    int rc = -1;

    if (!*list) {
        snprintf(msg, cap, "--strategies: empty list (strategies: %s)", searcher_names());
        goto out;
    }
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        char name[64];
        if (n == 0 || n >= sizeof name) {
            snprintf(msg, cap, "--strategies: empty or too long name in '%.200s'", list);
            goto out;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (bench_strategy_check(name, msg, cap) < 0) /* a name or a named variant */
            goto out;
        for (int i = 0; i < *n_names; i++) {
            if (strcmp(names[i], name) == 0) {
                snprintf(msg, cap, "--strategies: '%s' given twice", name);
                goto out;
            }
        }
        if (*n_names >= BENCH_MAX_STRATEGIES) {
            snprintf(msg, cap, "--strategies: at most %d strategies", BENCH_MAX_STRATEGIES);
            goto out;
        }
        memcpy(names[(*n_names)++], name, n + 1);
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(msg, cap, "--strategies: trailing comma in '%.200s'", list);
                goto out;
            }
        }
    }
    rc = 0;
out:
    return rc;
}
