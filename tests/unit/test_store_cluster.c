/* Unit tests of store/ infrastructure: the embedded cluster, the connection pool, db helpers,
 * LISTEN/NOTIFY and migrations. One cluster in a fresh /tmp directory serves the whole group
 * (initdb costs seconds); the restart test makes a second one, under a long path that forces the
 * /tmp socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "store/db.h"
#include "store/migrate.h"
#include "store/pg_cluster.h"
#include "skip_test_util.h"

typedef struct fixture {
    char root[64]; /* mkdtemp dir holding every data dir of the group; removed at teardown */
    char data_dir[128];
    pg_cluster *cluster;
    db_pool *pool;
} fixture;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0; /* keep going: remove what can be removed */
}

static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Milliseconds since t0 (a kt_clock_ns reading). */
static long ms_since(uint64_t t0)
{
    return (long)(kt_clock_since_ns(t0) / 1000000u);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* First value of the first row as text, copied into out ("<null>" for SQL NULL); asserts success.
 */
static void query_value(PGconn *conn, const char *sql, int n, const char *const *params, char *out,
                        size_t size)
{
    kt_error err;
    kt_error_clear(&err);
    PGresult *res = db_exec(conn, sql, n, params, &err);
    if (!res)
        fprintf(stderr, "query failed: %s: %s\n", sql, err.message);
    assert_non_null(res);
    assert_true(PQntuples(res) >= 1);
    snprintf(out, size, "%s", PQgetisnull(res, 0, 0) ? "<null>" : PQgetvalue(res, 0, 0));
    PQclear(res);
}

static long postmaster_pid(const char *data_dir)
{
    char path[256];
    long pid = -1;
    snprintf(path, sizeof path, "%s/pg/postmaster.pid", data_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return pid;
}

static int group_setup(void **state)
{
    kt_error err;
    kt_error_clear(&err);
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->root, sizeof f->root, "/tmp/ktune-store-test-XXXXXX");
    if (!mkdtemp(f->root)) {
        free(f);
        return -1;
    }
    chmod(f->root, 0755); /* mkdtemp makes it 0700; as root, the postgres user must traverse it */
    snprintf(f->data_dir, sizeof f->data_dir, "%s/data", f->root);
    f->cluster = pg_cluster_start(f->data_dir, &err);
    if (f->cluster)
        f->pool = db_pool_new(pg_cluster_conninfo(f->cluster), 2, &err);
    if (!f->pool) {
        fprintf(stderr, "group setup: %s (hint: %s)\n", err.message, err.hint);
        pg_cluster_stop(f->cluster);
        remove_tree(f->root);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    db_pool_free(f->pool);
    pg_cluster_stop(f->cluster);
    remove_tree(f->root);
    free(f);
    return 0;
}

/* ---- cluster ---- */

static void start_creates_cluster_and_database(void **state)
{
    fixture *f = *state;
    char path[256], value[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/pg/PG_VERSION", f->data_dir);
    assert_int_equal(stat(path, &st), 0);
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        assert_non_null(pw);
        assert_int_equal(st.st_uid, pw->pw_uid); /* initdb ran as postgres, not root */
    }
    snprintf(path, sizeof path, "%s/pg.log", f->data_dir);
    assert_int_equal(stat(path, &st), 0);

    const char *info = pg_cluster_conninfo(f->cluster);
    char expect[256];
    snprintf(expect, sizeof expect,
             "host=%s/pg-socket port=5432 dbname=ktune user=ktune password=", f->data_dir);
    assert_memory_equal(info, expect,
                        strlen(expect)); /* then the 48 hex characters of the secret */
    assert_int_equal(strlen(info), strlen(expect) + 48);

    /* Issue #11: private socket directory, secrets readable by this user only. */
    snprintf(path, sizeof path, "%s/pg-socket", f->data_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(path, sizeof path, "%s/pg-ktune.secret", f->data_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    snprintf(path, sizeof path, "%s/pg-admin.secret", f->data_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    kt_error err;
    PGconn *conn = db_connect(info, &err);
    assert_non_null(conn);
    query_value(conn, "SELECT current_database()", 0, NULL, value, sizeof value);
    assert_string_equal(value, "ktune");
    query_value(conn, "SELECT current_user", 0, NULL, value, sizeof value);
    assert_string_equal(value, "ktune");
    query_value(conn, "SELECT current_setting('application_name')", 0, NULL, value, sizeof value);
    assert_string_equal(value, "ktuned");
    /* The service role is no superuser and cannot reach outside the database. */
    query_value(conn, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user", 0, NULL,
                value, sizeof value);
    assert_string_equal(value, "false");
    query_value(conn, "SELECT pg_has_role('pg_execute_server_program', 'MEMBER')::text", 0, NULL,
                value, sizeof value);
    assert_string_equal(value, "false");
    /* A password is required: the same conninfo without it is refused. */
    char nopass[256];
    snprintf(nopass, sizeof nopass, "host=%s/pg-socket port=5432 dbname=ktune user=ktune",
             f->data_dir);
    PGconn *bad = PQconnectdb(nopass);
    assert_int_not_equal(PQstatus(bad), CONNECTION_OK);
    PQfinish(bad);
    query_value(conn, "SHOW listen_addresses", 0, NULL, value, sizeof value);
    assert_string_equal(value, "");
    query_value(conn, "SHOW max_connections", 0, NULL, value, sizeof value);
    assert_string_equal(value, "100");
    PQfinish(conn);
}

static void missing_binaries_is_a_config_error(void **state)
{
    fixture *f = *state;
    char dir[128];
    kt_error err;
    kt_error_clear(&err);
    snprintf(dir, sizeof dir, "%s/nobin", f->root);
    setenv("KTUNE_PG_BINDIR", "/nonexistent", 1);
    pg_cluster *c = pg_cluster_start(dir, &err);
    unsetenv("KTUNE_PG_BINDIR");
    assert_null(c);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "not found"));
    assert_non_null(strstr(err.hint, "apt-get install -y postgresql"));
}

static void root_needs_a_data_dir_postgres_can_reach(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0)
        KT_SKIP("runs as root only: the data folder rule applies when root starts the cluster");
    char private_dir[128], dir[160];
    kt_error err;
    kt_error_clear(&err);
    snprintf(private_dir, sizeof private_dir, "%s/private", f->root);
    assert_int_equal(mkdir(private_dir, 0700), 0); /* like /root: closed to other users */
    snprintf(dir, sizeof dir, "%s/data", private_dir);
    pg_cluster *c = pg_cluster_start(dir, &err);
    assert_null(c);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "postgres"));
    assert_non_null(strstr(err.hint, "--data-dir"));
}

