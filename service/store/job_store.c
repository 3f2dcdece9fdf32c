#include "store/job_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/pick_store.h"
#include "store/reap.h"
#include "store/store_exec.h"
#include "store/store_util.h"

/* The columns of a job's target, in job_target_of_row's order; prefix names the table alias. */
#define JOB_TARGET_COLUMNS(prefix)                                                                 \
    prefix "kernel, " prefix "device, " prefix "device_class, " prefix "kernel_hash, " prefix      \
           "problem_key, " prefix "problem, " prefix "toolchain"

/* The stored inline space (sql/016), read by name (job_target_of_row). */
#define JOB_SPACE_COLUMN(prefix) prefix "space AS job_space"

/* Fair shares of the job slots (job_store_claim, job_store_yield; issue 26). A job's caller is its
 * submitter (NULL: one more caller). A job waits when no runner drives it: queued, or running and
 * handed back (a re-sync, a dead runner, a yield). The two common table expressions: driven(caller,
 * n), the jobs runners drive now per caller; waiting(id, caller, updated_at). */
/* clang-format off */
#define JOB_FAIR_CALLER(prefix) "COALESCE(" prefix "submitter, '')"
/* A running job on the external device (issue 27) whose harness has not asked for
 * JOB_EXTERNAL_IDLE_S waits for its harness, not for a runner: it is neither claimed nor counted
 * as waiting until an ask comes (job_store_release_idle_external hands it back). */
#define JOB_FAIR_WAITS(prefix)                                                                     \
    "(" prefix "status = 'queued' OR (" prefix "status = 'running' AND " prefix "runner IS NULL"  \
    " AND (" prefix "device <> 'external' OR " prefix "last_ask_at > now() - make_interval(secs"  \
    " => " JOB_EXTERNAL_IDLE_S_SQL "))))"
#define JOB_FAIR_DRIVEN                                                                            \
    "driven AS (SELECT " JOB_FAIR_CALLER("") " AS caller, count(*) AS n FROM jobs"                 \
    " WHERE status = 'running' AND runner IS NOT NULL GROUP BY 1)"
#define JOB_FAIR_WAITING                                                                           \
    "waiting AS (SELECT id, " JOB_FAIR_CALLER("") " AS caller, updated_at FROM jobs"               \
    " WHERE " JOB_FAIR_WAITS("") ")"
/* clang-format on */

/* Warm starts (sql/006), read by name (read_history): the mode, a summary of what was seeded
 * (not the recorded configurations: a page of jobs would carry every job's prior), and how many
 * of the seeded configurations (the first trials of the job) were measured. */
#define JOB_HISTORY_COLUMNS                                                                        \
    "j.history, CASE WHEN j.history_used IS NULL THEN NULL ELSE jsonb_build_object('sources',"     \
    " j.history_used -> 'sources', 'model', j.history_used -> 'model', 'seeded',"                  \
    " jsonb_array_length(j.history_used -> 'first'), 'prior_trials',"                              \
    " jsonb_array_length(j.history_used -> 'prior')) END AS history_used,"                         \
    " (SELECT count(*) FROM trials ht WHERE ht.job_id = j.id AND ht.done_seq IS NOT NULL"          \
    " AND ht.seq <= COALESCE(jsonb_array_length(j.history_used -> 'first'), 0)) AS "               \
    "seeded_measured"

/* The harness of an external job (sql/016, by name): its last ask and its live leases. */
#define JOB_HARNESS_COLUMNS                                                                        \
    "to_json(j.last_ask_at) #>> '{}' AS last_ask_at,"                                              \
    " EXTRACT(EPOCH FROM now() - j.last_ask_at) AS since_ask,"                                     \
    " CASE WHEN j.device = 'external' THEN (SELECT count(*) FROM trials lt WHERE lt.job_id = j.id" \
    " AND lt.status = 'running' AND lt.lease_expires_at > now()) ELSE 0 END AS harness_leased"

/* What the job optimises (sql/022), read by name (read_objective); its device's busy time
 * (sql/027), by name. */
