/* store/db's time limits (issue 26, break 5) against a real embedded PostgreSQL that is stopped
 * with SIGSTOP, postmaster and backends, as a stuck disk leaves it: a statement waits at most its
 * connection's limit (db_set_limit), then fails with KT_ERR_DATABASE, a message naming the limit
 * and a hint, and its connection is dropped (later statements and the rollback fail at once); the
 * pool counts it as an outage (db_pool_down, acquires fail fast); sending a large statement to the
 * stopped server does not block either; after SIGCONT the pool reconnects by itself. And the
 * statements db_exec_prepared prepares once per session, prepared again after a reset.
 *
 * A watchdog (alarm) continues the server and fails the test if anything blocks: these calls hung
 * without limit before. The stopped processes are continued in every case. */
#include "pg_test_util.h"
#include "store/store_util.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>

#define WATCHDOG_S 60

/* The processes this test stopped: the watchdog's signal handler continues them, so they are
 * file-level (tests only). */
static volatile pid_t stopped_pids[512];
static volatile int n_stopped;

static void continue_all(void)
{
    for (int i = 0; i < n_stopped; i++)
        kill(stopped_pids[i], SIGCONT);
    n_stopped = 0;
}

static void watchdog(int sig)
{
    (void)sig;
    continue_all();
    static const char msg[] = "test_store_db_limits: a database call blocked past the watchdog\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void stop_pid(pid_t pid)
{
    if (n_stopped < (int)(sizeof stopped_pids / sizeof stopped_pids[0]) && kill(pid, SIGSTOP) == 0)
        stopped_pids[n_stopped++] = pid;
}

/* The postmaster first (it forks nothing after that), then every child of it. */
static void stop_server(const pg_fixture *f)
{
    char path[PATH_MAX], line[64];
    snprintf(path, sizeof path, "%s/postmaster.pid", pg_cluster_pgdata(f->cluster));
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    pid_t pm = (pid_t)strtol(line, NULL, 10);
    assert_true(pm > 1);
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    stop_pid(pm);
    DIR *d = opendir("/proc");
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        char stat_path[300], stat[1024];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(stat_path, sizeof stat_path, "/proc/%s/stat", e->d_name);
        FILE *sf = fopen(stat_path, "r");
        if (!sf)
            continue;
        size_t n = fread(stat, 1, sizeof stat - 1, sf);
        fclose(sf);
        stat[n] = '\0';
        const char *close_paren = strrchr(stat, ')');
        int ppid = 0;
        char st;
        if (close_paren && sscanf(close_paren + 2, "%c %d", &st, &ppid) == 2 && ppid == pm)
            stop_pid((pid_t)strtol(e->d_name, NULL, 10));
    }
    closedir(d);
}

static void start_server(void)
{
    continue_all();
    alarm(0);
}

static int teardown(void **state)
{
    (void)state;
    start_server();
    return 0;
}

