/* lookup/best_listen against a real PostgreSQL with every migration (sql/007's triggers): a write
 * of the best table by any connection (INSERT, UPDATE, DELETE, TRUNCATE) drops the cached answers
 * of its key; a model that becomes ready drops the predicted ones and a training model says
 * nothing; when the listening connection is cut, the cache is flushed once it listens again. */
#include "pg_test_util.h"

#include <time.h>

#include "lookup/best_cache.h"
#include "lookup/best_listen.h"

#define WAIT_S 10.0

typedef struct listen_fixture {
    pg_fixture *pg;
    best_cache *cache;
    best_listen *listen;
} listen_fixture;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static target_key key_of(const char *problem)
{
    return (target_key){.kernel = "gemm",
                        .device = "cpu",
                        .device_class = "cpu:test:256",
                        .kernel_hash = "0123456789abcdef",
                        .problem_key = problem,
                        .toolchain = "gcc 12"};
}

/* A fill that races a notification still on its way (of the fixture's own writes) is dropped, as
 * it should be: take a new ticket and fill again, a few times at most. */
static void fill(best_cache *c, const char *q, const char *problem, unsigned flags)
{
    target_key k = key_of(problem);
    int stored = 0;
    for (int i = 0; i < 50 && !stored; i++) {
        best_cache_ticket t = best_cache_ticket_take(c, &k);
        stored = best_cache_put(c, &t, q, strlen(q), &k, flags, 200, "{}", 2, NULL);
        if (!stored)
            sleep_ms(20);
    }
    assert_int_equal(stored, 1);
}

static int has(best_cache *c, const char *q)
{
    best_cache_hit h;
    int rc = best_cache_get(c, q, strlen(q), &h);
    free(h.body);
    return rc == 1;
}

/* Waits until request q is no longer cached; fails after WAIT_S. */
static void wait_gone(best_cache *c, const char *q)
{
    double t0 = now_s();
    while (has(c, q)) {
        if (now_s() - t0 > WAIT_S)
            fail_msg("%s still cached %.0f s after the write", q, WAIT_S);
        sleep_ms(5);
    }
}

static void wait_synced(best_cache *c, int synced)
{
    double t0 = now_s();
    best_cache_stats st;
    for (best_cache_stats_get(c, &st); st.synced != synced; best_cache_stats_get(c, &st)) {
        if (now_s() - t0 > WAIT_S)
            fail_msg("the listener did not become %s", synced ? "synced" : "unsynced");
        sleep_ms(5);
    }
}

