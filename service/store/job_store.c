#include "store/job_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_util.h"

/* The API's JSON view of a job row aliased j; shared by get and list so both show the same fields.
 */
#define JOB_JSON_SQL                                                                               \
    "json_build_object("                                                                           \
    "'id', j.id, 'status', j.status, 'kernel', j.kernel, 'device', j.device,"                      \
    " 'device_class', j.device_class, 'kernel_hash', j.kernel_hash, 'problem', j.problem,"         \
    " 'strategy', j.strategy, 'strategy_options', j.strategy_options, 'seed', j.seed,"             \
    " 'budget', json_build_object('evaluations', j.budget_evaluations, 'seconds', "                \
    "j.budget_seconds),"                                                                           \
    " 'progress', json_build_object('trials', j.trials_done, 'space_size', j.space_size,"          \
    "   'clock_seconds', j.clock_seconds, 'fraction', CASE WHEN j.status = 'succeeded' THEN 1.0"   \
    "   ELSE LEAST(1.0, GREATEST("                                                                 \
    "     COALESCE(j.trials_done::float8 / j.budget_evaluations, 0),"                              \
    "     COALESCE(LEAST(j.trials_done::float8 / NULLIF(j.space_size, 0), 1.0), 0),"               \
    "     COALESCE(j.clock_seconds / j.budget_seconds, 0))) END),"                                 \
    " 'best', CASE WHEN j.best_time_ms IS NULL THEN NULL ELSE json_build_object("                  \
    "   'time_ms', j.best_time_ms, 'config', j.best_config, 'trial_id', j.best_trial_id) END,"     \
    " 'stop_reason', j.stop_reason, 'error', j.error,"                                             \
    " 'timings', json_build_object('created_at', j.created_at, 'started_at', j.started_at,"        \
    "   'finished_at', j.finished_at, 'elapsed_seconds',"                                          \
    "   EXTRACT(EPOCH FROM COALESCE(j.finished_at, now()) - j.started_at)),"                       \
    " 'links', json_build_object('self', '/v1/jobs/' || j.id, 'trials',"                           \
    "   '/v1/jobs/' || j.id || '/trials'))"

int job_store_create(PGconn *c, const job_spec *s, long long *id_out, kt_error *err)
{
    int rc = -1;
    store_num seed, evals, secs, batch, size;
    char *problem = store_json_text(s->problem);
    char *options = store_json_text(s->options);
    const char *p[] = {
        s->kernel,
        s->device,
        s->device_class,
        s->kernel_hash,
        problem,
        s->problem_key,
        s->strategy,
        options ? options : "{}",
        store_ll(&seed, (long long)(s->seed & 0x7fffffffffffffffULL)),
        s->budget_evaluations > 0 ? store_ll(&evals, s->budget_evaluations) : NULL,
        s->budget_seconds > 0 ? store_double(&secs, s->budget_seconds) : NULL,
        store_ll(&batch, s->batch_size),
        store_ll(&size, (long long)s->space_size),
    };
    PGresult *r =
        db_exec(c,
                "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
                " strategy, strategy_options, seed, budget_evaluations, budget_seconds, batch_size,"
                " space_size) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
                " RETURNING id",
                13, p, err);
    if (!r)
        goto out;
    *id_out = store_get_ll(r, 0, 0);
    rc = 0;
out:
    PQclear(r);
    free(problem);
    free(options);
    return rc;
}

json_t *job_store_get_json(PGconn *c, long long id, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    return store_query_json(c, "SELECT " JOB_JSON_SQL " FROM jobs j WHERE j.id = $1", 1, p,
                            "no such job", err);
}

json_t *job_store_list_json(PGconn *c, const char *status, long long before, int limit,
                            kt_error *err)
{
    store_num b, l;
    const char *p[] = {status, before > 0 ? store_ll(&b, before) : NULL, store_ll(&l, limit)};
    return store_query_json(
        c,
        "WITH page AS (SELECT * FROM jobs j WHERE ($1::text IS NULL OR j.status = $1)"
        " AND ($2::bigint IS NULL OR j.id < $2) ORDER BY j.id DESC LIMIT $3)"
        " SELECT json_build_object('jobs', COALESCE((SELECT json_agg(" JOB_JSON_SQL
        " ORDER BY j.id DESC) FROM page j), '[]'::json),"
        " 'next_before', CASE WHEN (SELECT count(*) FROM page) < $3 THEN NULL"
        " ELSE (SELECT min(id) FROM page) END)",
        3, p, "no jobs", err);
}

