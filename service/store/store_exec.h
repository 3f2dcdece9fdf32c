/* store/store_exec — the shapes the table stores repeat around db_exec (db.h), written once: run a
 * parameterised statement and keep only what the caller needs of its result (how many rows, the
 * ids of those rows, its single number), or run a function in one transaction. The single JSON
 * document or text of a query: store_query_json, store_query_text (store_util.h). Internal to
 * store/.
 *
 * A statement that fails sets err as db_exec does (KT_ERR_DATABASE quoting the server, or
 * KT_ERR_STORAGE_FULL) and the helper returns -1; each site keeps its own message
 * for what the rows mean (not found, conflict). Every PGresult is cleared here: the caller frees
 * nothing. */
#ifndef KT_STORE_EXEC_H
#define KT_STORE_EXEC_H

#include <libpq-fe.h>

#include "core/error.h"

/* Runs sql; how many rows it returned (for UPDATE / DELETE ... RETURNING id: the rows it changed),
 * or -1. */
int store_exec_count(PGconn *c, const char *sql, int n, const char *const *params, kt_error *err);
/* store_exec_count that also copies the first column (a bigint) of the first max rows into ids
 * (NULL: none copied). The count may exceed max. */
int store_exec_ids(PGconn *c, const char *sql, int n, const char *const *params, long long *ids,
                   int max, kt_error *err);
/* Runs a query returning at most one row; its first cell as a bigint into *out (0 for SQL NULL).
 * 1 when a row came, 0 when none (*out untouched), -1 on a database error. */
int store_query_ll(PGconn *c, const char *sql, int n, const char *const *params, long long *out,
                   kt_error *err);
/* What store_tx runs: its statements on c, ctx the caller's. >= 0 to commit, -1 (err) to roll
 * back. */
typedef int (*store_tx_body)(PGconn *c, void *ctx, kt_error *err);
/* Runs body in one transaction: BEGIN, body, COMMIT; rolled back when body or the commit fails.
 * body's value once committed, else -1 (err). */
int store_tx(PGconn *c, store_tx_body body, void *ctx, kt_error *err);

#endif
