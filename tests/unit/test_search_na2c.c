/* Unit tests of search/na2c beyond the shared contract suite (test_search_strategies.c): its
 * training overhead per proposal on the 899,756-config GEMM tiling space (printed only; make bench
 * measures it), that it searches the tiling space through the paired x2 / /2 moves (the only moves
 * that stay valid there) from the paper's start, that training changes what the actor proposes,
 * that epsilon 1 leaves the actor out, the soft start of T, a reward without a time scale, and that
 * spaces without a usable move are still covered. (The start option itself: test_search.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/searcher.h"

#include "search_test_util.h"

/* ask + tell (training included) on the tiling space, batches of 4 as in the contract suite. */
static void overhead_on_tiling_space(void **state)
{
    (void)state;
    overhead_on_tiling("na2c", 2000, ", training included");
}

/* Best synthetic time found in n evaluations, mean over 5 seeds. */
static double mean_best(const char *name, space *sp, const char *options, int n)
{
    double sum = 0;
    json_t *opt = options ? json_loads(options, 0, NULL) : NULL;
    config_id *ids = malloc((size_t)n * sizeof *ids);
    trial_result *r = malloc((size_t)n * sizeof *r);
    assert_non_null(ids);
    assert_non_null(r);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        objective o = {sp, NULL, 0};
        searcher *s = searcher_new(name, sp, opt, seed, NULL);
        assert_non_null(s);
        assert_int_equal(drive(s, &o, ids, n, 1), n);
        evaluate(&o, ids, r, n);
        double best = INFINITY;
        for (int i = 0; i < n; i++)
            best = r[i].time_ms < best ? r[i].time_ms : best;
        sum += best;
        searcher_free(s);
    }
    free(ids);
    free(r);
    json_decref(opt);
    return sum / 5;
}

/* On the tiling space a single parameter can never move (the products are fixed), so a walk moves
 * only by doubling one tile factor and halving another; it must beat random sampling by far. */
static void searches_tiling_space_by_pair_moves(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    double q = mean_best("na2c", sp, NULL, 300), qr = mean_best("random", sp, NULL, 300);
    printf("na2c: best synthetic time on the tiling space after 300 evaluations %.2f (random %.2f,"
           " optimum 10)\n",
           q, qr);
    assert_true(q < qr - 5);
    /* Every proposal after the start s_0 comes from a walk: a pair move away from an earlier
     * proposal. */
    objective o = {sp, NULL, 0};
    enum { N = 200 };
    config_id ids[N], nb[512];
    searcher *s = searcher_new("na2c", sp, NULL, 3, NULL);
    assert_int_equal(drive(s, &o, ids, N, 1), N);
    int near = 0;
    for (int i = 1; i < N; i++) { /* ids[0] is s_0 (`initial` 0: no random ones) */
        int found = 0; /* the move is symmetric: look among ids[i]'s own pair neighbours */
        int m = space_neighbours(sp, ids[i], SPACE_NEIGHBOURS_PAIR_SCALE, nb, 512);
        for (int k = 0; k < m && !found; k++) {
            for (int j = 0; j < i && !found; j++)
                found = nb[k] == ids[j];
        }
        near += found;
    }
    printf("na2c: %d of %d walk proposals are a pair move from an earlier one\n", near, N - 1);
    assert_true(near >= (N - 1) * 9 / 10);
    searcher_free(s);
    space_free(sp);
}

/* With the policy alone choosing (epsilon 0), training changes the proposals: the actor learns. */
static void training_changes_the_policy(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    enum { N = 120 };
    config_id a[N], b[N];
    json_t *trained = json_loads("{\"epsilon\": 0}", 0, NULL);
    json_t *frozen = json_loads("{\"epsilon\": 0, \"train_steps\": 0}", 0, NULL);
    searcher *s = searcher_new("na2c", sp, trained, 5, NULL);
    searcher *t = searcher_new("na2c", sp, frozen, 5, NULL);
    assert_int_equal(drive(s, &o, a, N, 1), N);
    assert_int_equal(drive(t, &o, b, N, 1), N);
    /* Same start, same first episode (nothing learnt yet); then they part. */
    assert_memory_equal(a, b, (1 + 8) * sizeof a[0]);
    assert_memory_not_equal(a, b, N * sizeof a[0]);
    searcher_free(s);
    searcher_free(t);
    json_decref(trained);
    json_decref(frozen);
    space_free(sp);
}

/* Explicit spaces where no action is valid anywhere, and one of a single configuration: every
 * configuration once, then 0. */
