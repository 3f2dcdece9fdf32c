/* store/migrate — see migrate.h. Migrations run as whole scripts (PQexec: several statements, no
 * parameters) inside a transaction of ours, together with the row that records them. */
#include "store/migrate.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/db.h"

/* Session advisory lock key shared by every ktuned: "ktune" in ASCII (0x6b74756e65). */
#define MIGRATE_LOCK_KEY "461515353701"

static int by_name(const void *a, const void *b)
{
    const migration *const *x = a;
    const migration *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* 1-based line of the 1-based character position pos in sql (positions count characters, not
 * bytes). */
static int line_of_position(const char *sql, long pos)
{
    int line = 1;
    long chars = 0;
    for (const unsigned char *s = (const unsigned char *)sql; *s && chars < pos - 1; s++) {
        if ((*s & 0xC0) != 0x80)
            chars++;
        if (*s == '\n')
            line++;
    }
    return line;
}

/* Sets err from the failed script result: the server's message, where it failed, and its hint. */
static void set_script_error(const migration *m, const PGresult *res, PGconn *conn, kt_error *err)
{
    char msg[KT_ERROR_MESSAGE_MAX];
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *position = res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL;
    const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
    snprintf(msg, sizeof msg, "%s", primary ? primary : PQerrorMessage(conn));
    msg[strcspn(msg, "\r\n")] = '\0';
    if (position)
        kt_error_set(err, KT_ERR_DATABASE, "migration %s failed at line %d: %s", m->name,
                     line_of_position(m->sql, strtol(position, NULL, 10)), msg);
    else
        kt_error_set(err, KT_ERR_DATABASE, "migration %s failed: %s", m->name, msg);
    if (hint)
        kt_error_hint(err, "%s", hint);
}

static int apply_one(PGconn *conn, const migration *m, kt_error *err)
{
    int rc = -1;
    PGresult *res = NULL;
    const char *params[] = {m->name};
    if (db_begin(conn, err) != 0) {
        kt_error_prefix(err, "migration %s failed", m->name);
        goto out;
    }
    res = PQexec(conn, m->sql);
    ExecStatusType st = PQresultStatus(res);
    if (!res || (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY)) {
        set_script_error(m, res, conn, err);
        goto out;
    }
    /* Our INSERT must land in the migration's own transaction, so the script must not end it. */
    if (PQtransactionStatus(conn) != PQTRANS_INTRANS) {
        kt_error_set(err, KT_ERR_DATABASE,
                     "migration %s failed: it ends the transaction itself (BEGIN/COMMIT/ROLLBACK "
                     "are not allowed in a migration)",
                     m->name);
        goto out;
    }
    if (db_run(conn, "INSERT INTO schema_migrations (name) VALUES ($1)", 1, params, err) != 0 ||
        db_commit(conn, err) != 0) {
        kt_error_prefix(err, "migration %s failed", m->name);
        goto out;
    }
    rc = 0;
out:
    PQclear(res);
    if (rc != 0)
        db_rollback(conn);
    return rc;
}

static int is_applied(PGconn *conn, const char *name, kt_error *err)
{
    const char *params[] = {name};
    PGresult *res =
        db_exec(conn, "SELECT 1 FROM schema_migrations WHERE name = $1", 1, params, err);
    if (!res)
        return -1;
    int applied = PQntuples(res) > 0;
    PQclear(res);
    return applied;
}

int migrate_apply(PGconn *conn, const migration *migs, int count, kt_error *err)
{
    int rc = -1, applied = 0, locked = 0;
    const migration **order = NULL;
    const char *key[] = {MIGRATE_LOCK_KEY};
    if (!conn || count < 0 || (count > 0 && !migs)) {
        kt_error_set(err, KT_ERR_INTERNAL, "migrate_apply: bad arguments");
        goto out;
    }
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        kt_error_set(err, KT_ERR_DATABASE,
                     "migrations need an idle connection, not one inside a "
                     "transaction or broken");
        goto out;
    }
    order = malloc(sizeof *order * (size_t)(count > 0 ? count : 1));
    if (!order) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (int i = 0; i < count; i++) {
        if (!migs[i].name || !migs[i].sql) {
            kt_error_set(err, KT_ERR_INTERNAL, "migration %d has no name or no SQL", i);
            goto out;
        }
        order[i] = &migs[i];
    }
    qsort(order, (size_t)count, sizeof *order, by_name);
    for (int i = 1; i < count; i++) {
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            kt_error_set(err, KT_ERR_INTERNAL, "migration %s is listed twice", order[i]->name);
            goto out;
        }
    }
    /* A migration may rewrite a large table, and the lock may be held by another ktuned doing so:
     * neither the server's statement_timeout nor the pool's wait applies (restored at the end). */
    db_set_limit(conn, 0);
    if (db_run(conn, "SET statement_timeout = 0", 0, NULL, err) != 0) {
        kt_error_prefix(err, "migrations: cannot lift the statement timeout");
        goto out;
    }
    /* Waits while another ktuned migrates; it has then recorded everything and we apply nothing. */
    if (db_run(conn, "SELECT pg_advisory_lock($1::bigint)", 1, key, err) != 0) {
        kt_error_prefix(err, "migrations: cannot take the migration lock");
        goto out;
    }
    locked = 1;
    if (db_run(conn,
               "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, "
               "applied_at timestamptz NOT NULL DEFAULT now())",
               0, NULL, err) != 0) {
        kt_error_prefix(err, "migrations: cannot create schema_migrations");
        goto out;
    }
    for (int i = 0; i < count; i++) {
        int done = is_applied(conn, order[i]->name, err);
        if (done < 0) {
            kt_error_prefix(err, "migrations: cannot read schema_migrations");
            goto out;
        }
        if (done)
            continue;
        if (apply_one(conn, order[i], err) != 0)
            goto out;
        log_info("applied migration %s", order[i]->name);
        applied++;
    }
    rc = applied;
out:
    /* Best effort: a broken session has released its lock already. */
    if (locked)
        db_run(conn, "SELECT pg_advisory_unlock($1::bigint)", 1, key, NULL);
    if (order) /* the arguments were checked: the session's limits are back to the defaults */
        db_run(conn, "RESET statement_timeout", 0, NULL, NULL);
    db_set_limit(conn, DB_LIMIT_MS);
    free(order);
    return rc;
}
