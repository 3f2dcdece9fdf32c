/* bench/combine/bench_combine — `ktune bench --combine`: device results combined (see
 * bench_combine.h). */
#include "bench/combine/bench_combine.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "bench/bench_stats.h"

#define COMBINE_MAX_BYTES (512L << 20)
#define COMBINE_MAX_SEEDS 1000

#define O(f) offsetof(bench_combine_options, f)

static const kt_option bench_combine_option_list[] = {
    KT_OPT_ROW_PATHS("--combine", O(files), O(n_files), 1, BENCH_COMBINE_MAX_FILES, BENCH_MAX_PATH,
                     "--combine FILE...", "--json results of `ktune bench --device` (.gz: gzip'd)"),
    KT_OPT_ROW_STRING("--test", O(test), 0, KT_OPT_NONEMPTY, "--test A,B",
                      "rows tested (Welch) against every other row [gbfs,na2c]"),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_combine_table = {
    .options = bench_combine_option_list,
    .mode = "--combine",
    .usage = "\n"
             "usage: ktune bench --combine RESULT.json[.gz]... [--test A,B]\n"
             "\n"
             "The --json results of device runs of one kernel, device and problem (rows measured\n"
             "in parts) as one report: best ms at the checkpoints, box data, Welch's t-tests.\n"};

static const char *const bench_combine_selectors[] = {"--combine", NULL};

static void bench_combine_defaults(void *o)
{
    bench_combine_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->test = "gbfs,na2c";
}

const bench_args bench_combine_args = {bench_combine_selectors, &bench_combine_table,
                                       bench_combine_defaults, NULL, NULL};

/* What makes two results one experiment: kernel, device class, problem, budget, seeds. */
static int same_experiment(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"kernel", "device_class", "problem", "budget", "seeds"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
            return 0;
    }
    return 1;
}

/* "<path>: a, b; N measured, M replayed from FILE" */
static json_t *source_line(const char *path, const json_t *d)
{
    const json_t *mc = json_object_get(d, "measure_cache");
    char names[1024] = "";
    size_t used = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(d, "strategies"), k, v)
    {
        int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", k);
        if (w > 0 && (size_t)w < sizeof names - used)
            used += (size_t)w;
    }
    return json_sprintf("%s: %s; %lld measured, %lld replayed from %s", path, names,
                        json_integer_value(json_object_get(mc, "measured")),
                        json_integer_value(json_object_get(mc, "hits")),
                        json_string_value(json_object_get(mc, "file")) ?: "");
}

/* One file into res; 0, or -1 with err. */
static int combine_one(json_t *res, const char *path, kt_error *err)
{
    json_t *first = json_object_get(res, "first"), *rows = json_object_get(res, "rows"), *d, *s;
    json_error_t je;
    const char *name;
    size_t len;
    char *text = kt_file_read_gz(path, COMBINE_MAX_BYTES, &len, err);
    int rc = -1;

    if (!text)
        return -1;
    if (!(d = json_loadb(text, len, 0, &je)) || !json_is_object(json_object_get(d, "strategies"))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: not a device result (%s)", path,
                     d ? "no strategies" : je.text);
        goto out;
    }
    if (!first) {
        json_object_set(res, "first", d);
        first = d;
    } else if (!same_experiment(d, first)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: another experiment (expected the first file's)",
                     path);
        goto out;
    }
    if (!json_equal(json_object_get(d, "time_checkpoints"),
                    json_object_get(first, "time_checkpoints")) &&
        (json_object_get(d, "time_checkpoints") || json_object_get(first, "time_checkpoints"))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: other time checkpoints", path);
        goto out;
    }
    json_array_append_new(json_object_get(res, "sources"), source_line(path, d));
    json_object_foreach(json_object_get(d, "strategies"), name, s)
    {
        if (json_object_get(rows, name)) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: row %s given twice", path, name);
            goto out;
        }
        json_object_set(rows, name, s);
    }
    rc = 0;
out:
    json_decref(d);
    free(text);
    return rc;
}

json_t *bench_combine_run(const bench_combine_options *opt, kt_error *err)
{
    json_t *res = json_pack("{s:[],s:{},s:[]}", "sources", "rows", "test");
    const char *p = opt->test;
    if (!res) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    for (int i = 0; i < opt->n_files; i++) {
        if (combine_one(res, opt->files[i], err) < 0) {
            json_decref(res);
            return NULL;
        }
    }
    while (*p) { /* the tested rows that are rows */
        size_t n = strcspn(p, ",");
        char name[64];
        if (n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            if (json_object_get(json_object_get(res, "rows"), name))
                json_array_append_new(json_object_get(res, "test"), json_string(name));
        }
        p += n + (p[n] == ',');
    }
    return res;
}

/* A row's per-seed values at a checkpoint: at most COMBINE_MAX_SEEDS; *nulls counts the seeds
 * that found nothing (JSON null), left out of v. */
