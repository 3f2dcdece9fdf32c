/* store/model_store against a real embedded PostgreSQL (one cluster for the group, migrations
 * applied): versions and the 409 of a second training, claims with attempts and their limit, the
 * reaper's rules (stale heartbeat, dead pid on this host), finish superseding older models in one
 * transaction, the bytes round trip, the bounded training-data window, the retrain check (never for
 * surrogates), and the surrogate a job records and keeps (model_store_job_model). */
#include "pg_test_util.h"

#include "store/model_store.h"

static long long create(PGconn *c, const char *kernel, const char *hash, const char *algorithm)
{
    model_key k = {"predictor", algorithm, kernel, "class-a", hash, ""};
    kt_error err;
    long long id = 0;
    if (model_store_create(c, &k, NULL, "requested", &id, &err) < 0)
        fail_msg("create: %s", err.message);
    return id;
}

static const runner_identity ME = {"hostA:1:100", "hostA", 1};
static const runner_identity OTHER = {"hostB:2:200", "hostB", 2};

static void create_numbers_versions_and_refuses_a_second_training(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    long long id = create(f->c, "k1", "h1", "nearest"), again = 0;
    model_key k = {"predictor", "seq2seq", "k1", "class-a", "h1", ""};
    assert_int_equal(model_store_create(f->c, &k, NULL, "requested", &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    char idtext[32];
    snprintf(idtext, sizeof idtext, "model %lld ", id);
    assert_non_null(strstr(err.message, idtext));
    /* Another kernel hash is another key: version 1 again. */
    long long other = create(f->c, "k1", "h2", "nearest");
    json_t *m = model_store_get_json(f->c, other, &err);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "version")), 1);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "training");
    assert_true(json_is_null(json_object_get(m, "size_bytes")));
    assert_null(json_object_get(m, "model"));
    json_decref(m);
    /* Once the first ended, the next of its key is version 2. */
    sql(f->c, "UPDATE models SET status = 'failed' WHERE kernel = 'k1'");
    long long v2 = create(f->c, "k1", "h1", "nearest");
    m = model_store_get_json(f->c, v2, &err);
    assert_int_equal(json_integer_value(json_object_get(m, "version")), 2);
    json_decref(m);
    assert_null(model_store_get_json(f->c, 987654321, &err));
    assert_int_equal(err.code, KT_ERR_NOT_FOUND);
    json_t *list = model_store_list_json(f->c, "k1", NULL, "training", 10, &err);
    assert_int_equal(json_array_size(json_object_get(list, "models")), 1);
    json_decref(list);
    assert_null(model_store_list_json(f->c, NULL, NULL, NULL, 0, &err));
    assert_int_equal(err.code, KT_ERR_OUT_OF_RANGE);
    sql(f->c, "DELETE FROM models");
}

static void claims_count_attempts_and_give_up_after_the_limit(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    long long id = create(f->c, "k2", "h", "common");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    assert_int_equal(m.id, id);
    assert_int_equal(m.attempts, 1);
    assert_string_equal(m.algorithm, "common");
    assert_true(json_is_object(m.hyper));
    model_claim_release(&m);
    /* Live runner: nobody else claims it. */
    assert_int_equal(model_store_claim(f->c, &OTHER, 30, &m, &err), 0);
    for (int attempt = 2; attempt <= MODEL_MAX_ATTEMPTS; attempt++) {
        sql(f->c, "UPDATE models SET runner_heartbeat = now() - interval '1 hour'");
        assert_int_equal(model_store_claim(f->c, &OTHER, 30, &m, &err), 1);
        assert_int_equal(m.attempts, attempt);
        model_claim_release(&m);
    }
    sql(f->c, "UPDATE models SET runner_heartbeat = now() - interval '1 hour'");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 0);
    char text[256];
    sql_text(f->c, "SELECT status || ' ' || (error ->> 'reason') FROM models", text, sizeof text);
    assert_string_equal(text, "failed attempts");
    sql(f->c, "DELETE FROM models");
}

