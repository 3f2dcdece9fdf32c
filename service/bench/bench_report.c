/* bench/bench_report — `ktune bench` offline output: the readable table and the Kernel Tuner
 * comparison row (see bench_report.h). */
#include "bench/bench_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_CSV_LINE 1024

static void bench_print_number(FILE *out, const json_t *v, const char *fmt, int width)
{
    if (json_is_number(v))
        fprintf(out, fmt, width, json_number_value(v));
    else
        fprintf(out, "%*s", width, "-");
}

static void bench_print_header(const json_t *result, FILE *out)
{
    size_t i;
    json_t *v;

    fprintf(out, "%-14s", "strategy");
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", h);
    }
    fprintf(out, " | %8s %5s |", "ev->5%", "succ");
    json_array_foreach(json_object_get(result, "clock_budgets_s"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "%llds", (long long)json_integer_value(v));
        fprintf(out, " %6s", h);
    }
    fprintf(out, " | %8s %5s | %9s\n", "s->5%", "succ", "ovh us");
}

static void bench_print_row(const json_t *result, const char *name, const json_t *st, FILE *out)
{
    size_t i;
    json_t *v;
    char key[24];

    fprintf(out, "%-14.14s", name);
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        fputc(' ', out);
        bench_print_number(out, json_object_get(json_object_get(st, "fraction"), key), "%*.4f", 7);
    }
    const json_t *e = json_object_get(st, "evals_to_5pct");
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(e, "median"), "%*.1f", 8);
    fputc(' ', out);
    bench_print_number(out, json_object_get(e, "success_rate"), "%*.2f", 5);
    fprintf(out, " |");
    json_array_foreach(json_object_get(result, "clock_budgets_s"), i, v)
    {
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
        fputc(' ', out);
        bench_print_number(out, json_object_get(json_object_get(st, "clock_fraction"), key),
                           "%*.4f", 6);
    }
    const json_t *c = json_object_get(st, "clock_to_5pct_s");
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(c, "median"), "%*.1f", 8);
    fputc(' ', out);
    bench_print_number(out, json_object_get(c, "success_rate"), "%*.2f", 5);
    fprintf(out, " | ");
    bench_print_number(out, json_object_get(st, "overhead_us"), "%*.2f", 9);
    fputc('\n', out);
}

/* Reads summary.csv (set,space,strategy,budget,mean_fraction) into {strategy: {space: {budget:
 * f}}}. NULL when the file cannot be read. */
static json_t *bench_read_reference(const char *path)
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

/* The best Kernel Tuner strategy at budget key, mean over the result's spaces (a strategy counts
 * only when it has every space at that budget). Returns the mean, or -1 when none has them all. */
static double bench_ref_best(const json_t *ref, const json_t *spaces, const char *key, char *name,
                             size_t cap)
{
    double best = -1;
    const char *sname;
    json_t *st;

    snprintf(name, cap, "-");
    json_object_foreach((json_t *)ref, sname, st)
    {
        double sum = 0;
        size_t n = 0, j;
        json_t *sp;
        json_array_foreach(spaces, j, sp)
        {
            const char *spn = json_string_value(json_object_get(sp, "name"));
            const json_t *v = json_object_get(json_object_get(st, spn), key);
            if (!json_is_number(v))
                break;
            sum += json_number_value(v);
            n++;
        }
        if (n > 0 && n == json_array_size(spaces) && sum / (double)n > best) {
            best = sum / (double)n;
            snprintf(name, cap, "%s", sname);
        }
    }
    return best;
}

/* Two rows: the best Kernel Tuner mean fraction per checkpoint, and which strategy gave it. */
static void bench_print_reference(const json_t *result, const char *path, FILE *out)
{
    json_t *ref = bench_read_reference(path);
    const json_t *spaces = json_object_get(result, "spaces");
    const json_t *cps = json_object_get(result, "checkpoints");
    char names[64][32];
    size_t i, n = 0;
    json_t *cp;

    if (!ref) {
        fprintf(out, "Kernel Tuner reference %s: cannot read (%s)\n", path, strerror(errno));
        goto out;
    }
    fprintf(out, "%-14s", "KT best");
    json_array_foreach(cps, i, cp)
    {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
        double best = bench_ref_best(ref, spaces, key, names[i < 64 ? i : 63], sizeof names[0]);
        if (best >= 0) {
            fprintf(out, " %7.4f", best);
            n++;
        } else {
            fprintf(out, " %7s", "-");
        }
    }
    fprintf(out, "   (Kernel Tuner 1.4.0, %s)\n", n ? "best strategy per budget" : "no figures");
    if (n) {
        fprintf(out, "  KT strategy:");
        json_array_foreach(cps, i, cp)
        {
            fprintf(out, "%s @%lld %s", i ? "," : "", (long long)json_integer_value(cp),
                    names[i < 64 ? i : 63]);
        }
        fputc('\n', out);
    }
out:
    json_decref(ref);
}

