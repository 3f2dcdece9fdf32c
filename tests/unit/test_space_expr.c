/* Unit tests of space/expr: Python semantics (checked against CPython by hand), parse errors with
 * columns, name resolution, limits and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "space/expr.h"

/* Parameters a=6, b=-4, s='abc', f=2.5, t=True, z=0; constant max_threads=1024. */
static const char *const param_names[] = {"a", "b", "s", "f", "t", "z"};
static const expr_value slots[] = {
    {.type = EXPR_INT, .u.i = 6},
    {.type = EXPR_INT, .u.i = -4},
    {.type = EXPR_STR, .len = 3, .u.s = "abc"},
    {.type = EXPR_FLOAT, .u.f = 2.5},
    {.type = EXPR_BOOL, .u.i = 1},
    {.type = EXPR_INT, .u.i = 0},
};
static const char *const const_names[] = {"max_threads"};
static const expr_value const_values[] = {{.type = EXPR_INT, .u.i = 1024}};
static const expr_names names = {6, param_names, 1, const_names, const_values};

/* Python repr of a value, or "ERROR" / "PARSE_ERROR". */
static void eval_repr(const char *text, char *buf, size_t cap)
{
    kt_error err;
    kt_error_clear(&err);
    expr *e = expr_parse(text, &names, 0, &err);
    if (!e) {
        assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
        snprintf(buf, cap, "PARSE_ERROR");
        return;
    }
    expr_value v;
    if (expr_eval(e, slots, &v) < 0) {
        snprintf(buf, cap, "ERROR");
    } else {
        switch (v.type) {
        case EXPR_INT:
            snprintf(buf, cap, "%lld", (long long)v.u.i);
            break;
        case EXPR_BOOL:
            snprintf(buf, cap, "%s", v.u.i ? "True" : "False");
            break;
        case EXPR_FLOAT:
            assert_true(expr_format_float(v.u.f, buf, cap) > 0);
            break;
        default:
            snprintf(buf, cap, "'%.*s'", (int)v.len, v.u.s);
        }
    }
    expr_free(e);
}

static const char *const semantics[][2] = {
    {"1+2*3", "7"},
    {"-2**2", "-4"},
    {"2**-1", "0.5"},
    {"2**3**2", "512"},
    {"(-2)**2", "4"},
    {"-a ** 2", "-36"},
    {"7//-2", "-4"},
    {"7%-2", "-1"},
    {"-7//2", "-4"},
    {"-7%2", "1"},
    {"7.5%-2", "-0.5"},
    {"-7.5//2", "-4.0"},
    {"1/2", "0.5"},
    {"1/2 == 0.5", "True"},
    {"4/2", "2.0"},
    {"a // b", "-2"},
    {"a % b", "-2"},
    {"b // a", "-1"},
    {"b % a", "2"},
    {"a / b", "-1.5"},
    {"f * 2", "5.0"},
    {"f // 1", "2.0"},
    {"f % 1", "0.5"},
    {"1 < 2 < 3", "True"},
    {"3 > 2 > 2", "False"},
    {"32 <= a * 8 <= 1024", "True"},
    {"32 <= a * 2 <= 1024", "False"},
    {"1 < 2 == 2", "True"},
    {"a > 5 > b > -5 != 0", "True"},
    {"0 and 1/0", "0"},
    {"1 or 1/0", "1"},
    {"0 or 5", "5"},
    {"3 and 4", "4"},
    {"'' or 'x'", "'x'"},
    {"z == 0 or a % z == 0", "True"},
    {"z != 0 and a % z == 0", "False"},
    {"not 0", "True"},
    {"not a", "False"},
    {"not not a", "True"},
    {"not a == 6", "False"},
    {"a == 6 and not b > 0 or False", "True"},
    {"True + True", "2"},
    {"t + 1", "2"},
    {"True & False", "False"},
    {"True | 0", "1"},
    {"3 ^ 5", "6"},
    {"6 & 3 | 8", "10"},
    {"1 + 2 << 3", "24"},
    {"-5 >> 1", "-3"},
    {"-1 >> 100", "-1"},
    {"~5", "-6"},
    {"-True", "-1"},
    {"2 < 'a'", "ERROR"},
    {"'a' < 'b'", "True"},
    {"'abc' == s", "True"},
    {"s == 3", "False"},
    {"s != 3", "True"},
    {"a in (1, 2, 6)", "True"},
    {"a not in [1, 2, 6]", "False"},
    {"a in ()", "False"},
    {"a in (6,)", "True"},
    {"a in (1, 1/0)", "ERROR"},
    {"a in (6, 1/0)", "ERROR"},
    {"'b' in s", "True"},
    {"'z' not in s", "True"},
    {"1 in s", "ERROR"},
    {"1 == 1.0", "True"},
    {"t == 1", "True"},
    {"0.1 + 0.2", "0.30000000000000004"},
    {"0.1 + 0.2 == 0.3", "False"},
    {"2**63", "9.223372036854776e+18"},
    {"9223372036854775807 + 1", "9.223372036854776e+18"},
    {"-2**63", "-9.223372036854776e+18"},
    {"10**20 > 10**19", "True"},
    {"10 ** 400 > 1", "True"},
    {"(1<<62) << 1", "9.223372036854776e+18"},
    {"9007199254740993 == 9007199254740992.0", "False"},
    {"9007199254740993 > 9007199254740992.0", "True"},
    {"a ** 0.5", "2.449489742783178"},
    {"(-8) ** (1/3)", "ERROR"},
    {"0 ** -1", "ERROR"},
    {"10.0 ** 400", "ERROR"},
    {"1 / 0", "ERROR"},
    {"a % z", "ERROR"},
    {"a // z", "ERROR"},
    {"1.0 // 0.0", "ERROR"},
    {"1.0 % 0", "ERROR"},
    {"max_threads // a", "170"},
    {"0x1F + 0o17 + 0b11", "49"},
    {"1_000 * 2", "2000"},
    {".5 + 1.", "1.5"},
    {"1e-5", "1e-05"},
    {"1e400", "inf"},
    {"64 ** -4", "5.960464477539063e-08"},
    {"\"q\\\"\" == 'q\"'", "True"},
};

