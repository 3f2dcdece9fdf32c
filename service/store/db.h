/* store/db — a fixed pool of libpq connections shared by the service's threads, and small helpers
 * that run parameterised statements and turn libpq failures into kt_error (KT_ERR_DATABASE). A
 * connection that broke is reset when it is next acquired.
 *
 * Lifecycle: db_pool_new -> (db_acquire -> db_exec* -> db_release)* -> db_pool_free. */
#ifndef KT_STORE_DB_H
#define KT_STORE_DB_H

#include <libpq-fe.h>

#include "core/error.h"

typedef struct db_pool db_pool;

db_pool *db_pool_new(const char *conninfo, int size, kt_error *err);
void db_pool_free(db_pool *p);
/* Blocks until a connection is free (at most timeout_ms, then KT_ERR_DATABASE). */
PGconn *db_acquire(db_pool *p, int timeout_ms, kt_error *err);
void db_release(db_pool *p, PGconn *conn);

/* Runs sql with text parameters (NULL entries are SQL NULL). Returns the result (caller PQclear()s
 * it) when it is COMMAND_OK or TUPLES_OK, else NULL with err set to KT_ERR_DATABASE quoting the
 * server's message. */
PGresult *db_exec(PGconn *conn, const char *sql, int n_params, const char *const *params,
                  kt_error *err);
/* db_exec that also reports the server's SQLSTATE on failure ("23505" for a unique violation; ""
 * when there is none, e.g. a lost connection), for callers that map some errors to other codes. */
PGresult *db_exec_state(PGconn *conn, const char *sql, int n_params, const char *const *params,
                        char sqlstate[6], kt_error *err);
/* db_exec for statements whose result is not needed. Returns 0 or -1. */
int db_run(PGconn *conn, const char *sql, int n_params, const char *const *params, kt_error *err);
int db_begin(PGconn *conn, kt_error *err);
/* -1 also when the server rolled the transaction back because a statement in it had failed. */
int db_commit(PGconn *conn, kt_error *err);
void db_rollback(PGconn *conn); /* best effort, never fails */

/* LISTEN/NOTIFY: a dedicated connection (not from the pool) for waiting on notifications. */
PGconn *db_connect(const char *conninfo, kt_error *err);
/* Waits up to timeout_ms for a notification on conn; returns 1 if one (or more) arrived, 0 on
 * timeout, -1 on a broken connection. Drains all pending notifications. */
int db_wait_notify(PGconn *conn, int timeout_ms);

#endif
