/* store/pg_auth — who may use the embedded PostgreSQL (pg_cluster.c): two generated secrets kept in
 * the data dir, the pg_hba.conf that admits only password (scram-sha-256) logins on the private
 * socket, and the two roles:
 *   ktune_admin — the bootstrap superuser; used only by pg_cluster at start-up (roles, database);
 *   ktune       — the service role: LOGIN, NOSUPERUSER, NOCREATEDB, NOCREATEROLE; owns database
 * ktune and everything in its public schema. It cannot COPY ... PROGRAM, read server files or
 * create roles. Secrets: <data_dir>/pg-admin.secret and <data_dir>/pg-ktune.secret, 48 hex
 * characters, mode 0600, owned by the user running ktuned (the postgres OS user cannot read them;
 * the server keeps only SCRAM verifiers). A cluster made by an older ktuned (bootstrap superuser
 * `ktune`, trust authentication) is upgraded by pg_auth_upgrade_legacy. */
#ifndef KT_STORE_PG_AUTH_H
#define KT_STORE_PG_AUTH_H

#include <libpq-fe.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/error.h"

#define PG_AUTH_ADMIN_ROLE  "ktune_admin"
#define PG_AUTH_SERVICE     "ktune"
#define PG_AUTH_ADMIN_FILE  "/pg-admin.secret"
#define PG_AUTH_KTUNE_FILE  "/pg-ktune.secret"
#define PG_AUTH_SECRET_SIZE 49 /* 48 hex characters + NUL */

/* Reads the secret at path into out (size >= PG_AUTH_SECRET_SIZE); when the file is missing and
 * create is set, generates one (getrandom) and writes it with O_EXCL, mode 0600. A file that is not
 * a regular file owned by this user, not mode 0600, or not 48 hex characters is refused
 * (KT_ERR_CONFIG). Returns 0, 1 when missing and !create (out empty), -1 on error. */
int pg_auth_secret(const char *path, int create, char *out, size_t size, kt_error *err);

/* Writes <pgdata>/pg_hba.conf: local scram-sha-256 logins only, everything else rejected. When
 * as_user is set the file is handed to uid/gid (the postgres OS user). Mode 0600. */
int pg_auth_write_hba(const char *pgdata, int as_user, uid_t uid, gid_t gid, kt_error *err);

/* admin: a superuser connection to database `postgres`. Creates or updates the service role
 * (password = ktune_secret, no privileges beyond LOGIN) and database ktune owned by it. */
int pg_auth_ensure_service(PGconn *admin, const char *ktune_secret, kt_error *err);

/* admin: a superuser connection to database ktune. Hands every object of the public schema not
 * owned by the service role to it (tables, views, sequences, functions, the schema itself when a
 * role other than pg_database_owner owns it). */
int pg_auth_own_objects(PGconn *admin, kt_error *err);

/* boot: a connection as the legacy bootstrap superuser `ktune` (trust authentication, database
 * postgres). Renames it to ktune_admin with password admin_secret, through a temporary superuser
 * (a session cannot rename its own role), and drops that helper. After it, the caller connects as
 * ktune_admin and runs pg_auth_ensure_service + pg_auth_own_objects. conninfo_base is the
 * conninfo of the socket without user/password/dbname. */
int pg_auth_upgrade_legacy(PGconn *boot, const char *conninfo_base, const char *admin_secret,
                           kt_error *err);

#endif