#define JOB_OBJECTIVE_COLUMNS "j.objective_metric, j.objective_goal, j.best_value, j.device_busy_ms"

/* The columns job_info is read from (read_info), of a jobs row aliased j. Timestamps as their JSON
 * text (ISO 8601); elapsed_seconds from the database's clock, like the timestamps. */
/* clang-format off */
#define JOB_INFO_COLUMNS                                                                           \
    "j.id, j.status, " JOB_TARGET_COLUMNS("j.") ", j.strategy, j.strategy_options, j.seed,"        \
    " j.budget_evaluations, j.budget_seconds, j.trials_done, j.space_size, j.clock_seconds,"       \
    " j.best_trial_id, j.best_time_ms, j.best_config, j.stop_reason, j.error,"                     \
    " to_json(j.created_at) #>> '{}', to_json(j.started_at) #>> '{}',"                             \
    " to_json(j.finished_at) #>> '{}',"                                                            \
    " EXTRACT(EPOCH FROM COALESCE(j.finished_at, now()) - j.started_at), " JOB_HISTORY_COLUMNS   \
    ", j.parallel AS parallel, " PICK_JOB_COLUMNS ", " JOB_HARNESS_COLUMNS ", " JOB_OBJECTIVE_COLUMNS
/* clang-format on */

static char *dup_value(const PGresult *r, int row, int col)
{
    return strdup(PQgetvalue(r, row, col));
}

/* Fills t from the JOB_TARGET_COLUMNS starting at column col; -1 when out of memory. */
static int job_target_of_row(const PGresult *r, int row, int col, job_target *t)
{
    t->key = (target_key){
        .kernel = dup_value(r, row, col),
        .device = dup_value(r, row, col + 1),
        .device_class = dup_value(r, row, col + 2),
        .kernel_hash = dup_value(r, row, col + 3),
        .problem_key = dup_value(r, row, col + 4),
        .toolchain = dup_value(r, row, col + 6),
    };
    if (t->key.device) /* parsed once, here (core/target_key.h) */
        kt_device_parse(t->key.device, &t->key.dev, NULL);
    t->problem = store_get_json(r, row, col + 5);
    /* The inline space of an external job (sql/016), by name: the queries that read targets end
     * with JOB_SPACE_COLUMN; NULL for catalog devices. */
    int sc = PQfnumber(r, "job_space");
    t->space = sc >= 0 ? store_get_json(r, row, sc) : NULL;
    return t->key.kernel && t->key.device && t->key.device_class && t->key.kernel_hash &&
                   t->key.problem_key && t->key.toolchain && t->problem
               ? 0
               : -1;
}

static char *dup_or_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : dup_value(r, row, col);
}

/* The history columns of row, found by name; -1 when out of memory. */
static int read_history(const PGresult *r, int row, char **history, json_t **used)
{
    int h = PQfnumber(r, "history"), u = PQfnumber(r, "history_used");
    *history = h >= 0 ? dup_value(r, row, h) : strdup("none");
    *used = u >= 0 ? store_get_json(r, row, u) : NULL;
    return *history ? 0 : -1;
}

/* The objective columns of row, found by name (absent: the time). */
static void read_objective(const PGresult *r, int row, kt_objective *o)
{
    int m = PQfnumber(r, "objective_metric"), g = PQfnumber(r, "objective_goal");
    kt_objective_set(o, m >= 0 && !PQgetisnull(r, row, m) ? PQgetvalue(r, row, m) : NULL,
                     g >= 0 ? PQgetvalue(r, row, g) : NULL);
}

