/* Unit tests of neural/nn_transform: validity rules of each sequence, weight counts and offsets
 * (rows contiguous, the last ending at the total), input ranges per sequence, configuration parsing
 * and the descriptions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "neural/nn_transform.h"

static nn_transform T(int g, int b, int s)
{
    nn_transform t = {g, b, s};
    return t;
}

static void validity_rules(void **state)
{
    (void)state;
    kt_error err;
    nn_transform id = nn_transform_identity();
    assert_true(nn_transform_is_identity(&id));
    assert_int_equal(nn_transform_valid(&id, 3, 5, 7, &err), 1);
    nn_transform t = T(4, 1, 0);
    assert_int_equal(nn_transform_valid(&t, 32, 64, 28, &err), 1);
    t = T(3, 1, 0);
    assert_int_equal(nn_transform_valid(&t, 32, 64, 28, &err), 0);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "groups 3"));
    t = T(2, 3, 0); /* K % b */
    assert_int_equal(nn_transform_valid(&t, 32, 64, 28, &err), 0);
    t = T(8, 2, 0); /* K' = 8, 8 % 8 ok */
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 1);
    t = T(16, 2, 0); /* K' = 8 not divisible by 16 */
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 0);
    t = T(1, 1, 1); /* spatial needs g >= 2 */
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 0);
    t = T(4, 1, 1);
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 1);
    t = T(8, 1, 1); /* g > P */
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 0);
    t = T(4, 1, 2);
    assert_int_equal(nn_transform_valid(&t, 16, 32, 5, &err), 1);
    t = T(4, 4, 2); /* K' = 8 not a multiple of 16 */
    assert_int_equal(nn_transform_valid(&t, 16, 32, 5, &err), 0);
    t = T(32, 1, 2); /* 16 % 32 */
    assert_int_equal(nn_transform_valid(&t, 32, 32, 5, &err), 0);
    t = T(2, 1, 3);
    assert_int_equal(nn_transform_valid(&t, 16, 16, 5, &err), 1);
    t = T(4, 1, 3); /* K' % 16 ok, C % 8 ok */
    assert_int_equal(nn_transform_valid(&t, 8, 16, 5, &err), 1);
    t = T(4, 1, 3); /* C % 8 fails */
    assert_int_equal(nn_transform_valid(&t, 4, 16, 5, &err), 0);
    t = T(1, 1, 4);
    assert_int_equal(nn_transform_valid(&t, 4, 16, 5, &err), 0);
    t = T(0, 1, 0);
    assert_int_equal(nn_transform_valid(&t, 4, 16, 5, &err), 0);
}

/* Every row's offset follows the previous row's block; the total matches nn_transform_weights. */
static void weights_and_offsets(void **state)
{
    (void)state;
    const nn_transform ts[] = {T(1, 1, 0), T(4, 1, 0), T(2, 2, 0), T(4, 1, 1), T(2, 2, 2),
                               T(8, 1, 2), T(1, 1, 3), T(2, 1, 3), T(2, 2, 3)};
    int C = 32, K = 64, R = 3, S = 3, P = 10;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        kt_error err;
        assert_int_equal(nn_transform_valid(&ts[i], C, K, P, &err), 1);
        int Kp = nn_transform_out_channels(&ts[i], K);
        assert_int_equal(Kp, K / ts[i].bottleneck);
        long long expect = 0;
        for (int k = 0; k < Kp; k++) {
            assert_int_equal(nn_transform_weight_offset(&ts[i], C, K, R, S, k), expect);
            int first, count;
            nn_transform_inputs(&ts[i], C, K, P, k, 0, &first, &count);
            assert_true(first >= 0 && count >= 1 && first + count <= C);
            expect += (long long)count * R * S;
        }
        assert_int_equal(nn_transform_weights(&ts[i], C, K, R, S), expect);
    }
    nn_transform t = T(1, 1, 0);
    assert_int_equal(nn_transform_weights(&t, C, K, R, S), (long long)C * K * R * S);
    t = T(4, 2, 0);
    assert_int_equal(nn_transform_weights(&t, C, K, R, S), 32LL * 8 * 9);
    t = T(2, 1, 3); /* 32*16*9 + 32*8*9 */
    assert_int_equal(nn_transform_weights(&t, C, K, R, S), 32LL * 16 * 9 + 32LL * 8 * 9);
}

