/* core/class_name: the part rule of device class names, and its bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/class_name.h"

static void keeps_and_joins(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(kt_class_name_part("AMD EPYC 9R14 96-Core Processor", out, sizeof out), 31);
    assert_string_equal(out, "AMD_EPYC_9R14_96-Core_Processor");
    kt_class_name_part("  NVIDIA GeForce / RTX 3090 (x) ", out, sizeof out);
    assert_string_equal(out, "NVIDIA_GeForce_RTX_3090_x");
    assert_int_equal(kt_class_name_part("???", out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(kt_class_name_part(NULL, out, sizeof out), 0);
}

static void stays_within_cap(void **state)
{
    (void)state;
    char out[6];
    memset(out, 'z', sizeof out);
    size_t n = kt_class_name_part("abcdefghij", out, sizeof out);
    assert_true(n < sizeof out);
    assert_int_equal(strlen(out), n);
    assert_memory_equal(out, "abcd", n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(keeps_and_joins),
                                       cmocka_unit_test(stays_within_cap)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
