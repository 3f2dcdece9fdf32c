/* The store's side of scale-out (issue 11, sql/009) against a real embedded PostgreSQL: the fleet's
 * device records (register, heartbeat, leave, the grouped read with live hosts, devices a host no
 * longer has, rows silent for a week), trial claims matched on the job's (device, class,
 * toolchain), a late result of a claim that was handed back and re-claimed recording nothing,
 * model claims leaving models of classes other live processes serve, job_store_is_mine, and the
 * job's "parallel" column. Issue 26 (sql/015): a job's start attempts (a claim counts, a clean
 * hand-back gives it back, a completed trial brings the count back to 1), and a job that used them
 * up is failed with stop_reason attempts instead of claimed. */
#include "pg_test_util.h"

#include "store/catalog_store.h"
#include "store/fault_store.h"
#include "store/job_store.h"
#include "store/model_store.h"
#include "store/trial_store.h"

static const runner_identity ME = {"hostA:1:100", "hostA", 1};

static json_t *cpu_record(const char *cls)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:s, s:{s:i}, s:{}}", "name", "cpu", "kind", "cpu",
                     "ordinal", 0, "class", cls, "toolchain", "gcc 12", "limits", "cores", 4,
                     "description");
}

static void register_host(PGconn *c, const char *host, const char *runner, json_t *records)
{
    kt_error err;
    if (catalog_store_fleet_register(c, host, runner, records, &err) < 0)
        fail_msg("register %s: %s", host, err.message);
    json_decref(records);
}

/* The element of the fleet read whose record has class cls, or NULL. */
static const json_t *group(const json_t *rows, const char *cls)
{
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *c = json_string_value(json_object_get(json_object_get(row, "record"), "class"));
        if (c && strcmp(c, cls) == 0)
            return row;
    }
    return NULL;
}

static json_t *read_fleet(PGconn *c)
{
    kt_error err;
    json_t *rows = catalog_store_fleet_json(c, 10, &err);
    if (!rows)
        fail_msg("fleet: %s", err.message);
    return rows;
}

static void fleet_records_register_beat_and_leave(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    register_host(f->c, "h1", "h1:1:1",
                  json_pack("[o, {s:s, s:s, s:s, s:s}]", cpu_record("cpu:A"), "name", "replay:x",
                            "kind", "replay", "class", "replay:x", "toolchain", "recorded"));
    register_host(f->c, "h2", "h2:1:1", json_pack("[o]", cpu_record("cpu:A")));
    register_host(f->c, "h3", "h3:1:1", json_pack("[o]", cpu_record("cpu:B")));
    json_t *rows = read_fleet(f->c);
    assert_int_equal(json_array_size(rows), 2); /* replay rows are not part of the read */
    const json_t *a = group(rows, "cpu:A");
    assert_non_null(a);
    assert_true(json_is_true(json_object_get(a, "live")));
    assert_int_equal(json_array_size(json_object_get(a, "hosts")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(a, "hosts"), 1)), "h2");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(a, "record"), "limits"), "cores")),
                     4);
    json_decref(rows);
    /* h2 stops cleanly: no longer live; h1 loses its cpu (rows it no longer serves go). */
    assert_int_equal(catalog_store_fleet_leave(f->c, "h2:1:1", &err), 0);
    register_host(f->c, "h1", "h1:2:2",
                  json_pack("[{s:s, s:s, s:s, s:s}]", "name", "replay:x", "kind", "replay", "class",
                            "replay:x", "toolchain", "recorded"));
    rows = read_fleet(f->c);
    a = group(rows, "cpu:A");
    assert_non_null(a); /* present (h2's row is kept), served by no live host */
    assert_true(json_is_false(json_object_get(a, "live")));
    assert_int_equal(json_array_size(json_object_get(a, "hosts")), 0);
    json_decref(rows);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM fleet_devices WHERE host = 'h1'"), 1);
    /* A heartbeat keeps a runner's rows live; silence past the lease makes them not live. */
    sql(f->c, "UPDATE fleet_devices SET heartbeat_at = now() - interval '1 minute'");
    assert_int_equal(catalog_store_fleet_heartbeat(f->c, "h3:1:1", &err), 0);
    rows = read_fleet(f->c);
    assert_true(json_is_true(json_object_get(group(rows, "cpu:B"), "live")));
    json_decref(rows);
    /* Rows silent for a week go when anyone registers. */
    sql(f->c,
        "UPDATE fleet_devices SET heartbeat_at = now() - interval '8 days' WHERE host = 'h2'");
    register_host(f->c, "h4", "h4:1:1", json_pack("[o]", cpu_record("cpu:B")));
    rows = read_fleet(f->c);
    assert_null(group(rows, "cpu:A"));
    assert_int_equal(json_array_size(json_object_get(group(rows, "cpu:B"), "hosts")), 2);
    json_decref(rows);
    sql(f->c, "DELETE FROM fleet_devices");
}

