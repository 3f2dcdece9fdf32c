/* store/store_exec — see store_exec.h. */
#include "store/store_exec.h"

#include "store/db.h"
#include "store/store_util.h"

int store_exec_count(PGconn *c, const char *sql, int n, const char *const *params, kt_error *err)
{
    return store_exec_ids(c, sql, n, params, NULL, 0, err);
}

int store_exec_ids(PGconn *c, const char *sql, int n, const char *const *params, long long *ids,
                   int max, kt_error *err)
{
    PGresult *r = db_exec(c, sql, n, params, err);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    for (int i = 0; ids && i < rows && i < max; i++)
        ids[i] = store_get_ll(r, i, 0);
    PQclear(r);
    return rows;
}

int store_query_ll(PGconn *c, const char *sql, int n, const char *const *params, long long *out,
                   kt_error *err)
{
    PGresult *r = db_exec(c, sql, n, params, err);
    if (!r)
        return -1;
    int found = PQntuples(r) >= 1;
    if (found)
        *out = store_get_ll(r, 0, 0);
    PQclear(r);
    return found;
}

int store_tx(PGconn *c, store_tx_body body, void *ctx, kt_error *err)
{
    if (db_begin(c, err) < 0)
        return -1;
    int rc = body(c, ctx, err);
    if (rc < 0 || db_commit(c, err) < 0) {
        db_rollback(c); /* nothing to do after a commit that failed: the server ended it */
        return -1;
    }
    return rc;
}
