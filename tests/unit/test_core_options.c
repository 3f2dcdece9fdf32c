/* Unit tests of core/options: one table parsed (every kind, its bounds and its messages) and the
 * help printed from the same table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

typedef struct demo {
    int n, flag;
    double x, f;
    uint64_t seed;
    const char *name, *json;
    const char *items[2];
    int n_items;
    const char *paths[3];
    int n_paths;
    int calls;
} demo;

static int demo_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    demo *d = opts;
    if (strcmp(v, "no") == 0) {
        snprintf(msg, cap, "%s: not '%s'", o->name ? o->name : "ARG", v);
        return -1;
    }
    d->calls++;
    return 0;
}

static const char *demo_arg(void)
{
    return "a, b";
}

#define O(f) offsetof(demo, f)
static const kt_option demo_options[] = {
    {.name = "--n",
     .kind = KT_OPT_INT,
     .offset = O(n),
     .lo = 1,
     .hi = 10,
     .arg = "--n N",
     .help = "a count, 1-10 [3]"},
    {.name = "--x",
     .kind = KT_OPT_DOUBLE,
     .offset = O(x),
     .lo = 0,
     .hi = 1,
     .flags = KT_OPT_OPEN_LO,
     .arg = "--x F",
     .help = "a share\nin (0, 1]"},
    {.name = "--f", .kind = KT_OPT_DOUBLE, .offset = O(f), .lo = -1, .hi = 1},
    {.name = "--seed", .kind = KT_OPT_SEED, .offset = O(seed)},
    {.name = "--name",
     .kind = KT_OPT_STRING,
     .offset = O(name),
     .max_len = 4,
     .flags = KT_OPT_NONEMPTY,
     .help = "of: %s",
     .help_arg = demo_arg},
    {.name = "--json", .kind = KT_OPT_STRING, .offset = O(json)},
    {.name = "--item",
     .kind = KT_OPT_STRINGS,
     .offset = O(items),
     .count_offset = O(n_items),
     .hi = 2},
    {.name = "--paths",
     .kind = KT_OPT_PATHS,
     .offset = O(paths),
     .count_offset = O(n_paths),
     .lo = 1,
     .hi = 3,
     .max_len = 8},
    {.name = "--flag", .kind = KT_OPT_FLAG, .offset = O(flag), .help = "a flag"},
    {.name = "--mode", .kind = KT_OPT_FLAG, .flags = KT_OPT_IGNORED},
    {.name = "--cb", .kind = KT_OPT_CALLBACK, .cb = demo_cb},
    {.kind = KT_OPT_TEXT, .help = "  and more\n"},
    {.kind = KT_OPT_END}};
static const kt_opt_table demo_table = {.options = demo_options,
                                        .mode = "--demo",
                                        .usage = "usage: demo\n",
                                        .footer = "end\n",
                                        .width = 8};
static const kt_opt_table plain_table = {.options = demo_options, .usage = ""};

/* A command with one positional argument (the first free argument, into name) and its own message
 * for anything else; and one whose callback takes every free argument. */
static const kt_option arg_options[] = {
    {.name = "--n", .kind = KT_OPT_INT, .offset = O(n), .lo = 1, .hi = 10},
    {.name = "--flag", .kind = KT_OPT_FLAG, .offset = O(flag)},
    {.kind = KT_OPT_ARG, .offset = O(name), .flags = KT_OPT_DASH},
    {.kind = KT_OPT_END}};
static const kt_opt_table arg_table = {
    .options = arg_options, .usage = "", .unknown = "demo: unexpected argument '%s' (demo --help)"};
static const kt_option args_cb_options[] = {{.kind = KT_OPT_ARG, .cb = demo_cb},
                                            {.kind = KT_OPT_END}};
static const kt_opt_table args_cb_table = {.options = args_cb_options, .usage = ""};

/* ktuned's way (core/config): an optional value, its own message for a missing value, and --help
 * that does not end the parse. */
static int switch_cb(void *opts, const kt_option *o, const char *v, char *msg, size_t cap)
{
    demo *d = opts;
    if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        snprintf(msg, cap, "%s must be 1 or 0, not '%s'", o->name, v);
        return -1;
    }
    d->flag = !v || v[0] == '1';
    return 0;
}
static const kt_option config_like_options[] = {
    {.name = "--n", .kind = KT_OPT_INT, .offset = O(n), .lo = 1, .hi = 10},
    {.name = "--switch", .kind = KT_OPT_CALLBACK, .flags = KT_OPT_OPTIONAL, .cb = switch_cb},
    {.kind = KT_OPT_END}};