/* Fills j from a row of JOB_INFO_COLUMNS; 0, or -1 (err set) when out of memory. */
static int read_info(const PGresult *r, int row, job_info *j, kt_error *err)
{
    memset(j, 0, sizeof *j);
    j->id = store_get_ll(r, row, 0);
    j->status = dup_value(r, row, 1);
    int target_ok = job_target_of_row(r, row, 2, &j->target) == 0;
    j->strategy = dup_value(r, row, 9);
    j->options = store_get_json(r, row, 10);
    j->seed = store_get_ll(r, row, 11);
    j->budget_evaluations = store_get_ll(r, row, 12);
    j->budget_seconds = PQgetisnull(r, row, 13) ? 0 : store_get_double(r, row, 13);
    j->trials_done = store_get_ll(r, row, 14);
    j->space_size = store_get_ll(r, row, 15);
    j->clock_seconds = store_get_double(r, row, 16);
    j->has_best = !PQgetisnull(r, row, 18);
    j->best_trial_id = store_get_ll(r, row, 17);
    j->best_time_ms = store_get_double(r, row, 18);
    j->best_config = store_get_json(r, row, 19);
    j->stop_reason = dup_or_null(r, row, 20);
    j->error = store_get_json(r, row, 21);
    j->created_at = dup_or_null(r, row, 22);
    j->started_at = dup_or_null(r, row, 23);
    j->finished_at = dup_or_null(r, row, 24);
    j->elapsed_seconds = store_get_double(r, row, 25);
    int history_ok = read_history(r, row, &j->history, &j->history_used) == 0;
    int sm = PQfnumber(r, "seeded_measured");
    j->seeded_measured = sm >= 0 ? store_get_ll(r, row, sm) : 0;
    int par = PQfnumber(r, "parallel");
    j->parallel = par >= 0 && !PQgetisnull(r, row, par) ? (int)store_get_ll(r, row, par) : 0;
    pick_store_read_job(r, row, j);
    int la = PQfnumber(r, "last_ask_at"), sa = PQfnumber(r, "since_ask"),
        hl = PQfnumber(r, "harness_leased");
    j->last_ask_at = la >= 0 ? dup_or_null(r, row, la) : NULL;
    j->since_ask_s = sa >= 0 && !PQgetisnull(r, row, sa) ? store_get_double(r, row, sa) : -1;
    j->harness_leased = hl >= 0 ? store_get_ll(r, row, hl) : 0;
    read_objective(r, row, &j->objective);
    int bv = PQfnumber(r, "best_value");
    j->best_value = bv >= 0 && !PQgetisnull(r, row, bv) ? store_get_double(r, row, bv) : NAN;
    int db = PQfnumber(r, "device_busy_ms");
    j->device_busy_ms = db >= 0 && !PQgetisnull(r, row, db) ? store_get_double(r, row, db) : NAN;
    int rc = 0;
    if (!j->status || !target_ok || !j->strategy || !j->options || !j->created_at || !history_ok) {
        rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading job %lld", j->id);
        job_info_release(j);
    }
    return rc;
}

void job_info_release(job_info *j)
{
    free(j->status);
    job_target_release(&j->target);
    free(j->strategy);
    json_decref(j->options);
    json_decref(j->best_config);
    free(j->stop_reason);
    json_decref(j->error);
    free(j->created_at);
    free(j->started_at);
    free(j->finished_at);
    free(j->history);
    json_decref(j->history_used);
    json_decref(j->final_pick);
    free(j->last_ask_at);
    memset(j, 0, sizeof *j);
}

