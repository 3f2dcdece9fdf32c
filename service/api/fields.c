/* Pure helpers of the API's request validation (JSON fields, names in lists, numbers written as
 * text, loopback Host names), apart from request.c so that the tune request parser can be fuzzed
 * without a server or a database (tests/fuzz/). */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_internal.h"
#include "core/number.h"

int api_in_list(const char *key, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++) {
        if (strcmp(key, allowed[i]) == 0)
            return 1;
    }
    return 0;
}

void api_join_list(const char *const *items, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; items[i] && used < cap; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", items[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int api_decimal_ll(const char *s, long long *out)
{
    const char *p = s + (*s == '-');
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 19 || p[n] != '\0')
        return -1;
    return kt_parse_ll(s, LLONG_MIN, LLONG_MAX, out); /* digits only by now */
}

int api_number_text(const char *s, size_t len, long long *i, double *d)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (api_decimal_ll(buf, i) == 0)
        return 1;
    /* A decimal fraction: [-]digits[.digits][e[+-]digits], as JSON writes numbers. */
    const char *p = buf + (buf[0] == '-');
    size_t intd = strspn(p, "0123456789");
    if (intd == 0)
        return 0;
    p += intd;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        if (frac == 0)
            return 0;
        p += 1 + frac;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t ed = strspn(p, "0123456789");
        if (ed == 0 || ed > 3)
            return 0;
        p += ed;
    }
    if (*p != '\0')
        return 0;
    return kt_parse_double(buf, -HUGE_VAL, HUGE_VAL, d) == 0 ? 2 : 0;
}

int api_check_fields(const json_t *obj, const char *const *allowed, const char *where,
                     kt_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (api_in_list(key, allowed))
            continue;
        char list[512];
        api_join_list(allowed, list, sizeof list);
        kt_error_set(err, KT_ERR_UNKNOWN_FIELD, "unknown field '%.100s' in %s", key, where);
        kt_error_hint(err, "accepted fields: %s", list);
        return -1;
    }
    return 0;
}

int api_get_string(const json_t *obj, const char *key, int required, size_t max, const char **out,
                   kt_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return kt_error_set(err, KT_ERR_MISSING_FIELD, "field '%s' is required", key);
        return 0;
    }
    if (!json_is_string(v))
        return kt_error_set(err, KT_ERR_WRONG_TYPE, "field '%s' must be a string", key);
    if (json_string_length(v) == 0 || json_string_length(v) > max)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "field '%s' must be 1 to %zu characters long",
                            key, max);
    *out = json_string_value(v);
    return 0;
}

int api_host_is_loopback(const char *host)
{
    char name[64];
    const char *port;
    if (!host)
        return 0;
    if (host[0] == '[') { /* [IPv6]:port */
        const char *end = strchr(host, ']');
        if (!end || (size_t)(end - host - 1) >= sizeof name)
            return 0;
        memcpy(name, host + 1, (size_t)(end - host - 1));
        name[end - host - 1] = '\0';
        port = end + 1;
    } else {
        size_t n = strcspn(host, ":");
        if (n == 0 || n >= sizeof name)
            return 0;
        memcpy(name, host, n);
        name[n] = '\0';
        port = host + n;
    }
    if (*port == ':') { /* digits, at most 5; an empty port is allowed by RFC 3986 */
        size_t digits = strspn(port + 1, "0123456789");
        if (digits > 5 || port[1 + digits] != '\0')
            return 0;
    } else if (*port != '\0') {
        return 0;
    }
    struct in_addr a4;
    struct in6_addr a6;
    if (host[0] == '[')
        return inet_pton(AF_INET6, name, &a6) == 1 &&
               memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
    if (strcasecmp(name, "localhost") == 0)
        return 1;
    return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}
