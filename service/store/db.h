/* store/db — a fixed pool of libpq connections shared by the service's threads, and small helpers
 * that run parameterised statements and turn libpq failures into kt_error (KT_ERR_DATABASE). A
 * connection that broke is reset when it is next acquired.
 *
 * Outages: while the server is unreachable, db_acquire fails fast (one reconnection attempt per
 * 250 ms for the whole pool, libpq's connect_timeout 2 s) with KT_ERR_DATABASE and a hint, and logs
 * one line when the outage starts and one ("recovered after N s") when it ends. A statement that
 * fails because the disk is full or read-only is KT_ERR_STORAGE_FULL (507). db_pool_probe says
 * whether the database takes writes (for /healthz and before creating jobs).
 *
 * A hung server (issue 26: a stopped postmaster, a stuck disk) must not hang its callers: the
 * server ends a statement after DB_STATEMENT_TIMEOUT_MS (statement_timeout), and ktuned itself
 * waits for a statement's result at most the connection's limit (DB_LIMIT_MS, or less through
 * db_set_limit: the API's requests), because the server's own timer does not run while it is
 * stopped. A statement not answered in time drops its connection (the server ends the session as
 * soon as it runs again: client_connection_check_interval), fails with KT_ERR_DATABASE, and counts
 * as an outage (db_pool_down; the pool reconnects on a later acquire). Sending never blocks either
 * (the connections are non-blocking).
 *
 * Lifecycle: db_pool_new -> (db_acquire -> [db_set_limit] -> db_exec* -> db_release)* ->
 * db_pool_free. */
#ifndef KT_STORE_DB_H
#define KT_STORE_DB_H

#include <libpq-fe.h>

#include "core/error.h"

typedef struct db_pool db_pool;

/* The server's limit on one statement (statement_timeout), and how often a session in a statement
 * checks that its client is still there (client_connection_check_interval): service.c sets both,
 * with the idle-transaction limit, as the server options of every session (PGOPTIONS). */
#define DB_STATEMENT_TIMEOUT_MS 30000
#define DB_CLIENT_CHECK_MS      1000
/* How long db_exec waits for a result by default: the server's limit and a margin, so that the
 * server's own timeout (a clean error) normally comes first. */
#define DB_LIMIT_MS (DB_STATEMENT_TIMEOUT_MS + 2000)

db_pool *db_pool_new(const char *conninfo, int size, kt_error *err);
void db_pool_free(db_pool *p);
/* Blocks until a connection is free (at most timeout_ms, then KT_ERR_DATABASE); a broken one is
 * reconnected first (at most libpq's connect_timeout, 2 s). Its statements wait DB_LIMIT_MS. */
PGconn *db_acquire(db_pool *p, int timeout_ms, kt_error *err);
/* How long each statement on conn (acquired from a pool) waits for its result until db_release:
 * limit_ms > 0, or 0 for no limit (migrations at start-up). No effect on other connections. */
void db_set_limit(PGconn *conn, int limit_ms);
void db_release(db_pool *p, PGconn *conn);

/* Runs sql with text parameters (NULL entries are SQL NULL). Returns the result (caller PQclear()s
 * it) when it is COMMAND_OK or TUPLES_OK, else NULL with err set to KT_ERR_DATABASE quoting the
 * server's message, or saying that the database did not answer within the connection's limit
 * (the connection is then dropped: every later statement on it fails at once). */
PGresult *db_exec(PGconn *conn, const char *sql, int n_params, const char *const *params,
                  kt_error *err);
/* db_exec that also reports the server's SQLSTATE on failure ("23505" for a unique violation; ""
 * when there is none, e.g. a lost connection), for callers that map some errors to other codes. */
PGresult *db_exec_state(PGconn *conn, const char *sql, int n_params, const char *const *params,
                        char sqlstate[6], kt_error *err);
/* The statements run at every ask, tell or step of a job: each pooled connection prepares them
 * once (its session keeps the parse, and after a few runs the plan), instead of parsing and
 * planning them at every run. */
typedef enum db_prepared {
    DB_PREPARED_ASK,            /* store/ask_store: an ask's lease */
    DB_PREPARED_TELL,           /* store/ask_store: a tell */
    DB_PREPARED_TRIALS_DRIVING, /* store/trial_store: a driver's step reads */
    DB_PREPARED_TRIALS_INSERT,  /* store/trial_store: a driver's step queues */
    DB_PREPARED_JOBS_EXHAUSTED, /* store/job_store: the runner's round, before a claim */
    DB_PREPARED_JOBS_CLAIM,     /* store/job_store: the runner's round claims */
    DB_PREPARED__COUNT
} db_prepared;

/* db_exec of the statement id, whose text is always sql (with n_params parameters), prepared on
 * conn at its first run; on a connection of no pool, db_exec itself. A session that lost it (a
 * DISCARD, a pooler that changed sessions) runs it unprepared once and prepares it again: so not
 * inside a transaction, which that failure would abort. */
PGresult *db_exec_prepared(PGconn *conn, db_prepared id, const char *sql, int n_params,
                           const char *const *params, kt_error *err);
/* db_exec for statements whose result is not needed. Returns 0 or -1. */
int db_run(PGconn *conn, const char *sql, int n_params, const char *const *params, kt_error *err);
int db_begin(PGconn *conn, kt_error *err);
/* -1 also when the server rolled the transaction back because a statement in it had failed. */
int db_commit(PGconn *conn, kt_error *err);
void db_rollback(PGconn *conn); /* best effort, never fails */

/* 1 while an outage is under way (the last reconnection attempt failed), else 0. */
int db_pool_down(db_pool *p);

/* What db_pool_probe found. */
typedef enum { DB_STATE_OK, DB_STATE_DOWN, DB_STATE_FULL, DB_STATE_READ_ONLY } db_state;
/* "ok", "down", "full", "read_only" (the /healthz "database" field). */
const char *db_state_name(db_state s);
/* The embedded cluster's data directory (copied): db_pool_probe also reads its free space and mount
 * flags (statvfs), so a full or read-only disk is reported before PostgreSQL fails on it. */
void db_pool_watch_dir(db_pool *p, const char *dir);
/* Whether the database takes writes: the watched directory (read-only mount; free space under
 * DB_MIN_FREE_BYTES) and a write probe (a transaction that takes a transaction id, committed: fails
 * on a read-only or unreachable server). Cached for DB_PROBE_CACHE_MS, one probe at a time; at
 * most ~2 s when the server does not answer. err gets the reason when not DB_STATE_OK. */
db_state db_pool_probe(db_pool *p, kt_error *err);
#define DB_MIN_FREE_BYTES (48ll << 20) /* three WAL segments */
#define DB_PROBE_CACHE_MS 1000
/* For writes the caller would rather refuse than start: -1 with KT_ERR_STORAGE_FULL when the
 * probe says full or read-only, KT_ERR_DATABASE when down; else 0. */
int db_pool_check_writable(db_pool *p, kt_error *err);

/* LISTEN/NOTIFY: a dedicated connection (not from the pool) for waiting on notifications. */
PGconn *db_connect(const char *conninfo, kt_error *err);
/* Waits up to timeout_ms for a notification on conn; returns 1 if one (or more) arrived, 0 on
 * timeout, -1 on a broken connection. Drains all pending notifications. */
int db_wait_notify(PGconn *conn, int timeout_ms);

#endif
