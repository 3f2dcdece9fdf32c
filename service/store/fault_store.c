/* store/fault_store — see fault_store.h. */
#include "store/fault_store.h"

#include "store/store_exec.h"
#include "store/store_util.h"

int fault_store_release_job(PGconn *c, const runner_identity *me, long long id, kt_error *err)
{
    store_num jid;
    const char *p[] = {store_ll(&jid, id), me->id};
    return store_exec_count(c,
                            "UPDATE jobs SET runner = NULL, updated_at = now(),"
                            " start_attempts = greatest(start_attempts - 1, 0) WHERE id = $1 AND"
                            " runner = $2 AND status = 'running' RETURNING id",
                            2, p, err);
}

int fault_store_requeue_claims(PGconn *c, const char *worker, kt_error *err)
{
    const char *p[] = {worker};
    return store_exec_count(c,
                            "UPDATE trials SET status = 'pending', worker = NULL, claimed_at = NULL"
                            " WHERE status = 'running' AND worker = $1 RETURNING id",
                            1, p, err);
}
