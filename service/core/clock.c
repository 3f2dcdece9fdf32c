/* core/clock — see clock.h. */
#include "core/clock.h"

static struct timespec read_clock(clockid_t id)
{
    struct timespec ts = {0, 0};
    clock_gettime(id, &ts); /* cannot fail for these clocks on Linux */
    return ts;
}

uint64_t kt_clock_ns(void)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double kt_clock_ms(void)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

double kt_clock_s(void)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double kt_clock_thread_cpu_s(void)
{
    struct timespec ts = read_clock(CLOCK_THREAD_CPUTIME_ID);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t kt_clock_since_ns(uint64_t t0)
{
    uint64_t now = kt_clock_ns();
    return now > t0 ? now - t0 : 0;
}

struct timespec kt_clock_deadline(int timeout_ms)
{
    struct timespec ts = read_clock(CLOCK_MONOTONIC);
    if (timeout_ms < 0)
        timeout_ms = 0;
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int kt_clock_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

struct timespec kt_clock_wall(void)
{
    return read_clock(CLOCK_REALTIME);
}
