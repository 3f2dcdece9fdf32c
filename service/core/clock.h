/* core/clock — the one place that reads the clocks. Durations and deadlines use CLOCK_MONOTONIC
 * (never jumps with NTP or the administrator); kt_clock_wall is for timestamps and unique names
 * only. Pure functions over the system clocks, nothing to free.
 *
 * Condition variables waited on with kt_clock_deadline must be created with kt_clock_cond_init,
 * so that pthread_cond_timedwait reads the same monotonic clock. */
#ifndef KT_CORE_CLOCK_H
#define KT_CORE_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Monotonic time since an arbitrary start: nanoseconds, milliseconds, seconds. */
uint64_t kt_clock_ns(void);
double kt_clock_ms(void);
double kt_clock_s(void);
/* CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID). */
double kt_clock_thread_cpu_s(void);
/* Nanoseconds from t0 (a kt_clock_ns reading) to now; 0 if the clock reads earlier. */
uint64_t kt_clock_since_ns(uint64_t t0);
/* The monotonic time timeout_ms from now (negative counts as 0), for pthread_cond_timedwait. */
struct timespec kt_clock_deadline(int timeout_ms);
/* pthread_cond_init with the monotonic clock; 0 or the error number. */
int kt_clock_cond_init(pthread_cond_t *cond);
/* Wall-clock time (CLOCK_REALTIME): timestamps in logs and ids, never durations. */
struct timespec kt_clock_wall(void);

#endif