int job_store_create(PGconn *c, const job_spec *s, long long *id_out, kt_error *err)
{
    int rc = -1;
    store_num seed, evals, secs, batch, size, par, fr, fk;
    char *problem = store_json_text(s->problem);
    char *options = store_json_text(s->options);
    char *space = s->space ? store_json_text(s->space) : NULL;
    const char *p[] = {
        s->key.kernel,
        s->key.device,
        s->key.device_class,
        s->key.kernel_hash,
        problem,
        s->key.problem_key,
        s->strategy,
        options ? options : "{}",
        store_ll(&seed, (long long)(s->seed & 0x7fffffffffffffffULL)),
        s->budget_evaluations > 0 ? store_ll(&evals, s->budget_evaluations) : NULL,
        s->budget_seconds > 0 ? store_double(&secs, s->budget_seconds) : NULL,
        store_ll(&batch, s->batch_size),
        store_ll(&size, (long long)s->space_size),
        s->finished_as,
        s->finished_as ? "succeeded" : "queued",
        s->key.toolchain,
        s->history ? s->history : "none",
        s->parallel > 0 ? store_ll(&par, s->parallel) : NULL,
        store_ll(&fr, s->final_remeasure > 0 ? s->final_remeasure : 0),
        store_ll(&fk, s->final_remeasure > 0 ? s->final_rounds : 0),
        s->submitter,
        space,
        s->objective && !kt_objective_is_time(s->objective) ? s->objective->metric : NULL,
        s->objective ? kt_objective_goal(s->objective) : "min",
    };
    /* A job made finished (an import) started and finished now; a queued one has neither yet. */
    PGresult *r = db_exec(
        c,
        "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
        " strategy, strategy_options, seed, budget_evaluations, budget_seconds, batch_size,"
        " space_size, stop_reason, status, started_at, finished_at, toolchain, history, parallel,"
        " final_remeasure, final_rounds, submitter, space, objective_metric, objective_goal)"
        " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, t.at, t.at, $16,"
        " $17, $18, $19, $20, $21, $22::jsonb, $23, $24 FROM (SELECT CASE WHEN $14::text IS NULL"
        " THEN NULL ELSE now() END AS at) t RETURNING id",
        24, p, err);
    if (!r)
        goto out;
    *id_out = store_get_ll(r, 0, 0);
    rc = 0;
out:
    PQclear(r);
    free(problem);
    free(options);
    free(space);
    return rc;
}

int job_store_get(PGconn *c, long long id, job_info *out, kt_error *err)
{
    int rc = -1;
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    memset(out, 0, sizeof *out);
    PGresult *r = db_exec(c, "SELECT " JOB_INFO_COLUMNS " FROM jobs j WHERE j.id = $1", 1, p, err);
    if (!r)
        goto out;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no such job");
        goto out;
    }
    rc = read_info(r, 0, out, err);
out:
    PQclear(r);
    return rc;
}

int job_store_list(PGconn *c, const char *status, long long before, int limit, job_page *out,
                   kt_error *err)
{
    int rc = -1;
    store_num b, l;
    const char *p[] = {status, before > 0 ? store_ll(&b, before) : NULL, store_ll(&l, limit)};
    memset(out, 0, sizeof *out);
    PGresult *r = db_exec(c,
                          "SELECT " JOB_INFO_COLUMNS " FROM jobs j"
                          " WHERE ($1::text IS NULL OR j.status = $1)"
                          " AND ($2::bigint IS NULL OR j.id < $2) ORDER BY j.id DESC LIMIT $3",
                          3, p, err);
    if (!r)
        goto out;
    int rows = PQntuples(r);
    out->jobs = calloc(rows > 0 ? (size_t)rows : 1, sizeof *out->jobs);
    if (!out->jobs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory listing %d jobs", rows);
        goto out;
    }
    for (; out->n < rows; out->n++)
        if (read_info(r, out->n, &out->jobs[out->n], err) < 0)
            goto out;
    /* A full page may have more below it; a short one is the last. */
    out->next_before = rows > 0 && rows >= limit ? out->jobs[rows - 1].id : 0;
    rc = 0;
out:
    if (rc < 0)
        job_page_release(out);
    PQclear(r);
    return rc;
}

void job_page_release(job_page *p)
{
    for (int i = 0; i < p->n; i++)
        job_info_release(&p->jobs[i]);
    free(p->jobs);
    memset(p, 0, sizeof *p);
}

int job_store_offer_best(PGconn *c, long long job_id, long long trial_id, double time_ms,
                         const char *config_json, kt_error *err)
{
    store_num j, t, ms;
    const char *p[] = {store_ll(&j, job_id), store_ll(&t, trial_id), store_double(&ms, time_ms),
                       config_json};
    return db_run(c,
                  "UPDATE jobs SET best_trial_id = $2, best_time_ms = $3, best_config = $4::json"
                  " WHERE id = $1 AND ktune_improves_best($3, best_time_ms)",
                  4, p, err);
}

