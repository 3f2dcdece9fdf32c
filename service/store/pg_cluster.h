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

#endif
