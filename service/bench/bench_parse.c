/* bench/bench_parse — argument helpers shared by both modes of `ktune bench` (see bench_parse.h).
 */
#include "bench/bench_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/number.h"
#include "search/searcher.h"

int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap)
{
    if (kt_parse_int(val, lo, hi, out) == 0)
        return 0;
    snprintf(msg, cap, "%s: '%.64s' is not an integer in %d-%d", name, val, lo, hi);
    return -1;
}

int bench_double_flag(const char *name, const char *val, double lo, double hi, double *out,
                      char *msg, size_t cap)
{
    if (kt_parse_double(val, lo, hi, out) == 0)
        return 0;
    snprintf(msg, cap, "%s: '%.64s' is not a number in [%g, %g]", name, val, lo, hi);
    return -1;
}

int bench_seed_flag(const char *name, const char *val, uint64_t *out, char *msg, size_t cap)
{
    unsigned long long v;
    if (kt_parse_u64(val, &v) == 0) {
        *out = v;
        return 0;
    }
    snprintf(msg, cap, "%s: '%.64s' is not a non-negative integer", name, val);
    return -1;
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
        if (!searcher_exists(name)) {
            snprintf(msg, cap, "--strategies: unknown strategy '%s' (strategies: %s)", name,
                     searcher_names());
            goto out;
        }
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