/* job_store_cancel in its transaction; ctx: the parameters, the job's id first. */
static int cancel_tx(PGconn *c, void *ctx, kt_error *err)
{
    const char *const *p = ctx;
    int rows = store_exec_count(
        c,
        "UPDATE jobs SET status = 'cancelled', stop_reason = 'cancelled', finished_at = now(),"
        " updated_at = now() WHERE id = $1 AND status IN ('queued', 'running') RETURNING id",
        1, p, err);
    if (rows < 0)
        return -1;
    if (rows == 0) {
        char status[32];
        int found = store_query_text(c, "SELECT status FROM jobs WHERE id = $1", 1, p, status,
                                     sizeof status, err);
        if (found == 0)
            kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %s", p[0]);
        else if (found > 0)
            kt_error_set(err, KT_ERR_CONFLICT,
                         "job %s already %s; only queued or running jobs can be cancelled", p[0],
                         status);
        return -1;
    }
    /* Its unfinished trials go: pending ones are never measured, running ones record nothing (their
     * measurement is stopped, and trial_store_complete finds no row). */
    return db_run(c, "DELETE FROM trials WHERE job_id = $1 AND status IN ('pending', 'running')", 1,
                  p, err);
}

int job_store_cancel(PGconn *c, long long id, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    return store_tx(c, cancel_tx, (void *)p, err);
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

int job_store_fail_exhausted(PGconn *c, int max_attempts, long long *ids, int max_ids,
                             kt_error *err)
{
    int n = -1;
    store_num max;
    kt_error why;
    kt_error_set(&why, KT_ERR_INTERNAL,
                 "the job was started %d times since it last completed a trial, and each time the "
                 "process driving it died or stopped heart-beating (killed, crashed or stalled)",
                 max_attempts);
    kt_error_hint(&why, "see the ktuned logs of the hosts that ran it (an out-of-memory kill "
                        "shows in the kernel log); POST /v1/tune queues it again once the cause "
                        "is fixed");
    json_t *e = json_pack("{s:s,s:s,s:s}", "code", kt_error_code_name(why.code), "message",
                          why.message, "hint", why.hint);
    char *error_text = store_json_text(e);
    json_decref(e);
    const char *p[] = {store_ll(&max, max_attempts), error_text};
    /* The job and its unfinished trials in one statement, like job_store_finish. */
    PGresult *r = db_exec_prepared(
        c, DB_PREPARED_JOBS_EXHAUSTED,
        "WITH ended AS (UPDATE jobs SET status = 'failed', stop_reason = 'attempts',"
        " error = $2::jsonb, finished_at = now(), updated_at = now()"
        " WHERE status = 'running' AND runner IS NULL AND start_attempts >= $1"
        " RETURNING id), gone AS (DELETE FROM trials WHERE job_id IN"
        " (SELECT id FROM ended) AND status IN ('pending', 'running'))"
        " SELECT id FROM ended ORDER BY id",
        2, p, err);
    if (!r)
        goto out;
    n = PQntuples(r);
    for (int i = 0; ids && i < n && i < max_ids; i++)
        ids[i] = store_get_ll(r, i, 0);
out:
    PQclear(r);
    free(error_text);
    return n;
}

int job_store_claim(PGconn *c, const runner_identity *me, int max, int max_attempts, job_row *rows,
                    kt_error *err)
{
    int n = -1;
    store_num pid, lim, attempts;
    const char *p[] = {me->id, me->host, store_ll(&pid, me->pid), store_ll(&lim, max),
                       store_ll(&attempts, max_attempts)};
    /* The turns are read without locks (a snapshot); the jobs are then locked in turn order,
     * skipping those another runner is claiming, and checked again under the lock. A job out of
     * start attempts is not claimed (job_store_fail_exhausted ends it). */
    /* clang-format off */
    PGresult *r = db_exec_prepared(
        c, DB_PREPARED_JOBS_CLAIM,
        "WITH " JOB_FAIR_DRIVEN ", " JOB_FAIR_WAITING ","
        " turns AS (SELECT w.id, COALESCE(d.n, 0) + row_number() OVER (PARTITION BY w.caller"
        " ORDER BY w.id) AS turn FROM waiting w LEFT JOIN driven d ON d.caller = w.caller),"
        " pick AS (SELECT q.id FROM jobs q JOIN turns t ON t.id = q.id WHERE " JOB_FAIR_WAITS("q.")
        " AND (q.status = 'queued' OR q.start_attempts < $5)"
        " ORDER BY t.turn, q.id LIMIT $4 FOR UPDATE OF q SKIP LOCKED)"
        " UPDATE jobs j SET status = 'running', runner = $1, runner_host = $2, runner_pid = $3,"
        " runner_heartbeat = now(), started_at = COALESCE(j.started_at, now()),"
        " start_attempts = j.start_attempts + 1,"
        " updated_at = now() FROM pick WHERE j.id = pick.id RETURNING j.id, "
        JOB_TARGET_COLUMNS("j.") ", j.strategy, j.strategy_options, j.seed,"
        " j.budget_evaluations, j.budget_seconds, j.batch_size, j.history, j.history_used,"
        " j.final_remeasure, j.final_rounds, j.start_attempts, " JOB_SPACE_COLUMN("j.") ","
        " j.objective_metric, j.objective_goal",
        5, p, err);
    /* clang-format on */
    if (!r)
        goto out;
    n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        job_row *row = &rows[i];
        memset(row, 0, sizeof *row);
        row->id = store_get_ll(r, i, 0);
        job_target_of_row(r, i, 1, &row->target);
        row->strategy = dup_value(r, i, 8);
        row->options = store_get_json(r, i, 9);
        row->seed = (uint64_t)store_get_ll(r, i, 10);
        row->budget_evaluations = store_get_ll(r, i, 11);
        row->budget_seconds = PQgetisnull(r, i, 12) ? 0 : store_get_double(r, i, 12);
        row->batch_size = (int)store_get_ll(r, i, 13);
        read_history(r, i, &row->history, &row->history_used);
        row->final_remeasure = (int)store_get_ll(r, i, 16);
        row->final_rounds = (int)store_get_ll(r, i, 17);
        row->start_attempts = (int)store_get_ll(r, i, 18);
        read_objective(r, i, &row->objective);
    }
out:
    PQclear(r);
    return n;
}

