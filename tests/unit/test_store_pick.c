/* store/pick_store and the final pick's side of store/trial_store against a real embedded
 * PostgreSQL (issue 12, sql/012): a job that makes a final pick offers the best table nothing from
 * its search (its own best still follows it); its re-measurements are trials numbered after the
 * search, inserted again harmlessly, read back in seq order with their rounds, charged to the
 * clock and not counted in trials_done nor offered to any best; pick_store_record makes the winning
 * re-measurement the job's best outright and offers it to the best table, or without a winner
 * offers the search's best; it writes nothing for a job no longer driven by the caller, and refuses
 * a winner that is not an ok re-measurement of the job. */
#include "pg_test_util.h"

#include "store/pick_store.h"
#include "store/trial_store.h"

static const runner_identity ME = {"hostA:1:100", "hostA", 1};
#define WORKER "hostA:1:100/0"

/* A running job driven by ME that re-measures count configurations rounds times, with n pending
 * search trials (configs 1..n, seqs 1..n). */
static long long picking_job(PGconn *c, int n, int count, int rounds)
{
    char text[900];
    snprintf(text, sizeof text,
             "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
             " toolchain, strategy, seed, budget_evaluations, batch_size, space_size, status,"
             " runner, runner_host, runner_pid, runner_heartbeat, started_at, final_remeasure,"
             " final_rounds) VALUES ('k', 'dev', 'class', 'h', '{\"n\": 1}', '{\"n\":1}', 'tc',"
             " 'random', 1, %d, 4, 100, 'running', 'hostA:1:100', 'hostA', 1, now(), now(), %d,"
             " %d) RETURNING id",
             n, count, rounds);
    long long job = sql_ll(c, text);
    pg_add_trials(c, job, n);
    return job;
}

/* Claims the oldest pending trial and completes it ok in ms (1 s charged); returns its id. */
static long long measure(PGconn *c, double ms)
{
    trial_claim t = pg_claim_one(c, WORKER);
    trial_result r;
    trial_result_init(&r);
    r.status = TRIAL_OK;
    r.time_ms = ms;
    r.repeats = 5;
    r.compile_ms = 100;
    r.measure_ms = 900;
    kt_error err;
    kt_error_clear(&err);
    if (trial_store_complete(c, &t, WORKER, &r, &err) != 1)
        fail_msg("complete: %s", err.message);
    return t.id;
}

static void remeasurements_are_trials_outside_the_budget(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = picking_job(f->c, 2, 2, 2);
    long long a = measure(f->c, 2.0);
    measure(f->c, 3.0);
    /* The job's best follows its search; the best table waits for the pick. */
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 2);
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), a);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM best"), 0);

    pick_trial *rows = NULL;
    int n = 0;
    assert_int_equal(pick_store_load(f->c, job, 0, &rows, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].round, 0);
    assert_int_equal(rows[1].cid, 2);
    assert_true(rows[1].time_ms == 3.0);
    free(rows);

    /* Interleaved A B, B A; the same configurations as the search (a second row per config). */
    config_id cids[] = {1, 2, 2, 1};
    int rounds[] = {1, 1, 2, 2};
    json_t *configs[4];
    for (int i = 0; i < 4; i++)
        configs[i] = json_pack("{s:I}", "a", (json_int_t)cids[i]);
    assert_int_equal(pick_store_insert(f->c, job, "dev", 3, cids, rounds, configs, 4, &err), 0);
    assert_int_equal(pick_store_insert(f->c, job, "dev", 3, cids, rounds, configs, 4, &err), 0);
    for (int i = 0; i < 4; i++)
        json_decref(configs[i]);
    assert_int_equal(pick_store_load(f->c, job, 1, &rows, &n, &err), 0);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rows[i].seq, 3 + i);
        assert_int_equal(rows[i].cid, cids[i]);
        assert_int_equal(rows[i].round, rounds[i]);
        assert_int_equal(rows[i].status, TRIAL_PENDING);
    }
    free(rows);
    /* The driver's replay does not see them. */
    trial_row *search = NULL;
    assert_int_equal(trial_store_load(f->c, job, 0, &search, &n, &err), 0);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++)
        trial_row_release(&search[i]);
    free(search);

    /* Measured: config 2 re-measures faster than config 1 (2.5, 2.4 against 2.6, 2.7). */
    measure(f->c, 2.6);
    long long b1 = measure(f->c, 2.5);
    measure(f->c, 2.4);
    measure(f->c, 2.7);
    assert_int_equal(pg_job_ll(f->c, job, "trials_done"), 2);
    assert_int_equal(pg_job_ll(f->c, job, "round(clock_seconds)"), 6);
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), a);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM best"), 0);

    /* The store records whichever re-measurement the driver names (worker/final_pick.h decides). */
    json_t *pick = json_pack("{s:i}", "winner", 1);
    assert_int_equal(pick_store_record(f->c, &ME, job, b1, pick, &err), 1);
    json_decref(pick);
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), b1);
    assert_int_equal(pg_job_ll(f->c, job, "round(best_time_ms * 10)"), 25);
    assert_int_equal(pg_job_ll(f->c, job, "(best_config->>'a')::int"), 2);
    assert_int_equal(pg_job_ll(f->c, job, "(final_pick->>'winner')::int"), 1);
    char text[200];
    snprintf(text, sizeof text, "SELECT count(*) FROM best WHERE trial_id = %lld AND job_id = %lld",
             b1, job);
    assert_int_equal(sql_ll(f->c, text), 1);
}

static void without_a_winner_the_search_best_is_offered(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = picking_job(f->c, 1, 1, 1);
    long long a = measure(f->c, 2.0);
    json_t *pick = json_pack("{s:n}", "winner");
    assert_int_equal(pick_store_record(f->c, &ME, job, 0, pick, &err), 1);
    json_decref(pick);
    assert_int_equal(pg_job_ll(f->c, job, "best_trial_id"), a);
    assert_int_equal(pg_job_ll(f->c, job, "(final_pick IS NOT NULL)::int"), 1);
    char text[200];
    snprintf(text, sizeof text, "SELECT count(*) FROM best WHERE trial_id = %lld", a);
    assert_int_equal(sql_ll(f->c, text), 1);
}

static void only_the_driver_records_and_only_a_remeasurement_wins(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    pg_empty_jobs(f->c);
    long long job = picking_job(f->c, 1, 1, 1);
    long long a = measure(f->c, 2.0);
    json_t *pick = json_pack("{s:i}", "winner", 0);
    /* Another runner's driver (its lease ran out): nothing written. */
    const runner_identity them = {"hostB:2:200", "hostB", 2};
    assert_int_equal(pick_store_record(f->c, &them, job, 0, pick, &err), 0);
    assert_int_equal(pg_job_ll(f->c, job, "(final_pick IS NULL)::int"), 1);
    /* A search trial is no re-measurement: refused, nothing written. */
    assert_int_equal(pick_store_record(f->c, &ME, job, a, pick, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    assert_int_equal(pg_job_ll(f->c, job, "(final_pick IS NULL)::int"), 1);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM best"), 0);
    json_decref(pick);
    /* The connection is usable: no transaction was left open. */
    assert_int_equal(sql_ll(f->c, "SELECT 1"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(remeasurements_are_trials_outside_the_budget),
        cmocka_unit_test(without_a_winner_the_search_best_is_offered),
        cmocka_unit_test(only_the_driver_records_and_only_a_remeasurement_wins),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
