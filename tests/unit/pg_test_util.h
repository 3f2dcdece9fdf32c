/* pg_test_util — a throw-away embedded PostgreSQL for unit tests that need a database: one
 * cluster in a fresh /tmp folder per test group (initdb costs seconds), migrations applied, one
 * connection held; and small SQL helpers that fail the test on an error; and the jobs/trials
 * fixture of the store tests (pg_empty_jobs, pg_add_trials, pg_claim_one, pg_job_ll). Static
 * inline, for the store and worker tests. */
#ifndef KT_TESTS_PG_TEST_UTIL_H
#define KT_TESTS_PG_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db.h"
#include "store/migrate.h"
#include "store/pg_cluster.h"
#include "store/trial_store.h"

typedef struct pg_fixture {
    char root[64];
    char data_dir[128];
    pg_cluster *cluster;
    db_pool *pool;
    PGconn *c;
} pg_fixture;

static inline int pg_remove_entry(const char *path, const struct stat *st, int flag,
                                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Puts a test database into data_dir (tests/README.md, "Test databases"): kt_pg_template copies
 * its migrated template cluster there, making it first when needed; -1 (initdb then) when it
 * cannot. */
static inline int pg_copy_template(const char *data_dir)
{
#ifdef KT_BUILD_DIR
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/kt_pg_template' '%s'", KT_BUILD_DIR, data_dir);
    return system(cmd) == 0 ? 0 : -1;
#else
    (void)data_dir;
    return -1;
#endif
}

static inline int pg_group_setup(void **state)
{
    kt_error err;
    kt_error_clear(&err);
    pg_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->root, sizeof f->root, "/tmp/ktune-models-test-XXXXXX");
    if (!mkdtemp(f->root)) {
        free(f);
        return -1;
    }
    chmod(f->root, 0755); /* as root, the postgres user must traverse it */
    snprintf(f->data_dir, sizeof f->data_dir, "%s/data", f->root);
    int count = 0;
    const migration *migs = migrate_builtin(&count);
    setenv("KTUNE_PG_FSYNC", "off", 0); /* a throw-away cluster: no fsync */
    if (pg_copy_template(f->data_dir) < 0)
        fprintf(stderr, "group setup: no template cluster; initdb\n");
    f->cluster = pg_cluster_start(f->data_dir, &err);
    if (f->cluster)
        f->pool = db_pool_new(pg_cluster_conninfo(f->cluster), 2, &err);
    if (f->pool)
        f->c = db_acquire(f->pool, 5000, &err);
    if (!f->c || migrate_apply(f->c, migs, count, &err) < 0) {
        fprintf(stderr, "group setup: %s (hint: %s)\n", err.message, err.hint);
        if (f->c)
            db_release(f->pool, f->c);
        db_pool_free(f->pool);
        pg_cluster_stop(f->cluster);
        nftw(f->root, pg_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static inline int pg_group_teardown(void **state)
{
    pg_fixture *f = *state;
    db_release(f->pool, f->c);
    db_pool_free(f->pool);
    pg_cluster_stop(f->cluster);
    nftw(f->root, pg_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static inline void sql(PGconn *c, const char *text)
{
    kt_error err;
    kt_error_clear(&err);
    if (db_run(c, text, 0, NULL, &err) < 0)
        fail_msg("%s: %s", text, err.message);
}

static inline long long sql_ll(PGconn *c, const char *text)
{
    kt_error err;
    kt_error_clear(&err);
    PGresult *r = db_exec(c, text, 0, NULL, &err);
    if (!r || PQntuples(r) < 1)
        fail_msg("%s: %s", text, err.message);
    long long v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static inline void sql_text(PGconn *c, const char *text, char *out, size_t cap)
{
    kt_error err;
    kt_error_clear(&err);
    PGresult *r = db_exec(c, text, 0, NULL, &err);
    if (!r || PQntuples(r) < 1)
        fail_msg("%s: %s", text, err.message);
    snprintf(out, cap, "%s", PQgetisnull(r, 0, 0) ? "<null>" : PQgetvalue(r, 0, 0));
    PQclear(r);
}

/* The value of the SQL expression expr over job's row of jobs, as an integer. */
static inline long long pg_job_ll(PGconn *c, long long job, const char *expr)
{
    char text[256];
    snprintf(text, sizeof text, "SELECT %s FROM jobs WHERE id = %lld", expr, job);
    return sql_ll(c, text);
}

/* Empties best, trials and jobs: each test starts with no job and no trial (claims take the
 * oldest pending trial of any job). */
static inline void pg_empty_jobs(PGconn *c)
{
    sql(c, "DELETE FROM best");
    sql(c, "DELETE FROM trials");
    sql(c, "DELETE FROM jobs");
}

/* Inserts n pending trials of job: seqs and config ids 1..n, configs {"a": i}, device 'dev'. */
static inline void pg_add_trials(PGconn *c, long long job, int n)
{
    char text[256];
    for (int i = 1; i <= n; i++) {
        snprintf(text, sizeof text,
                 "INSERT INTO trials (job_id, seq, config_id, config, device) VALUES"
                 " (%lld, %d, %d, '{\"a\": %d}', 'dev')",
                 job, i, i, i);
        sql(c, text);
    }
}

/* Claims one trial as worker for device 'dev' (class 'class', toolchain 'tc'); fails the test when
 * none is claimed. The claim is a plain value (nothing to free). */
static inline trial_claim pg_claim_one(PGconn *c, const char *worker)
{
    const char *devices[] = {"dev"}, *classes[] = {"class"}, *toolchains[] = {"tc"};
    trial_claim_devices devs = {
        .names = devices, .classes = classes, .toolchains = toolchains, .n = 1};
    trial_claim claim;
    kt_error err;
    kt_error_clear(&err);
    memset(&claim, 0, sizeof claim);
    if (trial_store_claim(c, worker, &devs, &claim, &err) != 1)
        fail_msg("claim: %s", err.message);
    return claim;
}

#endif
