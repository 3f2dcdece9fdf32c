#include "store/import_store.h"

#include <stdlib.h>
#include <string.h>

#include "core/trial.h"
#include "store/best_store.h"
#include "store/db.h"
#include "store/job_store.h"
#include "store/store_exec.h"
#include "store/store_util.h"

/* Creates the job row, already finished: an import job is its trials. Trust is recorded in its
 * options, where STORE_MEASURED_JOB reads it. */
static int create_job(PGconn *c, const import_target *t, long long n, long long *id, kt_error *err)
{
    json_t *opts = json_pack("{s:s}", "source", t->source ? t->source : "import");
    if (opts && (t->trusted || t->replace_measured) &&
        json_object_set_new(opts, "trusted", json_true()) < 0) {
        json_decref(opts);
        opts = NULL;
    }
    job_spec spec = {
        .key = t->key,
        .problem = t->problem,
        .strategy = "import",
        .options = opts,
        .budget_evaluations = n > 0 ? n : 1,
        .batch_size = 1,
        .space_size = t->space_size,
        .finished_as = "imported",
        .space = t->space,
    };
    int rc = opts ? job_store_create(c, &spec, id, err)
                  : kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating an import job");
    json_decref(opts);
    return rc;
}

/* Locks an existing import job for the rest of the transaction; *trusted: whether it is trusted
 * (may be NULL). */
static int lock_job(PGconn *c, long long id, int *trusted, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    PGresult *r = db_exec(c,
                          "SELECT strategy, " STORE_MEASURED_JOB("j") " FROM jobs j WHERE id = $1"
                                                                      " FOR UPDATE",
                          1, p, err);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 0)
        rc = kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
    else if (strcmp(PQgetvalue(r, 0, 0), "import") != 0)
        rc = kt_error_set(err, KT_ERR_CONFLICT,
                          "job %lld is a tuning job (strategy %s); trials can only be added to an "
                          "import job",
                          id, PQgetvalue(r, 0, 0));
    else if (trusted)
        *trusted = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    PQclear(r);
    return rc;
}

/* Recounts the job's trials and clock from its trials (the clock: the sum of their
 * charged_seconds), offers the job's fastest ok trial (earliest on ties) to the job's best and to
 * the best table. */
static int refresh_job(PGconn *c, long long id, int replace_measured, int trusted, kt_error *err)
{
    int rc = -1;
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    PGresult *fastest = NULL;
    PGresult *r = db_exec(
        c,
        "UPDATE jobs j SET trials_done = s.n, clock_seconds = s.clock,"
        " budget_evaluations = GREATEST(s.n, 1), finished_at = now(), updated_at = now()"
        " FROM (SELECT count(*) AS n, COALESCE(sum(charged_seconds), 0) AS clock FROM trials"
        "   WHERE job_id = $1) s WHERE j.id = $1 RETURNING " BEST_JOB_KEY_COLUMNS,
        1, p, err);
    if (!r)
        goto out;
    fastest = db_exec(c,
                      "SELECT id, time_ms, config FROM trials WHERE job_id = $1 AND status = 'ok'"
                      " AND time_ms IS NOT NULL ORDER BY time_ms, id LIMIT 1",
                      1, p, err);
    if (!fastest)
        goto out;
    if (PQntuples(r) == 1 && PQntuples(fastest) == 1) {
        best_offer offer =
            best_offer_of_job_row(r, 0, id, store_get_ll(fastest, 0, 0),
                                  store_get_double(fastest, 0, 1), PQgetvalue(fastest, 0, 2));
        offer.imported = 1;
        offer.replace_measured = replace_measured;
        offer.trusted = trusted;
        if (job_store_offer_best(c, id, offer.trial_id, offer.time_ms, offer.config_json, err) <
                0 ||
            best_store_offer(c, &offer, err) < 0)
            goto out;
    }
    rc = 0;
out:
    PQclear(fastest);
    PQclear(r);
    return rc;
}

typedef struct add_ctx {
    const import_target *t;
    const char *trials_text, *charges_text; /* the trials and their charges, as JSON arrays */
    long long n;                            /* how many trials */
    long long id;                           /* the job, 0 for a new one */
    import_counts *counts;
} add_ctx;

