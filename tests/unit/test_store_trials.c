/* store/trial_store and the job end of store/job_store against a real embedded PostgreSQL (one
 * cluster for the group, migrations applied), issue 11's lifecycle rules: a trial completed after
 * its job was cancelled or ended records nothing (no timeout trial after a cancel: counters, clock
 * and best unchanged); a cancel deletes the job's pending and running trials; a long measurement's
 * check (trial_store_claim_live) turns false when the job stops or the claim is lost; a given-up
 * measurement (trial_store_release) is deleted when its job no longer runs and handed back when it
 * does; an ended job keeps no unfinished trial (job_store_finish). And the statement helpers the
 * stores share (store/store_exec.h, issue 28): counts, ids, single values, a transaction committed
 * or rolled back, a cancel's refusals. */
#include "pg_test_util.h"

#include "store/job_store.h"
#include "store/store_exec.h"
#include "store/store_util.h"
#include "store/trial_store.h"

static const runner_identity ME = {"hostA:1:100", "hostA", 1};
#define WORKER "hostA:1:100/0"

/* A running job driven by ME with n pending trials (configs 1..n, seqs 1..n). */
static long long running_job(PGconn *c, int n)
{
    long long job = sql_ll(
        c, "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
           " toolchain, strategy, seed, budget_evaluations, batch_size, space_size, status, runner,"
           " runner_host, runner_pid, runner_heartbeat, started_at) VALUES ('k', 'dev', 'class',"
           " 'h', '{\"n\": 1}', '{\"n\":1}', 'tc', 'random', 1, 10, 4, 100, 'running',"
           " 'hostA:1:100', 'hostA', 1, now(), now()) RETURNING id");
    pg_add_trials(c, job, n);
    return job;
}

static long long trials_where(PGconn *c, long long job, const char *cond)
{
    char text[256];
    snprintf(text, sizeof text, "SELECT count(*) FROM trials WHERE job_id = %lld AND %s", job,
             cond);
    return sql_ll(c, text);
}

static trial_result result(trial_status s, double ms)
{
    trial_result r;
    trial_result_init(&r);
    r.status = s;
    r.time_ms = ms;
    r.repeats = 5;
    r.compile_ms = 100;
    r.measure_ms = 900;
    return r;
}

static void complete_after_cancel_records_nothing(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 3);
    trial_claim a = pg_claim_one(f->c, WORKER), b = pg_claim_one(f->c, WORKER);
    trial_result ok = result(TRIAL_OK, 2.0), timeout = result(TRIAL_TIMEOUT, 0);
    assert_int_equal(trial_store_complete(f->c, &a, WORKER, &ok, &err), 1);
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 1);
    assert_int_equal(trial_store_claim_live(f->c, &b, WORKER, &err), 1);

    /* The cancel deletes the pending and the running trial; the finished one stays. */
    assert_int_equal(job_store_cancel(f->c, job, &err), 0);
    assert_int_equal(trials_where(f->c, job, "status IN ('pending', 'running')"), 0);
    assert_int_equal(trials_where(f->c, job, "true"), 1);
    assert_int_equal(trial_store_claim_live(f->c, &b, WORKER, &err), 0);

    /* The measurement of b ends as a timeout after the cancel: nothing is recorded. */
    assert_int_equal(trial_store_complete(f->c, &b, WORKER, &timeout, &err), 0);
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 1);
    assert_int_equal(pg_job_ll(f->c, job, "round(clock_seconds * 1000)"), 1000);
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), a.id);
    assert_int_equal(trials_where(f->c, job, "status = 'timeout'"), 0);
    assert_int_equal(trial_store_release(f->c, &b, WORKER, &err), 0);
    /* The connection is usable: no transaction was left open. */
    assert_int_equal(sql_ll(f->c, "SELECT 1"), 1);
}

/* A trial still running (its row there) when its job ended: complete deletes it, records nothing.
 */
static void complete_after_the_job_ended_records_nothing(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 2);
    trial_claim a = pg_claim_one(f->c, WORKER);
    char text[256];
    snprintf(text, sizeof text, "UPDATE jobs SET status = 'failed' WHERE id = %lld", job);
    sql(f->c, text);
    assert_int_equal(trial_store_claim_live(f->c, &a, WORKER, &err), 0);
    trial_result ok = result(TRIAL_OK, 1.0);
    assert_int_equal(trial_store_complete(f->c, &a, WORKER, &ok, &err), 0);
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 0);
    assert_int_equal(pg_job_ll(f->c, job, "(best_trial_id IS NULL)::int"), 1);
    assert_int_equal(trials_where(f->c, job, "status = 'running'"), 0);
    snprintf(text, sizeof text, "SELECT count(*) FROM trials WHERE id = %lld", a.id);
    assert_int_equal(sql_ll(f->c, text), 0);
    assert_int_equal(sql_ll(f->c, "SELECT 1"), 1);
}