static int per_seed(const json_t *point, double *v, int *nulls)
{
    size_t i;
    json_t *x;
    int n = 0;
    *nulls = 0;
    json_array_foreach(json_object_get(point, "per_seed"), i, x)
    {
        if (json_is_null(x))
            (*nulls)++;
        else if (n < COMBINE_MAX_SEEDS)
            v[n++] = json_number_value(x);
    }
    return n;
}

/* The point of row s at the last checkpoint of a block: "checkpoints" or "time_checkpoints". */
static const json_t *block_point(const json_t *s, const char *block, const char *key)
{
    return json_object_get(json_object_get(s, block), key);
}

static void print_box(const json_t *rows, const char *label, const char *block, const char *key,
                      FILE *out)
{
    const char *name;
    json_t *s;
    fprintf(out,
            "\nbox data over seeds at %s (ms; quartiles by linear interpolation, type 7)\n"
            "%-12s%10s%10s%10s%10s%10s%10s\n",
            label, "strategy", "min", "q1", "median", "mean", "q3", "max");
    json_object_foreach((json_t *)rows, name, s)
    {
        double v[COMBINE_MAX_SEEDS];
        int nulls, n = per_seed(block_point(s, block, key), v, &nulls);
        double mean = bench_stats_mean(v, n); /* in the file's order, before the sort */
        bench_stats_box_data b = bench_stats_box(v, n);
        fprintf(out, "%-12s%10.4g%10.4g%10.4g%10.4g%10.4g%10.4g\n", name, b.min, b.q1, b.median,
                mean, b.q3, b.max);
    }
}

/* One pair of a Welch table: the rows, and the test when it is defined. */
typedef struct combine_test {
    const char *a, *b;
    int defined;
    bench_stats_welch_result w;
} combine_test;

/* The tests of one table: each --test row against every other row, a pair once, in the order
 * printed. Returns how many (at most cap). */
static int welch_family(const json_t *res, const char *block, const char *key, combine_test *t,
                        int cap)
{
    const json_t *rows = json_object_get(res, "rows"), *tests = json_object_get(res, "test");
    size_t ti;
    json_t *x;
    int n = 0;
    json_array_foreach((json_t *)tests, ti, x)
    {
        const char *tn = json_string_value(x), *name;
        json_t *s;
        json_object_foreach((json_t *)rows, name, s)
        {
            int done = strcmp(name, tn) == 0, nx, ny, ux, uy;
            for (size_t u = 0; u < ti && !done; u++) /* the pair was an earlier tested row's */
                done = strcmp(json_string_value(json_array_get(tests, u)), name) == 0;
            if (done || n == cap)
                continue;
            double xa[COMBINE_MAX_SEEDS], ya[COMBINE_MAX_SEEDS];
            combine_test *c = &t[n++];
            c->a = tn;
            c->b = name;
            nx = per_seed(block_point(json_object_get(rows, tn), block, key), xa, &ux);
            ny = per_seed(block_point(s, block, key), ya, &uy);
            c->defined = !ux && !uy && bench_stats_welch(xa, nx, ya, ny, &c->w) == 0;
            if (c->defined && isnan(c->w.df)) /* no variance: the df as the test counts them */
                c->w.df = nx + ny - 2;
        }
    }
    return n;
}

static void print_welch(const json_t *res, const char *label, const char *block, const char *key,
                        FILE *out)
{
    /* at most every tested row against every row */
    size_t cap = json_array_size(json_object_get(res, "test")) *
                 json_object_size(json_object_get(res, "rows"));
    combine_test *t = calloc(cap ? cap : 1, sizeof *t);
    double *p = calloc(cap ? cap : 1, sizeof *p), *holm = calloc(cap ? cap : 1, sizeof *holm);
    int n = 0;

    fprintf(out, "\nWelch's t-test at %s (two-sided, unequal variances, on ms)\n", label);
    if (!t || !p || !holm || cap > BENCH_STATS_HOLM_MAX) {
        fprintf(out, "  (not computed: %zu tests, out of memory or more than %d)\n", cap,
                BENCH_STATS_HOLM_MAX);
        goto out;
    }
    n = welch_family(res, block, key, t, (int)cap);
    for (int i = 0; i < n; i++)
        p[i] = t[i].defined ? t[i].w.p : NAN;
    fprintf(out,
            "(Holm: p adjusted by Holm's step-down correction over the %d tests of this table; "
            "* Holm < %g)\n",
            bench_stats_holm(p, n, holm), BENCH_STATS_ALPHA);
    for (int i = 0; i < n; i++) {
        const bench_stats_welch_result *w = &t[i].w;
        if (!t[i].defined) {
            fprintf(out, "  %-12s vs %-12s undefined (a seed found nothing)\n", t[i].a, t[i].b);
            continue;
        }
        fprintf(
            out,
            "  %-12s vs %-12s means %8.4g vs %8.4g, t %7.3f, df %5.1f, p %.4f, Holm %.4f %c; "
            "%s %.1f%% lower\n",
            t[i].a, t[i].b, w->mean_a, w->mean_b, w->t, w->df, w->p, holm[i],
            holm[i] < BENCH_STATS_ALPHA ? '*' : ' ', w->mean_a < w->mean_b ? t[i].a : t[i].b,
            100 * (w->mean_a < w->mean_b ? 1 - w->mean_a / w->mean_b : 1 - w->mean_b / w->mean_a));
    }
out:
    free(t);
    free(p);
    free(holm);
}

