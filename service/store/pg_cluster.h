/* store/pg_cluster — the embedded PostgreSQL: a private cluster in <data_dir>/pg, listening only on
 * a unix socket inside the data dir (a 0700 folder), admitting only password logins
 * (store/pg_auth.h: the service role `ktune` is no superuser). Created with initdb on first use,
 * started if not already running (a server left running by a killed ktuned is reused), stopped by
 * pg_cluster_stop. When the process runs as root, initdb and the server run as the unprivileged
 * user `postgres` (initdb refuses root).
 *
 * Lifecycle: pg_cluster_start -> pg_cluster_conninfo -> pg_cluster_stop (stops the server, frees).
 */
#ifndef KT_STORE_PG_CLUSTER_H
#define KT_STORE_PG_CLUSTER_H

#include "core/error.h"

typedef struct pg_cluster pg_cluster;

/* data_dir is created if missing. Errors: KT_ERR_CONFIG when no server binaries are found under
 * /usr/lib/postgresql/<version>/bin (hint: apt-get install postgresql), KT_ERR_DATABASE when initdb
 * or the server fails (message quotes the tail of its log). */
pg_cluster *pg_cluster_start(const char *data_dir, kt_error *err);
/* libpq connection string for the cluster ("host=/abs/socket/dir port=5432 dbname=ktune
 * user=ktune password=<the service role's secret>"): a secret, never to be logged. */
const char *pg_cluster_conninfo(const pg_cluster *c);
/* Stops the server (fast shutdown) and frees c. NULL is a no-op. */
void pg_cluster_stop(pg_cluster *c);

/* Supervision (store/pg_supervise.c). pg_cluster_check_restart: when the postmaster is gone
 * (killed, crashed, stopped by hand) starts it again (pg_ctl start -w) on the same socket. Returns
 * 0 when it was running, 1 when it was restarted, -1 when it could not be (err: the tail of pg.log,
 * e.g. a full disk). Not thread-safe on the same c: call it from one thread. pg_supervisor_start
 * runs it in a thread every PG_SUPERVISE_MS (after a failed restart, waiting 1 s doubling to 8 s),
 * logging one line per death, per failing streak and per recovery; pg_supervisor_stop (NULL is a
 * no-op) joins that thread and must come before pg_cluster_stop. c is borrowed and must outlive the
 * supervisor. */
#define PG_SUPERVISE_MS 500
/* <data_dir>/pg, the cluster's files (watched for free space by db_pool_watch_dir). */
const char *pg_cluster_pgdata(const pg_cluster *c);
typedef struct pg_supervisor pg_supervisor;
int pg_cluster_check_restart(pg_cluster *c, kt_error *err);
pg_supervisor *pg_supervisor_start(pg_cluster *c, kt_error *err);
void pg_supervisor_stop(pg_supervisor *s);

#endif
