/* Unit tests of core/suggest ("did you mean", issue 31) and core/problem_distance (the log-space
 * distance of two problems behind fallback=nearest and a prediction's nearest trained problem). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "core/problem_distance.h"
#include "core/suggest.h"

static int dist(const char *a, const char *b)
{
    return kt_edit_distance(a, strlen(a), b, strlen(b));
}

static void edit_distance(void **state)
{
    (void)state;
    assert_int_equal(dist("", ""), 0);
    assert_int_equal(dist("gemm", "gemm"), 0);
    assert_int_equal(dist("gem", "gemm"), 1);   /* insertion */
    assert_int_equal(dist("gemmm", "gemm"), 1); /* deletion */
    assert_int_equal(dist("gexm", "gemm"), 1);  /* substitution */
    assert_int_equal(dist("gmem", "gemm"), 1);  /* neighbours swapped: one edit */
    assert_int_equal(dist("GEMM", "gemm"), 0);  /* case ignored */
    assert_int_equal(dist("conv2d", "gemm"), 6);
    assert_int_equal(dist("", "abc"), 3);
    assert_int_equal(dist("kitten", "sitting"), 3);
    char longer[KT_SUGGEST_LEN + 2];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(dist(longer, "a"), -1);
}

static const char *suggest_list(const char *word, const char *list, char *buf, size_t cap)
{
    kt_suggest s;
    kt_suggest_init(&s, word);
    kt_suggest_add_list(&s, list);
    kt_suggest_text(&s, buf, cap);
    return buf;
}

static void suggestions(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(suggest_list("gem", "gemm, conv2d", buf, sizeof buf), "'gemm'");
    assert_string_equal(suggest_list("conv2", "gemm, conv2d", buf, sizeof buf), "'conv2d'");
    /* nothing close, and the word itself is no suggestion */
    assert_string_equal(suggest_list("pnpoly", "gemm, conv2d", buf, sizeof buf), "");
    assert_string_equal(suggest_list("gemm", "gemm, conv2d", buf, sizeof buf), "");
    /* a prefix of several: each of them (a flag without its end) */
    assert_string_equal(
        suggest_list("--budget", "--budget-evaluations, --budget-seconds, --bu", buf, sizeof buf),
        "'--budget-evaluations' or '--budget-seconds'");
    /* a prefix match outranks a close one; three at most */
    assert_string_equal(suggest_list("ab", "abx, ac, aby, abz, abw", buf, sizeof buf),
                        "'abx', 'aby' or 'abz'");
    /* the closest wins; ties go to the first */
    assert_string_equal(suggest_list("randon", "anneal, random, randoms", buf, sizeof buf),
                        "'random'");
    assert_string_equal(suggest_list("xgx", "xgb, xga", buf, sizeof buf), "'xgb'");
    /* short words allow one edit, longer ones a third of their length */
    assert_string_equal(suggest_list("ab", "xy", buf, sizeof buf), "");
    assert_string_equal(suggest_list("exhastve", "exhaustive", buf, sizeof buf), "'exhaustive'");
    assert_string_equal(suggest_list("", "gemm", buf, sizeof buf), "");
}

static void hint_prefix(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    kt_error_set(&err, KT_ERR_UNKNOWN_KERNEL, "device cpu does not offer kernel 'gem'");
    kt_error_hint(&err, "device cpu offers: gemm, conv2d");
    kt_suggest s;
    kt_suggest_init(&s, "gem");
    kt_suggest_add_list(&s, "gemm, conv2d");
    kt_suggest_hint(&s, &err);
    assert_string_equal(err.hint, "did you mean 'gemm'? device cpu offers: gemm, conv2d");
    kt_suggest_init(&s, "zzz");
    kt_suggest_add_list(&s, "gemm, conv2d");
    kt_suggest_hint(&s, &err); /* nothing close: the hint as it was */
    assert_string_equal(err.hint, "did you mean 'gemm'? device cpu offers: gemm, conv2d");
}

static double pdist(const char *a, const char *b)
{
    json_t *x = json_loads(a, 0, NULL), *y = json_loads(b, 0, NULL);
    assert_non_null(x);
    assert_non_null(y);
    double d = kt_problem_distance(x, y);
    json_decref(x);
    json_decref(y);
    return d;
}

static void problem_distance(void **state)
{
    (void)state;
    assert_true(pdist("{\"M\": 16, \"N\": 16}", "{\"N\": 16, \"M\": 16}") == 0);
    double want = sqrt(pow(log1p(64) - log1p(16), 2) + pow(log1p(8) - log1p(32), 2));
    assert_true(fabs(pdist("{\"M\": 64, \"N\": 8}", "{\"M\": 16, \"N\": 32}") - want) < 1e-12);
    assert_true(fabs(pdist("{\"p\": [4096, 7]}", "{\"p\": [1024, 7]}") -
                     fabs(log1p(4096) - log1p(1024))) < 1e-12);
    /* not comparable: an argument missing, a string that differs, lists of other lengths */
    assert_true(pdist("{\"M\": 16}", "{\"N\": 16}") < 0);
    assert_true(pdist("{\"M\": 16, \"t\": \"a\"}", "{\"M\": 16, \"t\": \"b\"}") < 0);
    assert_true(pdist("{\"p\": [1, 2]}", "{\"p\": [1]}") < 0);
    assert_true(pdist("{\"M\": 16}", "[16]") < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(edit_distance),
        cmocka_unit_test(suggestions),
        cmocka_unit_test(hint_prefix),
        cmocka_unit_test(problem_distance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
