/* Listen addresses: "127.0.0.1:8080", "[::1]:8080", ":8080" (all IPv4 interfaces),
 * "localhost:8080". Only numeric hosts (and localhost), so that start-up never waits on a resolver.
 */
#include "http/http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LISTEN_MAX 128

static int listen_bad(kt_error *err, const char *listen, const char *why)
{
    kt_error_set(err, KT_ERR_CONFIG, "listen address \"%.*s\" is not valid: %s", LISTEN_MAX, listen,
                 why);
    kt_error_hint(err,
                  "expected HOST:PORT, e.g. 127.0.0.1:8080, [::1]:8080 or :8080 (port 0 picks a "
                  "free port)");
    return -1;
}

static int parse_port(const char *s, int *port)
{
    size_t n = strlen(s);
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > 65535)
        return -1;
    *port = v;
    return 0;
}

int http_listen_parse(const char *listen, http_addr *out, kt_error *err)
{
    char host[LISTEN_MAX];
    const char *port_s;
    memset(out, 0, sizeof *out);
    if (!listen || !*listen) {
        kt_error_set(err, KT_ERR_CONFIG, "listen address is empty");
        kt_error_hint(err, "expected HOST:PORT, e.g. 127.0.0.1:8080, [::1]:8080 or :8080");
        return -1;
    }
    size_t len = strnlen(listen, LISTEN_MAX);
    if (len >= LISTEN_MAX)
        return listen_bad(err, listen, "too long");
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close)
            return listen_bad(err, listen, "missing ']' after the IPv6 address");
        if (close[1] != ':')
            return listen_bad(err, listen, "missing ':PORT' after ']'");
        size_t hl = (size_t)(close - listen - 1);
        memcpy(host, listen + 1, hl);
        host[hl] = '\0';
        port_s = close + 2;
        out->ipv6 = 1;
    } else {
        const char *colon = strrchr(listen, ':');
        if (!colon)
            return listen_bad(err, listen, "missing ':PORT'");
        size_t hl = (size_t)(colon - listen);
        if (memchr(listen, ':', hl))
            return listen_bad(err, listen, "IPv6 addresses must be written in brackets");
        memcpy(host, listen, hl);
        host[hl] = '\0';
        port_s = colon + 1;
    }
    int port;
    if (parse_port(port_s, &port) != 0)
        return listen_bad(err, listen, "the port must be a number from 0 to 65535");
    if (out->ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return listen_bad(err, listen, "not a numeric IPv6 address");
        out->len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&out->ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (host[0] == '\0')
            a->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (strcmp(host, "localhost") == 0)
            a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return listen_bad(err, listen, "not a numeric IPv4 address");
        out->len = sizeof *a;
    }
    return 0;
}