/* --history: warm against cold per strategy, over the spaces that have history. */
static void bench_print_warm(const json_t *result, FILE *out)
{
    const json_t *ws = json_object_get(result, "warm_start");
    const json_t *names = json_object_get(ws, "spaces");
    const char *name;
    json_t *st, *v;
    size_t i;

    if (!ws)
        return;
    fprintf(out,
            "\nwarm start (--history, times %s, %lld configurations first) against cold, mean "
            "over the %zu spaces with history:",
            json_string_value(json_object_get(ws, "times")),
            (long long)json_integer_value(json_object_get(ws, "first")), json_array_size(names));
    json_array_foreach(names, i, v) fprintf(out, "%s%s", i ? ", " : " ", json_string_value(v));
    fprintf(out, "\n%-14s %-5s", "strategy", "");
    json_array_foreach(json_object_get(result, "checkpoints"), i, v)
    {
        char h[24];
        snprintf(h, sizeof h, "@%lld", (long long)json_integer_value(v));
        fprintf(out, " %7s", h);
    }
    fputc('\n', out);
    json_object_foreach(json_object_get(ws, "strategies"), name, st)
    {
        static const char *const kinds[2] = {"cold", "warm"};
        for (int k = 0; k < 2; k++) {
            fprintf(out, "%-14.14s %-5s", name, kinds[k]);
            json_array_foreach(json_object_get(result, "checkpoints"), i, v)
            {
                char key[24];
                snprintf(key, sizeof key, "%lld", (long long)json_integer_value(v));
                fputc(' ', out);
                bench_print_number(out, json_object_get(json_object_get(st, kinds[k]), key),
                                   "%*.4f", 7);
            }
            fputc('\n', out);
        }
    }
}

void bench_print_table(const json_t *result, const char *kt_reference, FILE *out)
{
    const json_t *spaces = json_object_get(result, "spaces");
    size_t i;
    json_t *sp;
    const char *name;
    json_t *st;

    fprintf(out,
            "ktune bench: budget %lld distinct evaluations, %lld seeds, %s\n"
            "  @N: mean fraction of optimum after N evaluations; ev->5%%: median evaluations to "
            "within 5%% (succ: share of seeds)\n"
            "  Ns: mean fraction at N s of recorded compile+benchmark time; s->5%%: median "
            "seconds to within 5%%; ovh us: searcher time per proposal\n\n",
            (long long)json_integer_value(json_object_get(result, "budget")),
            (long long)json_integer_value(json_object_get(result, "seeds")),
            json_is_true(json_object_get(result, "include_failed"))
                ? "failed configurations included"
                : "valid configurations only");
    json_array_foreach(spaces, i, sp)
    {
        fprintf(out, "%s: %lld configurations (%lld valid), optimum %.4f ms\n",
                json_string_value(json_object_get(sp, "name")),
                (long long)json_integer_value(json_object_get(sp, "n_configs")),
                (long long)json_integer_value(json_object_get(sp, "n_valid")),
                json_number_value(json_object_get(sp, "optimum_ms")));
        bench_print_header(result, out);
        json_object_foreach(json_object_get(sp, "strategies"), name, st)
            bench_print_row(result, name, st, out);
        fputc('\n', out);
    }
    fprintf(out, "mean over %zu spaces\n", json_array_size(spaces));
    bench_print_header(result, out);
    json_object_foreach(json_object_get(result, "averages"), name, st)
        bench_print_row(result, name, st, out);
    if (kt_reference)
        bench_print_reference(result, kt_reference, out);
    bench_print_warm(result, out);
}