int job_store_cancel(PGconn *c, long long id, kt_error *err)
{
    int rc = -1;
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    PGresult *r = NULL;
    if (db_begin(c, err) < 0)
        return -1;
    r = db_exec(
        c,
        "UPDATE jobs SET status = 'cancelled', stop_reason = 'cancelled', finished_at = now(),"
        " updated_at = now() WHERE id = $1 AND status IN ('queued', 'running') RETURNING id",
        1, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = db_exec(c, "SELECT status FROM jobs WHERE id = $1", 1, p, err);
        if (!r)
            goto out;
        if (PQntuples(r) == 0)
            kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
        else
            kt_error_set(err, KT_ERR_CONFLICT,
                         "job %lld already %s; only queued or running jobs can be cancelled", id,
                         PQgetvalue(r, 0, 0));
        goto out;
    }
    if (db_run(c, "DELETE FROM trials WHERE job_id = $1 AND status = 'pending'", 1, p, err) < 0)
        goto out;
    if (db_commit(c, err) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        db_rollback(c);
    PQclear(r);
    return rc;
}

json_t *job_store_status_counts(PGconn *c, kt_error *err)
{
    return store_query_json(
        c,
        "SELECT json_object_agg(s.status, COALESCE(n.count, 0)) FROM"
        " unnest(ARRAY['queued','running','succeeded','failed','cancelled']) AS s(status)"
        " LEFT JOIN (SELECT status, count(*) FROM jobs GROUP BY status) n"
        " ON n.status = s.status",
        0, NULL, "no counts", err);
}

static char *dup_value(const PGresult *r, int row, int col)
{
    return strdup(PQgetvalue(r, row, col));
}

int job_store_claim(PGconn *c, const runner_identity *me, int max, job_row *rows, kt_error *err)
{
    int n = -1;
    store_num pid, lim;
    const char *p[] = {me->id, me->host, store_ll(&pid, me->pid), store_ll(&lim, max)};
    PGresult *r = db_exec(
        c,
        "UPDATE jobs j SET status = 'running', runner = $1, runner_host = $2, runner_pid = $3,"
        " runner_heartbeat = now(), started_at = COALESCE(j.started_at, now()),"
        " updated_at = now() FROM (SELECT id FROM jobs WHERE status = 'queued'"
        " OR (status = 'running' AND runner IS NULL) ORDER BY id LIMIT $4"
        " FOR UPDATE SKIP LOCKED) pick WHERE j.id = pick.id RETURNING j.id, j.kernel,"
        " j.device, j.kernel_hash, j.strategy, j.problem, j.strategy_options, j.seed,"
        " j.budget_evaluations, j.budget_seconds, j.batch_size",
        4, p, err);
    if (!r)
        goto out;
    n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        job_row *row = &rows[i];
        memset(row, 0, sizeof *row);
        row->id = store_get_ll(r, i, 0);
        row->kernel = dup_value(r, i, 1);
        row->device = dup_value(r, i, 2);
        row->kernel_hash = dup_value(r, i, 3);
        row->strategy = dup_value(r, i, 4);
        row->problem = store_get_json(r, i, 5);
        row->options = store_get_json(r, i, 6);
        row->seed = (uint64_t)store_get_ll(r, i, 7);
        row->budget_evaluations = store_get_ll(r, i, 8);
        row->budget_seconds = PQgetisnull(r, i, 9) ? 0 : store_get_double(r, i, 9);
        row->batch_size = (int)store_get_ll(r, i, 10);
    }
out:
    PQclear(r);
    return n;
}

