/* store/model_data_store — what a model learns from: the training data of a key (ok trials of the
 * key's jobs, the best few per problem) and the retrain check (ok trials newer than the newest
 * ready model's data); in both, only jobs whose trials count as measurements (tuning jobs and
 * trusted imports). See model_store.h. */
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/model_store.h"
#include "store/store_exec.h"
#include "store/store_util.h"

/* The jobs (alias j) of a key: kernel $1, device_class $2, kernel_hash $3, toolchain $4 (sql/004),
 * whose trials count as measurements: an untrusted import is neither training data nor a reason
 * to retrain (STORE_MEASURED_JOB, issue 26). */
#define JOBS_OF_KEY                                                                                \
    "j.kernel = $1 AND j.device_class = $2 AND j.kernel_hash = $3 AND j.toolchain = $4"            \
    " AND " STORE_MEASURED_JOB("j")

void model_training_data_release(model_training_data *d)
{
    for (int i = 0; d->rows && i < d->n; i++) {
        json_decref(d->rows[i].problem);
        json_decref(d->rows[i].config);
    }
    free(d->rows);
    json_decref(d->summary);
    memset(d, 0, sizeof *d);
}

/* The rows of the training-data query into out (rows, n, summary: problems, trials, max_trial_id
 * and the span of finish times). 0, or -1 (err); out is then released by the caller. */
static int decode_training_rows(PGresult *r, long long max_id, model_training_data *out,
                                kt_error *err)
{
    int rows = PQntuples(r);
    out->rows = calloc(rows > 0 ? (size_t)rows : 1, sizeof *out->rows);
    if (!out->rows) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading %d training rows", rows);
        return -1;
    }
    json_t *problems = json_object();
    const char *from = NULL, *to = NULL;
    for (; out->n < rows; out->n++) {
        model_trial_row *row = &out->rows[out->n];
        row->trial_id = store_get_ll(r, out->n, 0);
        row->problem = store_get_json(r, out->n, 1);
        row->config = store_get_json(r, out->n, 2);
        row->time_ms = store_get_double(r, out->n, 3);
        const char *at = PQgetisnull(r, out->n, 4) ? NULL : PQgetvalue(r, out->n, 4);
        if (at && (!from || strcmp(at, from) < 0))
            from = at;
        if (at && (!to || strcmp(at, to) > 0))
            to = at;
        if (!row->problem || !row->config) {
            out->n++;
            json_decref(problems);
            kt_error_set(err, KT_ERR_INTERNAL,
                         "trial %lld has a problem or config that does "
                         "not parse",
                         row->trial_id);
            return -1;
        }
        char *pk = store_json_text(row->problem);
        if (pk)
            json_object_set_new(problems, pk, json_true());
        free(pk);
    }
    /* Timestamps of one UTC server in ISO 8601 compare as text. */
    out->summary = json_pack("{s:I, s:I, s:I, s:s?, s:s?}", "problems",
                             (json_int_t)json_object_size(problems), "trials", (json_int_t)out->n,
                             "max_trial_id", (json_int_t)max_id, "from", from, "to", to);
    json_decref(problems);
    if (!out->summary) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory summarising the training data");
        return -1;
    }
    return 0;
}

int model_store_training_data(PGconn *c, const char *kernel, const char *device_class,
                              const char *kernel_hash, const char *toolchain, int top,
                              int max_problems, model_training_data *out, kt_error *err)
{
    int rc = -1;
    store_num t, mp, mx;
    PGresult *r = NULL;
    memset(out, 0, sizeof *out);
    if (top < 1 || top > MODEL_MAX_TOP || max_problems < 1 || max_problems > MODEL_MAX_PROBLEMS) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "training data of %d trials per problem and %d problems is out of range", top,
                     max_problems);
        kt_error_hint(err, "top from 1 to %d, problems from 1 to %d", MODEL_MAX_TOP,
                      MODEL_MAX_PROBLEMS);
        goto out;
    }
    const char *key[] = {kernel, device_class, kernel_hash, toolchain ? toolchain : ""};
    /* The newest ok trial first: the rows below stop there, so a retrain check that compares
     * against max_trial_id never misses a trial that landed while this one was read. */
    long long max_id = 0;
    if (store_query_ll(c,
                       "SELECT max((SELECT max(t.id) FROM trials t WHERE t.job_id = j.id"
                       " AND t.status = 'ok')) FROM jobs j WHERE " JOBS_OF_KEY,
                       4, key, &max_id, err) < 0)
        goto out;
    const char *p[] = {key[0],
                       key[1],
                       key[2],
                       key[3],
                       store_ll(&t, top),
                       store_ll(&mp, max_problems),
                       store_ll(&mx, max_id)};
    /* One row per (problem, configuration): its fastest measurement; then per problem the `top`
     * fastest configurations, of the max_problems problems measured last. */
    r = db_exec(c,
                "WITH per_config AS (SELECT DISTINCT ON (j.problem_key, t.config::text)"
                " j.problem_key, j.problem, t.config, t.time_ms, t.id, t.finished_at"
                " FROM trials t JOIN jobs j ON j.id = t.job_id WHERE " JOBS_OF_KEY
                " AND t.status = 'ok' AND t.time_ms > 0 AND t.id <= $7"
                " ORDER BY j.problem_key, t.config::text, t.time_ms, t.id),"
                " ranked AS (SELECT *, row_number() OVER (PARTITION BY problem_key"
                " ORDER BY time_ms, id) AS rank, max(id) OVER (PARTITION BY problem_key) AS newest"
                " FROM per_config),"
                " problems AS (SELECT problem_key FROM ranked WHERE rank = 1"
                " ORDER BY newest DESC LIMIT $6)"
                " SELECT r.id, r.problem, r.config, r.time_ms,"
                " to_json(r.finished_at) #>> '{}' FROM ranked r JOIN problems USING (problem_key)"
                " WHERE r.rank <= $5 ORDER BY r.problem_key, r.rank",
                7, p, err);
    if (!r)
        goto out;
    if (decode_training_rows(r, max_id, out, err) < 0)
        goto out;
    rc = 0;
