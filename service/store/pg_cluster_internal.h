/* store/pg_cluster_internal — what pg_supervise.c needs of pg_cluster.c. Internal to store/. */
#ifndef KT_STORE_PG_CLUSTER_INTERNAL_H
#define KT_STORE_PG_CLUSTER_INTERNAL_H

#include "store/pg_cluster.h"

/* Whether the postmaster named in postmaster.pid is alive (a stale lock file is removed). */
int pg_cluster_server_alive(pg_cluster *c);
/* pg_ctl start -w, then waits until the server accepts connections. KT_ERR_DATABASE quoting the
 * tail of pg.log when it does not. */
int pg_cluster_server_start(pg_cluster *c, kt_error *err);

#endif