static const kt_opt_table config_like_table = {.options = config_like_options,
                                               .usage = "",
                                               .missing = "option %s needs a value",
                                               .help_reads_on = 1};

/* line split at spaces ('' is an empty argument); buf is static: the struct borrows its strings */
static int parse(const kt_opt_table *t, demo *d, char *msg, const char *line)
{
    static char buf[512];
    char *argv[32], *save = NULL;
    int argc = 0;
    snprintf(buf, sizeof buf, "demo %s", line);
    for (char *tok = strtok_r(buf, " ", &save); tok && argc < 32; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(tok, "''") == 0 ? "" : tok;
    memset(d, 0, sizeof *d);
    return kt_opt_parse(t, argc, argv, d, msg, 256);
}

static void every_kind(void **state)
{
    (void)state;
    demo d;
    char msg[256];
    assert_int_equal(parse(&demo_table, &d, msg,
                           "--n 4 --x 1 --f -0.5 --seed 18446744073709551615 --name ab --item p "
                           "--item q --paths a b c --flag --mode --cb yes --cb yes --json ''"),
                     0);
    assert_int_equal(d.n, 4);
    assert_true(d.x == 1.0 && d.f == -0.5);
    assert_true(d.seed == UINT64_MAX);
    assert_string_equal(d.name, "ab");
    assert_string_equal(d.json, "");
    assert_int_equal(d.n_items, 2);
    assert_string_equal(d.items[1], "q");
    assert_int_equal(d.n_paths, 3);
    assert_string_equal(d.paths[2], "c");
    assert_int_equal(d.flag, 1);
    assert_int_equal(d.calls, 2);
    assert_int_equal(parse(&demo_table, &d, msg, "--n 2 --help --n 0"), 1);
    assert_int_equal(parse(&demo_table, &d, msg, "-h"), 1);
}

static void inline_values(void **state)
{
    (void)state;
    demo d;
    char msg[256];
    assert_int_equal(parse(&demo_table, &d, msg,
                           "--n=4 --x=0.5 --seed=7 --name=a=b --item=p --item q --cb=yes --json="),
                     0);
    assert_int_equal(d.n, 4);
    assert_true(d.x == 0.5);
    assert_true(d.seed == 7);
    assert_string_equal(d.name, "a=b");
    assert_string_equal(d.json, "");
    assert_int_equal(d.n_items, 2);
    assert_string_equal(d.items[0], "p");
    assert_int_equal(d.calls, 1);
    /* a flag takes no value; a name that only starts like an option is not it */
    assert_int_equal(parse(&demo_table, &d, msg, "--flag=1"), -1);
    assert_string_equal(msg, "unknown argument '--flag=1' (not an option of --demo)");
    assert_int_equal(parse(&demo_table, &d, msg, "--nn=1"), -1);
    assert_int_equal(parse(&demo_table, &d, msg, "--n=11"), -1);
    assert_string_equal(msg, "--n: '11' is not an integer in 1-10");
    assert_int_equal(parse(&demo_table, &d, msg, "--name="), -1);
    assert_string_equal(msg, "--name needs a non-empty value");
    assert_int_equal(parse(&demo_table, &d, msg, "--cb=no"), -1);
    assert_string_equal(msg, "--cb: not 'no'");
}

static void positional(void **state)
{
    (void)state;
    demo d;
    char msg[256];
    assert_int_equal(parse(&arg_table, &d, msg, "--n 3 id7 --flag"), 0);
    assert_string_equal(d.name, "id7");
    assert_int_equal(d.n, 3);
    assert_int_equal(parse(&arg_table, &d, msg, "-"), 0);
    assert_string_equal(d.name, "-");
    assert_int_equal(parse(&arg_table, &d, msg, ""), 0);
    assert_null(d.name);
    /* a second one, or an unknown option, is the table's own message and KT_OPT_UNKNOWN */
    assert_int_equal(parse(&arg_table, &d, msg, "a b"), KT_OPT_UNKNOWN);
    assert_string_equal(msg, "demo: unexpected argument 'b' (demo --help)");
    assert_int_equal(parse(&arg_table, &d, msg, "--bogus"), KT_OPT_UNKNOWN);
    assert_string_equal(msg, "demo: unexpected argument '--bogus' (demo --help)");
    assert_int_equal(parse(&arg_table, &d, msg, "--n"), -1);
    assert_string_equal(msg, "--n needs a value");
    /* a callback takes every free argument */
    assert_int_equal(parse(&args_cb_table, &d, msg, "yes yes yes"), 0);
    assert_int_equal(d.calls, 3);
    assert_int_equal(parse(&args_cb_table, &d, msg, "yes no"), -1);
    assert_string_equal(msg, "ARG: not 'no'");
    assert_int_equal(parse(&args_cb_table, &d, msg, "-x"), -1);
    assert_string_equal(msg, "unknown argument '-x'");
    assert_int_equal(parse(&args_cb_table, &d, msg, "-"), -1); /* without KT_OPT_DASH */
    assert_string_equal(msg, "unknown argument '-'");
}

static void messages(void **state)
{
    (void)state;
    demo d;
    char msg[256];
    struct {
        const kt_opt_table *t;
        const char *line, *want;
    } bad[] = {
        {&demo_table, "--n 11", "--n: '11' is not an integer in 1-10"},
        {&demo_table, "--n 2x", "--n: '2x' is not an integer in 1-10"},
        {&demo_table, "--x 0", "--x: '0' is not a number in (0, 1]"},
        {&demo_table, "--f 2", "--f: '2' is not a number in [-1, 1]"},
        {&demo_table, "--seed -1", "--seed: '-1' is not a non-negative integer"},
        {&demo_table, "--name abcde", "--name: at most 4 characters"},
        {&demo_table, "--name ''", "--name needs a non-empty value"},
        {&demo_table, "--item a --item b --item c", "--item: at most 2 values"},
        {&demo_table, "--paths --flag", "--paths needs at least one file or folder"},
        {&demo_table, "--paths a b c d", "--paths: at most 3 paths of < 8 characters"},
        {&demo_table, "--paths abcdefgh", "--paths: at most 3 paths of < 8 characters"},
        {&demo_table, "--cb no", "--cb: not 'no'"},
        {&demo_table, "--n", "--n needs a value"},
        {&demo_table, "--bogus 1", "unknown argument '--bogus' (not an option of --demo)"},
        {&plain_table, "--n 1 x", "unknown argument 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i].t, &d, msg, bad[i].line), -1);
        if (strcmp(msg, bad[i].want) != 0)
            fail_msg("'%s': message '%s', want '%s'", bad[i].line, msg, bad[i].want);
    }
}

static void optional_value_and_help_reads_on(void **state)
{
    (void)state;
    demo d;
    char msg[256];
    assert_int_equal(parse(&config_like_table, &d, msg, "--switch --n 3"), 0);
    assert_int_equal(d.flag, 1);
    assert_int_equal(d.n, 3);
    assert_int_equal(parse(&config_like_table, &d, msg, "--switch=0"), 0);
    assert_int_equal(d.flag, 0);
    assert_int_equal(parse(&config_like_table, &d, msg, "--switch=2"), -1);
    assert_string_equal(msg, "--switch must be 1 or 0, not '2'");
    /* the next argument is never the optional value */
    assert_int_equal(parse(&config_like_table, &d, msg, "--switch 1"), -1);
    assert_string_equal(msg, "unknown argument '1'");
    assert_int_equal(parse(&config_like_table, &d, msg, "--n"), -1);
    assert_string_equal(msg, "option --n needs a value");
    /* --help is noted, the rest still read */
    assert_int_equal(parse(&config_like_table, &d, msg, "--help --n 4"), 1);
    assert_int_equal(d.n, 4);
    assert_int_equal(parse(&config_like_table, &d, msg, "-h --n 0"), -1);
    assert_string_equal(msg, "--n: '0' is not an integer in 1-10");
}

static void usage_from_the_table(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    kt_opt_usage(&demo_table, out);
    fclose(out);
    assert_string_equal(text, "usage: demo\n"
                              "  --n N    a count, 1-10 [3]\n"
                              "  --x F    a share\n"
                              "           in (0, 1]\n"
                              "  --name   of: a, b\n"
                              "  --flag   a flag\n"
                              "  and more\n"
                              "end\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind),           cmocka_unit_test(inline_values),
        cmocka_unit_test(positional),           cmocka_unit_test(messages),
        cmocka_unit_test(usage_from_the_table), cmocka_unit_test(optional_value_and_help_reads_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
