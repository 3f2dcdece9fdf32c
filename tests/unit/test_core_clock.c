/* Unit tests of core/clock: the monotonic readings agree and never go back, deadlines are
 * normalised and a condition variable made by kt_clock_cond_init times out at them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "core/clock.h"

static void monotonic_and_consistent(void **state)
{
    (void)state;
    uint64_t prev = kt_clock_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t now = kt_clock_ns();
        assert_true(now >= prev);
        prev = now;
    }
    double ms = kt_clock_ms(), s = kt_clock_s();
    assert_true(s * 1e3 >= ms);
    assert_true(s * 1e3 - ms < 1000.0);
    uint64_t t0 = kt_clock_ns();
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
    assert_true(kt_clock_since_ns(t0) >= 2000000u);
    assert_int_equal(kt_clock_since_ns(UINT64_MAX), 0); /* a future start is not negative */
    struct timespec w = kt_clock_wall();
    assert_true(w.tv_sec > 1600000000); /* wall time, not time since boot */
}

static void deadline_is_normalised(void **state)
{
    (void)state;
    for (int ms = 0; ms < 3000; ms += 333) {
        uint64_t before = kt_clock_ns();
        struct timespec d = kt_clock_deadline(ms);
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
        uint64_t at = (uint64_t)d.tv_sec * 1000000000u + (uint64_t)d.tv_nsec;
        assert_true(at >= before + (uint64_t)ms * 1000000u);
        assert_true(at < kt_clock_ns() + (uint64_t)ms * 1000000u + 1000000u);
    }
    struct timespec neg = kt_clock_deadline(-5);
    uint64_t at = (uint64_t)neg.tv_sec * 1000000000u + (uint64_t)neg.tv_nsec;
    assert_true(at <= kt_clock_ns());
}

static void cond_times_out_at_the_deadline(void **state)
{
    (void)state;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c;
    assert_int_equal(kt_clock_cond_init(&c), 0);
    uint64_t t0 = kt_clock_ns();
    struct timespec d = kt_clock_deadline(20);
    pthread_mutex_lock(&m);
    int rc = 0;
    while (rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c, &m, &d);
    pthread_mutex_unlock(&m);
    uint64_t took = kt_clock_since_ns(t0);
    assert_true(took >= 20000000u);
    assert_true(took < 5000000000u); /* a realtime clock would have waited ~forever or not at all */
    pthread_cond_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(monotonic_and_consistent),
        cmocka_unit_test(deadline_is_normalised),
        cmocka_unit_test(cond_times_out_at_the_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
