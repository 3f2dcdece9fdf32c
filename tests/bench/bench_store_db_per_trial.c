/* Bench of the database cost per trial as the tables grow (issue 11, "Database cost per trial flat
 * as data grows"): the per-trial work of a job's life — trial_store_insert_batch (a batch of 8),
 * trial_store_claim and trial_store_complete for each trial, trial_store_load of the batch — with
 * the real store functions on a real PostgreSQL (embedded, in a temporary folder), in one run, at
 * two sizes: two databases of the one server, "ktune" with 1,000 trials in its tables and
 * "ktune_large" with 200,000 (argv[1] sets another large size), filled by SQL generate_series
 * (tests/bench/fill_trials.sql: finished jobs, trials and best rows of realistic shape) and VACUUM
 * ANALYZEd as autovacuum would. Rounds of 96 trials (a fresh job each) alternate between the two
 * databases, so that changes of the machine's load hit both sizes alike. Prints ms per trial per
 * operation (median and fastest round) at each size and the ratio large/small; the buffer accesses
 * per trial at each size (pg_stat_database), a measure of the database's work that other load on
 * the machine does not change; and the plans of the per-trial queries at the large size. Asserts
 * nothing (a figure, not a test). One to two minutes. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/clock.h"
#include "core/file.h"
#include "core/trial.h"
#include "store/db.h"
#include "store/job_store.h"
#include "store/migrate.h"
#include "store/pg_auth.h"
#include "store/pg_cluster.h"
#include "store/trial_store.h"

#define SMALL_TRIALS    1000
#define LARGE_TRIALS    200000
#define PER_JOB         1000 /* trials per filled job */
#define BATCH           8    /* the driver's default batch */
#define MEASURED_TRIALS 96   /* trials timed per round (a fresh job each), a multiple of BATCH */
#define ROUNDS          15 /* rounds per size, alternating sizes; the median and fastest reported */
#define DEVICE          "replay:bench"
#define WORKER          "bench:1:1/0"

typedef struct timing {
    double insert, claim, complete, load; /* seconds, summed over a round */
} timing;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static int run_sql(PGconn *c, const char *text)
{
    kt_error err;
    kt_error_clear(&err);
    if (db_run(c, text, 0, NULL, &err) < 0) {
        fprintf(stderr, "bench: %s: %s\n", text, err.message);
        return -1;
    }
    return 0;
}

static long long sql_ll(PGconn *c, const char *text)
{
    kt_error err;
    kt_error_clear(&err);
    PGresult *r = db_exec(c, text, 0, NULL, &err);
    long long v = r && PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    if (!r)
        fprintf(stderr, "bench: %s: %s\n", text, err.message);
    PQclear(r);
    return v;
}

/* Adds n trials in finished jobs of PER_JOB trials (fewer when n < PER_JOB). */
static int fill(PGconn *c, long long n, int tag)
{
    char q[160];
    long long per = n < PER_JOB ? n : PER_JOB;
    snprintf(q, sizeof q, "SELECT pg_temp.ktune_bench_fill(%lld, %lld, %d)", n / per, per, tag);
    if (sql_ll(c, q) != (n / per) * per)
        return -1;
    return run_sql(c, "VACUUM (ANALYZE) jobs, trials, best");
}

/* Buffer accesses (shared blocks hit or read) of the database so far, as the statistics collector
 * has them once this session flushed its own counters: a measure of the database's work that the
 * machine's other load does not change, unlike time. Autovacuum is off in the bench's databases
 * (main), so only the bench's own sessions count. -1 on error. */
static long long blocks_touched(PGconn *c)
{
    if (run_sql(c, "SELECT pg_stat_force_next_flush()") < 0 ||
        run_sql(c, "SELECT pg_stat_clear_snapshot()") < 0)
        return -1;
    return sql_ll(c, "SELECT blks_hit + blks_read FROM pg_stat_database"
                     " WHERE datname = current_database()");
}