static int setup(void **state)
{
    void *pg = NULL;
    if (pg_group_setup(&pg) < 0)
        return -1;
    listen_fixture *f = calloc(1, sizeof *f);
    kt_error err;
    kt_error_clear(&err);
    f->pg = pg;
    f->cache = best_cache_new(1000, 1 << 20);
    f->listen = best_listen_start(f->cache, pg_cluster_conninfo(f->pg->cluster), &err);
    if (!f->listen) {
        fprintf(stderr, "listener: %s\n", err.message);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    listen_fixture *f = *state;
    best_listen_stop(f->listen);
    best_cache_free(f->cache);
    void *pg = f->pg;
    free(f);
    return pg_group_teardown(&pg);
}

#define BEST_ROW(problem, time)                                                                    \
    "INSERT INTO best (kernel, device_class, kernel_hash, problem_key, problem, device, config,"   \
    " time_ms, job_id, trial_id, toolchain) VALUES ('gemm', 'cpu:test:256', '0123456789abcdef', "  \
    "'" problem "', '{}', 'cpu', '{}', " time ", 1, 1, 'gcc 12')"

static void test_best_writes_invalidate(void **state)
{
    listen_fixture *f = *state;
    wait_synced(f->cache, 1);
    fill(f->cache, "p1", "P1", BEST_CACHE_MEASURED);
    fill(f->cache, "p2", "P2", BEST_CACHE_MEASURED);
    fill(f->cache, "p2-nearest", "P2", BEST_CACHE_WHOLE_KEY);
    sql(f->pg->c, BEST_ROW("P1", "5"));
    wait_gone(f->cache, "p1");
    wait_gone(f->cache, "p2-nearest"); /* another problem of the key was tuned */
    assert_true(has(f->cache, "p2"));
    fill(f->cache, "p1", "P1", BEST_CACHE_MEASURED);
    sql(f->pg->c, "UPDATE best SET time_ms = 4 WHERE problem_key = 'P1'");
    wait_gone(f->cache, "p1");
    fill(f->cache, "p1", "P1", BEST_CACHE_MEASURED);
    sql(f->pg->c, "DELETE FROM best WHERE problem_key = 'P1'");
    wait_gone(f->cache, "p1");
    /* an update that moves a row to another key invalidates both keys */
    sql(f->pg->c, BEST_ROW("P3", "5"));
    fill(f->cache, "p1", "P1", BEST_CACHE_MEASURED);
    fill(f->cache, "p3", "P3", BEST_CACHE_MEASURED);
    sql(f->pg->c, "UPDATE best SET problem_key = 'P1' WHERE problem_key = 'P3'");
    wait_gone(f->cache, "p1");
    wait_gone(f->cache, "p3");
    /* a transaction rolled back says nothing; TRUNCATE flushes */
    sql(f->pg->c, "BEGIN");
    sql(f->pg->c, BEST_ROW("P2", "1"));
    sql(f->pg->c, "ROLLBACK");
    fill(f->cache, "p1", "P1", BEST_CACHE_MEASURED);
    sql(f->pg->c, "TRUNCATE best");
    wait_gone(f->cache, "p1");
    assert_false(has(f->cache, "p2")); /* flushed with everything */
}

#define MODEL_ROW(status, version)                                                                 \
    "INSERT INTO models (kind, algorithm, kernel, device_class, kernel_hash, toolchain, version,"  \
    " status) VALUES ('predictor', 'nearest', 'gemm', 'cpu:test:256', '0123456789abcdef', "        \
    "'gcc 12', " version ", '" status "')"

static void test_models_invalidate_predictions(void **state)
{
    listen_fixture *f = *state;
    wait_synced(f->cache, 1);
    fill(f->cache, "measured", "P9", BEST_CACHE_MEASURED);
    fill(f->cache, "predicted", "P9", BEST_CACHE_MODELS);
    /* a queued model says nothing: a best write of another key, notified after it, is the fence */
    sql(f->pg->c, MODEL_ROW("training", "1"));
    fill(f->cache, "fence", "P8", BEST_CACHE_MEASURED);
    sql(f->pg->c, BEST_ROW("P8", "5"));
    wait_gone(f->cache, "fence");
    assert_true(has(f->cache, "predicted"));
    /* heartbeats of the training model neither */
    sql(f->pg->c, "UPDATE models SET runner_heartbeat = now() WHERE version = 1");
    /* it becomes ready: the predicted answer goes, the measurement stays */
    sql(f->pg->c, "UPDATE models SET status = 'ready' WHERE version = 1");
    wait_gone(f->cache, "predicted");
    assert_true(has(f->cache, "measured"));
    /* and superseded by a newer one */
    fill(f->cache, "predicted", "P9", BEST_CACHE_MODELS);
    sql(f->pg->c, "UPDATE models SET status = 'superseded' WHERE version = 1");
    wait_gone(f->cache, "predicted");
    assert_true(has(f->cache, "measured"));
}

static void test_reconnect_flushes_everything(void **state)
{
    listen_fixture *f = *state;
    wait_synced(f->cache, 1);
    best_cache_stats before, after;
    best_cache_stats_get(f->cache, &before);
    fill(f->cache, "kept-while-away", "P7", BEST_CACHE_MEASURED);
    /* the listening connection is cut (as by a database restart): notifications sent until it
     * listens again are lost, so it flushes */
    assert_int_equal(sql_ll(f->pg->c, "SELECT count(pg_terminate_backend(pid)) FROM "
                                      "pg_stat_activity WHERE application_name = 'ktuned-lookup'"),
                     1);
    wait_gone(f->cache, "kept-while-away");
    wait_synced(f->cache, 1);
    best_cache_stats_get(f->cache, &after);
    assert_true(after.flushes > before.flushes);
    /* and it listens again */
    fill(f->cache, "p6", "P6", BEST_CACHE_MEASURED);
    sql(f->pg->c, BEST_ROW("P6", "5"));
    wait_gone(f->cache, "p6");
}

/* No database at all: the cache stays unsynced and keeps answering, the listener retries, and a
 * stop is prompt. */
static void test_no_database_unsynced_and_prompt_stop(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    best_cache *c = best_cache_new(10, 1 << 20);
    best_listen *l =
        best_listen_start(c, "host=/nonexistent-ktune-socket-dir port=5432 dbname=x user=x", &err);
    assert_non_null(l);
    sleep_ms(400); /* a few attempts */
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_int_equal(st.synced, 0);
    assert_int_equal(st.flushes, 0); /* never connected: nothing was lost, nothing flushed */
    /* nothing is stored while no change could be heard */
    target_key k = key_of("P");
    best_cache_ticket t = best_cache_ticket_take(c, &k);
    assert_int_equal(best_cache_put(c, &t, "q", 1, &k, BEST_CACHE_MEASURED, 200, "{}", 2, NULL), 0);
    assert_false(has(c, "q"));
    double t0 = now_s();
    best_listen_stop(l);
    assert_true(now_s() - t0 < 1.0);
    best_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_writes_invalidate),
        cmocka_unit_test(test_models_invalidate_predictions),
        cmocka_unit_test(test_reconnect_flushes_everything),
        cmocka_unit_test(test_no_database_unsynced_and_prompt_stop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
