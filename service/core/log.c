#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

/* Written once by kt_log_init before threads start, then only read: start-up configuration, not
 * mutable state. */
static kt_log_level log_threshold = KT_LOG_INFO;

void kt_log_init(kt_log_level level)
{
    log_threshold = level;
}

int kt_log_parse_level(const char *s, kt_log_level *out)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (kt_log_level)i;
            return 0;
        }
    }
    return -1;
}

void kt_log(kt_log_level level, const char *fmt, ...)
{
    static const char *tags[] = {"debug", "info", "warn", "error"};
    if (level < log_threshold)
        return;
    char line[2048];
    struct timespec ts = kt_clock_wall();
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, tags[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
