/* store/fault_store — the writes that hand claimed work back after a fault in a live process (a
 * database outage, a full disk), where the reaper's rule (the process is gone) does not apply.
 * Connections come from the caller. */
#ifndef KT_STORE_FAULT_STORE_H
#define KT_STORE_FAULT_STORE_H

#include <libpq-fe.h>

#include "core/error.h"
#include "store/job_store.h"

/* Lets go of one running job I drive (its driver could not be opened): the next claim, by any
 * runner, resumes it; its start attempt is given back (sql/015). Returns 1 when released, 0 when it
 * was not mine (or not running). */
int fault_store_release_job(PGconn *c, const runner_identity *me, long long id, kt_error *err);
/* Puts back to pending every running trial claimed by worker (a measurement thread that holds no
 * claim now: a claim whose reply was lost in an outage). Returns how many. */
int fault_store_requeue_claims(PGconn *c, const char *worker, kt_error *err);

#endif
