/* api/best_cached — the cached side of GET /v1/best (lookup/best_cache.h holds the answers): the
 * normalized request an answer is cached under, and the replies made from a cached entry or a fresh
 * answer with their ETag (304 when If-None-Match names it). Internal to api/best.c.
 *
 * Nothing here touches the database or JSON; every argument is borrowed. */
#ifndef KT_API_BEST_CACHED_H
#define KT_API_BEST_CACHED_H

#include <stddef.h>

#include "http/server.h"
#include "lookup/best_cache.h"

/* One query parameter that is not an option (borrowed from the request). */
typedef struct best_param {
    const char *name, *value;
} best_param;

/* The normalized request into buf (cap bytes): the kernel, the device, the options as parsed
 * (source 'a'ny|'m'easured|'p'redicted, fallback, k) and the problem arguments sorted by name,
 * NUL-separated. Two requests that differ only in the order of their parameters get the same key.
 * Returns its length, or 0 when it does not fit (such a request is not cached). */
size_t best_request_key(char *buf, size_t cap, const char *kernel, const char *device, char source,
                        int nearest, long long k, const best_param *params, int n_params);

/* The reply res holds (a fresh 200 or 404, before best_reply_etag) prepared once for the server,
 * with its ETag and Cache-Control for a 200: an attachment for best_cache_put; NULL when out of
 * memory (the entry is then stored without one and replies are built from its body). */
void *best_prepare(const http_response *res);

/* Replies with a cached entry (hit->attach or hit->body is taken over): a 200 with its ETag, or 304
 * when If-None-Match names it; a negative entry as the 404 it was. */
void best_reply_cached(const http_request *req, http_response *res, best_cache_hit *hit);

/* Adds the ETag of res's fresh 200 body (and Cache-Control: no-cache: clients revalidate), and
 * turns it into a 304 without a body when If-None-Match names it. Other statuses are left alone. */
void best_reply_etag(const http_request *req, http_response *res);

#endif