static void release_hands_back_or_deletes(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 2);
    trial_claim a = pg_claim_one(f->c, WORKER);
    /* The job still runs: the trial goes back to pending and can be claimed again. */
    assert_int_equal(trial_store_release(f->c, &a, WORKER, &err), 1);
    assert_int_equal(trials_where(f->c, job, "status = 'pending'"), 2);
    assert_int_equal(trial_store_claim_live(f->c, &a, WORKER, &err), 0);
    trial_claim again = pg_claim_one(f->c, WORKER);
    assert_int_equal(again.id, a.id);
    /* Another worker's release of it changes nothing. */
    assert_int_equal(trial_store_release(f->c, &again, "hostB:2:200/0", &err), 0);
    assert_int_equal(trials_where(f->c, job, "status = 'running'"), 1);
    /* The job ended: the trial is deleted. */
    char text[256];
    snprintf(text, sizeof text, "UPDATE jobs SET status = 'cancelled' WHERE id = %lld", job);
    sql(f->c, text);
    assert_int_equal(trial_store_release(f->c, &again, WORKER, &err), 1);
    assert_int_equal(trials_where(f->c, job, "true"), 1);
    assert_int_equal(trials_where(f->c, job, "status = 'running'"), 0);
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 0);
}

static void finish_deletes_unfinished_trials(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 3);
    trial_claim a = pg_claim_one(f->c, WORKER);
    trial_result bad = result(TRIAL_RUNTIME_ERROR, 0);
    assert_int_equal(trial_store_complete(f->c, &a, WORKER, &bad, &err), 1);
    (void)pg_claim_one(f->c, WORKER);
    kt_error why;
    kt_error_set(&why, KT_ERR_INTERNAL, "resume diverged");
    assert_int_equal(job_store_finish(f->c, &ME, job, "failed", "resume_diverged", &why, &err), 0);
    char status[32];
    assert_int_equal(job_store_status(f->c, job, status, sizeof status, &err), 0);
    assert_string_equal(status, "failed");
    assert_int_equal(trials_where(f->c, job, "status IN ('pending', 'running')"), 0);
    assert_int_equal(trials_where(f->c, job, "status = 'runtime_error'"), 1);
    /* A finish by another runner changes nothing. */
    long long other = running_job(f->c, 1);
    const runner_identity them = {"hostB:2:200", "hostB", 2};
    assert_int_equal(
        job_store_finish(f->c, &them, other, "succeeded", "budget_evaluations", NULL, &err), 0);
    assert_int_equal(trials_where(f->c, other, "status = 'pending'"), 1);
}

/* A metric objective (sql/022): the job's best is the trial with the best value of
 * extras.metrics.<metric> (max: highest; ties keep the first), an ok trial without it (or with a
 * value <= 0) is no candidate even when fastest, best_time_ms is the best's time, and nothing is
 * offered to the best table. */
static void metric_objective_best(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 5);
    char q[160];
    snprintf(q, sizeof q,
             "UPDATE jobs SET objective_metric = 'gbps', objective_goal = 'max' WHERE id = %lld",
             job);
    sql(f->c, q);
    static const struct {
        double ms;
        const char *metrics; /* NULL: none told */
    } told[] = {{3.0, "{\"gbps\": 10}"},
                {0.5, NULL},
                {2.0, "{\"gbps\": 40, \"other\": 1}"},
                {0.1, "{\"gbps\": -5}"},
                {4.0, "{\"gbps\": 40}"}};
    long long ids[5];
    for (int i = 0; i < 5; i++) {
        trial_claim t = pg_claim_one(f->c, WORKER);
        ids[i] = t.id;
        trial_result r = result(TRIAL_OK, told[i].ms);
        if (told[i].metrics)
            r.extras = json_pack("{s:o}", "metrics", json_loads(told[i].metrics, 0, NULL));
        assert_int_equal(trial_store_complete(f->c, &t, WORKER, &r, &err), 1);
        trial_result_release(&r);
        if (i == 1) /* the fastest so far, without the metric: the best stays */
            assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), ids[0]);
    }
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), ids[2]); /* 40, first of the tie */
    assert_int_equal(pg_job_ll(f->c, job, "best_value"), 40);
    assert_int_equal(pg_job_ll(f->c, job, "best_time_ms"), 2);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM best WHERE kernel = 'k'"), 0);
    /* goal min on the same trials: the lowest positive value */
    long long job2 = running_job(f->c, 3);
    snprintf(q, sizeof q,
             "UPDATE jobs SET objective_metric = 'gbps', objective_goal = 'min' WHERE id = %lld",
             job2);
    sql(f->c, q);
    const double vals[] = {30, 20, 25};
    long long mid = 0;
    for (int i = 0; i < 3; i++) {
        trial_claim t = pg_claim_one(f->c, WORKER);
        if (i == 1)
            mid = t.id;
        trial_result r = result(TRIAL_OK, 1.0 + i);
        r.extras = json_pack("{s:{s:f}}", "metrics", "gbps", vals[i]);
        assert_int_equal(trial_store_complete(f->c, &t, WORKER, &r, &err), 1);
        trial_result_release(&r);
    }
    assert_int_equal(pg_job_ll(f->c, job2, "best_trial_id"), mid);
    assert_int_equal(pg_job_ll(f->c, job2, "best_value"), 20);
    /* A time job of the same key writes the best table as before. */
    long long job3 = running_job(f->c, 1);
    trial_claim t = pg_claim_one(f->c, WORKER);
    trial_result r = result(TRIAL_OK, 7.0);
    assert_int_equal(trial_store_complete(f->c, &t, WORKER, &r, &err), 1);
    assert_int_equal(pg_job_ll(f->c, job3, "best_trial_id"), t.id);
    assert_int_equal(pg_job_ll(f->c, job3, "(best_value IS NULL)::int"), 1);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM best WHERE kernel = 'k'"), 1);
}

