/* store/pg_cluster_auth — who may log in to the embedded cluster (issue #11): the secrets, initdb
 * with a password-protected superuser, the upgrade of clusters made by older versions, pg_hba.conf
 * and the service role (the SQL and files are pg_auth.c's). */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/log.h"
#include "store/pg_auth.h"
#include "store/pg_cluster_impl.h"

/* The secrets of pg_auth.h: generated when the cluster is created; a cluster that exists without
 * the admin secret was made by an older ktuned (trust authentication): c->legacy. */
static int load_secrets(pg_cluster *c, int exists, kt_error *err)
{
    char path[PATH_MAX];
    if (pgc_path_join(path, sizeof path, c->data_dir, PG_AUTH_ADMIN_FILE) != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    int rc = pg_auth_secret(path, !exists, c->admin_secret, sizeof c->admin_secret, err);
    if (rc < 0)
        return -1;
    c->legacy = rc == 1;
    if (pgc_path_join(path, sizeof path, c->data_dir, PG_AUTH_KTUNE_FILE) != 0 ||
        pg_auth_secret(path, 1, c->ktune_secret, sizeof c->ktune_secret, err) != 0)
        return -1;
    return 0;
}

int pgc_init_cluster(pg_cluster *c, kt_error *err)
{
    char path[PATH_MAX], pwfile[PATH_MAX], pwopt[PATH_MAX + 16];
    int rc = -1;
    if (pgc_path_join(path, sizeof path, c->pgdata, "/PG_VERSION") != 0 ||
        pgc_path_join(pwfile, sizeof pwfile, c->data_dir, "/pg-initdb.pw") != 0 ||
        snprintf(pwopt, sizeof pwopt, "--pwfile=%s", pwfile) >= (int)sizeof pwopt)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    int exists = pgc_is_file(path);
    if (load_secrets(c, exists, err) != 0)
        return -1;
    if (exists)
        return 0;
    /* initdb (as postgres) reads the superuser's password from a file: a short-lived copy it owns.
     */
    unlink(pwfile);
    int fd = open(pwfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = strlen(c->admin_secret);
    if (fd < 0 || write(fd, c->admin_secret, len) != (ssize_t)len ||
        (c->as_postgres && fchown(fd, c->uid, c->gid) != 0)) {
        kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", pwfile, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    close(fd);
    char *argv[] = {c->initdb,
                    "-D",
                    c->pgdata,
                    "-U",
                    PG_AUTH_ADMIN_ROLE,
                    pwopt,
                    "--auth-local=scram-sha-256",
                    "--auth-host=reject",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    NULL};
    log_info("creating the embedded postgresql cluster in %s", c->pgdata);
    int st = pgc_run_child(c, argv, c->log_path);
    if (st != 0) {
        pgc_set_tail_error(c, err, "initdb failed", st);
        goto out;
    }
    rc = 0;
out:
    unlink(pwfile);
    return rc;
}

static PGconn *connect_as(pg_cluster *c, const char *dbname, const char *user, const char *password,
                          kt_error *err)
{
    char info[sizeof c->conninfo];
    pgc_build_conninfo(c, info, sizeof info, dbname, user, password);
    pgc_conninfo_add(info, sizeof info, "application_name", "ktuned-setup");
    PGconn *conn = PQconnectdb(info);
    if (PQstatus(conn) != CONNECTION_OK) {
        kt_error_set(err, KT_ERR_DATABASE, "cannot connect to the embedded postgresql as %s: %s",
                     user, PQerrorMessage(conn));
        if (err)
            err->message[strcspn(err->message, "\n")] = '\0';
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

static int set_admin_password(PGconn *conn, const char *secret, kt_error *err)
{
    char sql[256];
    char *lit = PQescapeLiteral(conn, secret, strlen(secret));
    if (!lit)
        return kt_error_set(err, KT_ERR_DATABASE, "upgrade: %s", PQerrorMessage(conn));
    snprintf(sql, sizeof sql, "ALTER ROLE " PG_AUTH_ADMIN_ROLE " PASSWORD %s", lit);
    PQfreemem(lit);
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        kt_error_set(err, KT_ERR_DATABASE, "upgrade: %s", PQresultErrorMessage(res));
    PQclear(res);
    return ok ? 0 : -1;
}

/* A cluster of an older ktuned (still on trust authentication): its superuser `ktune` becomes
 * ktune_admin with a generated password. The secret is written under a .new name first and takes
 * its place once the role has it, so an interrupted upgrade is resumed at the next start. */
static int upgrade_legacy(pg_cluster *c, kt_error *err)
{
    char path[PATH_MAX], pending[PATH_MAX], base[sizeof c->conninfo];
    int rc = -1;
    PGconn *conn = NULL;
    PGresult *res = NULL;
    if (pgc_path_join(path, sizeof path, c->data_dir, PG_AUTH_ADMIN_FILE) != 0 ||
        pgc_path_join(pending, sizeof pending, path, ".new") != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    if (pg_auth_secret(pending, 1, c->admin_secret, sizeof c->admin_secret, err) != 0)
        return -1;
    pgc_build_conninfo(c, base, sizeof base, NULL, NULL, NULL);
    conn = connect_as(c, "postgres", "ktune", NULL, NULL);
    res = conn ? PQexec(conn, "SELECT oid = 10 FROM pg_roles WHERE rolname = 'ktune'") : NULL;
    int boot = res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
               strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    if (boot) {
        if (pg_auth_upgrade_legacy(conn, base, c->admin_secret, err) != 0)
            goto out;
    } else {
        /* Renamed by an upgrade that stopped before its secret was kept: set the password again. */
        PQfinish(conn);
        if (!(conn = connect_as(c, "postgres", PG_AUTH_ADMIN_ROLE, NULL, err))) {
            kt_error_hint(err,
                          "the cluster in %s has neither the superuser ktune of older versions "
                          "nor " PG_AUTH_ADMIN_ROLE,
                          c->pgdata);
            goto out;
        }
        if (set_admin_password(conn, c->admin_secret, err) != 0)
            goto out;
    }
    if (rename(pending, path) != 0) {
        kt_error_set(err, KT_ERR_IO, "cannot rename %s: %s", pending, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    PQclear(res);
    PQfinish(conn);
    return rc;
}

/* pg_hba.conf (password logins only) is rewritten at every start and the server told to reload it,
 * which also upgrades a server started by an older ktuned that is still running. Then, as
 * ktune_admin: the service role, its database, and (for upgraded clusters) its tables. */
int pgc_setup_auth(pg_cluster *c, kt_error *err)
{
    int rc = -1;
    PGconn *admin = NULL;
    if (c->legacy && upgrade_legacy(c, err) != 0)
        return -1;
    if (pg_auth_write_hba(c->pgdata, c->as_postgres, c->uid, c->gid, err) != 0)
        return -1;
    char *argv[] = {c->pg_ctl, "-D", c->pgdata, "reload", NULL};
    if (pgc_run_child(c, argv, c->log_path) != 0)
        log_warn("pg_ctl reload failed; see %s", c->log_path);
    if (!(admin = connect_as(c, "postgres", PG_AUTH_ADMIN_ROLE, c->admin_secret, err)) ||
        pg_auth_ensure_service(admin, c->ktune_secret, err) != 0)
        goto out;
    PQfinish(admin);
    if (!(admin = connect_as(c, "ktune", PG_AUTH_ADMIN_ROLE, c->admin_secret, err)) ||
        pg_auth_own_objects(admin, err) != 0)
        goto out;
    rc = 0;
out:
    PQfinish(admin);
    return rc;
}

/* The socket directory is private to the cluster's user (root reaches it anyway); also for a server
 * started by an older ktuned, whose directory was 0755. */
int pgc_make_socket_private(const pg_cluster *c, kt_error *err)
{
    if (chmod(c->socket_dir, 0700) != 0)
        return kt_error_set(err, KT_ERR_IO, "cannot make %s private: %s", c->socket_dir,
                            strerror(errno));
    return pgc_chown_to_postgres(c, c->socket_dir, err);
}
