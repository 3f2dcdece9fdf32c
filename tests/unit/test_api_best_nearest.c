/* Unit tests of api/best_nearest: the log-distance between problems and the choice of the nearest
 * tuned problem whose configuration is valid for the asked one (GET /v1/best?fallback=nearest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "api/best_nearest.h"

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

static double dist(const char *a, const char *b)
{
    json_t *x = load(a), *y = load(b);
    double d = best_problem_distance(x, y);
    json_decref(x);
    json_decref(y);
    return d;
}

static void distance_is_log_euclidean(void **state)
{
    (void)state;
    assert_true(dist("{\"M\": 16, \"N\": 16}", "{\"N\": 16, \"M\": 16}") == 0);
    double want = sqrt(pow(log1p(64) - log1p(16), 2) + pow(log1p(8) - log1p(32), 2));
    assert_true(fabs(dist("{\"M\": 64, \"N\": 8}", "{\"M\": 16, \"N\": 32}") - want) < 1e-12);
    /* symmetric; lists element by element; equal strings count 0 */
    assert_true(dist("{\"M\": 16, \"N\": 32}", "{\"M\": 64, \"N\": 8}") ==
                dist("{\"M\": 64, \"N\": 8}", "{\"M\": 16, \"N\": 32}"));
    want = fabs(log1p(4096) - log1p(1024));
    assert_true(fabs(dist("{\"p\": [4096, 7], \"t\": \"f\"}", "{\"p\": [1024, 7], \"t\": \"f\"}") -
                     want) < 1e-12);
    /* negative values keep their order (sign * log(1 + |x|)) */
    assert_true(dist("{\"x\": -3}", "{\"x\": 3}") > dist("{\"x\": -3}", "{\"x\": -2}"));
}

static void incomparable_problems(void **state)
{
    (void)state;
    assert_true(dist("{\"M\": 1}", "{\"M\": 1, \"N\": 2}") < 0);           /* argument missing */
    assert_true(dist("{\"M\": 1, \"K\": 2}", "{\"M\": 1, \"N\": 2}") < 0); /* another name */
    assert_true(dist("{\"t\": \"f\"}", "{\"t\": \"d\"}") < 0);             /* another string */
    assert_true(dist("{\"p\": [1, 2]}", "{\"p\": [1]}") < 0);              /* another length */
    assert_true(dist("{\"p\": true}", "{\"p\": 1}") < 0);
    assert_true(dist("[1]", "{\"p\": 1}") < 0);
}

/* A space of two parameters where a == 2 needs b == 1. */
static space *small_space(void)
{
    json_t *params =
        load("[{\"name\": \"a\", \"values\": [1, 2]}, {\"name\": \"b\", \"values\": [0, 1]}]");
    json_t *restrictions = load("[\"a == 1 or b == 1\"]");
    kt_error err;
    space *sp = space_new(params, restrictions, NULL, NULL, &err);
    assert_non_null(sp);
    json_decref(params);
    json_decref(restrictions);
    return sp;
}

static void picks_the_nearest_valid_one(void **state)
{
    (void)state;
    space *sp = small_space();
    json_t *problem = load("{\"n\": 100}");
    json_t *entries =
        load("["
             "{\"problem\": {\"n\": 100}, \"config\": {\"a\": 1, \"b\": 0}}," /* itself */
             "{\"problem\": {\"n\": 110}, \"config\": {\"a\": 2, \"b\": 0}}," /* invalid */
             "{\"problem\": {\"n\": 90},  \"config\": {\"a\": 2, \"b\": 1}},"
             "{\"problem\": {\"n\": 1000}, \"config\": {\"a\": 1, \"b\": 1}},"
             "{\"problem\": {\"m\": 100}, \"config\": {\"a\": 1, \"b\": 1}}" /* other */
             "]");
    double d = -1;
    assert_int_equal(best_nearest_pick(entries, problem, sp, &d), 2);
    assert_true(fabs(d - fabs(log1p(100) - log1p(90))) < 1e-12);
    /* With the nearer valid one gone, the farther one; with none valid or comparable, -1. */
    json_array_remove(entries, 2);
    assert_int_equal(best_nearest_pick(entries, problem, sp, &d), 2);
    json_array_remove(entries, 2);
    assert_int_equal(best_nearest_pick(entries, problem, sp, &d), -1);
    json_t *empty = json_array();
    assert_int_equal(best_nearest_pick(empty, problem, sp, &d), -1);
    json_decref(empty);
    json_decref(entries);
    json_decref(problem);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(distance_is_log_euclidean),
        cmocka_unit_test(incomparable_problems),
        cmocka_unit_test(picks_the_nearest_valid_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
