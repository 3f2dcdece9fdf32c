/* Unit tests of space_nearest_valid: on restricted spaces of several independent groups (and an
 * explicit one) the configuration it returns has the lowest summed cost of all valid ones (brute
 * force over every id, random costs, 50 draws each), a group over the row cap gives a valid,
 * approximate answer, and an empty space is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/rng.h"
#include "space/space.h"

typedef struct costs {
    double c[8][16];
} costs;

static double cost_of(void *arg, int p, int v)
{
    return ((const costs *)arg)->c[p][v];
}

static space *make(const char *params, const char *restr)
{
    json_t *pj = json_loads(params, 0, NULL), *rj = restr ? json_loads(restr, 0, NULL) : NULL;
    kt_error err;
    space *sp = space_new(pj, rj, NULL, NULL, &err);
    if (!sp)
        fail_msg("space_new: %s", err.message);
    json_decref(pj);
    json_decref(rj);
    return sp;
}

static void check_against_brute_force(space *sp, uint64_t seed)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    int P = space_num_params(sp), idx[8];
    for (int t = 0; t < 50; t++) {
        costs c;
        for (int p = 0; p < P; p++)
            for (int v = 0; v < space_param_num_values(sp, p); v++)
                c.c[p][v] = kt_rng_uniform(&rng) * (t % 2 ? 1.0 : 10.0);
        double best = INFINITY;
        for (config_id id = 0; id < space_count(sp); id++) {
            assert_int_equal(space_decode(sp, id, idx), 0);
            double s = 0;
            for (int p = 0; p < P; p++)
                s += c.c[p][idx[p]];
            best = s < best ? s : best;
        }
        config_id got;
        assert_int_equal(space_nearest_valid(sp, cost_of, &c, 0, &got), 1);
        assert_true(got < space_count(sp));
        assert_int_equal(space_decode(sp, got, idx), 0);
        double s = 0;
        for (int p = 0; p < P; p++)
            s += c.c[p][idx[p]];
        assert_true(fabs(s - best) < 1e-12);
    }
}

static void exact_on_restricted_spaces(void **state)
{
    (void)state;
    const char *v = "[0,1,2,3,4,5,6,7]";
    char params[1024];
    snprintf(params, sizeof params,
             "[{\"name\":\"a\",\"values\":%s},{\"name\":\"b\",\"values\":%s},"
             "{\"name\":\"c\",\"values\":%s},{\"name\":\"d\",\"values\":%s},"
             "{\"name\":\"e\",\"values\":[\"x\",\"y\",\"z\"]}]",
             v, v, v, v);
    /* groups {a, c} and {b, d, e}: a and c interleaved with the others */
    space *sp = make(params, "[\"a + c <= 6\", \"b * d % 3 == 1 or e == 'z'\"]");
    assert_int_equal(space_num_groups(sp), 2);
    printf("%llu valid configurations in 2 groups\n", (unsigned long long)space_count(sp));
    check_against_brute_force(sp, 1);
    space_free(sp);

    json_t *pj = json_loads(
        "[{\"name\":\"a\",\"values\":[1,2,3]},{\"name\":\"b\",\"values\":[1,2]}]", 0, NULL);
    json_t *cj = json_loads("[[1,1],[3,2],[2,2]]", 0, NULL);
    sp = space_new_explicit(pj, cj, NULL);
    assert_non_null(sp);
    check_against_brute_force(sp, 2);
    space_free(sp);
    json_decref(pj);
    json_decref(cj);
}

static void capped_and_empty(void **state)
{
    (void)state;
    const char *v = "[0,1,2,3,4,5,6,7,8,9]";
    char params[512];
    snprintf(params, sizeof params,
             "[{\"name\":\"a\",\"values\":%s},{\"name\":\"b\",\"values\":%s},"
             "{\"name\":\"c\",\"values\":%s}]",
             v, v, v);
    space *sp = make(params, "[\"a + b + c <= 20\"]");
    costs c = {0};
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 10; k++)
            c.c[p][k] = fabs(k - 4.0 - p);
    config_id got;
    int idx[3];
    assert_int_equal(space_nearest_valid(sp, cost_of, &c, 10, &got), 0);
    assert_int_equal(space_decode(sp, got, idx), 0);
    /* the per-parameter minimum (4, 5, 6) is valid, so even the capped scan finds it */
    assert_int_equal(idx[0], 4);
    assert_int_equal(idx[1], 5);
    assert_int_equal(idx[2], 6);
    assert_int_equal(space_nearest_valid(sp, cost_of, &c, 0, &got), 1);
    space_free(sp);
    sp = make(params, "[\"a + b + c > 100\"]");
    assert_int_equal(space_count(sp), 0);
    assert_int_equal(space_nearest_valid(sp, cost_of, &c, 0, &got), -1);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_on_restricted_spaces),
        cmocka_unit_test(capped_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
