/* store/migrate — applies the numbered migrations of sql/ (compiled into the binary) in order, each
 * in its own transaction, recording each in the schema_migrations table. A session-level advisory
 * lock makes two ktuned processes starting together safe: the second waits and then finds nothing
 * to do. */
#ifndef KT_STORE_MIGRATE_H
#define KT_STORE_MIGRATE_H

#include <libpq-fe.h>

#include "core/error.h"

typedef struct migration {
    const char *name; /* "001_schema.sql"; applied in strcmp order */
    const char *sql;
} migration;

/* The migrations compiled into the binary (generated from sql/ by the build), in order. */
const migration *migrate_builtin(int *count);

/* Applies those of migs not yet recorded. Returns how many were applied, or -1 with err set (the
 * failing migration is rolled back and named in the message). No time limit applies meanwhile (the
 * server's statement_timeout, db_set_limit); conn has the defaults (DB_LIMIT_MS) afterwards. */
int migrate_apply(PGconn *conn, const migration *migs, int count, kt_error *err);

#endif