/* A store_tx body: inserts a job row, then fails when ctx says so. */
static int insert_then(PGconn *c, void *ctx, kt_error *err)
{
    const int *fail = ctx;
    if (db_run(c,
               "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
               " toolchain, strategy, seed, budget_evaluations, batch_size, space_size) VALUES"
               " ('tx', 'dev', 'class', 'h', '{}', '{}', 'tc', 'random', 1, 1, 1, 1)",
               0, NULL, err) < 0)
        return -1;
    return *fail ? kt_error_set(err, KT_ERR_CONFLICT, "body failed") : 7;
}

static void exec_helpers(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = running_job(f->c, 3);
    store_num j;
    const char *p[] = {store_ll(&j, job)};
    /* Counts and ids: every row returned, at most max copied. */
    long long ids[2] = {0, 0};
    assert_int_equal(store_exec_ids(f->c, "SELECT seq FROM trials WHERE job_id = $1 ORDER BY seq",
                                    1, p, ids, 2, &err),
                     3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(store_exec_count(f->c,
                                      "UPDATE trials SET status = 'running' WHERE job_id = $1"
                                      " AND seq > 1 RETURNING id",
                                      1, p, &err),
                     2);
    assert_int_equal(
        store_exec_count(f->c, "SELECT 1 FROM trials WHERE job_id = $1::bigint + 1000", 1, p, &err),
        0);
    /* A single value: 1 with it, 0 without a row (the output untouched). */
    long long v = -1;
    assert_int_equal(
        store_query_ll(f->c, "SELECT count(*) FROM trials WHERE job_id = $1", 1, p, &v, &err), 1);
    assert_int_equal(v, 3);
    assert_int_equal(
        store_query_ll(f->c, "SELECT id FROM jobs WHERE id = $1::bigint + 1000", 1, p, &v, &err),
        0);
    assert_int_equal(v, 3);
    /* A failed statement: -1 and the database's error. */
    assert_int_equal(store_exec_count(f->c, "SELECT no_such_column FROM jobs", 0, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    kt_error_clear(&err);
    assert_int_equal(store_query_ll(f->c, "SELECT 1/0", 0, NULL, &v, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    kt_error_clear(&err);
    /* A transaction: committed with the body's value, or rolled back with its error. */
    int fail = 0;
    assert_int_equal(store_tx(f->c, insert_then, &fail, &err), 7);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM jobs WHERE kernel = 'tx'"), 1);
    fail = 1;
    assert_int_equal(store_tx(f->c, insert_then, &fail, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM jobs WHERE kernel = 'tx'"), 1);
    assert_int_equal(PQtransactionStatus(f->c), PQTRANS_IDLE);
    kt_error_clear(&err);
    /* job_store_cancel (a store_tx): done once, then refused with its own messages. */
    assert_int_equal(job_store_cancel(f->c, job, &err), 0);
    assert_int_equal(trials_where(f->c, job, "true"), 0);
    assert_int_equal(job_store_cancel(f->c, job, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    char want[128];
    snprintf(want, sizeof want,
             "job %lld already cancelled; only queued or running jobs can be cancelled", job);
    assert_string_equal(err.message, want);
    kt_error_clear(&err);
    assert_int_equal(job_store_cancel(f->c, job + 1000, &err), -1);
    assert_int_equal(err.code, KT_ERR_NOT_FOUND);
    snprintf(want, sizeof want, "no job with id %lld", job + 1000);
    assert_string_equal(err.message, want);
    assert_int_equal(PQtransactionStatus(f->c), PQTRANS_IDLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(complete_after_cancel_records_nothing),
        cmocka_unit_test(complete_after_the_job_ended_records_nothing),
        cmocka_unit_test(release_hands_back_or_deletes),
        cmocka_unit_test(finish_deletes_unfinished_trials),
        cmocka_unit_test(metric_objective_best),
        cmocka_unit_test(exec_helpers),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