int job_store_yield(PGconn *c, const runner_identity *me, double wait_s, long long *yielded,
                    kt_error *err)
{
    store_num w;
    const char *p[] = {me->id, store_double(&w, wait_s)};
    *yielded = 0;
    /* "least": the fewest running jobs of a caller with a job waiting long enough; the victim: my
     * newest job of the caller driving the most, when that is at least two more (one more would
     * only swap who waits). */
    /* clang-format off */
    PGresult *r = db_exec(
        c,
        "WITH " JOB_FAIR_DRIVEN ", " JOB_FAIR_WAITING ","
        " least AS (SELECT min(COALESCE(d.n, 0)) AS n FROM waiting w LEFT JOIN driven d"
        " ON d.caller = w.caller WHERE w.updated_at <= now() - make_interval(secs => $2)),"
        " victim AS (SELECT j.id FROM jobs j JOIN driven d ON d.caller = " JOB_FAIR_CALLER("j.")
        " CROSS JOIN least l WHERE j.runner = $1 AND j.status = 'running' AND d.n >= l.n + 2"
        " ORDER BY d.n DESC, j.id DESC LIMIT 1 FOR UPDATE OF j SKIP LOCKED)"
        " UPDATE jobs j SET runner = NULL, updated_at = now(),"
        " start_attempts = greatest(j.start_attempts - 1, 0) FROM victim"
        " WHERE j.id = victim.id AND j.runner = $1 AND j.status = 'running' RETURNING j.id",
        2, p, err);
    /* clang-format on */
    if (!r)
        return -1;
    if (PQntuples(r) == 1)
        *yielded = store_get_ll(r, 0, 0);
    PQclear(r);
    return 0;
}

