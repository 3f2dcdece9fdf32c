/* core/log — leveled logging to stderr, one line per event, prefixed with time and level.
 * Thread-safe (one write(2) per line). The level is process configuration set once at start-up by
 * kt_log_init. */
#ifndef KT_CORE_LOG_H
#define KT_CORE_LOG_H

typedef enum { KT_LOG_DEBUG = 0, KT_LOG_INFO, KT_LOG_WARN, KT_LOG_ERROR } kt_log_level;

/* Call once, before any thread starts. */
void kt_log_init(kt_log_level level);
/* Parses "debug", "info", "warn", "error"; returns -1 on anything else. */
int kt_log_parse_level(const char *s, kt_log_level *out);
void kt_log(kt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) kt_log(KT_LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  kt_log(KT_LOG_INFO, __VA_ARGS__)
#define log_warn(...)  kt_log(KT_LOG_WARN, __VA_ARGS__)
#define log_error(...) kt_log(KT_LOG_ERROR, __VA_ARGS__)

#endif
