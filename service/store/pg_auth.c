/* store/pg_auth — see pg_auth.h. */
#include "store/pg_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

#define SECRET_BYTES 24

static int is_hex_secret(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        if (!strchr("0123456789abcdef", s[n]))
            return 0;
    }
    return n == 2 * SECRET_BYTES;
}

static int read_secret(const char *path, char *out, size_t size, kt_error *err)
{
    int rc = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        return kt_error_set(err, KT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    char buf[2 * SECRET_BYTES + 2];
    ssize_t n = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 0777) != 0600) {
        kt_error_set(err, KT_ERR_CONFIG,
                     "%s must be a regular file owned by this user with mode 0600", path);
        kt_error_hint(err, "chown it to the user running ktuned and chmod 0600 it");
        goto out;
    }
    n = read(fd, buf, sizeof buf - 1);
    if (n < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (!is_hex_secret(buf) || size < PG_AUTH_SECRET_SIZE) {
        kt_error_set(err, KT_ERR_CONFIG, "%s does not hold a ktuned secret (48 hex characters)",
                     path);
        kt_error_hint(err, "restore it from a backup; the database role's password is set from it");
        goto out;
    }
    snprintf(out, size, "%s", buf);
    rc = 0;
out:
    close(fd);
    return rc;
}

static int create_secret(const char *path, kt_error *err)
{
    unsigned char raw[SECRET_BYTES];
    char hex[2 * SECRET_BYTES + 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return kt_error_set(err, KT_ERR_IO, "getrandom: %s", strerror(errno));
    for (int i = 0; i < SECRET_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    hex[2 * SECRET_BYTES] = '\n';
    hex[2 * SECRET_BYTES + 1] = '\0';
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return errno == EEXIST
                   ? 0 /* another ktuned made it: read that one */
                   : kt_error_set(err, KT_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    size_t len = strlen(hex);
    int ok = fchmod(fd, 0600) == 0 && write(fd, hex, len) == (ssize_t)len && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok) {
        unlink(path);
        return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", path, strerror(saved));
    }
    log_info("generated the embedded postgresql secret %s (mode 0600)", path);
    return 0;
}

int pg_auth_secret(const char *path, int create, char *out, size_t size, kt_error *err)
{
    out[0] = '\0';
    int rc = read_secret(path, out, size, err);
    if (rc != 1 || !create)
        return rc;
    if (create_secret(path, err) != 0)
        return -1;
    rc = read_secret(path, out, size, err);
    return rc == 1 ? kt_error_set(err, KT_ERR_IO, "%s vanished after it was created", path) : rc;
}

int pg_auth_write_hba(const char *pgdata, int as_user, uid_t uid, gid_t gid, kt_error *err)
{
    static const char body[] =
        "# Written by ktuned at every start (store/pg_auth.c): edits are overwritten.\n"
        "# Only local (unix socket) logins with a password; the socket directory is 0700.\n"
        "local all all scram-sha-256\n"
        "host  all all all reject\n";
    char path[4096], tmp[4096];
    if (snprintf(path, sizeof path, "%s/pg_hba.conf", pgdata) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/pg_hba.conf.ktune", pgdata) >= (int)sizeof tmp)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", pgdata);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return kt_error_set(err, KT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    int ok = write(fd, body, sizeof body - 1) == (ssize_t)(sizeof body - 1) && fsync(fd) == 0 &&
             (!as_user || fchown(fd, uid, gid) == 0);
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        saved = ok ? errno : saved;
        unlink(tmp);
        return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", path, strerror(saved));
    }
    return 0;
}

/* Runs one statement; on failure sets err with what + the server's message (one line). */
static int run_sql(PGconn *conn, const char *sql, const char *what, kt_error *err)
{
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        kt_error_set(err, KT_ERR_DATABASE, "%s: %s", what, PQresultErrorMessage(res));
        err->message[strcspn(err->message, "\n")] = '\0';
    }
    PQclear(res);
    return ok ? 0 : -1;
}

/* "<prefix> 'secret'<suffix>" with the secret quoted by libpq. */
static int run_with_literal(PGconn *conn, const char *prefix, const char *value, const char *what,
                            kt_error *err)
{
    char *lit = PQescapeLiteral(conn, value, strlen(value));
    char sql[512];
    int rc = -1;
    if (!lit)
        return kt_error_set(err, KT_ERR_DATABASE, "%s: %s", what, PQerrorMessage(conn));
    if (snprintf(sql, sizeof sql, "%s %s", prefix, lit) < (int)sizeof sql)
        rc = run_sql(conn, sql, what, err);
    else
        kt_error_set(err, KT_ERR_INTERNAL, "%s: statement too long", what);
    PQfreemem(lit);
    return rc;
}

int pg_auth_ensure_service(PGconn *admin, const char *ktune_secret, kt_error *err)
{
    static const char create_role[] =
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ktune') THEN "
        "CREATE ROLE ktune LOGIN; END IF; "
        "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; " /* a concurrent start */
        "END $$";
    static const char restrict_role[] =
        "ALTER ROLE ktune LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS";
    /* The default roles that reach outside the database; the service role holds none of them. */
    static const char revoke[] =
        "DO $$ DECLARE r text; BEGIN FOR r IN SELECT b.rolname FROM pg_auth_members m "
        "JOIN pg_roles b ON b.oid = m.roleid JOIN pg_roles u ON u.oid = m.member "
        "WHERE u.rolname = 'ktune' LOOP EXECUTE format('REVOKE %I FROM ktune', r); END LOOP; "
        "END $$";
    PGresult *res = NULL;
    int rc = -1;
    if (run_sql(admin, create_role, "cannot create the service role ktune", err) != 0 ||
        run_sql(admin, restrict_role, "cannot restrict the service role ktune", err) != 0 ||
        run_sql(admin, revoke, "cannot revoke role memberships of ktune", err) != 0 ||
        run_with_literal(admin, "ALTER ROLE ktune PASSWORD", ktune_secret,
                         "cannot set the password of ktune", err) != 0)
        goto out;
    res = PQexec(admin, "SELECT 1 FROM pg_database WHERE datname = 'ktune'");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        kt_error_set(err, KT_ERR_DATABASE, "cannot list databases: %s", PQresultErrorMessage(res));
        err->message[strcspn(err->message, "\n")] = '\0';
        goto out;
    }
    if (PQntuples(res) == 0) {
        PQclear(res);
        res = PQexec(admin, "CREATE DATABASE ktune OWNER ktune");
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        /* 42P04: another ktuned created it between our check and now. */
        if (PQresultStatus(res) != PGRES_COMMAND_OK && !(state && strcmp(state, "42P04") == 0)) {
            kt_error_set(err, KT_ERR_DATABASE, "cannot create database ktune: %s",
                         PQresultErrorMessage(res));
            err->message[strcspn(err->message, "\n")] = '\0';
            goto out;
        }
        log_info("created database ktune");
    }
    if (run_sql(admin, "ALTER DATABASE ktune OWNER TO ktune",
                "cannot hand database ktune to the service role", err) != 0)
        goto out;
    rc = 0;
out:
    PQclear(res);
    return rc;
}