void job_target_release(job_target *t)
{
    free((char *)t->key.kernel);
    free((char *)t->key.device);
    free((char *)t->key.device_class);
    free((char *)t->key.kernel_hash);
    free((char *)t->key.problem_key);
    free((char *)t->key.toolchain);
    json_decref(t->problem);
    json_decref(t->space);
    memset(t, 0, sizeof *t);
}

void job_row_release(job_row *r)
{
    job_target_release(&r->target);
    free(r->strategy);
    json_decref(r->options);
    free(r->history);
    json_decref(r->history_used);
    memset(r, 0, sizeof *r);
}

int job_store_status(PGconn *c, long long id, char *status, size_t cap, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    int found =
        store_query_text(c, "SELECT status FROM jobs WHERE id = $1", 1, p, status, cap, err);
    if (found == 0)
        return kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
    return found < 0 ? -1 : 0;
}

int job_store_is_mine(PGconn *c, long long id, const runner_identity *me, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id), me->id};
    int rows = store_exec_count(c, "SELECT 1 FROM jobs WHERE id = $1 AND runner = $2", 2, p, err);
    return rows < 0 ? -1 : rows == 1;
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
    /* An ended job keeps no unfinished trial (a failed job may have some queued). */
    int rc =
        db_run(c,
               "WITH ended AS (UPDATE jobs SET status = $3, stop_reason = $4, error = $5::jsonb,"
               " finished_at = now(), updated_at = now(), runner = NULL"
               " WHERE id = $1 AND runner = $2 AND status = 'running' RETURNING id)"
               " DELETE FROM trials WHERE job_id IN (SELECT id FROM ended)"
               " AND status IN ('pending', 'running')",
               5, p, err);
    free(error_text);
    return rc;
}

int job_store_release_idle_external(PGconn *c, const runner_identity *me, long long *ids,
                                    int max_ids, kt_error *err)
{
    const char *p[] = {me->id};
    /* A clean hand-back (its start attempt given back): the job goes on when its harness asks. */
    return store_exec_ids(
        c,
        "UPDATE jobs SET runner = NULL, start_attempts = greatest(start_attempts -"
        " 1, 0), updated_at = now() WHERE runner = $1 AND status = 'running'"
        " AND device = 'external' AND COALESCE(last_ask_at, started_at) < now()"
        " - make_interval(secs => " JOB_EXTERNAL_IDLE_S_SQL ") RETURNING id",
        1, p, ids, max_ids, err);
}

int job_store_release_mine(PGconn *c, const runner_identity *me, kt_error *err)
{
    const char *p[] = {me->id};
    /* A clean hand-back: this start attempt does not count (sql/015). */
    return db_run(c,
                  "UPDATE jobs SET runner = NULL, start_attempts = greatest(start_attempts - 1, 0)"
                  " WHERE runner = $1 AND status = 'running'",
                  1, p, err);
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
    static const store_reap_sql jobs = {
        .release_stale = "UPDATE jobs SET runner = NULL WHERE status = 'running' AND runner IS NOT"
                         " NULL AND runner_heartbeat < now() - make_interval(secs => $1)"
                         " RETURNING id",
        .runners = "SELECT DISTINCT runner FROM jobs WHERE status = 'running' AND runner IS NOT"
                   " NULL AND runner <> $1",
        .release_runner = "UPDATE jobs SET runner = NULL WHERE status = 'running' AND runner = $1"
                          " RETURNING id",
    };
    return store_reap_dead(c, me, stale_s, &jobs, err);
}

int job_store_target(PGconn *c, long long id, job_target *out, kt_error *err)
{
    store_num n;
    const char *p[] = {store_ll(&n, id)};
    memset(out, 0, sizeof *out);
    PGresult *r = db_exec(
        c, "SELECT " JOB_TARGET_COLUMNS("") ", " JOB_SPACE_COLUMN("") " FROM jobs WHERE id = $1", 1,
        p, err);
    if (!r)
        return -1;
    int rc = -1;
    if (PQntuples(r) == 0) {
        kt_error_set(err, KT_ERR_NOT_FOUND, "no job with id %lld", id);
    } else if (job_target_of_row(r, 0, 0, out) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading job %lld", id);
        job_target_release(out);
    } else {
        rc = 0;
    }
    PQclear(r);
    return rc;
}

