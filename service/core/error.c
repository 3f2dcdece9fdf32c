#include "core/error.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int status;
    const char *message;
} error_table[KT_ERR__COUNT] = {
#define KT_ERR(name, code, status, msg) {code, status, msg},
#include "core/errors.def"
#undef KT_ERR
};

void kt_error_clear(kt_error *err)
{
    if (!err)
        return;
    err->code = KT_OK;
    err->message[0] = '\0';
    err->hint[0] = '\0';
}

int kt_error_set(kt_error *err, kt_code code, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    err->hint[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    } else {
        snprintf(err->message, sizeof err->message, "%s", kt_error_default_message(code));
    }
    return -1;
}

void kt_error_hint(kt_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->hint, sizeof err->hint, fmt, ap);
    va_end(ap);
}

void kt_error_prefix(kt_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[KT_ERROR_MESSAGE_MAX];
    char old[KT_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    /* Truncation is intended: a message is capped at KT_ERROR_MESSAGE_MAX. */
    size_t n = strnlen(prefix, sizeof err->message - 3);
    memcpy(err->message, prefix, n);
    memcpy(err->message + n, ": ", 2);
    size_t room = sizeof err->message - n - 3;
    size_t m = strnlen(old, room);
    memcpy(err->message + n + 2, old, m);
    err->message[n + 2 + m] = '\0';
}

const char *kt_error_code_name(kt_code code)
{
    return (unsigned)code < KT_ERR__COUNT ? error_table[code].name : "internal";
}

int kt_error_http_status(kt_code code)
{
    return (unsigned)code < KT_ERR__COUNT ? error_table[code].status : 500;
}

const char *kt_error_default_message(kt_code code)
{
    return (unsigned)code < KT_ERR__COUNT ? error_table[code].message
                                          : "an internal error occurred";
}