static void covers_spaces_without_moves(void **state)
{
    (void)state;
    kt_error err;
    json_t *params = json_loads("[{\"name\":\"x\",\"values\":[0,1,2,3,4,5,6,7,8,9]},"
                                "{\"name\":\"y\",\"values\":[0,1,2,3,4,5,6,7,8,9]}]",
                                0, NULL);
    json_t *configs = json_loads("[[0,0],[3,7],[5,5],[9,9],[7,1]]", 0, NULL);
    space *sp = space_new_explicit(params, configs, &err);
    assert_non_null(sp);
    json_t *one_params = json_loads("[{\"name\":\"x\",\"values\":[4]}]", 0, NULL);
    space *one = space_new(one_params, NULL, NULL, NULL, &err);
    assert_non_null(one);
    space *spaces[2] = {sp, one};
    for (int k = 0; k < 2; k++) {
        uint64_t count = space_count(spaces[k]);
        objective o = {spaces[k], NULL, 2};
        config_id ids[16];
        json_t *opt = json_loads("{\"initial\": 1, \"batch\": 2}", 0, NULL);
        searcher *s = searcher_new("na2c", spaces[k], opt, 1, NULL);
        assert_int_equal(drive(s, &o, ids, 16, 1), (int)count);
        assert_distinct_valid(ids, count, count);
        assert_int_equal(searcher_ask(s, ids, 4), 0);
        searcher_free(s);
        json_decref(opt);
    }
    space_free(sp);
    space_free(one);
    json_decref(params);
    json_decref(configs);
    json_decref(one_params);
}

/* One ask for far more than a batch runs as many episodes as it takes, up to exhaustion. */
static void large_ask_runs_several_episodes(void **state)
{
    (void)state;
    space *sp = space_10k();
    enum { N = 1000 };
    config_id *ids = malloc(N * sizeof *ids);
    searcher *s = searcher_new("na2c", sp, NULL, 8, NULL);
    assert_int_equal(searcher_ask(s, ids, N), N);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_free(s);
    space_free(sp);
    /* On the 120-config space one ask takes everything, and the next finds nothing left. */
    sp = space_small();
    s = searcher_new("na2c", sp, NULL, 8, NULL);
    assert_int_equal(searcher_ask(s, ids, N), 120);
    assert_distinct_valid(ids, 120, 120);
    assert_int_equal(searcher_ask(s, ids, 1), 0);
    searcher_free(s);
    free(ids);
    space_free(sp);
}

/* Pair moves (one factor x2, another of the same dimension /2) between two configurations of the
 * tiling space: half the L1 distance of their log2 tile factors (each move changes two by one). */
static int pair_steps(const space *sp, config_id a, config_id b)
{
    int x[10], y[10], d = 0;
    assert_int_equal(space_decode(sp, a, x), 0);
    assert_int_equal(space_decode(sp, b, y), 0);
    for (int p = 0; p < 10; p++) /* values 1, 2, 4, ...: the index is the log2 */
        d += abs(x[p] - y[p]);
    assert_int_equal(d % 2, 0);
    return d / 2;
}

/* The soft start: the first episode walks soft_start (12) steps from s_0, so its batch of 8 reaches
 * states more than T = 3 pair moves away; without it (soft_start 0) none is. */
static void soft_start_walks_farther(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    const char *opts[2] = {"{}", "{\"soft_start\": 0}"};
    for (int k = 0; k < 2; k++) {
        json_t *o = json_loads(opts[k], 0, NULL);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            config_id ids[9];
            searcher *s = searcher_new("na2c", sp, o, seed, NULL);
            assert_non_null(s);
            assert_int_equal(searcher_ask(s, ids, 1), 1);
            assert_true(ids[0] == space_count(sp) - 1); /* the paper's s_0 */
            trial_result r;
            trial_result_init(&r);
            r.status = TRIAL_OK;
            r.time_ms = 100;
            searcher_tell(s, ids, &r, 1);
            assert_int_equal(searcher_ask(s, ids + 1, 8), 8);
            int far = 0;
            for (int i = 1; i <= 8; i++) {
                int d = pair_steps(sp, ids[0], ids[i]);
                assert_true(d >= 1 && d <= 8);
                far = d > far ? d : far;
            }
            if (k == 0)
                assert_true(far > 3);
            else
                assert_true(far <= 3);
            searcher_free(s);
        }
        json_decref(o);
    }
    space_free(sp);
}

/* epsilon 1, the ablation without a learnt policy: every action is random, so the proposals do
 * not depend on how the networks learn; with epsilon 0.3 they do (the assertion can fail). */