int job_store_add_device_busy(PGconn *c, long long id, double ms, kt_error *err)
{
    store_num n, b;
    if (!isfinite(ms) || !(ms > 0))
        return 0;
    const char *p[] = {store_ll(&n, id), store_double(&b, ms)};
    PGresult *r = db_exec(c,
                          "UPDATE jobs SET device_busy_ms = COALESCE(device_busy_ms, 0) + $2"
                          " WHERE id = $1",
                          2, p, err);
    PQclear(r);
    return r ? 0 : -1;
}

int job_store_set_history_used(PGconn *c, long long id, const json_t *used, int *stored,
                               kt_error *err)
{
    store_num n;
    char *text = store_json_text(used);
    const char *p[] = {store_ll(&n, id), text};
    *stored = 0;
    if (!text)
        return kt_error_set(err, KT_ERR_NO_MEMORY,
                            "out of memory recording the history of job %lld", id);
    int rows = store_exec_count(c,
                                "UPDATE jobs SET history_used = $2::jsonb, updated_at = now()"
                                " WHERE id = $1 AND history_used IS NULL RETURNING id",
                                2, p, err);
    free(text);
    *stored = rows > 0;
    return rows < 0 ? -1 : 0;
}

typedef struct create_unless_active_ctx {
    const job_spec *s;
    long long *id_out;
    int *created;
} create_unless_active_ctx;

/* job_store_create_unless_active in its transaction. */
static int create_unless_active_tx(PGconn *c, void *ctx, kt_error *err)
{
    const create_unless_active_ctx *x = ctx;
    const job_spec *s = x->s;
    const char *p[] = {s->key.kernel, s->key.device_class, s->key.kernel_hash, s->key.problem_key,
                       s->key.toolchain};
    /* Two requests for the same key serialise on this lock until commit: the second sees the
     * first's job. */
    if (db_run(c,
               "SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3"
               " || chr(31) || $4 || chr(31) || $5, 10))",
               5, p, err) < 0)
        return -1;
    int found = store_query_ll(c,
                               "SELECT id FROM jobs WHERE kernel = $1 AND device_class = $2"
                               " AND kernel_hash = $3 AND problem_key = $4 AND toolchain = $5"
                               " AND status IN ('queued', 'running') ORDER BY id LIMIT 1",
                               5, p, x->id_out, err);
    if (found != 0)
        return found < 0 ? -1 : 0;
    if (job_store_create(c, s, x->id_out, err) < 0)
        return -1;
    *x->created = 1;
    return 0;
}

int job_store_create_unless_active(PGconn *c, const job_spec *s, long long *id_out, int *created,
                                   kt_error *err)
{
    create_unless_active_ctx x = {.s = s, .id_out = id_out, .created = created};
    *created = 0;
    return store_tx(c, create_unless_active_tx, &x, err);
}

int job_store_queue_load(PGconn *c, long long *queued_jobs, long long *pending_evaluations,
                         kt_error *err)
{
    /* jobs_status_id_idx: only the unfinished jobs are read. */
    PGresult *r = db_exec(
        c,
        "SELECT count(*) FILTER (WHERE status = 'queued'), "
        "coalesce(sum(greatest(least(coalesce(budget_evaluations, " JOB_SECONDS_ONLY_EVALUATIONS_SQL
        "), space_size) - trials_done, 0)), "
        "0)::bigint FROM jobs WHERE status IN ('queued', 'running')",
        0, NULL, err);
    if (!r)
        return -1;
    *queued_jobs = store_get_ll(r, 0, 0);
    *pending_evaluations = store_get_ll(r, 0, 1);
    PQclear(r);
    return 0;
}