static void semantics_match_python(void **state)
{
    (void)state;
    char got[64];
    for (size_t i = 0; i < sizeof semantics / sizeof semantics[0]; i++) {
        eval_repr(semantics[i][0], got, sizeof got);
        if (strcmp(got, semantics[i][1]) != 0)
            fail_msg("%s: expected %s, got %s", semantics[i][0], semantics[i][1], got);
    }
}

static void floats_format_like_python_repr(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *repr;
    } cases[] = {
        {1.5, "1.5"},
        {1e-05, "1e-05"},
        {0.1, "0.1"},
        {1e16, "1e+16"},
        {1e15, "1000000000000000.0"},
        {-0.0, "-0.0"},
        {0.30000000000000004, "0.30000000000000004"},
        {5e-324, "5e-324"},
        {1.7976931348623157e+308, "1.7976931348623157e+308"},
        {123456789012345.67, "123456789012345.67"},
        {2.5e-07, "2.5e-07"},
        {1e100, "1e+100"},
        {0.0001, "0.0001"},
        {0.00012345, "0.00012345"},
        {100.0, "100.0"},
        {-1.25e-10, "-1.25e-10"},
        {9007199254740992.0, "9007199254740992.0"},
        {12345678901234567890.0, "1.2345678901234567e+19"},
        {0x1p-24, "5.960464477539063e-08"}, /* printf's nearest 16 digits do not read back */
    };
    char buf[40];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(expr_format_float(cases[i].d, buf, sizeof buf), strlen(cases[i].repr));
        assert_string_equal(buf, cases[i].repr);
    }
    assert_int_equal(expr_format_float(0.1, buf, 3), -1);
}

static void parse_errors_give_columns(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"a <= ", "unexpected end of expression at column 6"},
        {"(a", "unexpected end of expression at column 3"},
        {"a)", "unexpected ')' at column 2"},
        {"1 +* 2", "unexpected '*' at column 4"},
        {"a = 1", "unexpected '=' at column 3 (comparison is '==')"},
        {"a is 1", "unexpected keyword 'is' at column 3"},
        {"'abc", "unterminated string at column 1"},
        {"012", "invalid number '012' at column 1"},
        {"1.5e + a", "invalid number '1.5e' at column 1"},
        {"a $ b", "unexpected character '$' at column 3"},
        {"min(a, b) > 1", "function calls are not supported ('min' at column 1)"},
        {"[1, 2]", "a tuple or list is only allowed on the right of 'in' (column 1)"},
        {"a in (1, (2, 3))", "a tuple or list is only allowed on the right of 'in' (column 10)"},
        {"a in [1] < 3", "a tuple or list is only allowed on the right of 'in' (column 6)"},
        {"", "empty expression"},
        {"   ", "empty expression"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_error err;
        kt_error_clear(&err);
        expr *e = expr_parse(cases[i][0], &names, 0, &err);
        assert_null(e);
        assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
        if (strcmp(err.message, cases[i][1]) != 0)
            fail_msg("'%s': expected \"%s\", got \"%s\"", cases[i][0], cases[i][1], err.message);
    }
}

