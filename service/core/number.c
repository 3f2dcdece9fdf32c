/* core/number — strict numbers from text (see number.h). */
#include "core/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* strtol and strtod skip leading space and accept what a flag should not: refuse it first. */
static int starts_as_number(const char *s)
{
    return s && *s && !isspace((unsigned char)*s);
}

int kt_parse_ll(const char *s, long long min, long long max, long long *out)
{
    char *end = NULL;
    if (!starts_as_number(s) || *s == '+')
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int kt_parse_int(const char *s, int min, int max, int *out)
{
    long long v;
    if (kt_parse_ll(s, min, max, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

int kt_parse_u64(const char *s, unsigned long long *out)
{
    char *end = NULL;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int kt_parse_double(const char *s, double min, double max, double *out)
{
    char *end = NULL;
    if (!starts_as_number(s) || strpbrk(s, "xX"))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE on underflow too ("1e-400"): refused like overflow, a flag never means that. */
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