/* A checkpoint's key in its block: the evaluations ("checkpoints") or the seconds, %g
 * ("time_checkpoints"). */
static void point_key(const json_t *x, int timed, char *key, size_t cap)
{
    if (timed)
        snprintf(key, cap, "%g", json_number_value(x));
    else
        snprintf(key, cap, "%lld", json_integer_value(x));
}

/* The table of one block ("checkpoints" or "time_checkpoints"; points, its checkpoints) under
 * title: per row the mean (median) at each checkpoint and, on the modelled clock, the seeds that
 * got there. The last checkpoint's key is left in last. */
static void print_block(const json_t *rows, const json_t *points, const char *block,
                        const char *title, char *last, size_t cap, FILE *out)
{
    int timed = strcmp(block, "time_checkpoints") == 0;
    char label[96], key[32];
    const char *name;
    json_t *x, *s;
    size_t i;

    fprintf(out, "%s\n%-12s", title, "strategy");
    json_array_foreach((json_t *)points, i, x)
    {
        point_key(x, timed, last, cap);
        snprintf(label, sizeof label, "@%s%s", last, timed ? "s" : "");
        fprintf(out, "%*s", timed ? 26 : 22, label);
    }
    fputc('\n', out);
    json_object_foreach((json_t *)rows, name, s)
    {
        fprintf(out, "%-12s", name);
        json_array_foreach((json_t *)points, i, x)
        {
            point_key(x, timed, key, sizeof key);
            const json_t *p = block_point(s, block, key);
            fprintf(out, "%11.4g (%8.4g)", json_number_value(json_object_get(p, "mean_ms")),
                    json_number_value(json_object_get(p, "median_ms")));
            if (timed)
                fprintf(out, " %3lld", json_integer_value(json_object_get(p, "reached")));
        }
        fputc('\n', out);
    }
}

void bench_combine_print_table(const json_t *res, FILE *out)
{
    const json_t *d = json_object_get(res, "first"), *rows = json_object_get(res, "rows");
    const json_t *cps = json_object_get(d, "checkpoints"),
                 *tcs = json_object_get(d, "time_checkpoints");
    char *problem = json_dumps(json_object_get(d, "problem"), JSON_ENCODE_ANY);
    char last_cp[32] = "", last_tc[32] = "", label[96];
    size_t i;
    json_t *x;

    fprintf(out, "ktune bench (combined): %s on %s (%s), problem %s\n",
            json_string_value(json_object_get(d, "kernel")),
            json_string_value(json_object_get(d, "device")),
            json_string_value(json_object_get(d, "device_class")), problem ? problem : "?");
    free(problem);
    fprintf(out, "  %lld configurations; budget %lld distinct evaluations, seeds 0-%lld\n",
            json_integer_value(json_object_get(d, "space_size")),
            json_integer_value(json_object_get(d, "budget")),
            json_integer_value(json_object_get(d, "seeds")) - 1);
    json_array_foreach((json_t *)json_object_get(res, "sources"), i, x)
        fprintf(out, "  %s\n", json_string_value(x));
    print_block(rows, cps, "checkpoints", "\nbest ms after N evaluations: mean over seeds (median)",
                last_cp, sizeof last_cp, out);
    if (json_array_size(tcs) > 0)
        print_block(rows, tcs, "time_checkpoints",
                    "\nbest ms at T s of the modelled tuning clock (recorded compile + measurement "
                    "time plus the searcher's), mean (median); seeds that got to T",
                    last_tc, sizeof last_tc, out);
    snprintf(label, sizeof label, "@%s evaluations", last_cp);
    print_box(rows, label, "checkpoints", last_cp, out);
    if (last_tc[0]) {
        char tlabel[96];
        snprintf(tlabel, sizeof tlabel, "T = %s s of the modelled clock", last_tc);
        print_box(rows, tlabel, "time_checkpoints", last_tc, out);
    }
    print_welch(res, label, "checkpoints", last_cp, out);
    if (last_tc[0]) {
        snprintf(label, sizeof label, "T = %s s of the modelled clock", last_tc);
        print_welch(res, label, "time_checkpoints", last_tc, out);
    }
}
