#include "store/best_store.h"

#include <stdio.h>

#include "store/db.h"
#include "store/store_exec.h"
#include "store/store_util.h"

#define BEST_FIELDS_SQL                                                                            \
    "'kernel', b.kernel, 'device', b.device, 'device_class', b.device_class,"                      \
    " 'kernel_hash', b.kernel_hash, 'toolchain', b.toolchain, 'problem', b.problem, 'config',"     \
    " b.config, 'time_ms', b.time_ms,"                                                             \
    " 'job_id', b.job_id, 'trial_id', b.trial_id, 'measured_at', b.measured_at, 'source', "        \
    "b.origin, 'origin', b.origin"
#define BEST_JSON_SQL "json_build_object(" BEST_FIELDS_SQL ")"
/* One entry with how it was measured: the best trial's repeats and noise (NULL for imported trials
 * that did not record them). */
#define BEST_PROVENANCE_JSON_SQL                                                                   \
    "json_build_object(" BEST_FIELDS_SQL ", 'provenance', json_build_object('repeats', t.repeats," \
    " 'noise_cv', t.noise_cv, 'job_id', b.job_id, 'trial_id', b.trial_id, 'measured_at',"          \
    " b.measured_at))"

best_offer best_offer_of_job_row(const PGresult *r, int row, long long job_id, long long trial_id,
                                 double time_ms, const char *config_json)
{
    best_offer o = {
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
        .config_json = config_json,
        .time_ms = time_ms,
        .job_id = job_id,
        .trial_id = trial_id,
    };
    kt_device_parse(o.key.device, &o.key.dev, NULL); /* parsed once, here (core/target_key.h) */
    return o;
}

/* The entry's job (alias best) is a trusted import: its rank between a measurement and an
 * untrusted import. */
#define BEST_INCUMBENT_TRUSTED                                                                     \
    "EXISTS (SELECT 1 FROM jobs j WHERE j.id = best.job_id AND " STORE_MEASURED_JOB("j") ")"

int best_store_offer(PGconn *c, const best_offer *o, kt_error *err)
{
    store_num t, j, tr;
    const char *p[] = {o->key.kernel,
                       o->key.device_class,
                       o->key.kernel_hash,
                       o->key.problem_key,
                       o->problem_json,
                       o->key.device,
                       o->config_json,
                       store_double(&t, o->time_ms),
                       store_ll(&j, o->job_id),
                       store_ll(&tr, o->trial_id),
                       o->key.toolchain,
                       o->imported ? "imported" : "measured",
                       o->replace_measured ? "true" : "false",
                       o->trusted || o->replace_measured ? "true" : "false"};
    /* The origin rule of sql/008: measured beats imported; imported beats measured only when
     * asked; within one origin, ktune_improves_best. Among imports (issue 26) a trusted one beats
     * an untrusted one, so an untrusted import never hides what source=measured and the nearest
     * fallback may answer. */
    return db_run(
        c,
        "INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,"
        " time_ms, job_id, trial_id, toolchain, origin) VALUES ($1, $2, $3, $4, $5::jsonb, $6,"
        " $7::json, $8, $9, $10, $11, $12)"
        " ON CONFLICT (kernel, device_class, kernel_hash, toolchain, problem_key) DO UPDATE SET"
        " problem = EXCLUDED.problem, device = EXCLUDED.device, config = EXCLUDED.config,"
        " time_ms = EXCLUDED.time_ms, job_id = EXCLUDED.job_id, trial_id = EXCLUDED.trial_id,"
        " origin = EXCLUDED.origin, measured_at = now() WHERE CASE"
        " WHEN EXCLUDED.origin = 'measured' THEN best.origin = 'imported'"
        "   OR ktune_improves_best(EXCLUDED.time_ms, best.time_ms)"
        " WHEN best.origin = 'measured' THEN $13::boolean"
        "   AND ktune_improves_best(EXCLUDED.time_ms, best.time_ms)"
        " WHEN $14::boolean <> " BEST_INCUMBENT_TRUSTED " THEN $14::boolean"
        " ELSE ktune_improves_best(EXCLUDED.time_ms, best.time_ms) END",
        14, p, err);
}

int best_store_forget_job(PGconn *c, long long job_id, long long *removed, long long *restored,
                          kt_error *err)
{
    store_num j;
    const char *p[] = {store_ll(&j, job_id), NULL};
    PGresult *keys = NULL;
    int rc = -1;
    keys = db_exec(c,
                   "WITH gone AS (DELETE FROM best WHERE job_id = $1 RETURNING kernel,"
                   " device_class, kernel_hash, toolchain, problem_key)"
                   " SELECT count(*), COALESCE(json_agg(json_build_array(kernel, device_class,"
                   " kernel_hash, toolchain, problem_key)), '[]'::json) FROM gone",
                   1, p, err);
    if (!keys)
        goto out;
    *removed = store_get_ll(keys, 0, 0);
    p[1] = PQgetvalue(keys, 0, 1);
    int back = store_exec_count(
        c,
        "INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,"
        " time_ms, job_id, trial_id, toolchain, origin)"
        " SELECT DISTINCT ON (j.kernel, j.device_class, j.kernel_hash, j.toolchain, j.problem_key)"
        " j.kernel, j.device_class, j.kernel_hash, j.problem_key, j.problem, j.device, t.config,"
        " t.time_ms, j.id, t.id, j.toolchain,"
        " CASE WHEN j.strategy = 'import' THEN 'imported' ELSE 'measured' END"
        " FROM json_array_elements($2::json) k JOIN jobs j ON j.kernel = k->>0"
        " AND j.device_class = k->>1 AND j.kernel_hash = k->>2 AND j.toolchain = k->>3"
        " AND j.problem_key = k->>4 JOIN trials t ON t.job_id = j.id"
        " WHERE j.id <> $1 AND t.status = 'ok' AND t.time_ms IS NOT NULL"
        " ORDER BY j.kernel, j.device_class, j.kernel_hash, j.toolchain, j.problem_key,"
        " j.strategy = 'import', NOT " STORE_MEASURED_JOB(
            "j") ", t.time_ms, t.id"
                 " ON CONFLICT DO NOTHING RETURNING 1",
        2, p, err);
    if (back < 0)
        goto out;
    *restored = back;
    rc = 0;
out:
    PQclear(keys);
    return rc;
}

