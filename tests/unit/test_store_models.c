/* store/model_store against a real embedded PostgreSQL (one cluster for the group, migrations
 * applied): versions and the 409 of a second training, claims with attempts and their limit, the
 * reaper's rules (stale heartbeat, dead pid on this host), finish superseding older models in one
 * transaction, the bytes round trip, the bounded training-data window, the retrain check (never for
 * surrogates), and the surrogate a job records and keeps (model_store_job_model). Issue 26: an
 * untrusted import is neither training data, nor a retrain's count, nor warm-start history
 * (store/history_store.h), a trusted one is all three; a row whose jsonb does not read back is
 * listed, marked; model_store_delete in every status. */
#include "pg_test_util.h"

#include "store/history_store.h"
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

/* A job of kernel k6 (class-a, hash h6) for problem {"n": n}: strategy "random" (a tuning job) or
 * "import" with options (strategy_options as text: trusted or not). */
static long long add_job_of(PGconn *c, int n, const char *strategy, const char *options)
{
    char text[512];
    snprintf(text, sizeof text,
             "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
             " strategy, strategy_options, seed, budget_evaluations, batch_size, space_size,"
             " status) VALUES ('k6', 'dev', 'class-a', 'h6', '{\"n\": %d}', '{\"n\":%d}', '%s',"
             " '%s', 1, 100, 1, 100, 'succeeded') RETURNING id",
             n, n, strategy, options);
    return sql_ll(c, text);
}

#define UNTRUSTED "{\"source\": \"t4\"}"
#define TRUSTED   "{\"source\": \"t4\", \"trusted\": true}"

static void imports_feed_no_model_and_no_warm_start_unless_trusted(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_training_data d;
    model_claim m;
    sql(f->c, "DELETE FROM models");
    long long tuned = add_job_of(f->c, 1, "random", "{}");
    long long imported = add_job_of(f->c, 2, "import", UNTRUSTED);
    long long trusted = add_job_of(f->c, 3, "import", TRUSTED);
    add_trial(f->c, tuned, 1, 1, 5.0, "ok");
    add_trial(f->c, tuned, 2, 2, 4.0, "ok");
    add_trial(f->c, imported, 1, 3, 0.5, "ok"); /* faster than anything measured */
    add_trial(f->c, imported, 2, 4, 0.7, "ok");
    long long last = add_trial(f->c, trusted, 1, 5, 3.0, "ok");
    add_trial(f->c, imported, 3, 6, 0.9, "ok"); /* newer than every measurement */
    /* Training data: problems 1 and 3 (the tuning job, the trusted import), never problem 2. */
    assert_int_equal(model_store_training_data(f->c, "k6", "class-a", "h6", "", 8, 100, &d, &err),
                     0);
    assert_int_equal(d.n, 3);
    for (int i = 0; i < d.n; i++)
        assert_int_not_equal(json_integer_value(json_object_get(d.rows[i].problem, "n")), 2);
    assert_int_equal(json_integer_value(json_object_get(d.summary, "problems")), 2);
    assert_int_equal(json_integer_value(json_object_get(d.summary, "max_trial_id")), last);
    model_training_data_release(&d);
    /* A ready model of the key, trained up to there. */
    long long v1 = create(f->c, "k6", "h6", "nearest");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    model_claim_release(&m);
    json_t *training = json_pack("{s:I}", "max_trial_id", (json_int_t)last);
    assert_int_equal(model_store_finish(f->c, &ME, v1, (const unsigned char *)"x", 1, 1, NULL,
                                        training, NULL, &err),
                     0);
    json_decref(training);
    /* Untrusted imports arrive (205 of them once retrained a model nobody asked for): no count,
     * no retrain. */
    long long more = add_job_of(f->c, 4, "import", UNTRUSTED);
    for (int i = 0; i < 4; i++)
        add_trial(f->c, more, i + 1, 10 + i, 1.0 + i, "ok");
    assert_int_equal(model_store_new_trials(f->c, "predictor", "k6", "class-a", "h6", "", &err), 0);
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 0);
    /* Trusted ones count like measurements. */
    for (int i = 0; i < 3; i++)
        add_trial(f->c, trusted, i + 2, 20 + i, 2.0 + i, "ok");
    assert_int_equal(model_store_new_trials(f->c, "predictor", "k6", "class-a", "h6", "", &err), 3);
    assert_int_equal(model_store_queue_retrains(f->c, 3, &err), 1);
    /* Warm starts: the (class, problem) pairs of measurements and trusted imports only. */
    history_sources hs;
    assert_int_equal(history_store_sources(f->c, "k6", "class-b", "{\"n\":9}", &hs, &err), 0);
    assert_int_equal(hs.n, 2);
    assert_string_equal(hs.s[0].problem_key, "{\"n\":1}");
    assert_string_equal(hs.s[1].problem_key, "{\"n\":3}");
    history_sources_release(&hs);
    history_trials ht;
    assert_int_equal(
        history_store_source_trials(f->c, "k6", "class-a", "{\"n\":2}", 100, &ht, &err), 0);
    assert_int_equal(ht.n, 0);
    history_trials_release(&ht);
    assert_int_equal(
        history_store_source_trials(f->c, "k6", "class-a", "{\"n\":3}", 100, &ht, &err), 0);
    assert_int_equal(ht.n, 4);
    history_trials_release(&ht);
    sql(f->c, "DELETE FROM models");
}

/* A row stored before POST /v1/models checked its hyper (or by hand): jsonb writes 1e300 as a
 * 301-digit integer, which jansson refuses. It made every list fail (a 500 for GET /v1/models);
 * now it is listed and read, its unreadable column null and named. */
