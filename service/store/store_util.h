/* store/store_util — small helpers shared by the table stores: number-to-text parameters and
 * reading typed values out of a PGresult. Internal to store/. */
#ifndef KT_STORE_UTIL_H
#define KT_STORE_UTIL_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

/* A job (alias j, a string literal) whose ok trials count as measurements: a tuning job, or an
 * import an admin trusted ("trusted": true, or "replace_measured": true, when it was created;
 * import_store.h). An untrusted import answers only a plain GET /v1/best, as "imported": it never
 * feeds source=measured, the nearest fallback, models (training data and retrain counts) or warm
 * starts (issue 26). */
#define STORE_MEASURED_JOB(j)                                                                      \
    "(" j ".strategy <> 'import' OR " j ".strategy_options @> '{\"trusted\": true}')"

typedef struct store_num {
    char text[32];
} store_num;

const char *store_ll(store_num *n, long long v);
const char *store_double(store_num *n, double v);
/* NULL when the value is not finite, for nullable double columns. */
const char *store_double_or_null(store_num *n, double v);
long long store_get_ll(const PGresult *r, int row, int col);
double store_get_double(const PGresult *r, int row, int col); /* NAN for NULL */
/* Parses a json/jsonb column (text form); NULL for SQL NULL or unparsable text. */
json_t *store_get_json(const PGresult *r, int row, int col);
/* Runs a query returning a single json/jsonb cell and parses it. NULL result row ->
 * KT_ERR_NOT_FOUND with not_found_msg. */
json_t *store_query_json(PGconn *c, const char *sql, int n, const char *const *params,
                         const char *not_found_msg, kt_error *err);
/* store_query_json of a result already had (db_exec_prepared's; NULL: err is set), which it
 * PQclear()s. */
json_t *store_result_json(PGresult *r, const char *not_found_msg, kt_error *err);
/* Runs a query returning at most one row and copies its first cell (text form) into out (cap
 * bytes, truncated). 1 when a row came, 0 when none (out untouched), -1 on a database error. */
int store_query_text(PGconn *c, const char *sql, int n, const char *const *params, char *out,
                     size_t cap, kt_error *err);
/* Compact JSON text of v (malloc'd), or NULL when v is NULL. */
char *store_json_text(const json_t *v);
/* 1 if a process with this pid exists on this host. */
int store_pid_alive(int pid);

#endif
