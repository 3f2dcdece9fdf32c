/* Unit tests of core/dtype: names and sizes, and one element to and from double for every dtype:
 * f16 and bf16 (converted in software) exactly where representable, rounded to nearest even,
 * overflowing to infinity, subnormals kept; integers rounded and clamped to their range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "core/dtype.h"

static void names_and_sizes(void **state)
{
    (void)state;
    static const size_t want[KT_N_DTYPES] = {4, 2, 2, 8, 1, 2, 4, 8, 1};
    for (int t = 0; t < KT_N_DTYPES; t++) {
        assert_int_equal(kt_dtype_parse(kt_dtype_name((kt_dtype)t)), t);
        assert_int_equal(kt_dtype_size((kt_dtype)t), want[t]);
    }
    assert_int_equal(kt_dtype_parse("f32"), KT_F32);
    assert_int_equal(KT_F32, 0); /* a buffer without a dtype is fp32 */
    assert_int_equal(kt_dtype_parse("float"), -1);
    assert_true(kt_dtype_is_float(KT_BF16) && !kt_dtype_is_float(KT_U8));
}

static void f16_round_trips(void **state)
{
    (void)state;
    uint16_t h[1];
    /* exact values: 1, -2, 65504 (the largest), 2^-14 (smallest normal), 2^-24 (smallest
     * subnormal) */
    const double exact[] = {1.0, -2.0, 65504.0, 0.00006103515625, 5.960464477539063e-08, 0.0};
    const uint16_t bits[] = {0x3c00, 0xc000, 0x7bff, 0x0400, 0x0001, 0x0000};
    for (int i = 0; i < 6; i++) {
        kt_dtype_set(KT_F16, h, 0, exact[i]);
        assert_int_equal(h[0], bits[i]);
        assert_true(kt_dtype_get(KT_F16, h, 0) == exact[i]);
    }
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1) */
    kt_dtype_set(KT_F16, h, 0, 1.0 + 1.0 / 2048);
    assert_int_equal(h[0], 0x3c00);
    kt_dtype_set(KT_F16, h, 0, 1.0 + 3.0 / 2048); /* halfway above an odd one: up */
    assert_int_equal(h[0], 0x3c02);
    kt_dtype_set(KT_F16, h, 0, 70000.0);
    assert_true(isinf(kt_dtype_get(KT_F16, h, 0)));
    kt_dtype_set(KT_F16, h, 0, NAN);
    assert_true(isnan(kt_dtype_get(KT_F16, h, 0)));
    /* 0.1 lands within half a unit (2^-14 at 0.1 is 2^-4 * 2^-10 / 2) */
    kt_dtype_set(KT_F16, h, 0, 0.1);
    assert_true(fabs(kt_dtype_get(KT_F16, h, 0) - 0.1) <= 0.0625 / 1024 / 2);
}

static void bf16_round_trips(void **state)
{
    (void)state;
    uint16_t b[1];
    kt_dtype_set(KT_BF16, b, 0, 1.0);
    assert_int_equal(b[0], 0x3f80);
    kt_dtype_set(KT_BF16, b, 0, -3.0);
    assert_true(kt_dtype_get(KT_BF16, b, 0) == -3.0);
    kt_dtype_set(KT_BF16, b, 0, 1.0 + 1.0 / 256); /* halfway: to even */
    assert_int_equal(b[0], 0x3f80);
    kt_dtype_set(KT_BF16, b, 0, 1.0 + 3.0 / 256);
    assert_int_equal(b[0], 0x3f82);
    kt_dtype_set(KT_BF16, b, 0, 1e39);
    assert_true(isinf(kt_dtype_get(KT_BF16, b, 0)));
}

static void integers_round_and_clamp(void **state)
{
    (void)state;
    unsigned char buf[8];
    kt_dtype_set(KT_I8, buf, 0, 200.0);
    assert_true(kt_dtype_get(KT_I8, buf, 0) == 127.0);
    kt_dtype_set(KT_U8, buf, 0, -5.0);
    assert_true(kt_dtype_get(KT_U8, buf, 0) == 0.0);
    kt_dtype_set(KT_I16, buf, 0, 2.6);
    assert_true(kt_dtype_get(KT_I16, buf, 0) == 3.0);
    kt_dtype_set(KT_I32, buf, 0, -2147483649.0);
    assert_true(kt_dtype_get(KT_I32, buf, 0) == -2147483648.0);
    kt_dtype_set(KT_I64, buf, 0, 1e30);
    int64_t v;
    memcpy(&v, buf, sizeof v);
    assert_true(v > 0 && v > 9000000000000000000LL);
    kt_dtype_set(KT_I32, buf, 0, NAN);
    assert_true(kt_dtype_get(KT_I32, buf, 0) == 0.0);
    kt_dtype_set(KT_F64, buf, 0, 0.1);
    assert_true(kt_dtype_get(KT_F64, buf, 0) == 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_sizes),
        cmocka_unit_test(f16_round_trips),
        cmocka_unit_test(bf16_round_trips),
        cmocka_unit_test(integers_round_and_clamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
