/* core/error — one error value for the whole service: a code from errors.def, a specific message
 * and a hint. Functions that can fail take `kt_error *err` (may be NULL) and fill it; kt_error is a
 * plain value, nothing to free. HTTP handlers map err->code to a status with
 * kt_error_http_status(). */
#ifndef KT_CORE_ERROR_H
#define KT_CORE_ERROR_H

#include <stdarg.h>

typedef enum {
#define KT_ERR(name, code, status, msg) name,
#include "core/errors.def"
#undef KT_ERR
    KT_ERR__COUNT
} kt_code;

#define KT_ERROR_MESSAGE_MAX 512
#define KT_ERROR_HINT_MAX    512

typedef struct kt_error {
    kt_code code;
    char message[KT_ERROR_MESSAGE_MAX];
    char hint[KT_ERROR_HINT_MAX];
} kt_error;

/* Resets err to KT_OK with empty message and hint. */
void kt_error_clear(kt_error *err);
/* Sets code and a printf-formatted message (truncated to fit); clears the hint. Returns -1 so that
 * callers can write `return kt_error_set(err, ...)`. err may be NULL. */
int kt_error_set(kt_error *err, kt_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets the hint of an error already set. err may be NULL. */
void kt_error_hint(kt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the message with "context: " (for errors passed up through layers). */
void kt_error_prefix(kt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *kt_error_code_name(kt_code code); /* "bad_request" */
int kt_error_http_status(kt_code code);       /* 400 */
const char *kt_error_default_message(kt_code code);

#endif
