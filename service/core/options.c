/* core/options — one parser for options declared in tables (see options.h). */
#include "core/options.h"

#include <stdint.h>
#include <string.h>

#include "core/number.h"
#include "core/suggest.h"

/* The option that argument a names: "--name" itself, or "--name=value" for an option with a value
 * (*inline_value then points after '='). */
static const kt_option *opt_find(const kt_opt_table *t, const char *a, const char **inline_value)
{
    const char *eq = strchr(a, '=');
    *inline_value = NULL;
    for (const kt_option *o = t->options; o->kind != KT_OPT_END; o++) {
        if (!o->name)
            continue;
        if (strcmp(o->name, a) == 0)
            return o;
        size_t n = strlen(o->name);
        if (eq && (size_t)(eq - a) == n && strncmp(o->name, a, n) == 0 && o->kind != KT_OPT_FLAG &&
            o->kind != KT_OPT_PATHS) {
            *inline_value = eq + 1;
            return o;
        }
    }
    return NULL;
}

/* The table's positional entry (KT_OPT_ARG), or NULL. */
static const kt_option *opt_positional(const kt_opt_table *t)
{
    for (const kt_option *o = t->options; o->kind != KT_OPT_END; o++) {
        if (o->kind == KT_OPT_ARG)
            return o;
    }
    return NULL;
}

static void *opt_field(void *opts, size_t offset)
{
    return (char *)opts + offset;
}

/* One value appended to a STRINGS or PATHS array; 0, or -1 with msg. */
static int opt_append(const kt_option *o, void *opts, const char *value, char *msg, size_t cap)
{
    const char **list = opt_field(opts, o->offset);
    int *n = opt_field(opts, o->count_offset);
    if (o->kind == KT_OPT_PATHS && (*n >= (int)o->hi || strlen(value) >= o->max_len)) {
        snprintf(msg, cap, "%s: at most %d paths of < %zu characters", o->name, (int)o->hi,
                 o->max_len);
        return -1;
    }
    if (*n >= (int)o->hi) {
        snprintf(msg, cap, "%s: at most %d values", o->name, (int)o->hi);
        return -1;
    }
    list[(*n)++] = value;
    return 0;
}

static int opt_double(const kt_option *o, const char *v, double *out, char *msg, size_t cap)
{
    double d;
    int open_lo = (o->flags & KT_OPT_OPEN_LO) != 0, open_hi = (o->flags & KT_OPT_OPEN_HI) != 0;
    if (kt_parse_double(v, o->lo, o->hi, &d) < 0 || (open_lo && d == o->lo) ||
        (open_hi && d == o->hi)) {
        snprintf(msg, cap, "%s: '%.64s' is not a number in %c%g, %g%c", o->name, v,
                 open_lo ? '(' : '[', o->lo, o->hi, open_hi ? ')' : ']');
        return -1;
    }
    *out = d;
    return 0;
}

/* The value v of option o into opts; 0, or -1 with msg. */
static int opt_set(const kt_option *o, void *opts, const char *v, char *msg, size_t cap)
{
    unsigned long long u;

    if ((o->flags & KT_OPT_NONEMPTY) && !*v) {
        snprintf(msg, cap, "%s needs a non-empty value", o->name);
        return -1;
    }
    switch (o->kind) {
    case KT_OPT_INT:
        if (kt_parse_int(v, (int)o->lo, (int)o->hi, opt_field(opts, o->offset)) < 0) {
            snprintf(msg, cap, "%s: '%.64s' is not an integer in %d-%d", o->name, v, (int)o->lo,
                     (int)o->hi);
            return -1;
        }
        return 0;
    case KT_OPT_DOUBLE:
        return opt_double(o, v, opt_field(opts, o->offset), msg, cap);
    case KT_OPT_SEED:
        if (kt_parse_u64(v, &u) < 0) {
            snprintf(msg, cap, "%s: '%.64s' is not a non-negative integer", o->name, v);
            return -1;
        }
        *(uint64_t *)opt_field(opts, o->offset) = u;
        return 0;
    case KT_OPT_STRING:
        if (o->max_len && strlen(v) > o->max_len) {
            snprintf(msg, cap, "%s: at most %zu characters", o->name, o->max_len);
            return -1;
        }
        *(const char **)opt_field(opts, o->offset) = v;
        return 0;
    case KT_OPT_STRINGS:
        return opt_append(o, opts, v, msg, cap);
    case KT_OPT_CALLBACK:
        return o->cb(opts, o, v, msg, cap);
    default:
        snprintf(msg, cap, "%s: not an option with a value", o->name);
        return -1;
    }
}

/* msg from fmt, a table's format with one %s (arg). */
static void opt_message(char *msg, size_t cap, const char *fmt, const char *arg)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(msg, cap, fmt, arg);
#pragma GCC diagnostic pop
}

