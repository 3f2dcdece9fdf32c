/* core/fault_log — rate-limited logging of a failure that repeats (the database down, the disk
 * full): one warning when a streak of failures starts, a reminder at most every
 * FAULT_LOG_REMIND_S, one line when it ends ("recovered after N s"); never a line per attempt.
 * Also the retry delay of a streak: doubling from FAULT_RETRY_MIN_MS to FAULT_RETRY_MAX_MS.
 *
 * A fault_log is a plain struct owned by one thread (zero-initialised = no failure). */
#ifndef KT_CORE_FAULT_LOG_H
#define KT_CORE_FAULT_LOG_H

#include <stdint.h>

#define FAULT_LOG_REMIND_S 60
#define FAULT_RETRY_MIN_MS 100
#define FAULT_RETRY_MAX_MS 2000

typedef struct fault_log {
    int failing;
    long long failures; /* in this streak */
    uint64_t since_ns, reminded_ns;
} fault_log;

/* what: who failed ("runner", "worker host:1:2/0"); message: the error. */
void fault_log_fail(fault_log *f, const char *what, const char *message);
/* Ends a streak (logs the recovery); no-op when none. */
void fault_log_ok(fault_log *f, const char *what);
/* The delay before the next attempt of the current streak (0 when not failing). */
int fault_log_retry_ms(const fault_log *f);

#endif
