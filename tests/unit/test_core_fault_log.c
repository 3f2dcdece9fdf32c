/* core/fault_log: a streak of failures waits 100 ms doubling to 2 s between attempts (never 0:
 * no spin), logs once when it starts, and ends with the first success. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "core/fault_log.h"

static void retry_delay_doubles_and_caps(void **state)
{
    (void)state;
    fault_log f = {0};
    assert_int_equal(fault_log_retry_ms(&f), 0);
    int want[] = {100, 200, 400, 800, 1600, 2000, 2000};
    for (int i = 0; i < 7; i++) {
        fault_log_fail(&f, "test", "database down");
        assert_true(f.failing);
        assert_int_equal(f.failures, i + 1);
        assert_int_equal(fault_log_retry_ms(&f), want[i]);
    }
    for (int i = 0; i < 1000; i++)
        fault_log_fail(&f, "test", "database down");
    assert_int_equal(fault_log_retry_ms(&f), FAULT_RETRY_MAX_MS);
}

static void success_ends_the_streak(void **state)
{
    (void)state;
    fault_log f = {0};
    fault_log_ok(&f, "test"); /* no streak: nothing happens */
    assert_false(f.failing);
    fault_log_fail(&f, "test", "disk full");
    fault_log_fail(&f, "test", "disk full");
    fault_log_ok(&f, "test");
    assert_false(f.failing);
    assert_int_equal(f.failures, 0);
    assert_int_equal(fault_log_retry_ms(&f), 0);
    fault_log_fail(&f, "test", "disk full"); /* a new streak starts over */
    assert_int_equal(fault_log_retry_ms(&f), FAULT_RETRY_MIN_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(retry_delay_doubles_and_caps),
        cmocka_unit_test(success_ends_the_streak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