/* Appends " (did you mean '--x'?)" to msg when an option of t is close to a (core/suggest.h:
 * "--budget" -> "--budget-evaluations" or "--budget-seconds"), a written without its "=value". */
static void opt_suggest(const kt_opt_table *t, const char *a, char *msg, size_t cap)
{
    char word[KT_SUGGEST_LEN + 1], text[KT_SUGGEST_MAX * (KT_SUGGEST_LEN + 8)];
    size_t len = strcspn(a, "=");
    if (a[0] != '-' || len > KT_SUGGEST_LEN)
        return;
    memcpy(word, a, len);
    word[len] = '\0';
    kt_suggest s;
    kt_suggest_init(&s, word);
    for (const kt_option *o = t->options; o->kind != KT_OPT_END; o++)
        if (o->name)
            kt_suggest_add(&s, o->name, (size_t)-1);
    size_t used = strlen(msg);
    if (kt_suggest_text(&s, text, sizeof text) && used < cap)
        snprintf(msg + used, cap - used, " (did you mean %s?)", text);
}

/* An argument a that no option names: the positional entry's, or the unknown-argument error. */
static int opt_other(const kt_opt_table *t, const char *a, void *opts, char *msg, size_t cap)
{
    const kt_option *p = opt_positional(t);
    if (p && (a[0] != '-' || ((p->flags & KT_OPT_DASH) && strcmp(a, "-") == 0))) {
        if (p->cb)
            return p->cb(opts, p, a, msg, cap);
        const char **field = opt_field(opts, p->offset);
        if (!*field) {
            *field = a;
            return 0;
        }
    }
    if (t->unknown) {
        opt_message(msg, cap, t->unknown, a);
        opt_suggest(t, a, msg, cap);
        return KT_OPT_UNKNOWN;
    }
    snprintf(msg, cap, "unknown argument '%.200s'%s%s%s", a, t->mode ? " (not an option of " : "",
             t->mode ? t->mode : "", t->mode ? ")" : "");
    opt_suggest(t, a, msg, cap);
    return -1;
}

int kt_opt_parse(const kt_opt_table *t, int argc, char **argv, void *opts, char *msg, size_t cap)
{
    int help = 0;
    msg[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *inline_value;
        const kt_option *o;
        int rc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (!t->help_reads_on)
                return 1;
            help = 1;
            continue;
        }
        if (!(o = opt_find(t, a, &inline_value))) {
            if ((rc = opt_other(t, a, opts, msg, cap)) < 0)
                return rc;
            continue;
        }
        if (o->kind == KT_OPT_FLAG) {
            if (!(o->flags & KT_OPT_IGNORED))
                *(int *)opt_field(opts, o->offset) = 1;
            continue;
        }
        if (o->kind == KT_OPT_PATHS) {
            int before = *(int *)opt_field(opts, o->count_offset);
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (opt_append(o, opts, argv[++i], msg, cap) < 0)
                    return -1;
            }
            if (*(int *)opt_field(opts, o->count_offset) - before < (int)o->lo) {
                snprintf(msg, cap, "%s needs at least one file or folder", a);
                return -1;
            }
            continue;
        }
        if (o->kind == KT_OPT_CALLBACK && (o->flags & KT_OPT_OPTIONAL) && !inline_value) {
            if (o->cb(opts, o, NULL, msg, cap) < 0)
                return -1;
            continue;
        }
        if (!inline_value && i + 1 >= argc) {
            if (t->missing)
                opt_message(msg, cap, t->missing, a);
            else
                snprintf(msg, cap, "%s needs a value", a);
            return -1;
        }
        if (opt_set(o, opts, inline_value ? inline_value : argv[++i], msg, cap) < 0)
            return -1;
    }
    return help;
}

/* text with each '\n' followed by indent spaces. */
static void opt_print_indented(FILE *out, const char *text, int indent)
{
    for (const char *p = text; *p; p++) {
        fputc(*p, out);
        if (*p == '\n' && p[1])
            fprintf(out, "%*s", indent, "");
    }
}

void kt_opt_usage(const kt_opt_table *t, FILE *out)
{
    int width = t->width > 0 ? t->width : 20;
    char line[2048];

    fputs(t->usage, out);
    for (const kt_option *o = t->options; o->kind != KT_OPT_END; o++) {
        const char *help = o->help;
        if (!help)
            continue;
        if (o->kind == KT_OPT_TEXT) {
            fputs(help, out);
            continue;
        }
        if (o->help_arg) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(line, sizeof line, help, o->help_arg());
#pragma GCC diagnostic pop
            help = line;
        }
        fprintf(out, "  %-*s ", width, o->arg ? o->arg : o->name ? o->name : "");
        opt_print_indented(out, help, width + 3);
        fputc('\n', out);
    }
    if (t->footer)
        fputs(t->footer, out);
}
