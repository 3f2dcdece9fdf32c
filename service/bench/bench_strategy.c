/* bench/bench_strategy — strategy entries and named variants of --strategies (see
 * bench_strategy.h). */
#include "bench/bench_strategy.h"

#include <stdio.h>
#include <string.h>

#define BENCH_STRATEGY_MAX 64 /* characters of an entry, as the lists store them */

int bench_strategy_is_variant(const char *entry)
{
    return strchr(entry, '/') != NULL;
}

/* One KEY=VALUE of [p, end) into o. 0, or -1 with msg. */
static int bench_strategy_pair(const char *entry, const char *p, const char *end, json_t *o,
                               char *msg, size_t mcap)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));
    char key[BENCH_STRATEGY_MAX], val[BENCH_STRATEGY_MAX];
    json_t *v;

    if (!eq || eq == p || eq + 1 == end) {
        snprintf(msg, mcap, "--strategies: '%.64s': '%.*s' is not KEY=VALUE", entry, (int)(end - p),
                 p);
        return -1;
    }
    memcpy(key, p, (size_t)(eq - p));
    key[eq - p] = '\0';
    memcpy(val, eq + 1, (size_t)(end - eq - 1));
    val[end - eq - 1] = '\0';
    v = json_loads(val, JSON_DECODE_ANY, NULL);
    if (!v || json_is_object(v) || json_is_array(v) || json_is_string(v)) {
        json_decref(v);
        v = json_string(val); /* critic=none: a bare word is a string */
    }
    if (!v || json_object_set_new(o, key, v) < 0) {
        snprintf(msg, mcap, "--strategies: out of memory");
        return -1;
    }
    return 0;
}

int bench_strategy_split(const char *entry, char *base, size_t cap, json_t **options, char *msg,
                         size_t mcap)
{
    const char *slash = strchr(entry, '/'), *p;
    size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
    json_t *o = NULL;
    int rc = -1;

    *options = NULL;
    if (n == 0 || n >= cap || strlen(entry) >= BENCH_STRATEGY_MAX) {
        snprintf(msg, mcap, "--strategies: empty or too long entry '%.64s'", entry);
        goto out;
    }
    memcpy(base, entry, n);
    base[n] = '\0';
    if (slash) {
        if (!(o = json_object())) {
            snprintf(msg, mcap, "--strategies: out of memory");
            goto out;
        }
        for (p = slash + 1;; p++) {
            const char *end = strchr(p, '/');
            end = end ? end : p + strlen(p);
            if (bench_strategy_pair(entry, p, end, o, msg, mcap) < 0)
                goto out;
            if (!*end)
                break;
            p = end;
        }
    }
    *options = o;
    o = NULL;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

int bench_strategy_option_known(const char *strategy, const char *name, char *list, size_t cap)
{
    json_t *cat = searcher_catalog_json(), *e, *opts;
    size_t i, used = 0;
    const char *k;
    int found = 0;

    list[0] = '\0';
    json_array_foreach(cat, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), strategy) != 0)
            continue;
        opts = json_object_get(e, "options");
        json_object_foreach(opts, k, e)
        {
            int w;
            found |= strcmp(k, name) == 0;
            w = snprintf(list + used, cap - used, "%s%s", used ? ", " : "", k);
            if (w > 0 && (size_t)w < cap - used)
                used += (size_t)w;
        }
        break;
    }
    json_decref(cat);
    return found;
}

int bench_strategy_check(const char *entry, char *msg, size_t mcap)
{
    char base[BENCH_STRATEGY_MAX], list[512];
    json_t *o = NULL, *v;
    const char *k;
    int rc = -1;

    if (bench_strategy_split(entry, base, sizeof base, &o, msg, mcap) < 0)
        goto out;
    if (!searcher_exists(base)) {
        snprintf(msg, mcap, "--strategies: unknown strategy '%s' (strategies: %s)", base,
                 searcher_names());
        goto out;
    }
    json_object_foreach(o, k, v)
    {
        if (!bench_strategy_option_known(base, k, list, sizeof list)) {
            snprintf(msg, mcap, "--strategies %s: strategy %s has no option '%.64s' (options: %s)",
                     entry, base, k, list[0] ? list : "none");
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(o);
    return rc;
}

searcher *bench_strategy_searcher_new(const char *entry, const space *sp, uint64_t seed,
                                      kt_error *err)
{
    char base[BENCH_STRATEGY_MAX], msg[256];
    json_t *o = NULL;
    searcher *s = NULL;

    if (bench_strategy_split(entry, base, sizeof base, &o, msg, sizeof msg) < 0) {
        kt_error_set(err, KT_ERR_BAD_OPTION, "%s", msg);
        goto out;
    }
    s = searcher_new(base, sp, o, seed, err);
out:
    json_decref(o);
    return s;
}

int bench_strategy_needs_surrogate(const char *entry)
{
    char base[BENCH_STRATEGY_MAX], msg[256];
    json_t *o = NULL;
    int need = 0;

    if (bench_strategy_split(entry, base, sizeof base, &o, msg, sizeof msg) == 0)
        need = searcher_needs_surrogate(base);
    json_decref(o);
    return need;
}