/* The entry (alias b) is a measurement, or a trusted import's result. */
#define BEST_IS_MEASURED                                                                           \
    "(b.origin = 'measured' OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.job_id "                \
    "AND " STORE_MEASURED_JOB("j") "))"

json_t *best_store_get_json(PGconn *c, const target_key *key, int measured_only, kt_error *err)
{
    const char *p[] = {key->kernel,      key->device_class, key->kernel_hash,
                       key->problem_key, key->toolchain,    measured_only ? "true" : "false"};
    json_t *out = store_query_json(c,
                                   "SELECT " BEST_PROVENANCE_JSON_SQL " FROM best b LEFT JOIN"
                                   " trials t ON t.id = b.trial_id WHERE b.kernel = $1"
                                   " AND b.device_class = $2 AND b.kernel_hash = $3"
                                   " AND b.problem_key = $4 AND b.toolchain = $5"
                                   " AND (NOT $6::boolean OR " BEST_IS_MEASURED ")",
                                   6, p, "nothing is known", err);
    if (!out && err && err->code == KT_ERR_NOT_FOUND)
        kt_error_set(err, KT_ERR_NO_BEST,
                     "no %sconfiguration of kernel %s is known for device class %s, toolchain %s "
                     "and problem %s",
                     measured_only ? "measured " : "", key->kernel, key->device_class,
                     key->toolchain, key->problem_key);
    return out;
}

int best_store_newest_version(PGconn *c, const char *kernel, const char *device_class,
                              const char *toolchain, const char *problem_key, int measured_only,
                              char *out, size_t cap, kt_error *err)
{
    const char *p[] = {kernel, device_class, toolchain, problem_key,
                       measured_only ? "true" : "false"};
    return store_query_text(
        c,
        "SELECT b.kernel_hash FROM best b WHERE b.kernel = $1"
        " AND b.device_class = $2 AND b.toolchain = $3 AND b.problem_key = $4"
        " AND (NOT $5::boolean OR " BEST_IS_MEASURED ")"
        " ORDER BY (SELECT max(j.id) FROM jobs j WHERE j.kernel = b.kernel"
        " AND j.device_class = b.device_class AND j.kernel_hash = b.kernel_hash)"
        " DESC NULLS LAST, b.measured_at DESC LIMIT 1",
        5, p, out, cap, err);
}

json_t *best_store_list_json(PGconn *c, const char *kernel, const char *device_class, int limit,
                             long long offset, kt_error *err)
{
    store_num l, o;
    const char *p[] = {kernel, device_class, store_ll(&l, limit), store_ll(&o, offset)};
    return store_query_json(
        c,
        "SELECT json_build_object('best', COALESCE(json_agg(" BEST_JSON_SQL
        " ORDER BY b.measured_at DESC, b.kernel, b.device_class, b.kernel_hash, b.toolchain,"
        " b.problem_key), '[]'::json)) FROM (SELECT * FROM best WHERE"
        " ($1::text IS NULL OR kernel = $1) AND ($2::text IS NULL OR device_class = $2)"
        " ORDER BY measured_at DESC, kernel, device_class, kernel_hash, toolchain, problem_key"
        " LIMIT $3 OFFSET $4) b",
        4, p, "no best entries", err);
}

json_t *best_store_problems_json(PGconn *c, const target_key *key, int limit, kt_error *err)
{
    store_num l;
    const char *p[] = {key->kernel, key->device_class, key->kernel_hash, key->toolchain,
                       store_ll(&l, limit)};
    return store_query_json(
        c,
        "SELECT json_build_object('problems', COALESCE(json_agg(json_build_object('problem',"
        " b.problem, 'config', b.config, 'time_ms', b.time_ms, 'job_id', b.job_id, 'trial_id',"
        " b.trial_id, 'measured_at', b.measured_at, 'origin', b.origin) ORDER BY b.problem_key),"
        " '[]'::json)) FROM (SELECT * FROM best b WHERE b.kernel = $1 AND b.device_class = $2"
        " AND b.kernel_hash = $3 AND b.toolchain = $4 AND " BEST_IS_MEASURED
        " ORDER BY b.problem_key LIMIT $5) b",
        5, p, "no tuned problems", err);
}
