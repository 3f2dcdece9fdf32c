/* Unit tests of core/array: doubling, the cap, overflow and contents kept across growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "core/array.h"

static void next_cap_doubles_and_clips(void **state)
{
    (void)state;
    assert_int_equal(kt_array_next_cap(0, 1, 100), KT_ARRAY_FIRST);
    assert_int_equal(kt_array_next_cap(16, 17, 100), 32);
    assert_int_equal(kt_array_next_cap(16, 200, 1000), 256);
    assert_int_equal(kt_array_next_cap(64, 65, 100), 100); /* clipped to max */
    assert_int_equal(kt_array_next_cap(64, 10, 100), 64);  /* already holds it */
    assert_int_equal(kt_array_next_cap(64, 101, 100), 0);  /* over max */
}

static void growth_preserves_contents(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0;
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(KT_ARRAY_GROW(a, cap, (size_t)i + 1, SIZE_MAX), 0);
        assert_true(cap >= (size_t)i + 1);
        a[i] = i * 7;
    }
    for (int i = 0; i < 5000; i++)
        assert_int_equal(a[i], i * 7);
    free(a);
}

static void max_and_overflow_refused_without_change(void **state)
{
    (void)state;
    double *a = NULL;
    size_t cap = 0;
    assert_int_equal(KT_ARRAY_GROW(a, cap, 10, 10), 0);
    assert_int_equal(cap, 10);
    a[9] = 1.5;
    double *before = a;
    assert_int_equal(KT_ARRAY_GROW(a, cap, 11, 10), -1);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 10);
    assert_true(a[9] == 1.5);
    /* An element count whose byte size overflows size_t is refused, not wrapped. */
    assert_int_equal(KT_ARRAY_GROW(a, cap, SIZE_MAX / 4, SIZE_MAX), -1);
    assert_int_equal(cap, 10);
    assert_int_equal(kt_array_resize((void **)&a, SIZE_MAX / 2, 4), -1);
    assert_ptr_equal(a, before);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(next_cap_doubles_and_clips),
        cmocka_unit_test(growth_preserves_contents),
        cmocka_unit_test(max_and_overflow_refused_without_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