void job_row_release(job_row *r)
{
    free(r->kernel);
    free(r->device);
    free(r->kernel_hash);
    free(r->strategy);
    json_decref(r->problem);
    json_decref(r->options);
    memset(r, 0, sizeof *r);
}

int job_store_status(PGconn *c, long long id, char *status, size_t cap, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    PGresult *r = db_exec(c, "SELECT status, runner FROM jobs WHERE id = $1", 1, p, err);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 0)
        rc = kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
    else
        snprintf(status, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

int job_store_finish(PGconn *c, const runner_identity *me, long long id, const char *status,
                     const char *stop_reason, const kt_error *error, kt_error *err)
{
    store_num n;
    char *error_text = NULL;
    if (error && error->code != KT_OK) {
        json_t *e = json_pack("{s:s,s:s,s:s}", "code", kt_error_code_name(error->code), "message",
                              error->message, "hint", error->hint);
        error_text = store_json_text(e);
        json_decref(e);
    }
    const char *p[] = {store_ll(&n, id), me->id, status, stop_reason, error_text};
    int rc = db_run(
        c,
        "UPDATE jobs SET status = $3, stop_reason = $4, error = $5::jsonb, finished_at = now(),"
        " updated_at = now(), runner = NULL WHERE id = $1 AND runner = $2 AND status = 'running'",
        5, p, err);
    free(error_text);
    return rc;
}

int job_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err)
{
    const char *p[] = {me->id};
    return db_run(c, "UPDATE jobs SET runner = NULL WHERE runner = $1 AND status = 'running'", 1, p,
                  err);
}

int job_store_heartbeat(PGconn *c, const runner_identity *me, kt_error *err)
{
    const char *p[] = {me->id};
    return db_run(
        c, "UPDATE jobs SET runner_heartbeat = now() WHERE runner = $1 AND status = 'running'", 1,
        p, err);
}

int job_store_release_dead(PGconn *c, const runner_identity *me, int stale_s, kt_error *err)
{
    int freed = -1;
    store_num s, pid;
    const char *p1[] = {store_ll(&s, stale_s)};
    PGresult *r =
        db_exec(c,
                "UPDATE jobs SET runner = NULL WHERE status = 'running' AND runner IS NOT NULL"
                " AND runner_heartbeat < now() - make_interval(secs => $1) RETURNING id",
                1, p1, err);
    if (!r)
        goto out;
    freed = PQntuples(r);
    PQclear(r);
    /* Runners on this host are checked by pid: a ktuned killed with -9 is noticed at once. A runner
     * with my pid but another id is a previous incarnation (containers reuse pid 1). */
    const char *p2[] = {me->host, me->id};
    r = db_exec(c,
                "SELECT DISTINCT runner_pid FROM jobs WHERE status = 'running' AND runner_host = $1"
                " AND runner IS NOT NULL AND runner <> $2",
                2, p2, err);
    if (!r) {
        freed = -1;
        goto out;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        int other = (int)store_get_ll(r, i, 0);
        if (other != me->pid && store_pid_alive(other))
            continue;
        const char *p3[] = {me->host, store_ll(&pid, other), me->id};
        PGresult *u =
            db_exec(c,
                    "UPDATE jobs SET runner = NULL WHERE status = 'running' AND runner_host = $1"
                    " AND runner_pid = $2 AND runner <> $3 RETURNING id",
                    3, p3, err);
        if (!u) {
            freed = -1;
            goto out;
        }
        freed += PQntuples(u);
        PQclear(u);
    }
out:
    PQclear(r);
    return freed;
}

int job_store_target(PGconn *c, long long id, char *kernel, size_t kcap, char *device, size_t dcap,
                     json_t **problem, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    PGresult *r = db_exec(c, "SELECT kernel, device, problem FROM jobs WHERE id = $1", 1, p, err);
    if (!r)
        return -1;
    int rc = -1;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
    } else {
        snprintf(kernel, kcap, "%s", PQgetvalue(r, 0, 0));
        snprintf(device, dcap, "%s", PQgetvalue(r, 0, 1));
        *problem = store_get_json(r, 0, 2);
        rc = 0;
    }
    PQclear(r);
    return rc;
}
