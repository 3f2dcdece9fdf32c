#include "store/store_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/db.h"

const char *store_ll(store_num *n, long long v)
{
    snprintf(n->text, sizeof n->text, "%lld", v);
    return n->text;
}

const char *store_double(store_num *n, double v)
{
    snprintf(n->text, sizeof n->text, "%.17g", v);
    return n->text;
}

const char *store_double_or_null(store_num *n, double v)
{
    return isfinite(v) ? store_double(n, v) : NULL;
}

long long store_get_ll(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

double store_get_double(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NAN : strtod(PQgetvalue(r, row, col), NULL);
}

json_t *store_get_json(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    return json_loads(PQgetvalue(r, row, col), JSON_DECODE_ANY, NULL);
}

json_t *store_query_json(PGconn *c, const char *sql, int n, const char *const *params,
                         const char *not_found_msg, kt_error *err)
{
    return store_result_json(db_exec(c, sql, n, params, err), not_found_msg, err);
}

json_t *store_result_json(PGresult *r, const char *not_found_msg, kt_error *err)
{
    json_t *out = NULL;
    if (!r)
        goto out;
    if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "%s", not_found_msg);
        goto out;
    }
    out = store_get_json(r, 0, 0);
    if (!out)
        kt_error_set(err, KT_ERR_INTERNAL, "database returned JSON that does not parse");
out:
    PQclear(r);
    return out;
}

int store_query_text(PGconn *c, const char *sql, int n, const char *const *params, char *out,
                     size_t cap, kt_error *err)
{
    PGresult *r = db_exec(c, sql, n, params, err);
    if (!r)
        return -1;
    int found = PQntuples(r) >= 1;
    if (found)
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return found;
}

char *store_json_text(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

int store_pid_alive(int pid)
{
    if (pid <= 0)
        return 0;
    return kill(pid, 0) == 0 || errno == EPERM;
}