static void epsilon_one_leaves_the_actor_out(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 11};
    enum { N = 300 };
    config_id a[N], b[N];
    /* epsilon 1: nothing the networks are or learn (rates, steps, critic) moves a proposal;
     * epsilon 0.3: the same changes do, and so does the critic alone (none: A = r) */
    const char *pairs[3][2] = {
        {"{\"epsilon\": 1, \"actor_lr\": 0.0001, \"critic_lr\": 0.0001}",
         "{\"epsilon\": 1, \"actor_lr\": 0.5, \"critic_lr\": 0.5, \"train_steps\": 16, "
         "\"critic\": \"none\"}"},
        {"{\"epsilon\": 0.3, \"actor_lr\": 0.0001, \"critic_lr\": 0.0001}",
         "{\"epsilon\": 0.3, \"actor_lr\": 0.5, \"critic_lr\": 0.5, \"train_steps\": 16}"},
        {"{\"epsilon\": 0.3, \"actor_lr\": 0.05}",
         "{\"epsilon\": 0.3, \"actor_lr\": 0.05, \"critic\": \"none\"}"},
    };
    for (int k = 0; k < 3; k++) {
        json_t *x = json_loads(pairs[k][0], 0, NULL), *y = json_loads(pairs[k][1], 0, NULL);
        searcher *s = searcher_new("na2c", sp, x, 4, NULL),
                 *t = searcher_new("na2c", sp, y, 4, NULL);
        assert_int_equal(drive(s, &o, a, N, 4), N);
        assert_int_equal(drive(t, &o, b, N, 4), N);
        if (k == 0)
            assert_memory_equal(a, b, sizeof a);
        else
            assert_memory_not_equal(a, b, sizeof a);
        assert_distinct_valid(a, N, space_count(sp));
        searcher_free(s);
        searcher_free(t);
        json_decref(x);
        json_decref(y);
    }
    space_free(sp);
}

/* The reward t_0 / t (the paper's 1/T_cost times the run's first successful time): times all
 * scaled by 1024 (exact in binary) leave every reward, so every proposal, unchanged. */
static void reward_has_no_time_scale(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 6};
    enum { N = 200 };
    config_id ids[2][N];
    trial_result r[4];
    for (int k = 0; k < 2; k++) {
        json_t *opt = json_loads("{\"epsilon\": 0}", 0, NULL);
        searcher *s = searcher_new("na2c", sp, opt, 3, NULL);
        for (int total = 0; total < N; total += 4) {
            assert_int_equal(searcher_ask(s, ids[k] + total, 4), 4);
            evaluate(&o, ids[k] + total, r, 4);
            for (int i = 0; i < 4 && k == 1; i++)
                r[i].time_ms *= 1024;
            searcher_tell(s, ids[k] + total, r, 4);
        }
        searcher_free(s);
        json_decref(opt);
    }
    assert_memory_equal(ids[0], ids[1], sizeof ids[0]);
    space_free(sp);
}

/* A failed s_0 is no start (J = false in the paper): while every told result failed, proposals are
 * random (none a neighbour of s_0); once one measures, the walks start from it. */
static void failed_start_restarts_at_random(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    config_id ids[16], nb[512];
    trial_result r;
    trial_result_init(&r);
    searcher *s = searcher_new("na2c", sp, NULL, 2, NULL);
    assert_int_equal(searcher_ask(s, ids, 1), 1);
    int m = space_neighbours(sp, ids[0], SPACE_NEIGHBOURS_PAIR_SCALE, nb, 512);
    r.status = TRIAL_RUNTIME_ERROR;
    r.time_ms = NAN;
    for (int i = 0; i < 4; i++) {
        if (i > 0)
            assert_int_equal(searcher_ask(s, ids + i, 1), 1);
        for (int k = 0; k < m; k++)
            assert_true(nb[k] != ids[i] || i == 0);
        if (i < 3)
            searcher_tell(s, ids + i, &r, 1);
    }
    r.status = TRIAL_OK; /* ids[3] measures: the next episode walks from it */
    r.time_ms = 5;
    searcher_tell(s, ids + 3, &r, 1);
    assert_int_equal(searcher_ask(s, ids + 4, 1), 1);
    m = space_neighbours(sp, ids[3], SPACE_NEIGHBOURS_PAIR_SCALE, nb, 512);
    int found = 0;
    for (int k = 0; k < m; k++)
        found |= nb[k] == ids[4];
    assert_true(found);
    assert_distinct_valid(ids, 5, space_count(sp));
    searcher_free(s);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overhead_on_tiling_space),
        cmocka_unit_test(searches_tiling_space_by_pair_moves),
        cmocka_unit_test(training_changes_the_policy),
        cmocka_unit_test(covers_spaces_without_moves),
        cmocka_unit_test(large_ask_runs_several_episodes),
        cmocka_unit_test(soft_start_walks_farther),
        cmocka_unit_test(epsilon_one_leaves_the_actor_out),
        cmocka_unit_test(reward_has_no_time_scale),
        cmocka_unit_test(failed_start_restarts_at_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
