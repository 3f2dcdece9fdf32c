/* store/pg_cluster_impl — the embedded cluster's state, shared by pg_cluster.c (folders, server
 * lifecycle), pg_cluster_proc.c (programs run as the postgres user) and pg_cluster_auth.c (secrets,
 * roles, pg_hba.conf). Internal to store/. */
#ifndef KT_STORE_PG_CLUSTER_IMPL_H
#define KT_STORE_PG_CLUSTER_IMPL_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/error.h"
#include "store/pg_auth.h"
#include "store/pg_cluster.h"

#define PG_PORT          "5432"
#define PG_SOCKET_NAME   "/.s.PGSQL." PG_PORT
#define PG_SOCKET_MAX    107 /* sizeof(sockaddr_un.sun_path) - 1 on Linux */
#define PG_GROUPS_MAX    64
#define PG_READY_SECONDS 60
#define PG_LOG_TAIL      5
#define PG_BIN_ROOT      "/usr/lib/postgresql"

struct pg_cluster {
    char data_dir[PATH_MAX];   /* absolute */
    char bindir[PATH_MAX];     /* holds initdb, pg_ctl, postgres */
    char initdb[PATH_MAX];     /* <bindir>/initdb */
    char pg_ctl[PATH_MAX];     /* <bindir>/pg_ctl */
    char pgdata[PATH_MAX];     /* <data_dir>/pg */
    char pid_file[PATH_MAX];   /* <pgdata>/postmaster.pid */
    char log_path[PATH_MAX];   /* <data_dir>/pg.log */
    char socket_dir[PATH_MAX]; /* <data_dir>/pg-socket (0700), or a mkdtemp dir under /tmp */
    int socket_is_tmp;         /* socket_dir is a private /tmp dir: removed after stop */
    char conninfo[PATH_MAX + 192];
    char admin_secret[PG_AUTH_SECRET_SIZE]; /* ktune_admin's password (pg_auth.h) */
    char ktune_secret[PG_AUTH_SECRET_SIZE]; /* the service role's password */
    int legacy; /* a cluster of an older ktuned: trust auth, superuser ktune (upgraded at start) */
    int as_postgres; /* we are root: children switch to the postgres user */
    uid_t uid;
    gid_t gid;
    gid_t groups[PG_GROUPS_MAX];
    int n_groups;
};

/* pg_cluster.c */
int pgc_path_join(char *out, size_t size, const char *a, const char *b); /* -1: too long */
int pgc_is_file(const char *path);
/* err = KT_ERR_DATABASE "<what> (exit status N); <log> ends: <last lines of pg.log>". */
void pgc_set_tail_error(const pg_cluster *c, kt_error *err, const char *what, int status);
/* Appends key=value to a conninfo, single-quoting the value when it needs it. */
void pgc_conninfo_add(char *out, size_t size, const char *key, const char *value);
/* host and port of the socket, then dbname, user, password when not NULL. */
void pgc_build_conninfo(pg_cluster *c, char *out, size_t size, const char *dbname, const char *user,
                        const char *password);

/* pg_cluster_proc.c */
/* Runs argv (argv[0] absolute) as the cluster's user, stdin /dev/null, stdout and stderr appended
 * to out_path (or /dev/null). Returns the exit status, -1 when it could not run or was killed. */
int pgc_run_child(const pg_cluster *c, char *const argv[], const char *out_path);
int pgc_postgres_can_traverse(const pg_cluster *c); /* can the postgres user reach data_dir */
int pgc_chown_to_postgres(const pg_cluster *c, const char *path, kt_error *err);
int pgc_resolve_postgres_user(pg_cluster *c,
                              kt_error *err); /* sets as_postgres, uid, gid, groups */
int pgc_find_bindir(pg_cluster *c,
                    kt_error *err); /* KTUNE_PG_BINDIR, the cluster's version, newest */

/* pg_cluster_auth.c */
/* Loads (or, for a new cluster, makes) the secrets and runs initdb when pgdata has no cluster. */
int pgc_init_cluster(pg_cluster *c, kt_error *err);
/* With the server up: upgrades a legacy cluster, rewrites pg_hba.conf and reloads it, and as
 * ktune_admin makes the service role, its database and hands it their objects. */
int pgc_setup_auth(pg_cluster *c, kt_error *err);
/* socket_dir 0700 and owned by the postgres user (also for a server an older ktuned started). */
int pgc_make_socket_private(const pg_cluster *c, kt_error *err);

#endif