/* A running job of its own problem, as the runner has it after job_store_claim. */
static long long new_job(PGconn *c, int n)
{
    char problem_key[64];
    snprintf(problem_key, sizeof problem_key, "K=1024,M=%d,N=1024", 900000000 + n);
    json_t *problem = json_pack("{s:i,s:i,s:i}", "M", 900000000 + n, "N", 1024, "K", 1024);
    json_t *options = json_object();
    job_spec spec = {
        .key = {.kernel = "gemm",
                .device = DEVICE,
                .device_class = "bench-gpu",
                .kernel_hash = "benchhash",
                .problem_key = problem_key,
                .toolchain = "recorded"},
        .problem = problem,
        .strategy = "random",
        .options = options,
        .seed = (uint64_t)n,
        .budget_evaluations = 1000000,
        .batch_size = BATCH,
        .space_size = 1000000,
        .history = "none",
    };
    long long id = -1;
    kt_error err;
    kt_error_clear(&err);
    if (job_store_create(c, &spec, &id, &err) < 0)
        fprintf(stderr, "bench: job_store_create: %s\n", err.message);
    json_decref(problem);
    json_decref(options);
    char q[128];
    snprintf(q, sizeof q, "UPDATE jobs SET status = 'running', started_at = now() WHERE id = %lld",
             id);
    return id > 0 && run_sql(c, q) == 0 ? id : -1;
}

/* One round: MEASURED_TRIALS trials of a fresh job, in batches, each step timed. */
static int round_once(PGconn *c, int round_no, timing *t)
{
    kt_error err;
    kt_error_clear(&err);
    memset(t, 0, sizeof *t);
    long long job = new_job(c, round_no);
    if (job < 0)
        return -1;
    const char *devices[] = {DEVICE}, *classes[] = {"bench-gpu"}, *toolchains[] = {"recorded"};
    trial_claim_devices devs = {
        .names = devices, .classes = classes, .toolchains = toolchains, .n = 1};
    int rc = -1;
    for (int first = 1; first <= MEASURED_TRIALS; first += BATCH) {
        config_id ids[BATCH];
        json_t *configs[BATCH];
        for (int i = 0; i < BATCH; i++) {
            int s = first + i;
            ids[i] = (config_id)(s * 7 + 3);
            configs[i] =
                json_pack("{s:i,s:i,s:i,s:i}", "block_size_x", 16 * (1 + s % 32), "block_size_y",
                          1 + s % 8, "tile_size", 1 + s % 4, "use_shared", s % 2);
        }
        double t0 = kt_clock_s();
        int ins = trial_store_insert_batch(c, job, DEVICE, first, ids, configs, BATCH, &err);
        t->insert += kt_clock_s() - t0;
        for (int i = 0; i < BATCH; i++)
            json_decref(configs[i]);
        if (ins < 0)
            goto fail;
        for (int i = 0; i < BATCH; i++) {
            trial_claim claim;
            t0 = kt_clock_s();
            int got = trial_store_claim(c, WORKER, &devs, &claim, &err);
            t->claim += kt_clock_s() - t0;
            if (got != 1) {
                if (got == 0)
                    kt_error_set(&err, KT_ERR_INTERNAL, "no pending trial to claim");
                goto fail;
            }
            trial_result res;
            trial_result_init(&res);
            res.status = (claim.cid % 20) ? TRIAL_OK : TRIAL_COMPILE_ERROR;
            res.time_ms = 1.0 + (double)(claim.cid % 997) / 100.0;
            res.repeats = 7;
            res.compile_ms = 250;
            res.measure_ms = 100;
            res.noise_cv = 0.01;
            t0 = kt_clock_s();
            int done = trial_store_complete(c, &claim, WORKER, &res, &err);
            t->complete += kt_clock_s() - t0;
            if (done != 1) {
                if (done == 0)
                    kt_error_set(&err, KT_ERR_INTERNAL, "claim lost");
                goto fail;
            }
        }
        trial_row *rows = NULL;
        int n = 0;
        t0 = kt_clock_s();
        int ld = trial_store_load(c, job, first - 1, &rows, &n, &err);
        t->load += kt_clock_s() - t0;
        for (int i = 0; i < n; i++)
            trial_row_release(&rows[i]);
        free(rows);
        if (ld < 0 || n != BATCH) {
            if (ld == 0)
                kt_error_set(&err, KT_ERR_INTERNAL, "loaded %d trials, wanted %d", n, BATCH);
            goto fail;
        }
    }
    char q[160];
    snprintf(q, sizeof q,
             "UPDATE jobs SET status = 'succeeded', stop_reason = 'budget', finished_at = now()"
             " WHERE id = %lld",
             job);
    rc = run_sql(c, q);
    goto out;
fail:
    fprintf(stderr, "bench: round %d: %s\n", round_no, err.message);
out:
    return rc;
}

