#include "store/best_store.h"

#include "store/db.h"
#include "store/store_util.h"

#define BEST_JSON_SQL                                                                              \
    "json_build_object('kernel', b.kernel, 'device', b.device, 'device_class', b.device_class,"    \
    " 'kernel_hash', b.kernel_hash, 'toolchain', b.toolchain, 'problem', b.problem, 'config',"     \
    " b.config, 'time_ms', b.time_ms,"                                                             \
    " 'job_id', b.job_id, 'trial_id', b.trial_id, 'measured_at', b.measured_at, 'source', "        \
    "'measured')"

best_offer best_offer_of_job_row(const PGresult *r, int row)
{
    return (best_offer){
        .key =
            {
                .kernel = PQgetvalue(r, row, 0),
                .device_class = PQgetvalue(r, row, 1),
                .kernel_hash = PQgetvalue(r, row, 2),
                .problem_key = PQgetvalue(r, row, 3),
                .device = PQgetvalue(r, row, 5),
                .toolchain = PQgetvalue(r, row, 6),
            },
        .problem_json = PQgetvalue(r, row, 4),
    };
}

int best_store_offer(PGconn *c, const best_offer *o, kt_error *err)
{
    store_num t, j, tr;
    const char *p[] = {o->key.kernel,           o->key.device_class,
                       o->key.kernel_hash,      o->key.problem_key,
                       o->problem_json,         o->key.device,
                       o->config_json,          store_double(&t, o->time_ms),
                       store_ll(&j, o->job_id), store_ll(&tr, o->trial_id),
                       o->key.toolchain};
    return db_run(
        c,
        "INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,"
        " time_ms, job_id, trial_id, toolchain) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::json,"
        " $8, $9, $10, $11)"
        " ON CONFLICT (kernel, device_class, kernel_hash, toolchain, problem_key) DO UPDATE SET"
        " problem = EXCLUDED.problem, device = EXCLUDED.device, config = EXCLUDED.config,"
        " time_ms = EXCLUDED.time_ms, job_id = EXCLUDED.job_id, trial_id = EXCLUDED.trial_id,"
        " measured_at = now() WHERE ktune_improves_best(EXCLUDED.time_ms, best.time_ms)",
        11, p, err);
}

json_t *best_store_get_json(PGconn *c, const target_key *key, kt_error *err)
{
    const char *p[] = {key->kernel, key->device_class, key->kernel_hash, key->problem_key,
                       key->toolchain};
    json_t *out = store_query_json(c,
                                   "SELECT " BEST_JSON_SQL " FROM best b WHERE b.kernel = $1"
                                   " AND b.device_class = $2 AND b.kernel_hash = $3"
                                   " AND b.problem_key = $4 AND b.toolchain = $5",
                                   5, p, "nothing is known", err);
    if (!out && err && err->code == KT_ERR_NOT_FOUND)
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no configuration of kernel %s is known for device class %s, toolchain %s "
                     "and problem %s",
                     key->kernel, key->device_class, key->toolchain, key->problem_key);
    return out;
}

json_t *best_store_list_json(PGconn *c, const char *kernel, const char *device_class, int limit,
                             kt_error *err)
{
    store_num l;
    const char *p[] = {kernel, device_class, store_ll(&l, limit)};
    return store_query_json(
        c,
        "SELECT json_build_object('best', COALESCE(json_agg(" BEST_JSON_SQL
        " ORDER BY b.measured_at DESC), '[]'::json)) FROM (SELECT * FROM best WHERE"
        " ($1::text IS NULL OR kernel = $1) AND ($2::text IS NULL OR device_class = $2)"
        " ORDER BY measured_at DESC LIMIT $3) b",
        3, p, "no best entries", err);
}
