/* Unit tests of worker/warm_start's pure parts: the problem distance that orders history sources
 * (nearest first), and the searcher history rebuilt from a recorded jobs.history_used
 * (configurations mapped by parameter names and values, invalid ones dropped, order kept). The
 * database side is covered by tests/integration/test_warm_start.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "worker/warm_start.h"

static json_t *js(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    return v;
}

static void problem_distance_is_a_log_distance(void **state)
{
    (void)state;
    json_t *a = js("{\"M\":1024,\"N\":1024}"), *b = js("{\"M\":2048,\"N\":1024}");
    json_t *c = js("{\"M\":4096,\"N\":1024}"), *d = js("{\"M\":1024}");
    json_t *e = js("{\"problem_size\":[4096,4096]}"), *f = js("{\"problem_size\":[4096,2048]}");
    assert_true(warm_start_problem_distance(a, a) == 0);
    assert_true(fabs(warm_start_problem_distance(a, b) - log(2)) < 1e-12);
    assert_true(fabs(warm_start_problem_distance(a, c) - log(4)) < 1e-12);
    assert_true(warm_start_problem_distance(a, b) < warm_start_problem_distance(a, c));
    assert_true(warm_start_problem_distance(a, b) == warm_start_problem_distance(b, a));
    assert_true(warm_start_problem_distance(a, d) == 4.0); /* N missing on one side */
    assert_true(fabs(warm_start_problem_distance(e, f) - log(2)) < 1e-12);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
    json_decref(f);
}

static void recorded_history_maps_into_the_space(void **state)
{
    (void)state;
    kt_error err;
    json_t *params =
        js("[{\"name\":\"x\",\"values\":[1,2,4,8]},{\"name\":\"y\",\"values\":[0,1]}]");
    json_t *restr = js("[\"x * (y + 1) <= 8\"]");
    space *sp = space_new(params, restr, NULL, NULL, &err);
    assert_non_null(sp);
    json_t *used = js("{\"first\":["
                      "{\"config\":{\"x\":8,\"y\":0},\"time_ms\":1,\"source\":0},"
                      "{\"config\":{\"x\":8,\"y\":1},\"time_ms\":2,\"source\":0}," /* invalid */
                      "{\"config\":{\"x\":3,\"y\":0},\"time_ms\":2,\"source\":0}," /* no value */
                      "{\"config\":{\"x\":2,\"z\":0},\"time_ms\":2,\"source\":1}," /* other names */
                      "{\"config\":{\"y\":1,\"x\":2},\"time_ms\":3,\"source\":1}],"
                      "\"prior\":[{\"config\":{\"x\":1,\"y\":1},\"time_ms\":5.5,\"source\":1}],"
                      "\"sources\":[]}");
    warm_start ws;
    assert_int_equal(warm_start_from_used(used, sp, &ws, &err), 0);
    assert_int_equal(ws.h.n_first, 2);
    json_t *c0 = space_config_json(sp, ws.h.first[0]), *c1 = space_config_json(sp, ws.h.first[1]);
    assert_int_equal(json_integer_value(json_object_get(c0, "x")), 8);
    assert_int_equal(json_integer_value(json_object_get(c1, "x")), 2);
    assert_int_equal(json_integer_value(json_object_get(c1, "y")), 1);
    assert_int_equal(ws.h.n_prior, 1);
    assert_true(ws.h.prior_ms[0] == 5.5);
    assert_int_equal(ws.h.prior_source[0], 1);
    json_decref(c0);
    json_decref(c1);
    warm_start_release(&ws);
    /* Nothing recorded (history none, or an empty history): an empty searcher history. */
    json_t *empty = js("{\"first\":[],\"prior\":[],\"sources\":[]}");
    assert_int_equal(warm_start_from_used(empty, sp, &ws, &err), 0);
    assert_int_equal(ws.h.n_first + ws.h.n_prior, 0);
    warm_start_release(&ws);
    json_decref(empty);
    json_decref(used);
    json_decref(params);
    json_decref(restr);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(problem_distance_is_a_log_distance),
        cmocka_unit_test(recorded_history_maps_into_the_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
