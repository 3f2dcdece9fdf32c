/* Route patterns: segments separated by '/', each either literal (exact match) or "{name}" (one
 * non-empty segment, captured). A trailing slash is an ordinary (empty) last segment. */
#include "http/http_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct span {
    size_t off;
    size_t len;
} span;

static int is_capture(const char *seg, size_t len)
{
    return len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
}

/* Matches one pattern; on success fills spans of the captures (offsets into path). */
static int pattern_match(const char *pattern, const char *path, span *caps, int *n_caps)
{
    const char *p = pattern;
    const char *u = path;
    int n = 0;
    if (*p != '/' || *u != '/')
        return 0;
    for (;;) {
        p++; /* both sit on '/' here */
        u++;
        size_t pl = strcspn(p, "/");
        size_t ul = strcspn(u, "/");
        if (is_capture(p, pl)) {
            if (ul == 0 || n >= HTTP_MAX_PATH_PARAMS)
                return 0;
            caps[n].off = (size_t)(u - path);
            caps[n].len = ul;
            n++;
        } else if (pl != ul || memcmp(p, u, pl) != 0) {
            return 0;
        }
        p += pl;
        u += ul;
        if (*p == '\0' || *u == '\0')
            break;
    }
    if (*p != '\0' || *u != '\0')
        return 0;
    *n_caps = n;
    return 1;
}

int http_router_check(const http_route *routes, int *n, kt_error *err)
{
    int i = 0;
    if (!routes)
        return kt_error_set(err, KT_ERR_CONFIG, "http: the routes array is missing");
    for (; routes[i].method; i++) {
        const http_route *r = &routes[i];
        if (i >= 10000)
            return kt_error_set(err, KT_ERR_CONFIG, "http: routes array is not terminated");
        if (!r->pattern || r->pattern[0] != '/' || !r->handler)
            return kt_error_set(
                err, KT_ERR_CONFIG,
                "http: route %d (%s) needs a pattern starting with '/' and a handler", i,
                r->method);
        int caps = 0;
        for (const char *s = r->pattern + 1;; s++) {
            size_t len = strcspn(s, "/");
            if (memchr(s, '{', len) || memchr(s, '}', len)) {
                if (!is_capture(s, len) || len == 2 || memchr(s + 1, '{', len - 2) ||
                    memchr(s + 1, '}', len - 2))
                    return kt_error_set(err, KT_ERR_CONFIG,
                                        "http: route %s %s: a '{name}' must fill a whole segment",
                                        r->method, r->pattern);
                caps++;
            }
            s += len;
            if (*s == '\0')
                break;
        }
        if (caps > HTTP_MAX_PATH_PARAMS)
            return kt_error_set(err, KT_ERR_CONFIG, "http: route %s %s has more than %d parameters",
                                r->method, r->pattern, HTTP_MAX_PATH_PARAMS);
    }
    *n = i;
    return 0;
}

static void allow_add(char *allow, size_t cap, const char *method)
{
    size_t len = strlen(allow);
    /* Listed once each: look for the method as a whole item. */
    for (const char *s = allow; *s;) {
        size_t l = strcspn(s, ",");
        if (l == strlen(method) && memcmp(s, method, l) == 0)
            return;
        s += l;
        while (*s == ',' || *s == ' ')
            s++;
    }
    snprintf(allow + len, cap - len, "%s%s", len ? ", " : "", method);
}

int http_router_match(const http_route *routes, const char *method, const char *path,
                      http_request *req, int *route_index, char *scratch, char *allow,
                      size_t allow_cap)
{
    span caps[HTTP_MAX_PATH_PARAMS];
    int n_caps = 0;
    int path_matched = 0;
    allow[0] = '\0';
    for (int i = 0; routes[i].method; i++) {
        if (!pattern_match(routes[i].pattern, path, caps, &n_caps))
            continue;
        if (strcmp(routes[i].method, method) != 0) {
            if (!path_matched) {
                req->route = routes[i].pattern;
                *route_index = i;
            }
            path_matched = 1;
            allow_add(allow, allow_cap, routes[i].method);
            continue;
        }
        char *w = scratch;
        for (int k = 0; k < n_caps; k++) {
            memcpy(w, path + caps[k].off, caps[k].len);
            w[caps[k].len] = '\0';
            req->params[k] = w;
            w += caps[k].len + 1;
        }
        req->n_params = n_caps;
        req->route = routes[i].pattern;
        *route_index = i;
        return HTTP_MATCH_OK;
    }
    return path_matched ? HTTP_MATCH_METHOD : HTTP_MATCH_NONE;
}