int pg_auth_own_objects(PGconn *admin, kt_error *err)
{
    /* Sequences owned by a column move with their table; the others are handed over alone. */
    static const char sql[] =
        "DO $$ DECLARE r record; BEGIN "
        "FOR r IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c "
        "  JOIN pg_namespace n ON n.oid = c.relnamespace "
        "  WHERE n.nspname = 'public' AND c.relkind IN ('r','p','v','m','f','S') "
        "  AND pg_get_userbyid(c.relowner) <> 'ktune' "
        "  AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d "
        "    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid "
        "    AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a','i'))) LOOP "
        "  EXECUTE format('ALTER %s %s OWNER TO ktune', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' "
        "    WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' "
        "    ELSE 'TABLE' END, r.name); "
        "END LOOP; "
        "FOR r IN SELECT p.oid::regprocedure AS name FROM pg_proc p "
        "  JOIN pg_namespace n ON n.oid = p.pronamespace "
        "  WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> 'ktune' LOOP "
        "  EXECUTE format('ALTER ROUTINE %s OWNER TO ktune', r.name); "
        "END LOOP; "
        "FOR r IN SELECT t.oid::regtype AS name FROM pg_type t "
        "  JOIN pg_namespace n ON n.oid = t.typnamespace "
        "  WHERE n.nspname = 'public' AND t.typtype IN ('e','d','r') "
        "  AND pg_get_userbyid(t.typowner) <> 'ktune' LOOP "
        "  EXECUTE format('ALTER TYPE %s OWNER TO ktune', r.name); "
        "END LOOP; "
        "IF (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'public') "
        "   NOT IN ('ktune', 'pg_database_owner') THEN "
        "  ALTER SCHEMA public OWNER TO ktune; "
        "END IF; END $$";
    return run_sql(admin, sql, "cannot hand the tables of database ktune to the service role", err);
}

int pg_auth_upgrade_legacy(PGconn *boot, const char *conninfo_base, const char *admin_secret,
                           kt_error *err)
{
    char info[4352];
    PGconn *helper = NULL;
    int rc = -1;
    log_warn("upgrading an embedded postgresql made by an older ktuned: its superuser ktune "
             "becomes " PG_AUTH_ADMIN_ROLE ", the service gets a role without superuser rights, "
             "and logins need a password");
    if (run_sql(boot,
                "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
                "'ktune_upgrade') THEN CREATE ROLE ktune_upgrade SUPERUSER LOGIN; END IF; END $$",
                "upgrade: cannot create a helper role", err) != 0)
        goto out;
    if (snprintf(info, sizeof info, "%s dbname=postgres user=ktune_upgrade", conninfo_base) >=
        (int)sizeof info) {
        kt_error_set(err, KT_ERR_CONFIG, "upgrade: conninfo too long");
        goto out;
    }
    helper = PQconnectdb(info);
    if (PQstatus(helper) != CONNECTION_OK) {
        kt_error_set(err, KT_ERR_DATABASE, "upgrade: cannot connect as the helper role: %s",
                     PQerrorMessage(helper));
        err->message[strcspn(err->message, "\n")] = '\0';
        goto out;
    }
    if (run_sql(helper, "BEGIN", "upgrade", err) != 0 ||
        run_sql(helper, "ALTER ROLE ktune RENAME TO " PG_AUTH_ADMIN_ROLE,
                "upgrade: cannot rename the superuser ktune", err) != 0 ||
        run_with_literal(helper, "ALTER ROLE " PG_AUTH_ADMIN_ROLE " PASSWORD", admin_secret,
                         "upgrade: cannot set the password of " PG_AUTH_ADMIN_ROLE, err) != 0 ||
        run_sql(helper, "COMMIT", "upgrade", err) != 0)
        goto out;
    PQfinish(helper);
    helper = NULL;
    if (run_sql(boot, "DROP ROLE ktune_upgrade", "upgrade: cannot drop the helper role", err) != 0)
        goto out;
    rc = 0;
out:
    PQfinish(helper);
    return rc;
}
