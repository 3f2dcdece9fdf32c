/* bench/offline/bench_kt — the Kernel Tuner reference (see bench_kt.h). */
#include "bench/offline/bench_kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_CSV_LINE 1024

json_t *bench_kt_read(const char *path)
{
    FILE *f = fopen(path, "r");
    json_t *ref = NULL;
    char line[BENCH_CSV_LINE];

    if (!f)
        goto out;
    ref = json_object();
    while (ref && fgets(line, sizeof line, f)) {
        char *fields[5], *save = NULL, *tok = strtok_r(line, ",\r\n", &save);
        int n = 0;
        while (tok && n < 5) {
            fields[n++] = tok;
            tok = strtok_r(NULL, ",\r\n", &save);
        }
        char *end = NULL;
        double x = n == 5 ? strtod(fields[4], &end) : NAN;
        if (n != 5 || !end || *end || !isfinite(x))
            continue; /* the header, or a malformed line */
        json_t *st = json_object_get(ref, fields[2]);
        if (!st) {
            st = json_object();
            json_object_set_new(ref, fields[2], st);
        }
        json_t *sp = json_object_get(st, fields[1]);
        if (!sp) {
            sp = json_object();
            json_object_set_new(st, fields[1], sp);
        }
        json_object_set_new(sp, fields[3], json_real(x));
    }
out:
    if (f)
        fclose(f);
    return ref;
}

size_t bench_kt_strategies(const json_t *ref)
{
    return json_object_size(ref);
}

/* The best strategy at budget key: mean over the n names (a strategy counts only with all). */
static json_t *bench_kt_best(const json_t *ref, const char *const *names, size_t n, const char *key)
{
    double best = -1;
    const char *best_name = NULL, *sname;
    json_t *st;

    json_object_foreach((json_t *)ref, sname, st)
    {
        double sum = 0;
        size_t k = 0;
        while (k < n) {
            const json_t *v = json_object_get(json_object_get(st, names[k]), key);
            if (!json_is_number(v))
                break;
            sum += json_number_value(v);
            k++;
        }
        if (n > 0 && k == n && sum / (double)n > best) {
            best = sum / (double)n;
            best_name = sname;
        }
    }
    return best_name ? json_pack("{s:s, s:f}", "strategy", best_name, "fraction", best) : NULL;
}

static json_t *bench_kt_per_checkpoint(const json_t *ref, const char *const *names, size_t n,
                                       const json_t *checkpoints)
{
    json_t *o = json_object(), *cp;
    size_t i;
    json_array_foreach(checkpoints, i, cp)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
        json_t *b = bench_kt_best(ref, names, n, key);
        if (o && b)
            json_object_set_new(o, key, b);
        else
            json_decref(b);
    }
    return o;
}

json_t *bench_kt_space_best(const json_t *ref, const char *space, const json_t *checkpoints)
{
    const char *names[1] = {space};
    return bench_kt_per_checkpoint(ref, names, 1, checkpoints);
}

json_t *bench_kt_mean_best(const json_t *ref, const json_t *spaces, const json_t *checkpoints)
{
    size_t n = json_array_size(spaces), i;
    const char **names = calloc(n ? n : 1, sizeof *names);
    json_t *sp, *res = NULL;
    if (!names)
        return NULL;
    json_array_foreach(spaces, i, sp)
    {
        names[i] = json_string_value(json_object_get(sp, "name"));
        if (!names[i])
            names[i] = "";
    }
    res = bench_kt_per_checkpoint(ref, names, n, checkpoints);
    free(names);
    return res;
}