static void a_model_row_that_does_not_read_back_is_marked(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    sql(f->c, "DELETE FROM models");
    long long good = create(f->c, "k7", "h", "nearest");
    long long bad = sql_ll(f->c, "INSERT INTO models (kind, algorithm, kernel, device_class,"
                                 " kernel_hash, version, status, hyper, metrics) VALUES"
                                 " ('predictor', 'seq2seq', 'k8', 'class-a', 'h', 1, 'failed',"
                                 " '{\"epochs\": 1e300}', '{\"top1\": 0.5}') RETURNING id");
    json_t *list = model_store_list_json(f->c, NULL, NULL, NULL, 10, &err);
    if (!list)
        fail_msg("model_store_list_json: %s", err.message);
    json_t *models = json_object_get(list, "models");
    assert_int_equal(json_array_size(models), 2);
    json_t *b = json_array_get(models, 0), *g = json_array_get(models, 1);
    assert_int_equal(json_integer_value(json_object_get(b, "id")), bad);
    assert_true(json_is_null(json_object_get(b, "hyper")));
    assert_int_equal(json_array_size(json_object_get(b, "unreadable")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(b, "unreadable"), 0)),
                        "hyper");
    assert_true(json_real_value(json_object_get(json_object_get(b, "metrics"), "top1")) == 0.5);
    assert_string_equal(json_string_value(json_object_get(b, "status")), "failed");
    assert_int_equal(json_integer_value(json_object_get(g, "id")), good);
    assert_true(json_is_object(json_object_get(g, "hyper")));
    assert_null(json_object_get(g, "unreadable"));
    json_decref(list);
    json_t *one = model_store_get_json(f->c, bad, &err);
    if (!one)
        fail_msg("model_store_get_json: %s", err.message);
    assert_non_null(json_object_get(one, "unreadable"));
    assert_string_equal(json_string_value(json_object_get(one, "kernel")), "k8");
    json_decref(one);
    sql(f->c, "DELETE FROM models");
}

static void delete_removes_a_model_in_any_status(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    model_claim m;
    model_deleted gone;
    model_ready r;
    sql(f->c, "DELETE FROM models");
    /* Training (claimed): gone; its trainer's result is refused when it is stored. */
    long long training = create(f->c, "k9", "h", "nearest");
    assert_int_equal(model_store_claim(f->c, &ME, 30, &m, &err), 1);
    model_claim_release(&m);
    assert_int_equal(model_store_delete(f->c, training, &gone, &err), 0);
    assert_string_equal(gone.status, "training");
    assert_string_equal(gone.kind, "predictor");
    assert_int_equal(model_store_finish(f->c, &ME, training, (const unsigned char *)"x", 1, 1, NULL,
                                        NULL, NULL, &err),
                     -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.hint, "deleted"));
    assert_null(model_store_get_json(f->c, training, &err));
    assert_int_equal(err.code, KT_ERR_NOT_FOUND);
    /* Ready: predictions stop using it (no older version comes back); the next one is 2. */
    long long p1 = ready_model(f->c, "predictor", "p1");
    long long p2 = ready_model(f->c, "predictor", "p2");
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k5", "class-a", "h", "", 0, &r, &err), 1);
    assert_int_equal(r.id, p2);
    assert_int_equal(model_store_delete(f->c, p2, &gone, &err), 0);
    assert_string_equal(gone.status, "ready");
    assert_int_equal(
        model_store_latest_ready(f->c, "predictor", "k5", "class-a", "h", "", 0, &r, &err), 0);
    assert_int_equal(model_store_delete(f->c, p1, &gone, &err), 0);
    assert_string_equal(gone.status, "superseded");
    /* A surrogate a running job searches through stays; once the job ended it goes, and the
     * ended jobs forget it. */
    long long s = ready_model(f->c, "surrogate", "s");
    long long running = add_job(f->c, "h", 30), ended = add_job(f->c, "h", 31);
    char q[160];
    snprintf(q, sizeof q, "UPDATE jobs SET status = 'running' WHERE id = %lld", running);
    sql(f->c, q);
    assert_int_equal(
        model_store_job_model(f->c, running, "surrogate", "k5", "class-a", "h", "", &r, &err), 1);
    model_ready_release(&r);
    assert_int_equal(
        model_store_job_model(f->c, ended, "surrogate", "k5", "class-a", "h", "", &r, &err), 1);
    model_ready_release(&r);
    assert_int_equal(model_store_delete(f->c, s, &gone, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    snprintf(q, sizeof q, "job %lld", running);
    assert_non_null(strstr(err.message, q));
    assert_non_null(strstr(err.hint, "DELETE /v1/jobs/"));
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM models WHERE kind = 'surrogate'"), 1);
    snprintf(q, sizeof q, "UPDATE jobs SET status = 'cancelled' WHERE id = %lld", running);
    sql(f->c, q);
    assert_int_equal(model_store_delete(f->c, s, &gone, &err), 0);
    assert_string_equal(gone.kind, "surrogate");
    assert_int_equal(gone.jobs_unlinked, 2);
    assert_int_equal(sql_ll(f->c, "SELECT count(*) FROM jobs WHERE surrogate_model_id IS NOT NULL"),
                     0);
    /* None such. */
    assert_int_equal(model_store_delete(f->c, 987654321, &gone, &err), -1);
    assert_int_equal(err.code, KT_ERR_NOT_FOUND);
    assert_non_null(strstr(err.hint, "GET /v1/models"));
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
        cmocka_unit_test(imports_feed_no_model_and_no_warm_start_unless_trusted),
        cmocka_unit_test(a_model_row_that_does_not_read_back_is_marked),
        cmocka_unit_test(delete_removes_a_model_in_any_status),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