/* Start while running reuses the server (as after a ktuned killed with -9); stop then start keeps
 * the data. The long path makes the socket path exceed the unix socket limit: the socket goes to
 * /tmp. */
static void restart_reuses_server_and_keeps_data(void **state)
{
    fixture *f = *state;
    char dir[256], value[64], socket_dir[256];
    struct stat st;
    kt_error err;
    kt_error_clear(&err);
    snprintf(dir, sizeof dir, "%s/%s/data", f->root,
             "a-rather-long-directory-name-that-pushes-the-socket-path-beyond-"
             "the-unix-socket-limit-of-107-bytes");

    pg_cluster *c1 = pg_cluster_start(dir, &err);
    if (!c1)
        fprintf(stderr, "start: %s\n", err.message);
    assert_non_null(c1);
    char info1[512];
    snprintf(info1, sizeof info1, "%s", pg_cluster_conninfo(c1));
    assert_non_null(strstr(info1, "host=/tmp/ktune-pg-"));
    sscanf(info1, "host=%255s", socket_dir);
    assert_int_equal(stat(socket_dir, &st), 0);
    PGconn *conn = db_connect(info1, &err);
    assert_non_null(conn);
    assert_int_equal(db_run(conn, "CREATE TABLE persist (x int)", 0, NULL, &err), 0);
    assert_int_equal(db_run(conn, "INSERT INTO persist VALUES (7)", 0, NULL, &err), 0);
    PQfinish(conn);
    long pid = postmaster_pid(dir);
    assert_true(pid > 0);

    pg_cluster *c2 = pg_cluster_start(dir, &err);
    assert_non_null(c2);
    assert_string_equal(pg_cluster_conninfo(c2),
                        info1); /* found the socket of the running server */
    assert_int_equal(postmaster_pid(dir), pid);
    conn = db_connect(pg_cluster_conninfo(c2), &err);
    assert_non_null(conn);
    PQfinish(conn);

    pg_cluster_stop(c2);
    assert_int_equal(postmaster_pid(dir), -1);
    assert_int_not_equal(PQping(info1), PQPING_OK);
    assert_int_not_equal(stat(socket_dir, &st), 0); /* the private /tmp socket dir is removed */
    pg_cluster_stop(c1);                            /* server already stopped: frees only */

    pg_cluster *c3 = pg_cluster_start(dir, &err);
    assert_non_null(c3);
    conn = db_connect(pg_cluster_conninfo(c3), &err);
    assert_non_null(conn);
    query_value(conn, "SELECT x FROM persist", 0, NULL, value, sizeof value);
    assert_string_equal(value, "7");
    PQfinish(conn);
    pg_cluster_stop(c3);
    assert_int_equal(postmaster_pid(dir), -1);
}

