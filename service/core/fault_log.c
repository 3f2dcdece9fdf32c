/* core/fault_log — see fault_log.h. */
#include "core/fault_log.h"

#include "core/clock.h"
#include "core/log.h"

void fault_log_fail(fault_log *f, const char *what, const char *message)
{
    uint64_t now = kt_clock_ns();
    f->failures++;
    if (!f->failing) {
        f->failing = 1;
        f->since_ns = f->reminded_ns = now;
        log_warn("%s: %s (retrying; further failures are not logged until it recovers)", what,
                 message);
        return;
    }
    if (now - f->reminded_ns >= (uint64_t)FAULT_LOG_REMIND_S * 1000000000u) {
        f->reminded_ns = now;
        log_warn("%s: still failing after %.0f s and %lld attempts: %s", what,
                 (double)(now - f->since_ns) / 1e9, f->failures, message);
    }
}

void fault_log_ok(fault_log *f, const char *what)
{
    if (!f->failing)
        return;
    log_warn("%s: recovered after %.1f s (%lld failed attempts)", what,
             (double)kt_clock_since_ns(f->since_ns) / 1e9, f->failures);
    f->failing = 0;
    f->failures = 0;
}

int fault_log_retry_ms(const fault_log *f)
{
    if (!f->failing)
        return 0;
    long long ms = FAULT_RETRY_MIN_MS;
    for (long long i = 1; i < f->failures && ms < FAULT_RETRY_MAX_MS; i++)
        ms *= 2;
    return (int)(ms > FAULT_RETRY_MAX_MS ? FAULT_RETRY_MAX_MS : ms);
}