static void dead_runners_on_this_host_are_released_at_once(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    char me_id[64], dead_id[64];
    snprintf(me_id, sizeof me_id, "hostA:%d:2", (int)getpid());
    snprintf(dead_id, sizeof dead_id, "hostA:%d:1", (int)getpid()); /* my pid, old incarnation */
    runner_identity me = {me_id, "hostA", (int)getpid()};
    runner_identity dead = {dead_id, "hostA", (int)getpid()};
    create(f->c, "k3", "h", "common");
    create(f->c, "k3b", "h", "common");
    assert_int_equal(model_store_claim(f->c, &dead, 30, &m, &err), 1);
    model_claim_release(&m);
    assert_int_equal(model_store_claim(f->c, &OTHER, 30, &m, &err), 1); /* fresh, other host */
    model_claim_release(&m);
    assert_int_equal(model_store_release_dead(f->c, &me, 30, &err), 1);
    assert_int_equal(model_store_claim(f->c, &me, 30, &m, &err), 1);
    assert_string_equal(m.kernel, "k3");
    assert_int_equal(m.attempts, 2);
    model_claim_release(&m);
    /* A clean stop lets go without counting the attempt. */
    assert_int_equal(model_store_release_mine(f->c, &me, &err), 0);
    assert_int_equal(sql_ll(f->c, "SELECT attempts FROM models WHERE kernel = 'k3'"), 1);
    assert_int_equal(model_store_heartbeat(f->c, &OTHER, &err), 0);
    sql(f->c, "DELETE FROM models");
}

static void finish_supersedes_older_models_and_keeps_the_bytes(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    const unsigned char bytes[] = {'k', 0, 0xff, '\\', 'x'};
    json_t *metrics = json_pack("{s:i}", "problems", 3);
    json_t *training = json_pack("{s:i}", "max_trial_id", 0);
    model_ready r;
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k4", "class-a", "h", "", 1, &r, &err), 0);
    long long v1 = create(f->c, "k4", "h", "nearest");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    /* Not mine: refused, nothing written. */
    assert_int_equal(
        model_store_finish(f->c, &OTHER, v1, bytes, sizeof bytes, 1, metrics, training, NULL, &err),
        -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_int_equal(
        model_store_finish(f->c, &ME, v1, bytes, sizeof bytes, 1, metrics, training, NULL, &err),
        0);
    model_claim_release(&m);
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k4", "class-a", "h", "", 1, &r, &err), 1);
    assert_int_equal(r.id, v1);
    assert_int_equal(r.version, 1);
    assert_string_equal(r.algorithm, "nearest");
    assert_int_equal(r.len, sizeof bytes);
    assert_memory_equal(r.bytes, bytes, sizeof bytes);
    model_ready_release(&r);
    json_t *j = model_store_get_json(f->c, v1, &err);
    assert_int_equal(json_integer_value(json_object_get(j, "size_bytes")), sizeof bytes);
    assert_int_equal(json_integer_value(json_object_get(j, "format_version")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ready");
    json_decref(j);

    long long v2 = create(f->c, "k4", "h", "common");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    assert_int_equal(model_store_finish(f->c, &ME, v2, bytes, 2, 1, metrics, training, NULL, &err),
                     0);
    model_claim_release(&m);
    char text[64];
    sql_text(f->c,
             "SELECT string_agg(status, ',' ORDER BY version) FROM models WHERE kernel = 'k4'",
             text, sizeof text);
    assert_string_equal(text, "superseded,ready");
    /* Without bytes: id and version only. */
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k4", "class-a", "h", "", 0, &r, &err), 1);
    assert_int_equal(r.id, v2);
    assert_null(r.bytes);
    /* Another kernel hash never finds it. */
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k4", "class-a", "other", "", 0, &r, &err), 0);
    /* A failed model keeps its error. */
    long long v3 = create(f->c, "k4", "h", "common");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    kt_error why;
    kt_error_set(&why, KT_ERR_CONFLICT, "kernel k4 changed");
    assert_int_equal(model_store_fail(f->c, &ME, v3, &why, "kernel_changed", NULL, &err), 0);
    model_claim_release(&m);
    j = model_store_get_json(f->c, v3, &err);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "reason")),
                        "kernel_changed");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "conflict");
    json_decref(j);
    json_decref(metrics);
    json_decref(training);
    sql(f->c, "DELETE FROM models");
}

/* A job of kernel k5 (hash h) for problem {"n": n}, and trials (config {"a": a}, time, status). */
static long long add_job(PGconn *c, const char *hash, int n)
{
    char text[512];
    snprintf(text, sizeof text,
             "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
             " strategy, seed, budget_evaluations, batch_size, space_size, status) VALUES ('k5',"
             " 'dev', 'class-a', '%s', '{\"n\": %d}', '{\"n\":%d}', 'random', 1, 100, 1, 100,"
             " 'succeeded') RETURNING id",
             hash, n, n);
    return sql_ll(c, text);
}

static long long add_trial(PGconn *c, long long job, int seq, int a, double ms, const char *status)
{
    char text[512];
    snprintf(text, sizeof text,
             "INSERT INTO trials (job_id, seq, config_id, config, device, status, time_ms,"
             " finished_at) VALUES (%lld, %d, %d, '{\"a\": %d}', 'dev', '%s', %g, now())"
             " RETURNING id",
             job, seq, seq, a, status, ms);
    return sql_ll(c, text);
}

