/* store/job_store's fair shares of the job slots (issue 26, break 4) against a real embedded
 * PostgreSQL: job_store_claim takes the caller with the fewest running jobs first, oldest first
 * within a caller, counting the jobs every runner of the database drives; job_store_yield hands
 * back my newest job of a caller that holds at least two more slots than a caller with a job
 * waiting long enough, and nothing otherwise. Runners are identities of several processes sharing
 * the one database. */
#include "pg_test_util.h"

#include "store/job_store.h"

static const runner_identity R1 = {"hostA:1:100", "hostA", 1};
static const runner_identity R2 = {"hostB:2:200", "hostB", 2};

/* A job of submitter (NULL: none) queued age_s seconds ago; driven by runner (NULL: queued). */
static long long add_job(PGconn *c, const char *submitter, const runner_identity *runner, int age_s)
{
    char text[1024], who[64];
    snprintf(who, sizeof who, submitter ? "'%s'" : "NULL", submitter);
    snprintf(text, sizeof text,
             "INSERT INTO jobs (kernel, device, device_class, kernel_hash, problem, problem_key,"
             " toolchain, strategy, seed, budget_evaluations, batch_size, space_size, status,"
             " runner, runner_host, runner_pid, runner_heartbeat, started_at, submitter,"
             " created_at, updated_at) VALUES ('k', 'dev', 'class', 'h', '{\"n\": 1}',"
             " '{\"n\":1}', 'tc', 'random', 1, 10, 4, 100, %s, %s%s%s, %s, %s, %s, %s, %s,"
             " now() - make_interval(secs => %d), now() - make_interval(secs => %d))"
             " RETURNING id",
             runner ? "'running'" : "'queued'", runner ? "'" : "", runner ? runner->id : "NULL",
             runner ? "'" : "", runner ? "'hostA'" : "NULL", runner ? "1" : "NULL",
             runner ? "now()" : "NULL", runner ? "now()" : "NULL", who, age_s, age_s);
    return sql_ll(c, text);
}

/* Claims up to max jobs as me; returns how many, their ids in ids (ascending order of the rows). */
static int claim(PGconn *c, const runner_identity *me, int max, long long *ids)
{
    job_row rows[8];
    kt_error err;
    kt_error_clear(&err);
    assert_true(max <= 8);
    int n = job_store_claim(c, me, max, JOB_MAX_START_ATTEMPTS, rows, &err);
    if (n < 0)
        fail_msg("claim: %s", err.message);
    for (int i = 0; i < n; i++) {
        ids[i] = rows[i].id;
        job_row_release(&rows[i]);
    }
    return n;
}

static long long yield(PGconn *c, const runner_identity *me, double wait_s)
{
    long long id = -1;
    kt_error err;
    kt_error_clear(&err);
    if (job_store_yield(c, me, wait_s, &id, &err) < 0)
        fail_msg("yield: %s", err.message);
    return id;
}

static int has(const long long *ids, int n, long long id)
{
    for (int i = 0; i < n; i++) {
        if (ids[i] == id)
            return 1;
    }
    return 0;
}

static long long driven(PGconn *c, const char *submitter)
{
    char text[256];
    snprintf(text, sizeof text,
             "SELECT count(*) FROM jobs WHERE status = 'running' AND runner IS NOT NULL"
             " AND submitter = '%s'",
             submitter);
    return sql_ll(c, text);
}

/* A's four older jobs and B's newer one, two slots: A's oldest and B's, not A's two oldest. */
static void claim_takes_each_callers_oldest_first(void **state)
{
    pg_fixture *f = *state;
    pg_empty_jobs(f->c);
    long long a[4];
    for (int i = 0; i < 4; i++)
        a[i] = add_job(f->c, "token:1", NULL, 60 - i);
    long long b = add_job(f->c, "token:2", NULL, 10);
    long long ids[8];
    assert_int_equal(claim(f->c, &R1, 2, ids), 2);
    assert_true(has(ids, 2, a[0]));
    assert_true(has(ids, 2, b));
    /* Then A's next oldest. */
    assert_int_equal(claim(f->c, &R1, 1, ids), 1);
    assert_int_equal(ids[0], a[1]);
}

/* The jobs another process drives count: A drives two on R2, so R1's one slot goes to B. Jobs
 * with no submitter (before sql/008) are one more caller. */