static double total(const timing *t)
{
    return t->insert + t->claim + t->complete + t->load;
}

static int cmp_total(const void *a, const void *b)
{
    double x = total(a), y = total(b);
    return (x > y) - (x < y);
}

/* ROUNDS rounds on each database, alternating (small, large, large, small, ...) so that a change
 * of the machine's load during the run hits both sizes alike; the median round of each. */
static int measure(PGconn *small_c, PGconn *large_c, int *round_no, timing *small, timing *large,
                   timing *small_min, timing *large_min)
{
    timing s_all[ROUNDS], l_all[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        PGconn *first = i % 2 ? large_c : small_c, *second = i % 2 ? small_c : large_c;
        timing *t1 = i % 2 ? &l_all[i] : &s_all[i], *t2 = i % 2 ? &s_all[i] : &l_all[i];
        if (round_once(first, (*round_no)++, t1) < 0 || round_once(second, (*round_no)++, t2) < 0)
            return -1;
    }
    qsort(s_all, ROUNDS, sizeof s_all[0], cmp_total);
    qsort(l_all, ROUNDS, sizeof l_all[0], cmp_total);
    *small = s_all[ROUNDS / 2];
    *large = l_all[ROUNDS / 2];
    *small_min = s_all[0];
    *large_min = l_all[0];
    return 0;
}

static void print_row(const char *what, long long from, long long to, const timing *t)
{
    double k = 1000.0 / MEASURED_TRIALS;
    char range[48];
    snprintf(range, sizeof range, "%lld-%lld", from, to);
    printf("%-6s %15s  %8.3f  %8.3f  %8.3f  %8.3f  %9.3f\n", what, range, t->insert * k,
           t->claim * k, t->complete * k, t->load * k, total(t) * k);
}

static void explain(PGconn *c, const char *title, const char *query)
{
    kt_error err;
    kt_error_clear(&err);
    char q[1024];
    snprintf(q, sizeof q, "EXPLAIN %s", query);
    PGresult *r = db_exec(c, q, 0, NULL, &err);
    printf("  %s\n", title);
    for (int i = 0; r && i < PQntuples(r); i++)
        printf("    %s\n", PQgetvalue(r, i, 0));
    PQclear(r);
}

/* Opens database dbname of the cluster (created when absent), migrated, with the fill function. */
static PGconn *open_db(pg_cluster *cluster, PGconn *admin, const char *dbname, db_pool **pool,
                       const char *fill_sql, kt_error *err)
{
    char info[1024], q[128];
    if (admin) {
        snprintf(q, sizeof q, "CREATE DATABASE %s OWNER ktune", dbname);
        if (run_sql(admin, q) < 0)
            return NULL;
    }
    /* libpq takes the last of a repeated keyword: the cluster's conninfo with another dbname. */
    snprintf(info, sizeof info, "%s dbname=%s", pg_cluster_conninfo(cluster), dbname);
    *pool = db_pool_new(info, 1, err);
    PGconn *c = *pool ? db_acquire(*pool, 5000, err) : NULL;
    int n_migs = 0;
    const migration *migs = migrate_builtin(&n_migs);
    if (c && (migrate_apply(c, migs, n_migs, err) < 0 || run_sql(c, fill_sql) < 0 ||
              run_sql(c, "ALTER TABLE trials SET (autovacuum_enabled = false)") < 0 ||
              run_sql(c, "ALTER TABLE jobs SET (autovacuum_enabled = false)") < 0 ||
              run_sql(c, "ALTER TABLE best SET (autovacuum_enabled = false)") < 0)) {
        db_release(*pool, c);
        c = NULL;
    }
    return c;
}