static void input_ranges(void **state)
{
    (void)state;
    int first, count;
    int C = 16, K = 32, P = 8;
    nn_transform t = T(4, 1, 0); /* 8 outputs per group */
    nn_transform_inputs(&t, C, K, P, 0, 3, &first, &count);
    assert_int_equal(first, 0);
    assert_int_equal(count, 4);
    nn_transform_inputs(&t, C, K, P, 17, 3, &first, &count);
    assert_int_equal(first, 8);
    nn_transform_inputs(&t, C, K, P, 31, 0, &first, &count);
    assert_int_equal(first, 12);
    t = T(4, 1, 1); /* bands of rows: y*4/8 */
    nn_transform_inputs(&t, C, K, P, 31, 0, &first, &count);
    assert_int_equal(first, 0);
    nn_transform_inputs(&t, C, K, P, 0, 3, &first, &count);
    assert_int_equal(first, 4);
    nn_transform_inputs(&t, C, K, P, 0, 7, &first, &count);
    assert_int_equal(first, 12);
    assert_int_equal(count, 4);
    t = T(4, 1, 2); /* group (k%16)/4 */
    nn_transform_inputs(&t, C, K, P, 16 + 5, 0, &first, &count);
    assert_int_equal(first, 4);
    nn_transform_inputs(&t, C, K, P, 15, 0, &first, &count);
    assert_int_equal(first, 12);
    t = T(2, 1, 3); /* first half (16) by 2: 8 per group; second half by 4: 4 per group */
    nn_transform_inputs(&t, C, K, P, 9, 0, &first, &count);
    assert_int_equal(first, 8);
    assert_int_equal(count, 8);
    nn_transform_inputs(&t, C, K, P, 16 + 5, 0, &first, &count);
    assert_int_equal(first, 4);
    assert_int_equal(count, 4);
    nn_transform_inputs(&t, C, K, P, 31, 0, &first, &count);
    assert_int_equal(first, 12);
}

static void from_config_and_describe(void **state)
{
    (void)state;
    kt_error err;
    nn_transform t;
    json_t *c = json_pack("{s:i, s:i, s:i, s:i}", "GROUPS", 4, "BOTTLENECK", 2, "SEQ", 0, "X", 9);
    assert_int_equal(nn_transform_from_config(c, &t, &err), 0);
    assert_int_equal(t.groups, 4);
    assert_int_equal(t.bottleneck, 2);
    char buf[64];
    nn_transform_describe(&t, buf, sizeof buf);
    assert_string_equal(buf, "group+bottleneck");
    json_decref(c);
    c = json_pack("{s:i}", "SEQ", 2);
    assert_int_equal(nn_transform_from_config(c, &t, &err), 0);
    assert_int_equal(t.groups, 1);
    t.groups = 2;
    nn_transform_describe(&t, buf, sizeof buf);
    assert_string_equal(buf, "unroll_group");
    json_decref(c);
    c = json_pack("{s:i}", "SEQ", 5);
    assert_int_equal(nn_transform_from_config(c, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    json_decref(c);
    c = json_pack("{s:s}", "GROUPS", "2");
    assert_int_equal(nn_transform_from_config(c, &t, &err), -1);
    json_decref(c);
    c = json_object();
    assert_int_equal(nn_transform_from_config(c, &t, &err), 0);
    assert_true(nn_transform_is_identity(&t));
    nn_transform_describe(&t, buf, sizeof buf);
    assert_string_equal(buf, "none");
    json_decref(c);
    t = T(2, 2, 1);
    nn_transform_describe(&t, buf, 8); /* truncated, still terminated */
    assert_int_equal(strlen(buf), 7);
    t = T(2, 1, 3);
    nn_transform_describe(&t, buf, sizeof buf);
    assert_string_equal(buf, "split_group");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validity_rules),
        cmocka_unit_test(weights_and_offsets),
        cmocka_unit_test(input_ranges),
        cmocka_unit_test(from_config_and_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