static void hung_statement_fails_within_its_limit(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    db_pool *pool = db_pool_new(pg_cluster_conninfo(f->cluster), 2, &err);
    db_pool *other = db_pool_new(pg_cluster_conninfo(f->cluster), 1, &err);
    assert_non_null(pool);
    assert_non_null(other);
    PGconn *c = db_acquire(pool, 1000, &err);
    PGconn *big = db_acquire(other, 1000, &err);
    assert_non_null(c);
    assert_non_null(big);
    assert_int_equal(sql_ll(c, "SELECT 1"), 1);
    db_set_limit(c, 300);
    db_set_limit(big, 300);

    stop_server(f);
    PGresult *r = db_exec(c, "SELECT 1", 0, NULL, &err);
    assert_null(r);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_non_null(strstr(err.message, "did not answer within 300 ms"));
    assert_true(err.hint[0] != '\0');
    assert_int_not_equal(PQstatus(c), CONNECTION_OK);
    assert_int_equal(db_pool_down(pool), 1);
    /* Dropped: what follows fails at once instead of waiting again. */
    kt_error_clear(&err);
    assert_int_equal(db_run(c, "SELECT 2", 0, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    db_rollback(c);
    db_release(pool, c);
    /* The outage: the next acquire fails fast (one reconnection attempt per 250 ms). */
    kt_error_clear(&err);
    assert_null(db_acquire(pool, 100, &err));
    assert_int_equal(err.code, KT_ERR_DATABASE);

    /* 16 MiB that the stopped server never reads: sending does not block past the limit. */
    size_t n = 16u << 20;
    char *text = malloc(n + 1);
    assert_non_null(text);
    memset(text, 'x', n);
    text[n] = '\0';
    const char *p[] = {text};
    kt_error_clear(&err);
    r = db_exec(big, "SELECT length($1)", 1, p, &err);
    free(text);
    assert_null(r);
    assert_non_null(strstr(err.message, "did not answer within 300 ms"));
    db_release(other, big);

    /* Running again: both pools reconnect by themselves. */
    start_server();
    for (db_pool *q = pool; q; q = q == pool ? other : NULL) {
        PGconn *again = NULL;
        for (int i = 0; i < 50 && !again; i++) {
            kt_error_clear(&err);
            if (!(again = db_acquire(q, 1000, &err)))
                usleep(100 * 1000);
        }
        if (!again)
            fail_msg("no connection after the server continued: %s", err.message);
        assert_int_equal(sql_ll(again, "SELECT 1"), 1);
        assert_int_equal(db_pool_down(q), 0);
        db_release(q, again);
    }
    db_pool_free(pool);
    db_pool_free(other);
}

/* No limit (migrations): db_set_limit 0 waits as long as the statement takes. */
static void no_limit_waits_for_the_statement(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    db_pool *pool = db_pool_new(pg_cluster_conninfo(f->cluster), 1, &err);
    assert_non_null(pool);
    PGconn *c = db_acquire(pool, 1000, &err);
    assert_non_null(c);
    db_set_limit(c, 100);
    assert_int_equal(db_run(c, "SELECT pg_sleep(0.3)", 0, NULL, &err), -1);
    db_release(pool, c);
    for (int i = 0; i < 50 && !(c = db_acquire(pool, 1000, &err)); i++)
        usleep(100 * 1000);
    assert_non_null(c);
    db_set_limit(c, 0);
    kt_error_clear(&err);
    assert_int_equal(db_run(c, "SELECT pg_sleep(0.3)", 0, NULL, &err), 0);
    db_release(pool, c);
    db_pool_free(pool);
}

/* The value of a one-cell statement run with db_exec_prepared, as a number (-1 on failure). */
static long prepared_value(PGconn *c, const char *sql, const char *arg)
{
    kt_error err;
    kt_error_clear(&err);
    const char *p[] = {arg};
    PGresult *r = db_exec_prepared(c, DB_PREPARED_ASK, sql, 1, p, &err);
    long v = r && PQntuples(r) == 1 ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

/* db_exec_prepared prepares a statement once per session: the server holds it after the first
 * run; another text under the same id runs (unprepared) with its own result; a session that lost
 * it, and a connection that was reset (its session ended), prepare it again instead of failing. */
static void prepared_statements_once_per_session(void **state)
{
    pg_fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    const char *sql = "SELECT $1::int + 1";
    db_pool *pool = db_pool_new(pg_cluster_conninfo(f->cluster), 1, &err);
    assert_non_null(pool);
    PGconn *c = db_acquire(pool, 1000, &err);
    assert_non_null(c);
    assert_int_equal(prepared_value(c, sql, "41"), 42);
    assert_int_equal(prepared_value(c, sql, "1"), 2);
    char n[16];
    assert_int_equal(store_query_text(c,
                                      "SELECT count(*) FROM pg_prepared_statements WHERE "
                                      "statement = 'SELECT $1::int + 1'",
                                      0, NULL, n, sizeof n, &err),
                     1);
    assert_string_equal(n, "1");
    assert_int_equal(prepared_value(c, "SELECT $1::int * 2", "21"), 42);
    /* A session that lost it (DEALLOCATE, a pooler): this run unprepared, the next prepares. */
    assert_int_equal(db_run(c, "DEALLOCATE ALL", 0, NULL, &err), 0);
    assert_int_equal(prepared_value(c, sql, "2"), 3);
    assert_int_equal(prepared_value(c, sql, "3"), 4);
    /* The session ends under the pool: the next acquire resets the connection. */
    assert_int_equal(db_run(c, "SELECT pg_terminate_backend(pg_backend_pid())", 0, NULL, &err), -1);
    db_release(pool, c);
    c = NULL;
    for (int i = 0; i < 50 && !(c = db_acquire(pool, 1000, &err)); i++)
        usleep(100 * 1000);
    assert_non_null(c);
    assert_int_equal(prepared_value(c, sql, "6"), 7);
    db_release(pool, c);
    db_pool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(hung_statement_fails_within_its_limit, teardown),
        cmocka_unit_test(no_limit_waits_for_the_statement),
        cmocka_unit_test(prepared_statements_once_per_session),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