int main(int argc, char **argv)
{
    long long large = argc > 1 ? strtoll(argv[1], NULL, 10) : LARGE_TRIALS;
    if (large < 10 * SMALL_TRIALS || large > 100000000) {
        fprintf(stderr, "usage: %s [large trial count, 10000..100000000]\n", argv[0]);
        return 2;
    }
    int rc = 1, round_no = 0;
    kt_error err;
    kt_error_clear(&err);
    char root[64], data[96], sql_path[512];
    pg_cluster *cluster = NULL;
    db_pool *small_pool = NULL, *large_pool = NULL;
    PGconn *sc = NULL, *lc = NULL;
    char *fill_sql = NULL;
    snprintf(root, sizeof root, "/tmp/ktune-bench-db-XXXXXX");
    if (!mkdtemp(root) || chmod(root, 0755) != 0) {
        perror("bench: mkdtemp");
        return 1;
    }
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(sql_path, sizeof sql_path, "%s/tests/bench/fill_trials.sql", KT_SOURCE_DIR);
    size_t fill_len = 0;
    fill_sql = kt_file_read_all(sql_path, 1 << 20, &fill_len, &err);
    if (fill_sql)
        cluster = pg_cluster_start(data, &err);
    /* Two databases of one server: "ktune" holds about SMALL_TRIALS trials, "ktune_large" the
     * large count; rounds alternate between them. */
    if (cluster)
        sc = open_db(cluster, NULL, "ktune", &small_pool, fill_sql, &err);
    /* The service role may not create databases: the cluster's superuser does, for it. */
    char admin_secret[PG_AUTH_SECRET_SIZE], admin_info[1024], secret_path[160];
    PGconn *admin = NULL;
    snprintf(secret_path, sizeof secret_path, "%s" PG_AUTH_ADMIN_FILE, data);
    if (sc && pg_auth_secret(secret_path, 0, admin_secret, sizeof admin_secret, &err) == 0) {
        snprintf(admin_info, sizeof admin_info,
                 "%s dbname=postgres user=" PG_AUTH_ADMIN_ROLE " password=%s",
                 pg_cluster_conninfo(cluster), admin_secret);
        admin = PQconnectdb(admin_info);
        if (PQstatus(admin) != CONNECTION_OK)
            kt_error_set(&err, KT_ERR_DATABASE, "admin connection: %s", PQerrorMessage(admin));
        else
            lc = open_db(cluster, admin, "ktune_large", &large_pool, fill_sql, &err);
    }
    if (admin)
        PQfinish(admin);
    if (!sc || !lc) {
        fprintf(stderr, "bench: setup: %s (hint: %s)\n", err.message, err.hint);
        goto out;
    }
    timing warm, small, big, small_min, big_min;
    /* A warm-up round on each first (connection plans, caches), unreported; it counts in the
     * small size's trials. */
    if (round_once(sc, round_no++, &warm) < 0 || round_once(lc, round_no++, &warm) < 0)
        goto out;
    double t0 = kt_clock_s();
    if (fill(sc, SMALL_TRIALS - MEASURED_TRIALS, 1) < 0 || fill(lc, large - MEASURED_TRIALS, 2) < 0)
        goto out;
    double fill_s = kt_clock_s() - t0;
    long long s_from = sql_ll(sc, "SELECT count(*) FROM trials");
    long long l_from = sql_ll(lc, "SELECT count(*) FROM trials");
    printf("database time per trial (ms): insert_batch/%d + claim + complete + load/%d; rounds of "
           "%d trials (a fresh job each), %d per size alternating\n",
           BATCH, BATCH, MEASURED_TRIALS, ROUNDS);
    long long s_blocks = blocks_touched(sc), l_blocks = blocks_touched(lc);
    if (measure(sc, lc, &round_no, &small, &big, &small_min, &big_min) < 0)
        goto out;
    s_blocks = blocks_touched(sc) - s_blocks;
    l_blocks = blocks_touched(lc) - l_blocks;
    long long s_to = sql_ll(sc, "SELECT count(*) FROM trials");
    long long l_to = sql_ll(lc, "SELECT count(*) FROM trials");
    printf("median round:\n");
    printf("%-6s %15s  %8s  %8s  %8s  %8s  %9s\n", "size", "trials in tables", "insert", "claim",
           "complete", "load", "total");
    print_row("small", s_from, s_to, &small);
    print_row("large", l_from, l_to, &big);
    printf("ratio large/small: insert %.2f, claim %.2f, complete %.2f, load %.2f, total %.2f\n",
           big.insert / small.insert, big.claim / small.claim, big.complete / small.complete,
           big.load / small.load, total(&big) / total(&small));
    double per = (double)ROUNDS * MEASURED_TRIALS;
    printf("buffer accesses per trial (pg_stat_database blks_hit + blks_read over all rounds; "
           "independent of the machine's load): small %.1f, large %.1f, ratio %.2f\n",
           (double)s_blocks / per, (double)l_blocks / per, (double)l_blocks / (double)s_blocks);
    printf("fastest round (least disturbed by other load on the machine):\n");
    printf("%-6s %15s  %8s  %8s  %8s  %8s  %9s\n", "size", "trials in tables", "insert", "claim",
           "complete", "load", "total");
    print_row("small", s_from, s_to, &small_min);
    print_row("large", l_from, l_to, &big_min);
    printf("ratio large/small: total %.2f\n", total(&big_min) / total(&small_min));
    printf("(filled %lld trials in %.1f s with SQL; large tables: %lld jobs, %lld best rows)\n",
           s_from + l_from - 2 * MEASURED_TRIALS, fill_s, sql_ll(lc, "SELECT count(*) FROM jobs"),
           sql_ll(lc, "SELECT count(*) FROM best"));
    printf("plans at %lld trials:\n", l_from);
    explain(lc, "claim (trial_store_claim's pick)",
            "SELECT pt.id FROM trials pt JOIN jobs j ON j.id = pt.job_id WHERE pt.status ="
            " 'pending' AND (pt.device, j.device_class, j.toolchain) IN (SELECT d->>0, d->>1,"
            " d->>2 FROM jsonb_array_elements('[[\"" DEVICE "\", \"bench-gpu\", \"recorded\"]]'"
            "::jsonb) d) ORDER BY pt.id LIMIT 1 FOR UPDATE OF pt SKIP LOCKED");
    explain(lc, "load (trial_store_load)",
            "SELECT seq FROM trials WHERE job_id = 5 AND seq > 8 ORDER BY seq");
    explain(lc, "best offer's conflict target (best_store_offer)",
            "SELECT 1 FROM best WHERE kernel = 'gemm' AND device_class = 'bench-gpu' AND"
            " kernel_hash = 'benchhash' AND toolchain = 'recorded' AND problem_key = 'x'");
    rc = 0;
out:
    if (sc)
        db_release(small_pool, sc);
    if (lc)
        db_release(large_pool, lc);
    db_pool_free(small_pool);
    db_pool_free(large_pool);
    pg_cluster_stop(cluster);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fill_sql);
    return rc;
}
