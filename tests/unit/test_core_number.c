/* Unit tests of core/number: what a strict number is (whole text, decimal, in range, finite), and
 * that a refused text leaves the output alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>

#include "core/number.h"

static void integers_whole_and_in_range(void **state)
{
    (void)state;
    long long n = 7;
    assert_int_equal(kt_parse_ll("42", 1, 100, &n), 0);
    assert_int_equal(n, 42);
    assert_int_equal(kt_parse_ll("-5", -10, 10, &n), 0);
    assert_int_equal(n, -5);
    assert_int_equal(kt_parse_ll("9223372036854775807", 0, LLONG_MAX, &n), 0);
    assert_true(n == LLONG_MAX);
    const char *bad[] = {"", " 4", "4 ", "+4", "4x", "0x10", "1e3", "4.0", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 7;
        assert_int_equal(kt_parse_ll(bad[i], LLONG_MIN, LLONG_MAX, &n), -1);
        assert_int_equal(n, 7);
    }
    assert_int_equal(kt_parse_ll(NULL, 0, 1, &n), -1);
    assert_int_equal(kt_parse_ll("0", 1, 100, &n), -1);
    assert_int_equal(kt_parse_ll("101", 1, 100, &n), -1);
    int i = 3;
    assert_int_equal(kt_parse_int("2147483648", INT_MIN, INT_MAX, &i), -1);
    assert_int_equal(i, 3);
    assert_int_equal(kt_parse_int("-2147483648", INT_MIN, INT_MAX, &i), 0);
    assert_int_equal(i, INT_MIN);
}

static void seeds_are_unsigned_64_bit(void **state)
{
    (void)state;
    unsigned long long s = 1;
    assert_int_equal(kt_parse_u64("18446744073709551615", &s), 0);
    assert_true(s == ULLONG_MAX);
    assert_int_equal(kt_parse_u64("0", &s), 0);
    assert_true(s == 0);
    s = 1;
    const char *bad[] = {"", "-1", "+1", " 1", "18446744073709551616", "1x", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kt_parse_u64(bad[i], &s), -1);
    assert_true(s == 1);
}

static void doubles_finite_and_in_range(void **state)
{
    (void)state;
    double d = 9;
    assert_int_equal(kt_parse_double("2.5", 0, 10, &d), 0);
    assert_true(d == 2.5);
    assert_int_equal(kt_parse_double("1e-3", 0, 10, &d), 0);
    assert_true(d == 1e-3);
    assert_int_equal(kt_parse_double("-0.5", -1, 1, &d), 0);
    assert_true(d == -0.5);
    d = 9;
    const char *bad[] = {"",   "nan",   "inf",   "-inf",   "0x1p3", " 1",
                         "1 ", "2.5.1", "1e999", "1e-400", "11"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kt_parse_double(bad[i], -100, 10, &d), -1);
    assert_true(d == 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers_whole_and_in_range),
        cmocka_unit_test(seeds_are_unsigned_64_bit),
        cmocka_unit_test(doubles_finite_and_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