static long long make_job(PGconn *c, const char *cls, const char *toolchain, int parallel)
{
    json_t *problem = json_object(), *options = json_object();
    job_spec spec = {.key = {.kernel = "k",
                             .device = "cpu",
                             .device_class = cls,
                             .kernel_hash = "h",
                             .problem_key = "{}",
                             .toolchain = toolchain},
                     .problem = problem,
                     .strategy = "random",
                     .options = options,
                     .seed = 1,
                     .budget_evaluations = 10,
                     .batch_size = 2,
                     .parallel = parallel,
                     .space_size = 10,
                     .history = "none"};
    long long id = 0;
    kt_error err;
    if (job_store_create(c, &spec, &id, &err) < 0)
        fail_msg("job: %s", err.message);
    config_id ids[2] = {1, 2};
    json_t *configs[2] = {json_pack("{s:i}", "a", 1), json_pack("{s:i}", "a", 2)};
    if (trial_store_insert_batch(c, id, "cpu", 1, ids, configs, 2, &err) < 0)
        fail_msg("trials: %s", err.message);
    json_decref(configs[0]);
    json_decref(configs[1]);
    json_decref(problem);
    json_decref(options);
    return id;
}

static int claim(PGconn *c, const char *worker, const char *cls, const char *toolchain,
                 trial_claim *out)
{
    const char *names[] = {"replay:x", "cpu"}, *classes[] = {"replay:x", cls},
               *tools[] = {"recorded", toolchain};
    trial_claim_devices devs = {names, classes, tools, 2};
    kt_error err;
    int got = trial_store_claim(c, worker, &devs, out, &err);
    if (got < 0)
        fail_msg("claim: %s", err.message);
    return got;
}

