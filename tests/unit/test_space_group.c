/* Unit tests of the group API (space_param_group, space_group_size, space_group_num_params,
 * space_group_param, space_group_position, space_with_group_position): on a small space of three
 * interleaved groups, every id and every replacement position against space_decode / space_encode
 * and a brute-force count of each group's valid sub-configurations with C predicates; on the GEMM
 * tiling space (groups m, k, n of 286, 11, 286) random ids with each group replaced keep the other
 * groups and the products; an explicit space is one group whose positions are the ids; and the
 * out-of-range answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "space/space.h"
#include "tiling_test_util.h"

static json_t *jparse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

static space *build_ok(const char *params, const char *restrictions)
{
    kt_error err;
    json_t *jp = jparse(params);
    json_t *jr = restrictions ? jparse(restrictions) : NULL;
    kt_error_clear(&err);
    space *sp = space_new(jp, jr, NULL, NULL, &err);
    json_decref(jp);
    json_decref(jr);
    if (!sp)
        fail_msg("space_new failed: %s (%s)", err.message, err.hint);
    return sp;
}

/* a, b, c, d, e in 0..4: a + c <= 4 ties a and c, b * e even ties b and e, d is free. Groups by
 * lowest parameter: {a, c} = 0, {b, e} = 1, {d} = 2. */
static space *interleaved(void)
{
    const char *v = "[0,1,2,3,4]";
    char params[512];
    snprintf(params, sizeof params,
             "[{\"name\":\"a\",\"values\":%s},{\"name\":\"b\",\"values\":%s},"
             "{\"name\":\"c\",\"values\":%s},{\"name\":\"d\",\"values\":%s},"
             "{\"name\":\"e\",\"values\":%s}]",
             v, v, v, v, v);
    return build_ok(params, "[\"a + c <= 4\", \"b * e % 2 == 0\"]");
}

/* Lexicographic comparison of the group's parameters' value indices. */
static int sub_cmp(const space *sp, int g, const int *x, const int *y)
{
    for (int i = 0; i < space_group_num_params(sp, g); i++) {
        int p = space_group_param(sp, g, i);
        if (x[p] != y[p])
            return x[p] < y[p] ? -1 : 1;
    }
    return 0;
}

static void interleaved_against_decode(void **state)
{
    (void)state;
    space *sp = interleaved();
    /* Brute force: a + c <= 4 holds for 15 of 25 pairs, b * e is even for 25 - 2 * 2 = 21 (odd
     * only when both are 1 or 3). */
    uint64_t want_n[3] = {15, 21, 5};
    int want_group[5] = {0, 1, 0, 2, 1};
    assert_int_equal(space_num_groups(sp), 3);
    assert_int_equal(space_count(sp), 15 * 21 * 5);
    for (int p = 0; p < 5; p++)
        assert_int_equal(space_param_group(sp, p), want_group[p]);
    for (int g = 0; g < 3; g++) {
        assert_true(space_group_size(sp, g) == want_n[g]);
        int k = space_group_num_params(sp, g), last = -1;
        assert_int_equal(k, g == 2 ? 1 : 2);
        for (int i = 0; i < k; i++) {
            int p = space_group_param(sp, g, i);
            assert_true(p > last); /* ascending */
            assert_int_equal(space_param_group(sp, p), g);
            last = p;
        }
    }
    long checked = 0;
    for (config_id id = 0; id < space_count(sp); id++) {
        int idx[5], idx2[5], prev[5];
        assert_int_equal(space_decode(sp, id, idx), 0);
        for (int g = 0; g < 3; g++) {
            uint64_t pos;
            assert_int_equal(space_group_position(sp, id, g, &pos), 0);
            assert_true(pos < want_n[g]);
            for (uint64_t q = 0; q < want_n[g]; q++) {
                config_id out, back;
                assert_int_equal(space_with_group_position(sp, id, g, q, &out), 0);
                assert_true(out < space_count(sp));
                assert_int_equal(space_decode(sp, out, idx2), 0);
                assert_int_equal(space_encode(sp, idx2, &back), 0);
                assert_true(back == out);
                uint64_t got;
                assert_int_equal(space_group_position(sp, out, g, &got), 0);
                assert_true(got == q);
                for (int p = 0; p < 5; p++) /* only group g's parameters may change */
                    if (want_group[p] != g)
                        assert_int_equal(idx2[p], idx[p]);
                if (q == pos)
                    assert_true(out == id);
                /* Positions follow the sorted order of the sub-configurations, strictly. */
                if (q > 0)
                    assert_true(sub_cmp(sp, g, prev, idx2) < 0);
                memcpy(prev, idx2, sizeof prev);
                /* The sub-configuration is valid by the C predicates. */
                assert_true(idx2[0] + idx2[2] <= 4);
                assert_true(idx2[1] * idx2[4] % 2 == 0);
                checked++;
            }
        }
    }
    assert_int_equal(checked, 15 * 21 * 5 * (15 + 21 + 5));
    space_free(sp);
}

static space *gemm_tiling(void)
{
    return tiling_space_new("[1,2,4,8,16,32,64,128,256,512,1024]", 1024);
}