/* import_store_add in its transaction. */
static int add_tx(PGconn *c, void *ctx, kt_error *err)
{
    add_ctx *x = ctx;
    const import_target *t = x->t;
    int trusted = t->trusted || t->replace_measured;
    if (x->id == 0 ? create_job(c, t, x->n, &x->id, err) : lock_job(c, x->id, &trusted, err))
        return -1;
    if (t->replace_measured && !trusted) {
        kt_error_set(err, KT_ERR_CONFLICT,
                     "import job %lld is not trusted: its trials cannot replace a measurement",
                     x->id);
        kt_error_hint(err, "import them as a new job (without \"job\") with \"replace_measured\": "
                           "true, which trusts it (admin)");
        return -1;
    }
    /* json (not jsonb) keeps each configuration's parameter order. A configuration already in the
     * job, or repeated in this batch (the first one counts), is skipped before numbering, so seq
     * stays 1, 2, 3, ... with no gaps; the job row is locked, so nothing else inserts meanwhile. */
    store_num jid;
    const char *p[] = {store_ll(&jid, x->id), x->trials_text, x->charges_text};
    int inserted = store_exec_count(
        c,
        "WITH e AS (SELECT x.t, x.ord, (x.t->>'config_id')::bigint AS cid, y.charge::float8"
        "   AS charge FROM json_array_elements($2::json) WITH ORDINALITY AS x(t, ord)"
        "   JOIN json_array_elements_text($3::json) WITH ORDINALITY AS y(charge, ord2)"
        "   ON x.ord = y.ord2),"
        " firsts AS (SELECT DISTINCT ON (cid) t, ord, cid, charge FROM e ORDER BY cid, ord),"
        " fresh AS (SELECT f.t, f.cid, f.charge, row_number() OVER (ORDER BY f.ord) AS rn"
        "   FROM firsts f"
        "   WHERE NOT EXISTS (SELECT 1 FROM trials x WHERE x.job_id = $1"
        "   AND x.config_id = f.cid)),"
        " base AS (SELECT COALESCE(max(seq), 0) AS b FROM trials WHERE job_id = $1),"
        " job AS (SELECT device FROM jobs WHERE id = $1)"
        " INSERT INTO trials (job_id, seq, config_id, config, device, status, time_ms,"
        " repeats, compile_ms, measure_ms, noise_cv, extras, worker, done_seq,"
        " claimed_at, finished_at, charged_seconds)"
        " SELECT $1, base.b + fresh.rn, fresh.cid, fresh.t->'config',"
        " job.device, fresh.t->>'status', (fresh.t->>'time_ms')::float8,"
        " (fresh.t->>'repeats')::integer, (fresh.t->>'compile_ms')::float8,"
        " (fresh.t->>'measure_ms')::float8, (fresh.t->>'noise_cv')::float8,"
        " '{\"imported\": true}'::jsonb, 'import', nextval('trials_done_seq'), now(), now(),"
        " fresh.charge FROM fresh, base, job ORDER BY fresh.rn ON CONFLICT DO NOTHING RETURNING id",
        3, p, err);
    if (inserted < 0)
        return -1;
    x->counts->inserted = inserted;
    x->counts->duplicates = x->n - inserted;
    return refresh_job(c, x->id, t->replace_measured, trusted, err);
}

int import_store_add(PGconn *c, const import_target *t, const json_t *trials, long long *job_id,
                     import_counts *counts, kt_error *err)
{
    long long n = (long long)json_array_size(trials);
    char *trials_text = store_json_text(trials);
    /* Each trial's charge, by the one rule, computed here once; stored with the trial. */
    json_t *charges = json_array();
    for (size_t i = 0; charges && i < json_array_size(trials); i++) {
        const json_t *trial = json_array_get(trials, i);
        double compile_ms = json_number_value(json_object_get(trial, "compile_ms"));
        double measure_ms = json_number_value(json_object_get(trial, "measure_ms"));
        json_array_append_new(charges, json_real(trial_cost_seconds_of(compile_ms, measure_ms)));
    }
    char *charges_text = store_json_text(charges);
    memset(counts, 0, sizeof *counts);
    add_ctx x = {.t = t,
                 .trials_text = trials_text,
                 .charges_text = charges_text,
                 .n = n,
                 .id = *job_id,
                 .counts = counts};
    int rc = !trials_text || !charges_text
                 ? kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory encoding %lld trials", n)
                 : store_tx(c, add_tx, &x, err);
    if (rc >= 0)
        *job_id = x.id; /* set only once the transaction committed */
    free(trials_text);
    free(charges_text);
    json_decref(charges);
    return rc < 0 ? -1 : 0;
}

typedef struct remove_ctx {
    long long job_id;
    import_removed *out;
} remove_ctx;

/* import_store_remove in its transaction. */
static int remove_tx(PGconn *c, void *ctx, kt_error *err)
{
    const remove_ctx *x = ctx;
    store_num n;
    const char *p[] = {store_ll(&n, x->job_id)};
    if (lock_job(c, x->job_id, NULL, err) < 0 ||
        best_store_forget_job(c, x->job_id, &x->out->best_removed, &x->out->best_restored, err) < 0)
        return -1;
    /* The trials go with the job (ON DELETE CASCADE); counted first for the reply. */
    return store_query_ll(c,
                          "WITH t AS (SELECT count(*) AS n FROM trials WHERE job_id = $1),"
                          " j AS (DELETE FROM jobs WHERE id = $1) SELECT n FROM t",
                          1, p, &x->out->trials, err);
}

int import_store_remove(PGconn *c, long long job_id, import_removed *out, kt_error *err)
{
    remove_ctx x = {.job_id = job_id, .out = out};
    memset(out, 0, sizeof *out);
    return store_tx(c, remove_tx, &x, err) < 0 ? -1 : 0;
}