static void unknown_names_list_the_parameters(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    assert_null(expr_parse("a * block_size > max_threads", &names, 0, &err));
    assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
    assert_string_equal(err.message, "unknown name 'block_size' at column 5");
    assert_string_equal(err.hint, "parameters: a, b, s, f, t, z; constants: max_threads");
}

static void vars_are_the_parameters_read(void **state)
{
    (void)state;
    expr *e = expr_parse("z * a + a > max_threads or (2 > 3 and b > 0)", &names, 0, NULL);
    assert_non_null(e);
    /* `2 > 3` folds to False, but `False and b > 0` still reads b. */
    assert_int_equal(expr_num_vars(e), 3);
    assert_int_equal(expr_vars(e)[0], 0);
    assert_int_equal(expr_vars(e)[1], 1);
    assert_int_equal(expr_vars(e)[2], 5);
    expr_free(e);
    e = expr_parse("max_threads * 2 == 2048", &names, 0, NULL);
    assert_non_null(e);
    assert_int_equal(expr_num_vars(e), 0);
    assert_int_equal(expr_test(e, NULL), 1);
    expr_free(e);
    /* A failing constant subexpression is not folded away: it fails at evaluation. */
    e = expr_parse("1 // 0 == 0", &names, 0, NULL);
    assert_non_null(e);
    assert_int_equal(expr_test(e, NULL), -1);
    expr_free(e);
}

static char *repeat(const char *unit, int n, const char *middle, const char *closing)
{
    size_t ul = strlen(unit), ml = strlen(middle), cl = strlen(closing);
    char *s = malloc(ul * (size_t)n + ml + cl * (size_t)n + 1);
    size_t k = 0;
    for (int i = 0; i < n; i++, k += ul)
        memcpy(s + k, unit, ul);
    memcpy(s + k, middle, ml);
    k += ml;
    for (int i = 0; i < n; i++, k += cl)
        memcpy(s + k, closing, cl);
    s[k] = '\0';
    return s;
}

static void expect_parse(const char *text, int ok, const char *fragment)
{
    kt_error err;
    kt_error_clear(&err);
    expr *e = expr_parse(text, &names, 0, &err);
    if (ok) {
        if (!e)
            fail_msg("expected to parse, got %s", err.message);
        expr_free(e);
        return;
    }
    assert_null(e);
    assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
    if (!strstr(err.message, fragment))
        fail_msg("expected \"%s\" in \"%s\"", fragment, err.message);
}

static void nesting_and_length_are_bounded(void **state)
{
    (void)state;
    char *s;
    expect_parse(s = repeat("(", 60, "a", ")"), 1, NULL);
    free(s);
    expect_parse(s = repeat("(", 70, "a", ")"), 0, "nests deeper than 64");
    free(s);
    expect_parse(s = repeat("(", 100000, "a", ")"), 0, "longer than");
    free(s);
    expect_parse(s = repeat("-", 200, "a", ""), 0, "nests deeper than 64");
    free(s);
    expect_parse(s = repeat("not ", 200, "a", ""), 0, "nests deeper than 64");
    free(s);
    expect_parse(s = repeat("2**", 200, "a", ""), 0, "nests deeper than 64");
    free(s);
    expect_parse(s = repeat("a+", 200, "a", ""), 1, NULL);
    free(s);
    expect_parse(s = repeat("a+", 300, "a", ""), 0, "tree height over 256");
    free(s);
    expect_parse(s = repeat("a < ", 1000, "a", ""), 1, NULL); /* one chain node, not a deep tree */
    free(s);
    kt_error err;
    assert_null(expr_parse("a + a + a", &names, 5, &err));
    assert_string_equal(err.message, "expression is longer than 5 characters");
}

static void append(char *text, size_t *k, size_t cap, const char *piece)
{
    size_t l = strlen(piece);
    if (*k + l + 2 >= cap)
        return;
    memcpy(text + *k, piece, l);
    *k += l;
    text[(*k)++] = ' ';
}

#define PICK(rng, arr) (arr)[kt_rng_below(rng, sizeof(arr) / sizeof((arr)[0]))]

/* Token soup: mostly operand / operator alternation with random nesting and noise tokens, so that
 * much of it parses. Every string either parses or fails cleanly, and whatever parses evaluates
 * without crashing (run under ASan/UBSan in build-space-asan). */