/* ---- pool and helpers ---- */

static void pool_runs_parameterised_queries(void **state)
{
    fixture *f = *state;
    kt_error err;
    char value[64];
    PGconn *conn = db_acquire(f->pool, 1000, &err);
    assert_non_null(conn);
    const char *params[] = {"41"};
    query_value(conn, "SELECT $1::int + 1", 1, params, value, sizeof value);
    assert_string_equal(value, "42");
    db_release(f->pool, conn);
}

static void exec_handles_nulls_and_surfaces_errors(void **state)
{
    fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    PGconn *conn = db_acquire(f->pool, 1000, &err);
    assert_non_null(conn);

    const char *params[] = {"h\xc3\xa9llo 'quoted'", NULL};
    PGresult *res = db_exec(conn, "SELECT $1::text, $2::text, $2::text IS NULL", 2, params, &err);
    assert_non_null(res);
    assert_string_equal(PQgetvalue(res, 0, 0), "h\xc3\xa9llo 'quoted'");
    assert_true(PQgetisnull(res, 0, 1));
    assert_string_equal(PQgetvalue(res, 0, 2), "t");
    PQclear(res);

    assert_null(db_exec(conn, "SELECT * FROM no_such_table", 0, NULL, &err));
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_string_equal(err.message, "relation \"no_such_table\" does not exist");

    kt_error_clear(&err);
    assert_int_equal(db_run(conn, "SELECT lenght('x')", 0, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_non_null(strstr(err.message, "lenght"));
    assert_non_null(strstr(err.hint, "explicit type casts")); /* the server's hint is kept */

    char sqlstate[6];
    assert_int_equal(db_run(conn, "CREATE TEMP TABLE uniq (x int PRIMARY KEY)", 0, NULL, &err), 0);
    const char *one[] = {"1"};
    assert_int_equal(db_run(conn, "INSERT INTO uniq VALUES ($1)", 1, one, &err), 0);
    assert_null(db_exec_state(conn, "INSERT INTO uniq VALUES ($1)", 1, one, sqlstate, &err));
    assert_string_equal(sqlstate, "23505");

    /* A failed statement dooms the transaction: commit reports it. */
    assert_int_equal(db_begin(conn, &err), 0);
    assert_int_equal(db_run(conn, "INSERT INTO uniq VALUES ($1)", 1, one, &err), -1);
    kt_error_clear(&err);
    assert_int_equal(db_commit(conn, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_int_equal(PQtransactionStatus(conn), PQTRANS_IDLE);

    const char *two[] = {"2"};
    char value[32];
    assert_int_equal(db_begin(conn, &err), 0);
    assert_int_equal(db_run(conn, "INSERT INTO uniq VALUES ($1)", 1, two, &err), 0);
    db_rollback(conn);
    query_value(conn, "SELECT count(*) FROM uniq", 0, NULL, value, sizeof value);
    assert_string_equal(value, "1");
    assert_int_equal(db_begin(conn, &err), 0);
    assert_int_equal(db_run(conn, "INSERT INTO uniq VALUES ($1)", 1, two, &err), 0);
    assert_int_equal(db_commit(conn, &err), 0);
    query_value(conn, "SELECT count(*) FROM uniq", 0, NULL, value, sizeof value);
    assert_string_equal(value, "2");
    assert_int_equal(db_run(conn, "DROP TABLE uniq", 0, NULL, &err), 0);
    db_release(f->pool, conn);
}

static void connect_failure_is_a_database_error(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    assert_null(db_connect("host=/nonexistent-ktune port=5432 dbname=ktune user=ktune", &err));
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_non_null(strstr(err.message, "cannot connect to the database: "));
    assert_null(strchr(err.message, '\n'));
    kt_error_clear(&err);
    assert_null(db_pool_new("host=/nonexistent-ktune dbname=ktune", 3, &err));
    assert_int_equal(err.code, KT_ERR_DATABASE);
}

typedef struct delayed_release {
    db_pool *pool;
    PGconn *conn;
} delayed_release;

static void *release_later(void *arg)
{
    delayed_release *d = arg;
    sleep_ms(100);
    db_release(d->pool, d->conn);
    return NULL;
}

static void pool_times_out_when_exhausted(void **state)
{
    fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    db_pool *pool = db_pool_new(pg_cluster_conninfo(f->cluster), 2, &err);
    assert_non_null(pool);
    PGconn *a = db_acquire(pool, 1000, &err);
    PGconn *b = db_acquire(pool, 1000, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);

    uint64_t t0 = kt_clock_ns();
    assert_null(db_acquire(pool, 150, &err));
    assert_true(ms_since(t0) >= 140);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_string_equal(err.message, "no database connection free within 150 ms");

    /* A waiter is woken by a release from another thread, long before its timeout. */
    delayed_release d = {pool, b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, release_later, &d), 0);
    t0 = kt_clock_ns();
    PGconn *c = db_acquire(pool, 5000, &err);
    assert_ptr_equal(c, b);
    assert_true(ms_since(t0) < 4000);
    pthread_join(th, NULL);
    db_release(pool, a);
    db_release(pool, c);
    db_pool_free(pool);
}

static void pool_reconnects_a_broken_connection(void **state)
{
    fixture *f = *state;
    kt_error err;
    char value[32], pid_text[32];
    db_pool *pool = db_pool_new(pg_cluster_conninfo(f->cluster), 1, &err);
    assert_non_null(pool);
    PGconn *conn = db_acquire(pool, 1000, &err);
    assert_non_null(conn);
    int old_pid = PQbackendPID(conn);
    db_release(pool, conn);

    PGconn *killer = db_connect(pg_cluster_conninfo(f->cluster), &err);
    assert_non_null(killer);
    snprintf(pid_text, sizeof pid_text, "%d", old_pid);
    const char *params[] = {pid_text};
    query_value(killer, "SELECT pg_terminate_backend($1::int)", 1, params, value, sizeof value);
    assert_string_equal(value, "t");
    /* Gone from pg_stat_activity is not enough: the backend closes its socket when it exits. */
    for (int i = 0; i < 100 && !(kill(old_pid, 0) != 0 && errno == ESRCH); i++)
        sleep_ms(50);
    PQfinish(killer);

    conn = db_acquire(pool, 1000, &err);
    assert_non_null(conn);
    assert_int_not_equal(PQbackendPID(conn), old_pid);
    query_value(conn, "SELECT 1", 0, NULL, value, sizeof value);
    assert_string_equal(value, "1");
    db_release(pool, conn);
    db_pool_free(pool);
}

typedef struct notifier {
    PGconn *conn;
    int rc;
} notifier;

static void *notify_later(void *arg)
{
    notifier *n = arg;
    const char *params[] = {"ktune_test", "payload"};
    sleep_ms(100);
    n->rc = db_run(n->conn, "SELECT pg_notify($1, $2)", 2, params, NULL);
    return NULL;
}

static void wait_notify_receives_and_times_out(void **state)
{
    fixture *f = *state;
    kt_error err;
    char pid_text[32], value[32];
    PGconn *listener = db_connect(pg_cluster_conninfo(f->cluster), &err);
    PGconn *sender = db_connect(pg_cluster_conninfo(f->cluster), &err);
    assert_non_null(listener);
    assert_non_null(sender);
    assert_int_equal(db_run(listener, "LISTEN ktune_test", 0, NULL, &err), 0);

    uint64_t t0 = kt_clock_ns();
    assert_int_equal(db_wait_notify(listener, 150), 0);
    assert_true(ms_since(t0) >= 140);

    notifier n = {sender, -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, notify_later, &n), 0);
    t0 = kt_clock_ns();
    assert_int_equal(db_wait_notify(listener, 5000), 1);
    assert_true(ms_since(t0) < 4000);
    pthread_join(th, NULL);
    assert_int_equal(n.rc, 0);
    assert_int_equal(db_wait_notify(listener, 50), 0); /* drained */

    /* Two notifications sent before the wait: one wake-up reports both and drains them. */
    const char *params[] = {"ktune_test", "x"};
    assert_int_equal(db_run(sender, "SELECT pg_notify($1, $2)", 2, params, &err), 0);
    assert_int_equal(db_run(sender, "SELECT pg_notify($1, $2 || '2')", 2, params, &err), 0);
    sleep_ms(50);
    assert_int_equal(db_wait_notify(listener, 1000), 1);
    assert_int_equal(db_wait_notify(listener, 50), 0);

    snprintf(pid_text, sizeof pid_text, "%d", PQbackendPID(listener));
    const char *pid_param[] = {pid_text};
    query_value(sender, "SELECT pg_terminate_backend($1::int)", 1, pid_param, value, sizeof value);
    assert_int_equal(db_wait_notify(listener, 5000), -1);
    PQfinish(listener);
    PQfinish(sender);
}

/* ---- migrations ---- */

static void migrations_apply_once_in_name_order(void **state)
{
    fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    char value[32];
    /* Listed out of order: 002 depends on 001. */
    const migration migs[] = {
        {"m1_002_alter.sql", "ALTER TABLE m1_items ADD COLUMN note text;\n"
                             "INSERT INTO m1_items (id, note) VALUES (2, 'b');"},
        {"m1_001_create.sql", "CREATE TABLE m1_items (id int PRIMARY KEY);\n"
                              "INSERT INTO m1_items VALUES (1);"},
        {"m1_003_index.sql", "CREATE INDEX m1_items_note ON m1_items (note);"},
    };
    PGconn *conn = db_acquire(f->pool, 1000, &err);
    assert_non_null(conn);
    assert_int_equal(migrate_apply(conn, migs, 3, &err), 3);
    assert_int_equal(err.code, KT_OK);
    assert_int_equal(migrate_apply(conn, migs, 3, &err), 0);
    query_value(conn, "SELECT count(*) FROM m1_items", 0, NULL, value, sizeof value);
    assert_string_equal(value, "2");
    query_value(conn, "SELECT count(*) FROM schema_migrations WHERE name LIKE 'm1\\_%'", 0, NULL,
                value, sizeof value);
    assert_string_equal(value, "3");
    assert_int_equal(migrate_apply(conn, migs, 0, &err), 0);
    db_release(f->pool, conn);
}

static void failing_migration_is_rolled_back_and_named(void **state)
{
    fixture *f = *state;
    kt_error err;
    kt_error_clear(&err);
    char value[32];
    const migration migs[] = {
        {"m2_001_ok.sql", "CREATE TABLE m2_ok (x int);"},
        {"m2_002_bad.sql", "CREATE TABLE m2_partial (x int);\n"
                           "INSERT INTO m2_partial VALUES (1);\n"
                           "SELEC 1;\n"},
        {"m2_003_never.sql", "CREATE TABLE m2_never (x int);"},
    };
    PGconn *conn = db_acquire(f->pool, 1000, &err);
    assert_non_null(conn);
    assert_int_equal(migrate_apply(conn, migs, 3, &err), -1);
    assert_int_equal(err.code, KT_ERR_DATABASE);
    assert_non_null(strstr(err.message, "migration m2_002_bad.sql failed at line 3: "));
    assert_non_null(strstr(err.message, "SELEC"));
    assert_int_equal(PQtransactionStatus(conn), PQTRANS_IDLE);

    query_value(conn, "SELECT to_regclass('m2_ok') IS NOT NULL", 0, NULL, value, sizeof value);
    assert_string_equal(value, "t");
    query_value(conn, "SELECT to_regclass('m2_partial') IS NULL", 0, NULL, value, sizeof value);
    assert_string_equal(value, "t");
    query_value(conn, "SELECT to_regclass('m2_never') IS NULL", 0, NULL, value, sizeof value);
    assert_string_equal(value, "t");
    query_value(conn,
                "SELECT string_agg(name, ',') FROM schema_migrations WHERE name LIKE 'm2\\_%'", 0,
                NULL, value, sizeof value);
    assert_string_equal(value, "m2_001_ok.sql");
    /* The migration lock is released even on failure. */
    query_value(conn, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", 0, NULL, value,
                sizeof value);
    assert_string_equal(value, "0");

    /* A script that commits on its own would escape the bookkeeping: refused. */
    const migration commits[] = {{"m2b_001_commit.sql", "CREATE TABLE m2b (x int); COMMIT;"}};
    kt_error_clear(&err);
    assert_int_equal(migrate_apply(conn, commits, 1, &err), -1);
    assert_non_null(strstr(err.message, "m2b_001_commit.sql"));
    query_value(conn, "SELECT count(*) FROM schema_migrations WHERE name LIKE 'm2b%'", 0, NULL,
                value, sizeof value);
    assert_string_equal(value, "0");
    db_release(f->pool, conn);
}

typedef struct migrator {
    const char *conninfo;
    const migration *migs;
    pthread_barrier_t *go;
    int applied;
    kt_error err;
} migrator;

static void *migrate_thread(void *arg)
{
    migrator *m = arg;
    kt_error_clear(&m->err);
    m->applied = -2;
    PGconn *conn = db_connect(m->conninfo, &m->err);
    pthread_barrier_wait(m->go);
    if (conn)
        m->applied = migrate_apply(conn, m->migs, 3, &m->err);
    PQfinish(conn);
    return NULL;
}

static void concurrent_migrations_apply_each_once(void **state)
{
    fixture *f = *state;
    char value[32];
    kt_error err;
    /* The first one sleeps so that the two runs overlap: the loser waits on the lock. */
    const migration migs[] = {
        {"m3_001.sql", "SELECT pg_sleep(0.3); CREATE TABLE m3_a (x int);"},
        {"m3_002.sql", "CREATE TABLE m3_b (x int);"},
        {"m3_003.sql", "INSERT INTO m3_a SELECT generate_series(1, 10);"},
    };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    migrator m[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        m[i] = (migrator){pg_cluster_conninfo(f->cluster), migs, &go, 0, {0}};
        assert_int_equal(pthread_create(&th[i], NULL, migrate_thread, &m[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < 2; i++) {
        if (m[i].applied < 0)
            fprintf(stderr, "migrator %d: %s\n", i, m[i].err.message);
        assert_true(m[i].applied >= 0);
        assert_int_equal(m[i].err.code, KT_OK);
    }
    assert_int_equal(m[0].applied + m[1].applied, 3);

    PGconn *conn = db_acquire(f->pool, 1000, &err);
    assert_non_null(conn);
    query_value(conn, "SELECT count(*) FROM m3_a", 0, NULL, value, sizeof value);
    assert_string_equal(value, "10");
    query_value(conn, "SELECT count(*) FROM schema_migrations WHERE name LIKE 'm3\\_%'", 0, NULL,
                value, sizeof value);
    assert_string_equal(value, "3");
    db_release(f->pool, conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(start_creates_cluster_and_database),
        cmocka_unit_test(missing_binaries_is_a_config_error),
        cmocka_unit_test(root_needs_a_data_dir_postgres_can_reach),
        cmocka_unit_test(pool_runs_parameterised_queries),
        cmocka_unit_test(exec_handles_nulls_and_surfaces_errors),
        cmocka_unit_test(connect_failure_is_a_database_error),
        cmocka_unit_test(pool_times_out_when_exhausted),
        cmocka_unit_test(pool_reconnects_a_broken_connection),
        cmocka_unit_test(wait_notify_receives_and_times_out),
        cmocka_unit_test(migrations_apply_once_in_name_order),
        cmocka_unit_test(failing_migration_is_rolled_back_and_named),
        cmocka_unit_test(concurrent_migrations_apply_each_once),
        cmocka_unit_test(restart_reuses_server_and_keeps_data),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