out:
    PQclear(r);
    if (rc < 0)
        model_training_data_release(out);
    return rc;
}

long long model_store_new_trials(PGconn *c, const char *kind, const char *kernel,
                                 const char *device_class, const char *kernel_hash,
                                 const char *toolchain, kt_error *err)
{
    const char *p[] = {kernel, device_class, kernel_hash, toolchain ? toolchain : "", kind};
    long long n = 0;
    int rc = store_query_ll(
        c,
        "SELECT count(*) FROM trials t JOIN jobs j ON j.id = t.job_id WHERE " JOBS_OF_KEY
        " AND t.status = 'ok' AND t.id > COALESCE((SELECT (m.training ->> 'max_trial_id')::bigint"
        " FROM models m WHERE m.kind = $5 AND m.kernel = $1 AND m.device_class = $2"
        " AND m.kernel_hash = $3 AND m.toolchain = $4 AND m.status = 'ready'"
        " ORDER BY m.version DESC LIMIT 1), 0)",
        5, p, &n, err);
    return rc < 0 ? -1 : n;
}

int model_store_queue_retrains(PGconn *c, long long threshold, kt_error *err)
{
    store_num t;
    const char *p[] = {store_ll(&t, threshold)};
    /* Per key, its newest ready predictor (surrogates learn from sampled mappings, not from trials:
     * never retrained here); the count of ok trials of the key's jobs above that model's
     * max_trial_id; a new version when enough, nothing training and no retrain failed since. The
     * one-training index makes a race with another ktuned's check lose quietly (ON CONFLICT). */
    return store_exec_count(
        c,
        "WITH newest AS (SELECT DISTINCT ON (kind, kernel, device_class, kernel_hash, toolchain)"
        " * FROM models WHERE status = 'ready' AND kind = 'predictor'"
        " ORDER BY kind, kernel, device_class, kernel_hash,"
        " toolchain, version DESC),"
        " due AS (SELECT n.* FROM newest n WHERE NOT EXISTS (SELECT 1 FROM models o WHERE"
        " o.kind = n.kind AND o.kernel = n.kernel AND o.device_class = n.device_class AND"
        " o.kernel_hash = n.kernel_hash AND o.toolchain = n.toolchain AND (o.status = 'training'"
        " OR (o.status = 'failed' AND o.reason = 'retrain' AND o.version > n.version)))"
        " AND (SELECT count(*) FROM trials t JOIN jobs j ON j.id = t.job_id WHERE"
        " j.kernel = n.kernel AND j.device_class = n.device_class AND j.kernel_hash = n.kernel_hash"
        " AND j.toolchain = n.toolchain AND " STORE_MEASURED_JOB(
            "j") " AND t.status = 'ok'"
                 " AND t.id > COALESCE((n.training ->> 'max_trial_id')::bigint, 0)) >= $1)"
                 " INSERT INTO models (kind, algorithm, kernel, device_class, kernel_hash, "
                 "toolchain,"
                 " version, status, hyper, reason) SELECT d.kind, d.algorithm, d.kernel, "
                 "d.device_class,"
                 " d.kernel_hash, d.toolchain, (SELECT max(version) + 1 FROM models v WHERE"
                 " v.kind = d.kind AND v.kernel = d.kernel AND v.device_class = d.device_class AND"
                 " v.kernel_hash = d.kernel_hash AND v.toolchain = d.toolchain), 'training', "
                 "d.hyper,"
                 " 'retrain' FROM due d ON CONFLICT DO NOTHING RETURNING id",
        1, p, err);
}
