/* store/reap — the one reaper of rows a runner claims (jobs, models): a claim is let go when its
 * runner's heartbeat is older than the lease, or at once when the runner was a process on this host
 * whose pid is gone (a ktuned killed with -9 is noticed by the next start) or is my pid under
 * another runner id (a previous incarnation: containers reuse pid 1). Runner ids read
 * "<host>:<pid>:<start>" (worker/worker.c).
 *
 * A table gives its three statements; the reaper runs them with the caller's connection and frees
 * what it makes. */
#ifndef KT_STORE_REAP_H
#define KT_STORE_REAP_H

#include <libpq-fe.h>

#include "core/error.h"
#include "store/job_store.h"

typedef struct store_reap_sql {
    /* $1 the lease in seconds: lets go of claims with an older heartbeat, RETURNING id. */
    const char *release_stale;
    /* $1 my runner id: the distinct runner ids (column 0) of claims other than mine. */
    const char *runners;
    /* $1 a runner id: lets go of its claims, RETURNING id. */
    const char *release_runner;
} store_reap_sql;

/* How many claims were let go, or -1 (err). */
int store_reap_dead(PGconn *c, const runner_identity *me, int stale_s, const store_reap_sql *q,
                    kt_error *err);

#endif