static void trials_go_to_workers_of_the_jobs_class_and_late_results_are_refused(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    trial_claim t;
    long long job = make_job(f->c, "cpu:A", "gcc 12", 3);
    job_info info;
    assert_int_equal(job_store_get(f->c, job, &info, &err), 0);
    assert_int_equal(info.parallel, 3);
    job_info_release(&info);
    /* Same device name, another class or toolchain: not for them. */
    assert_int_equal(claim(f->c, "hostB:2:2/0", "cpu:B", "gcc 12", &t), 0);
    assert_int_equal(claim(f->c, "hostB:2:2/0", "cpu:A", "clang 17", &t), 0);
    assert_int_equal(claim(f->c, "hostA:1:1/0", "cpu:A", "gcc 12", &t), 1);
    assert_int_equal(t.job_id, job);
    /* Its lease ran out: the trial was handed back and claimed by another worker of the class. */
    sql(f->c, "UPDATE trials SET status = 'pending', worker = NULL WHERE status = 'running'");
    trial_claim t2;
    assert_int_equal(claim(f->c, "hostC:3:3/0", "cpu:A", "gcc 12", &t2), 1);
    assert_int_equal(t2.id, t.id);
    trial_result r;
    trial_result_init(&r);
    r.status = TRIAL_OK;
    r.time_ms = 1.0;
    r.repeats = 1;
    /* Results are recorded only while the job runs (trial_store_complete checks it). */
    sql(f->c, "UPDATE jobs SET status = 'running'");
    /* The late result of the first claim records nothing; the holder's does, once. */
    assert_int_equal(trial_store_complete(f->c, &t, "hostA:1:1/0", &r, &err), 0);
    char worker[64];
    sql_text(f->c, "SELECT worker || ' ' || status FROM trials WHERE seq = 1", worker,
             sizeof worker);
    assert_string_equal(worker, "hostC:3:3/0 running");
    assert_int_equal(trial_store_complete(f->c, &t2, "hostC:3:3/0", &r, &err), 1);
    assert_int_equal(trial_store_complete(f->c, &t2, "hostC:3:3/0", &r, &err), 0);
    char q[128];
    snprintf(q, sizeof q, "SELECT trials_done FROM jobs WHERE id = %lld", job);
    assert_int_equal(sql_ll(f->c, q), 1);
    /* Older jobs and imports have no parallel. */
    sql(f->c, "UPDATE jobs SET parallel = NULL");
    assert_int_equal(job_store_get(f->c, job, &info, &err), 0);
    assert_int_equal(info.parallel, 0);
    job_info_release(&info);
    sql(f->c, "DELETE FROM jobs");
}

static void jobs_know_their_runner(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    long long job = make_job(f->c, "cpu:A", "gcc 12", 2);
    assert_int_equal(job_store_is_mine(f->c, job, &ME, &err), 0); /* queued: nobody's */
    job_row rows[1];
    assert_int_equal(job_store_claim(f->c, &ME, 1, JOB_MAX_START_ATTEMPTS, rows, &err), 1);
    job_row_release(&rows[0]);
    assert_int_equal(job_store_is_mine(f->c, job, &ME, &err), 1);
    sql(f->c, "UPDATE jobs SET runner = 'hostB:2:2'"); /* my lease ran out, another took it */
    assert_int_equal(job_store_is_mine(f->c, job, &ME, &err), 0);
    sql(f->c, "DELETE FROM jobs");
}

/* The job's start attempts as stored. */
static long long attempts(PGconn *c, long long job)
{
    char q[128];
    snprintf(q, sizeof q, "SELECT start_attempts FROM jobs WHERE id = %lld", job);
    return sql_ll(c, q);
}

/* Claims job (the only claimable one) with a limit of 3; returns the attempt the claim counted, 0
 * when nothing was claimed. */
static int claim_job(PGconn *c, long long job)
{
    job_row rows[1];
    kt_error err;
    int n = job_store_claim(c, &ME, 1, 3, rows, &err);
    if (n < 0)
        fail_msg("claim: %s", err.message);
    if (n == 0)
        return 0;
    assert_int_equal(rows[0].id, job);
    int a = rows[0].start_attempts;
    job_row_release(&rows[0]);
    return a;
}