static void training_data_is_the_best_few_per_problem(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_training_data d;
    long long j1 = add_job(f->c, "h", 1), j1b = add_job(f->c, "h", 1);
    long long j2 = add_job(f->c, "h", 2), j3 = add_job(f->c, "h", 3);
    long long other = add_job(f->c, "old", 1);
    add_trial(f->c, j1, 1, 1, 5.0, "ok");
    add_trial(f->c, j1, 2, 2, 3.0, "ok");
    add_trial(f->c, j1, 3, 3, 1.0, "invalid");
    add_trial(f->c, j1, 4, 4, 4.0, "ok");
    add_trial(f->c, j1b, 1, 2, 2.0, "ok"); /* the same config again, faster: kept once */
    add_trial(f->c, j2, 1, 1, 9.0, "ok");
    add_trial(f->c, j3, 1, 7, 7.0, "ok");
    long long last = add_trial(f->c, j3, 2, 8, 6.0, "ok");
    add_trial(f->c, other, 1, 9, 0.5, "ok");
    assert_int_equal(model_store_training_data(f->c, "k5", "class-a", "h", "", 2, 100, &d, &err),
                     0);
    assert_int_equal(d.n, 5);
    /* Problem 1: config 2 at 2.0 (the faster of its two), then config 4; never the invalid one. */
    assert_int_equal(json_integer_value(json_object_get(d.rows[0].problem, "n")), 1);
    assert_int_equal(json_integer_value(json_object_get(d.rows[0].config, "a")), 2);
    assert_true(d.rows[0].time_ms == 2.0);
    assert_int_equal(json_integer_value(json_object_get(d.rows[1].config, "a")), 4);
    assert_int_equal(json_integer_value(json_object_get(d.rows[2].problem, "n")), 2);
    assert_int_equal(json_integer_value(json_object_get(d.rows[3].config, "a")), 8);
    assert_int_equal(json_integer_value(json_object_get(d.summary, "problems")), 3);
    assert_int_equal(json_integer_value(json_object_get(d.summary, "trials")), 5);
    assert_int_equal(json_integer_value(json_object_get(d.summary, "max_trial_id")), last);
    assert_non_null(json_string_value(json_object_get(d.summary, "from")));
    model_training_data_release(&d);
    /* At most 2 problems: the two measured last. */
    assert_int_equal(model_store_training_data(f->c, "k5", "class-a", "h", "", 1, 2, &d, &err), 0);
    assert_int_equal(d.n, 2);
    assert_int_equal(json_integer_value(json_object_get(d.rows[0].problem, "n")), 2);
    assert_int_equal(json_integer_value(json_object_get(d.rows[1].problem, "n")), 3);
    model_training_data_release(&d);
    assert_int_equal(model_store_training_data(f->c, "k5", "class-a", "h", "", 0, 2, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_OUT_OF_RANGE);
    assert_int_equal(model_store_training_data(f->c, "k5", "class-a", "none", "", 8, 2, &d, &err),
                     0);
    assert_int_equal(d.n, 0);
    model_training_data_release(&d);
}

static void retrain_is_queued_once_enough_new_trials_arrived(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    sql(f->c, "DELETE FROM models");
    long long job = add_job(f->c, "h", 4);
    long long max_id = sql_ll(f->c, "SELECT max(id) FROM trials");
    long long v1 = create(f->c, "k5", "h", "common");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    model_claim_release(&m);
    json_t *training = json_pack("{s:I}", "max_trial_id", (json_int_t)max_id);
    json_t *hyper = json_pack("{s:i}", "top", 4);
    assert_int_equal(model_store_finish(f->c, &ME, v1, (const unsigned char *)"x", 1, 1, NULL,
                                        training, hyper, &err),
                     0);
    assert_int_equal(model_store_new_trials(f->c, "predictor", "k5", "class-a", "h", "", &err), 0);
    for (int i = 0; i < 3; i++)
        add_trial(f->c, job, i + 1, i, 1.0 + i, "ok");
    add_trial(f->c, job, 4, 9, 1.0, "timeout");
    assert_int_equal(model_store_new_trials(f->c, "predictor", "k5", "class-a", "h", "", &err), 3);
    assert_int_equal(model_store_queue_retrains(f->c, 4, &err), 0);
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 1);
    char text[128];
    sql_text(f->c,
             "SELECT algorithm || ' ' || version || ' ' || reason || ' ' || (hyper ->> 'top')"
             " FROM models WHERE status = 'training'",
             text, sizeof text);
    assert_string_equal(text, "common 2 retrain 4");
    /* One is training: not again. */
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 0);
    /* It failed: no retrain loop until a model is asked for. */
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    kt_error why;
    kt_error_set(&why, KT_ERR_BAD_REQUEST, "no");
    assert_int_equal(model_store_fail(f->c, &ME, m.id, &why, "train_failed", NULL, &err), 0);
    model_claim_release(&m);
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 0);
    /* A requested model that failed does not stop retraining; a failed retrain does. */
    sql(f->c, "UPDATE models SET reason = 'requested' WHERE status = 'failed'");
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 1);
    json_decref(training);
    json_decref(hyper);
}

