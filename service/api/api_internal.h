/* api/api_internal — helpers shared by the handler files: the service behind the app pointer,
 * database connections that turn into error replies, query-string and JSON-field validation.
 * Internal to api/. */
#ifndef KT_API_INTERNAL_H
#define KT_API_INTERNAL_H

#include <jansson.h>
#include <libpq-fe.h>

#include "api/api.h"
#include "api/tune_request.h"
#include "http/server.h"

#define API_MAX_NAME 256 /* kernel, device, strategy names */

/* A request's database time is bounded (issue 26), so that a hung database is a 503 within about
 * 2 s on every route that needs it and never holds a request thread: a pooled connection is waited
 * for at most API_DB_ACQUIRE_MS, and each statement on it at most API_DB_LIMIT_MS (db_set_limit;
 * the heavy imports keep store/db.h's DB_LIMIT_MS). */
#define API_DB_ACQUIRE_MS 2000
#define API_DB_LIMIT_MS   2000
/* A pooled connection with the API's limits, or NULL after replying 503. */
PGconn *api_db_acquire(api_context *svc, http_response *res);
void api_db_release(api_context *svc, PGconn *c);

/* Replies with err and returns; for one-line error exits. */
void api_fail(http_response *res, const kt_error *err);
/* Replies status with body (the reference is taken over) about job id, with its Location. */
void api_reply_job(http_response *res, int status, json_t *body, long long id);

/* 1 when key is one of allowed (NULL-ended); api_join_list writes "a, b, c" into buf (cut at
 * cap). (fields.c, with the other pure helpers) */
int api_in_list(const char *key, const char *const *allowed);
void api_join_list(const char *const *items, char *buf, size_t cap);
/* A job status query argument (GET /v1/jobs ?status, GET /v1/jobs/{id}/events ?status): 0 when s is
 * one of queued, running, succeeded, failed, cancelled; else -1 with a 400 out_of_range naming it
 * (after "field: " when field is set) and the accepted ones. api_job_over: 1 for the three final
 * statuses, else 0 (jobs.c) */
int api_job_status_check(const char *s, const char *field, kt_error *err);
int api_job_over(const char *status);
/* Strict decimal: an optional '-' and 1 to 19 digits within long long, nothing else (no '+',
 * spaces, hex, octal, exponent). 0, or -1. */
int api_decimal_ll(const char *s, long long *out);
/* Fails (400 unknown_field, listing allowed) when the query has an argument not in allowed
 * (NULL-ended). */
int api_check_query(const http_request *req, const char *const *allowed, kt_error *err);
/* Parses a decimal integer in [min, max] from a query argument (strict: [-]digits only, no '+',
 * spaces, hex); absent -> *out = def. */
int api_query_ll(const http_request *req, const char *key, long long min, long long max,
                 long long def, long long *out, kt_error *err);
/* The same for a value already read (s NULL: absent); key names it in the error. */
int api_parse_ll(const char *key, const char *s, long long min, long long max, long long def,
                 long long *out, kt_error *err);
/* A number written in a query string (len bytes of s): 1 with *i for a decimal integer
 * (api_decimal_ll), 2 with *d for a decimal fraction ([-]digits[.digits][e[+-]digits],
 * finite), 0 for anything else (hex, '+', spaces, inf, nan: not a number, so a string). */
int api_number_text(const char *s, size_t len, long long *i, double *d);
/* 1 when a Host header value names this machine by its loopback name or address: localhost,
 * 127.0.0.0/8 (dotted quad) or [::1], with or without a port; 0 for anything else, NULL too. A
 * page a DNS rebinding points at 127.0.0.1 still sends its own name as Host. (fields.c) */
int api_host_is_loopback(const char *host);
/* A path {id}: a positive decimal integer, else KT_ERR_NOT_FOUND. */
int api_path_id(const http_request *req, int index, const char *what, long long *out,
                kt_error *err);
/* A route on one thing by its path {id} (the first) that takes no query: fn's body (taken over)
 * with 200 (fn returns NULL with err set to fail), or the error of the id (404), of a query
 * argument (400), of no connection (503). what names the thing ("model"). */
typedef json_t *(*api_by_id_fn)(PGconn *c, long long id, kt_error *err);
void api_reply_by_id(api_context *svc, const http_request *req, http_response *res,
                     const char *what, api_by_id_fn fn);
/* Fails (400 unknown_field) when obj has a key not in allowed (NULL-ended); where names the object.
 */
int api_check_fields(const json_t *obj, const char *const *allowed, const char *where,
                     kt_error *err);
/* A string field: absent -> *out = NULL (error if required); wrong type or longer than max ->
 * error. */
int api_get_string(const json_t *obj, const char *key, int required, size_t max, const char **out,
                   kt_error *err);
/* Scopes nest: admin includes kernels includes tune includes read. kernels (issue 27) may submit
 * kernels (POST /v1/kernels): code that workers compile and run, so more than tuning the kernels
 * there are; less than admin (tokens, removals, trusted imports). */
typedef enum { API_SCOPE_READ, API_SCOPE_TUNE, API_SCOPE_KERNELS, API_SCOPE_ADMIN } api_scope;
/* Whether the request may do what needs scope. When any token exists (--api-token or the
 * api_tokens table) every request needs "Authorization: Bearer <token>" of that scope or a wider
 * one; with none (the service listens on loopback), every request is allowed whose Host is a
 * loopback name (api_host_is_loopback; else 421 misdirected_request: DNS rebinding), except a
 * write (tune/admin) whose Origin (or Sec-Fetch-Site) says another site sent it. A token that is
 * presented must be valid. Returns 0 when allowed, else replies 401 unauthorized / 403 forbidden
 * / 421 and returns -1. routes.c calls it with each route's scope; handlers call it again where
 * the body asks for more (an import that replaces measurements, GET /v1/best?tune_on_miss). */
int api_authorize(api_context *svc, const http_request *req, http_response *res, api_scope scope);
/* Who a request comes from, for the per-token job cap: "token:<id>", "startup" (--api-token) or
 * "anonymous". Call after api_authorize allowed it. */
void api_caller(api_context *svc, const http_request *req, char *out, size_t size);
/* --max-queued-jobs-per-token: 0 when the caller may queue one more job (out = its api_caller,
 * to pass to api_tune_queue), else replies 429 too_many_requests with Retry-After and returns -1.
 */
int api_job_quota(api_context *svc, PGconn *c, const http_request *req, http_response *res,
                  char *out, size_t size);

/* Queues a job for a validated tune request (tune.c; POST /v1/tune and GET /v1/best?tune_on_miss):
 * resolves the target with its space, checks the strategy's options and that the space is not
 * empty, inserts the job with its submitter (api_caller: the caller whose job cap and share of the
 * runners' job slots it counts in) and wakes the runner. With unless_active, a queued or running
 * job of the same key is taken instead (*created 0, *id_out its id). Errors: those of
 * catalog_resolve, searcher_new, KT_ERR_BAD_SPACE, the store's. */
int api_tune_queue(api_context *svc, PGconn *c, const tune_request *t, const char *submitter,
                   int unless_active, long long *id_out, int *created, kt_error *err);

#endif