static void hostile_token_soup_never_crashes(void **state)
{
    (void)state;
    static const char *const operands[] = {
        "a",   "b",    "s",           "f",   "t",     "z",
        "0",   "1",    "7",           "2.5", "1e308", "9223372036854775807",
        "'x'", "True", "max_threads", "-1",  "0.0"};
    static const char *const prefixes[] = {"-", "+", "~", "not", "("};
    static const char *const operators[] = {
        "+", "-", "*",  "/",  "//", "%",  "**",     "<<",  ">>", "&", "|",
        "^", "<", "<=", "==", "!=", "in", "not in", "and", "or", ">"};
    static const char *const noise[] = {"(",    ")",    "[", "]",  ",",      "\"",     "0x", "\\",
                                        "\x01", "\xff", "=", "is", "(1, 2)", "[a, b]", "()", "$"};
    kt_rng rng;
    kt_rng_seed(&rng, 7);
    int parsed = 0, failed = 0;
    char text[512];
    for (int i = 0; i < 30000; i++) {
        size_t k = 0;
        int open = 0, n = 1 + (int)kt_rng_below(&rng, 12);
        for (int j = 0; j < n; j++) {
            if (kt_rng_below(&rng, 40) == 0)
                append(text, &k, sizeof text, PICK(&rng, noise));
            while (kt_rng_below(&rng, 4) == 0) {
                const char *pre = PICK(&rng, prefixes);
                open += pre[0] == '(';
                append(text, &k, sizeof text, pre);
            }
            append(text, &k, sizeof text, PICK(&rng, operands));
            while (open > 0 && kt_rng_below(&rng, 3) == 0) {
                append(text, &k, sizeof text, ")");
                open--;
            }
            if (j + 1 < n)
                append(text, &k, sizeof text, PICK(&rng, operators));
        }
        while (open-- > 0 && kt_rng_below(&rng, 20) != 0)
            append(text, &k, sizeof text, ")");
        text[k] = '\0';
        kt_error err;
        kt_error_clear(&err);
        expr *e = expr_parse(text, &names, 0, &err);
        if (!e) {
            assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
            assert_true(err.message[0] != '\0');
            failed++;
            continue;
        }
        parsed++;
        int t = expr_test(e, slots);
        assert_true(t >= -1 && t <= 1);
        expr_free(e);
    }
    /* Both paths are exercised. */
    assert_true(parsed > 5000);
    assert_true(failed > 1000);
}

/* Where the dialect knowingly differs from Python (see service/space/README.md). */
static void documented_deviations(void **state)
{
    (void)state;
    char got[64];
    eval_repr("s + 'x'", got,
              sizeof got); /* no string building: it would allocate per evaluation */
    assert_string_equal(got, "ERROR");
    eval_repr("'it' 's' == s", got, sizeof got); /* no implicit literal concatenation */
    assert_string_equal(got, "PARSE_ERROR");
    eval_repr("a if a else b", got, sizeof got); /* no conditional expressions */
    assert_string_equal(got, "PARSE_ERROR");
    eval_repr("10**20 == 100000000000000000000", got, sizeof got); /* big ints become floats */
    assert_string_equal(got, "True");
}

static void value_equality_is_python_equality(void **state)
{
    (void)state;
    expr_value i1 = {.type = EXPR_INT, .u.i = 1}, f1 = {.type = EXPR_FLOAT, .u.f = 1.0};
    expr_value b1 = {.type = EXPR_BOOL, .u.i = 1}, s1 = {.type = EXPR_STR, .len = 1, .u.s = "1"};
    expr_value big = {.type = EXPR_INT, .u.i = INT64_MAX};
    expr_value fbig = {.type = EXPR_FLOAT, .u.f = 9223372036854775808.0};
    assert_true(expr_value_equal(&i1, &f1));
    assert_true(expr_value_equal(&i1, &b1));
    assert_false(expr_value_equal(&i1, &s1));
    assert_false(expr_value_equal(&big, &fbig)); /* 2^63 - 1 != 2^63 exactly */
    assert_true(expr_is_keyword("lambda", 6));
    assert_false(expr_is_keyword("lambdas", 7));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(semantics_match_python),
        cmocka_unit_test(floats_format_like_python_repr),
        cmocka_unit_test(parse_errors_give_columns),
        cmocka_unit_test(unknown_names_list_the_parameters),
        cmocka_unit_test(vars_are_the_parameters_read),
        cmocka_unit_test(nesting_and_length_are_bounded),
        cmocka_unit_test(hostile_token_soup_never_crashes),
        cmocka_unit_test(documented_deviations),
        cmocka_unit_test(value_equality_is_python_equality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