static void jobs_out_of_start_attempts_fail(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    long long job = make_job(f->c, "cpu:A", "gcc 12", 1);
    assert_int_equal(attempts(f->c, job), 0);
    assert_int_equal(claim_job(f->c, job), 1);
    /* A clean hand-back (shutdown, re-sync; a driver that could not be opened) gives it back. */
    assert_int_equal(job_store_release_mine(f->c, &ME, &err), 0);
    assert_int_equal(attempts(f->c, job), 0);
    assert_int_equal(claim_job(f->c, job), 1);
    assert_int_equal(fault_store_release_job(f->c, &ME, job, &err), 1);
    assert_int_equal(attempts(f->c, job), 0);
    /* Its process dies (the reaper lets go of the job): counted. */
    assert_int_equal(claim_job(f->c, job), 1);
    sql(f->c, "UPDATE jobs SET runner = NULL");
    assert_int_equal(claim_job(f->c, job), 2);
    /* A completed trial: the job is not what kills its processes; the count is this start. */
    trial_claim t;
    assert_int_equal(claim(f->c, "hostA:1:100/0", "cpu:A", "gcc 12", &t), 1);
    trial_result r;
    trial_result_init(&r);
    r.status = TRIAL_OK;
    r.time_ms = 1.0;
    r.repeats = 1;
    assert_int_equal(trial_store_complete(f->c, &t, "hostA:1:100/0", &r, &err), 1);
    assert_int_equal(attempts(f->c, job), 1);
    /* Then three deaths without a completed trial. */
    assert_int_equal(claim(f->c, "hostA:1:100/0", "cpu:A", "gcc 12", &t), 1); /* in flight */
    sql(f->c, "UPDATE jobs SET runner = NULL");
    assert_int_equal(claim_job(f->c, job), 2);
    sql(f->c, "UPDATE jobs SET runner = NULL");
    assert_int_equal(claim_job(f->c, job), 3);
    sql(f->c, "UPDATE jobs SET runner = NULL");
    assert_int_equal(claim_job(f->c, job), 0); /* used up: nobody claims it */
    long long ids[4] = {0};
    assert_int_equal(job_store_fail_exhausted(f->c, 3, ids, 4, &err), 1);
    assert_int_equal(ids[0], job);
    assert_int_equal(job_store_fail_exhausted(f->c, 3, ids, 4, &err), 0);
    job_info info;
    assert_int_equal(job_store_get(f->c, job, &info, &err), 0);
    assert_string_equal(info.status, "failed");
    assert_string_equal(info.stop_reason, "attempts");
    const char *message = json_string_value(json_object_get(info.error, "message"));
    assert_non_null(message);
    assert_non_null(strstr(message, "started 3 times since it last completed a trial"));
    assert_string_equal(json_string_value(json_object_get(info.error, "code")), "internal");
    assert_true(json_string_length(json_object_get(info.error, "hint")) > 0);
    job_info_release(&info);
    char q[128];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM trials WHERE job_id = %lld AND status IN ('pending', 'running')",
             job);
    assert_int_equal(sql_ll(f->c, q), 0); /* its unfinished trials went with it */
    sql(f->c, "DELETE FROM jobs");
}

static void models_of_classes_others_serve_are_left_to_them(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    model_key k = {"predictor", "nearest", "k", "cpu:A", "h", ""};
    long long id = 0;
    assert_int_equal(model_store_create(f->c, &k, NULL, "requested", &id, &err), 0);
    register_host(f->c, "h1", "h1:1:1", json_pack("[o]", cpu_record("cpu:A")));
    assert_int_equal(model_store_claim_served(f->c, &ME, 10, "[\"cpu:B\"]", &m, &err), 0);
    assert_int_equal(model_store_claim_served(f->c, &ME, 10, "[\"cpu:A\"]", &m, &err), 1);
    assert_int_equal(m.id, id);
    model_claim_release(&m);
    /* Nobody serves the class any more: any trainer takes it (to fail it as target_unavailable). */
    sql(f->c, "UPDATE models SET runner = NULL");
    sql(f->c, "UPDATE fleet_devices SET heartbeat_at = now() - interval '1 hour'");
    assert_int_equal(model_store_claim_served(f->c, &ME, 10, "[\"cpu:B\"]", &m, &err), 1);
    model_claim_release(&m);
    sql(f->c, "DELETE FROM models");
    sql(f->c, "DELETE FROM fleet_devices");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fleet_records_register_beat_and_leave),
        cmocka_unit_test(trials_go_to_workers_of_the_jobs_class_and_late_results_are_refused),
        cmocka_unit_test(jobs_know_their_runner),
        cmocka_unit_test(jobs_out_of_start_attempts_fail),
        cmocka_unit_test(models_of_classes_others_serve_are_left_to_them),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
