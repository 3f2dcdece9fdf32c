/* api/best_cached: the normalized request a /v1/best answer is cached under. Parameter order does
 * not matter; every option and every argument value does; a key too long is refused (not cached).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/best_cached.h"

static size_t key(char *buf, size_t cap, char source, int nearest, long long k, const best_param *p,
                  int n)
{
    return best_request_key(buf, cap, "gemm", "cpu", source, nearest, k, p, n);
}

static void test_order_does_not_matter(void **state)
{
    (void)state;
    const best_param a[] = {{"M", "64"}, {"N", "32"}, {"K", "16"}};
    const best_param b[] = {{"K", "16"}, {"M", "64"}, {"N", "32"}};
    char ka[256], kb[256];
    size_t la = key(ka, sizeof ka, 'a', 0, 5, a, 3), lb = key(kb, sizeof kb, 'a', 0, 5, b, 3);
    assert_true(la > 0);
    assert_int_equal(la, lb);
    assert_memory_equal(ka, kb, la);
    /* the layout: kernel, device, options, then name/value pairs sorted by name */
    const char expect[] = "gemm\0cpu\0a-5\0K\00016\0M\00064\0N\00032";
    assert_int_equal(la, sizeof expect);
    assert_memory_equal(ka, expect, la);
}

static void test_everything_else_matters(void **state)
{
    (void)state;
    const best_param base[] = {{"M", "64"}, {"N", "32"}};
    const best_param value[] = {{"M", "64"}, {"N", "33"}};
    const best_param name[] = {{"M", "64"}, {"n", "32"}};
    const best_param fewer[] = {{"M", "64"}};
    /* a value that moves a separator: "M=6", "4N=32" must not equal "M=64", "N=32" */
    const best_param shifted[] = {{"M", "6"}, {"4N", "32"}};
    char k0[256], k1[256];
    size_t l0 = key(k0, sizeof k0, 'a', 0, 5, base, 2);
    struct {
        char source;
        int nearest;
        long long k;
        const best_param *p;
        int n;
    } other[] = {{'m', 0, 5, base, 2}, {'p', 0, 5, base, 2},  {'a', 1, 5, base, 2},
                 {'a', 0, 6, base, 2}, {'a', 0, 50, base, 2}, {'a', 0, 5, value, 2},
                 {'a', 0, 5, name, 2}, {'a', 0, 5, fewer, 1}, {'a', 0, 5, shifted, 2}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        size_t l1 = key(k1, sizeof k1, other[i].source, other[i].nearest, other[i].k, other[i].p,
                        other[i].n);
        assert_true(l1 > 0);
        assert_false(l1 == l0 && memcmp(k0, k1, l0) == 0);
    }
    /* the device is part of it too */
    size_t l2 = best_request_key(k1, sizeof k1, "gemm", "cuda:0", 'a', 0, 5, base, 2);
    assert_false(l2 == l0 && memcmp(k0, k1, l0) == 0);
}

static void test_too_long_is_not_cached(void **state)
{
    (void)state;
    const best_param p[] = {{"M", "64"}, {"N", "32"}};
    char buf[256];
    size_t full = key(buf, sizeof buf, 'a', 0, 5, p, 2);
    assert_true(full > 0);
    assert_int_equal(key(buf, full, 'a', 0, 5, p, 2), full); /* exactly fits */
    assert_int_equal(key(buf, full - 1, 'a', 0, 5, p, 2), 0);
    assert_int_equal(key(buf, 4, 'a', 0, 5, p, 2), 0);
    assert_int_equal(key(buf, sizeof buf, 'a', 0, -1, p, 2), 0);
    assert_int_equal(key(buf, sizeof buf, 'a', 0, 5, p, 65), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_does_not_matter),
        cmocka_unit_test(test_everything_else_matters),
        cmocka_unit_test(test_too_long_is_not_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