/* A ready model of kind for k5 / class-a / hash h with bytes b (claimed and finished by ME). */
static long long ready_model(PGconn *c, const char *kind, const char *b)
{
    model_key k = {kind, "mlp", "k5", "class-a", "h", ""};
    kt_error err;
    model_claim m;
    long long id = 0;
    if (model_store_create(c, &k, NULL, "requested", &id, &err) < 0 ||
        model_store_claim(c, &ME, 30, &m, &err) != 1)
        fail_msg("ready_model: %s", err.message);
    assert_int_equal(m.id, id);
    model_claim_release(&m);
    if (model_store_finish(c, &ME, id, (const unsigned char *)b, strlen(b), 1, NULL, NULL, NULL,
                           &err) < 0)
        fail_msg("ready_model: %s", err.message);
    return id;
}

static void a_job_keeps_the_surrogate_it_started_with(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_ready r;
    sql(f->c, "DELETE FROM models");
    long long job = add_job(f->c, "h", 7), other = add_job(f->c, "h", 8);
    /* None ready: 0, nothing recorded. */
    assert_int_equal(
        model_store_job_model(f->c, job, "surrogate", "k5", "class-a", "h", "", &r, &err), 0);
    assert_int_equal(r.id, 0);
    char q[128];
    snprintf(q, sizeof q, "SELECT count(*) FROM jobs WHERE surrogate_model_id IS NOT NULL");
    assert_int_equal(sql_ll(f->c, q), 0);
    /* A predictor of the key is not a surrogate. */
    ready_model(f->c, "predictor", "p");
    assert_int_equal(
        model_store_job_model(f->c, job, "surrogate", "k5", "class-a", "h", "", &r, &err), 0);
    long long s1 = ready_model(f->c, "surrogate", "first");
    assert_int_equal(
        model_store_job_model(f->c, job, "surrogate", "k5", "class-a", "h", "", &r, &err), 1);
    assert_int_equal(r.id, s1);
    assert_int_equal(r.len, 5);
    assert_memory_equal(r.bytes, "first", 5);
    model_ready_release(&r);
    /* A newer one supersedes it: the job keeps the first (its bytes too); a new job takes the
     * newer. */
    long long s2 = ready_model(f->c, "surrogate", "second!");
    assert_int_equal(
        model_store_job_model(f->c, job, "surrogate", "k5", "class-a", "h", "", &r, &err), 1);
    assert_int_equal(r.id, s1);
    assert_memory_equal(r.bytes, "first", 5);
    model_ready_release(&r);
    assert_int_equal(
        model_store_job_model(f->c, other, "surrogate", "k5", "class-a", "h", "", &r, &err), 1);
    assert_int_equal(r.id, s2);
    assert_int_equal(r.len, 7);
    model_ready_release(&r);
    snprintf(q, sizeof q, "SELECT surrogate_model_id FROM jobs WHERE id = %lld", job);
    assert_int_equal(sql_ll(f->c, q), s1);
    /* Surrogates learn no trials: never queued for a retrain, however many arrive. */
    for (int i = 0; i < 5; i++)
        add_trial(f->c, job, i + 1, i, 1.0 + i, "ok");
    sql(f->c, "DELETE FROM models WHERE kind = 'predictor'");
    assert_int_equal(model_store_queue_retrains(f->c, 1, &err), 0);
    sql(f->c, "UPDATE jobs SET surrogate_model_id = NULL");
    sql(f->c, "DELETE FROM models");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_numbers_versions_and_refuses_a_second_training),
        cmocka_unit_test(claims_count_attempts_and_give_up_after_the_limit),
        cmocka_unit_test(dead_runners_on_this_host_are_released_at_once),
        cmocka_unit_test(finish_supersedes_older_models_and_keeps_the_bytes),
        cmocka_unit_test(training_data_is_the_best_few_per_problem),
        cmocka_unit_test(retrain_is_queued_once_enough_new_trials_arrived),
        cmocka_unit_test(a_job_keeps_the_surrogate_it_started_with),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