static void claim_counts_every_runners_jobs(void **state)
{
    pg_fixture *f = *state;
    pg_empty_jobs(f->c);
    add_job(f->c, "token:1", &R2, 120);
    add_job(f->c, "token:1", &R2, 110);
    long long a_queued = add_job(f->c, "token:1", NULL, 100);
    long long legacy = add_job(f->c, NULL, NULL, 50);
    long long b = add_job(f->c, "token:2", NULL, 10);
    long long ids[8];
    assert_int_equal(claim(f->c, &R1, 2, ids), 2);
    assert_true(has(ids, 2, legacy));
    assert_true(has(ids, 2, b));
    assert_int_equal(claim(f->c, &R1, 1, ids), 1);
    assert_int_equal(ids[0], a_queued);
}

/* R1 is full with A's four jobs and B's job has waited: R1 hands back A's newest, the claim gives
 * B the slot, and then nothing moves (3 against 1 with only A waiting). */
static void yield_hands_back_to_a_waiting_caller(void **state)
{
    pg_fixture *f = *state;
    pg_empty_jobs(f->c);
    long long a[4];
    for (int i = 0; i < 4; i++)
        a[i] = add_job(f->c, "token:1", &R1, 60 - i);
    long long b = add_job(f->c, "token:2", NULL, 5);
    assert_int_equal(yield(f->c, &R2, 1.0), 0); /* R2 drives none of them */
    assert_int_equal(yield(f->c, &R1, 1.0), a[3]);
    assert_int_equal(pg_job_ll(f->c, a[3], "(status = 'running' AND runner IS NULL)::int"), 1);
    long long ids[8];
    assert_int_equal(claim(f->c, &R1, 1, ids), 1);
    assert_int_equal(ids[0], b);
    assert_int_equal(driven(f->c, "token:1"), 3);
    assert_int_equal(yield(f->c, &R1, 1.0), 0);
    /* Once B's job ended, A takes the slot back: its job handed back, resumed. */
    sql(f->c, "UPDATE jobs SET status = 'succeeded', runner = NULL WHERE submitter = 'token:2'");
    assert_int_equal(claim(f->c, &R1, 1, ids), 1);
    assert_int_equal(ids[0], a[3]);
}

/* Nothing moves for a job queued a moment ago (a runner with a free slot takes it first), nor for
 * a difference of one slot (a swap would only change who waits). */
static void yield_waits_and_needs_a_difference_of_two(void **state)
{
    pg_fixture *f = *state;
    pg_empty_jobs(f->c);
    for (int i = 0; i < 4; i++)
        add_job(f->c, "token:1", &R1, 60 - i);
    add_job(f->c, "token:2", NULL, 0);
    assert_int_equal(yield(f->c, &R1, 30.0), 0);
    assert_true(yield(f->c, &R1, 0.0) > 0);

    pg_empty_jobs(f->c);
    add_job(f->c, "token:1", &R1, 60);
    add_job(f->c, "token:1", &R1, 50);
    add_job(f->c, "token:2", &R1, 40);
    add_job(f->c, "token:2", NULL, 30);
    assert_int_equal(yield(f->c, &R1, 1.0), 0);
}

/* Two processes full of A's jobs: each may hand one back; the claims that follow give B a slot
 * and A the rest, so A ends with one job fewer, not two. */
static void yield_across_processes(void **state)
{
    pg_fixture *f = *state;
    pg_empty_jobs(f->c);
    add_job(f->c, "token:1", &R1, 60);
    long long a2 = add_job(f->c, "token:1", &R1, 50);
    add_job(f->c, "token:1", &R2, 40);
    long long a4 = add_job(f->c, "token:1", &R2, 30);
    long long b = add_job(f->c, "token:2", NULL, 5);
    long long y1 = yield(f->c, &R1, 1.0), y2 = yield(f->c, &R2, 1.0);
    assert_int_equal(y1, a2);
    assert_int_equal(y2, a4);
    long long ids[8];
    assert_int_equal(claim(f->c, &R1, 1, ids), 1);
    assert_int_equal(ids[0], b);
    assert_int_equal(claim(f->c, &R2, 1, ids), 1);
    assert_int_equal(ids[0], a2); /* A's oldest waiting */
    assert_int_equal(driven(f->c, "token:1"), 3);
    assert_int_equal(driven(f->c, "token:2"), 1);
    assert_int_equal(yield(f->c, &R1, 0.0), 0);
    assert_int_equal(yield(f->c, &R2, 0.0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claim_takes_each_callers_oldest_first),
        cmocka_unit_test(claim_counts_every_runners_jobs),
        cmocka_unit_test(yield_hands_back_to_a_waiting_caller),
        cmocka_unit_test(yield_waits_and_needs_a_difference_of_two),
        cmocka_unit_test(yield_across_processes),
    };
    return cmocka_run_group_tests(tests, pg_group_setup, pg_group_teardown);
}