static double product(const space *sp, const int *idx, int from, int to)
{
    double x = 1;
    for (int p = from; p < to; p++)
        x *= space_param_value_number(sp, p, idx[p]);
    return x;
}

static void gemm_tiling_groups(void **state)
{
    (void)state;
    space *sp = gemm_tiling();
    assert_int_equal(space_count(sp), 899756);
    assert_int_equal(space_num_groups(sp), 3);
    /* 1024 = 2^10 into 4 ordered factors: C(13, 3) = 286; into 2: 11. */
    assert_true(space_group_size(sp, 0) == 286);
    assert_true(space_group_size(sp, 1) == 11);
    assert_true(space_group_size(sp, 2) == 286);
    int want_group[10] = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
    for (int p = 0; p < 10; p++)
        assert_int_equal(space_param_group(sp, p), want_group[p]);
    kt_rng rng;
    kt_rng_seed(&rng, 7);
    int moved_groups[3] = {0};
    for (int t = 0; t < 2000; t++) {
        config_id id = space_sample(sp, &rng), out;
        int g = (int)kt_rng_below(&rng, 3);
        uint64_t q = kt_rng_below(&rng, space_group_size(sp, g)), pos;
        int idx[10], idx2[10];
        assert_int_equal(space_decode(sp, id, idx), 0);
        assert_int_equal(space_with_group_position(sp, id, g, q, &out), 0);
        assert_int_equal(space_decode(sp, out, idx2), 0);
        assert_int_equal(space_group_position(sp, out, g, &pos), 0);
        assert_true(pos == q);
        assert_true(product(sp, idx2, 0, 4) == 1024);
        assert_true(product(sp, idx2, 4, 6) == 1024);
        assert_true(product(sp, idx2, 6, 10) == 1024);
        int changed = 0;
        for (int p = 0; p < 10; p++) {
            if (want_group[p] != g)
                assert_int_equal(idx2[p], idx[p]);
            else
                changed |= idx2[p] != idx[p];
        }
        assert_int_equal(changed, out != id);
        moved_groups[g] += changed;
    }
    for (int g = 0; g < 3; g++)
        assert_true(moved_groups[g] > 500);
    space_free(sp);
}

static void explicit_is_one_group(void **state)
{
    (void)state;
    kt_error err;
    json_t *params = jparse("[{\"name\":\"x\",\"values\":[1,2,3]},{\"name\":\"y\",\"values\":"
                            "[\"p\",\"q\"]}]");
    json_t *configs = jparse("[[3,\"p\"],[1,\"q\"],[2,\"q\"],[1,\"p\"]]");
    space *sp = space_new_explicit(params, configs, &err);
    json_decref(params);
    json_decref(configs);
    assert_non_null(sp);
    assert_int_equal(space_num_groups(sp), 1);
    assert_true(space_group_size(sp, 0) == 4);
    assert_int_equal(space_group_num_params(sp, 0), 2);
    assert_int_equal(space_param_group(sp, 1), 0);
    for (config_id id = 0; id < 4; id++) {
        uint64_t pos;
        assert_int_equal(space_group_position(sp, id, 0, &pos), 0);
        assert_true(pos == id);
        for (uint64_t q = 0; q < 4; q++) {
            config_id out;
            assert_int_equal(space_with_group_position(sp, id, 0, q, &out), 0);
            assert_true(out == q);
        }
    }
    space_free(sp);
}

static void out_of_range(void **state)
{
    (void)state;
    space *sp = interleaved();
    uint64_t pos = 77;
    config_id out = 99;
    assert_int_equal(space_param_group(sp, -1), -1);
    assert_int_equal(space_param_group(sp, 5), -1);
    assert_int_equal(space_param_group(NULL, 0), -1);
    assert_true(space_group_size(sp, 3) == 0);
    assert_true(space_group_size(sp, -1) == 0);
    assert_int_equal(space_group_num_params(sp, 3), 0);
    assert_int_equal(space_group_param(sp, 0, 2), -1);
    assert_int_equal(space_group_param(sp, 2, -1), -1);
    assert_int_equal(space_group_position(sp, space_count(sp), 0, &pos), -1);
    assert_int_equal(space_group_position(sp, 0, 3, &pos), -1);
    assert_true(pos == 77);
    assert_int_equal(space_with_group_position(sp, 0, 0, 15, &out), -1); /* n_0 = 15 */
    assert_int_equal(space_with_group_position(sp, space_count(sp), 0, 0, &out), -1);
    assert_int_equal(space_with_group_position(sp, 0, -1, 0, &out), -1);
    assert_true(out == 99);
    space_free(sp);
    /* An empty space: no valid id, so every id is out of range. */
    sp = build_ok("[{\"name\":\"x\",\"values\":[1,2]}]", "[\"x > 5\"]");
    assert_true(space_count(sp) == 0);
    assert_int_equal(space_group_position(sp, 0, 0, &pos), -1);
    assert_int_equal(space_with_group_position(sp, 0, 0, 0, &out), -1);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(interleaved_against_decode),
        cmocka_unit_test(gemm_tiling_groups),
        cmocka_unit_test(explicit_is_one_group),
        cmocka_unit_test(out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
