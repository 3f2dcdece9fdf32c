/* http/prepared — a reply made once and sent many times: status, content type, headers and body
 * built into one libmicrohttpd response that any number of connections (of any server thread) queue
 * at once, with no copy, parse or allocation per request. For answers a handler keeps in memory
 * (GET /v1/best's cache, lookup/best_cache.h).
 *
 * Ownership: reference-counted. http_prepared_new gives one reference; http_prepared_retain adds
 * one; http_prepared_release drops one, the last frees it (libmicrohttpd keeps the bytes until the
 * last connection sending them is done). http_reply_prepared hands one reference to the response:
 * the server sends it and releases it. Thread-safe. */
#ifndef KT_HTTP_PREPARED_H
#define KT_HTTP_PREPARED_H

#include <stddef.h>

#include "http/server.h"

typedef struct http_prepared http_prepared;

/* headers: "Name: value\r\n"... or NULL (each checked as http_response_add_header does). NULL when
 * out of memory or status is not 100..599. The body is copied. */
http_prepared *http_prepared_new(int status, const char *content_type, const char *headers,
                                 const char *body, size_t body_len);
void http_prepared_retain(http_prepared *p);
void http_prepared_release(http_prepared *p); /* NULL is fine */
int http_prepared_status(const http_prepared *p);

/* Makes res send p (the reference is taken over), replacing any status, body and headers it held.
 * The handler's last reply call. */
void http_reply_prepared(http_response *res, http_prepared *p);

/* For the server (request.c): the prepared reply res carries, taken out of it (the caller releases
 * it after queueing), or NULL. */
http_prepared *http_response_take_prepared(http_response *res);
/* The libmicrohttpd response of p (borrowed: queue it, never destroy it). */
struct MHD_Response *http_prepared_response(http_prepared *p);

#endif
