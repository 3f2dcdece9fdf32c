/* Unit tests of the xgb strategy, AutoTVM's XGBTuner: the settings that can be observed. The first
 * plan_size (64) proposals are random (the same whatever the told results); fits come exactly once
 * plan_size x (fits + 1) trials are told with a success (also catching up after a run of
 * failures); the plan is proposed in order with its last floor(0.05 x 64) = 3 entries random; the
 * annealing walk changes exactly one parameter group on the GEMM tiling space (a whole new m, k or
 * n factorisation) and one parameter on an explicit space; a fit stops early (20 rounds after the
 * best training a-recall) well before 8000 rounds; the a-recall metric on hand-computed cases;
 * determinism and no repeats; the model's plan beats the random first batch; every trial failing
 * never fits; the kept pre-issue-15 variant xgb_local learns too. The per-proposal overhead on the
 * GEMM tiling space is printed. (The shared contract — valid, no repeats, determinism, replay — is
 * in test_search_strategies.c.) The test drives searcher_xgb_vtable directly where it reads the
 * state (search/xgb_impl.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "search/searcher.h"
#include "search/xgb_impl.h"

#include "search_test_util.h"

static searcher *xgb_new(const space *sp, const char *options, uint64_t seed)
{
    json_t *o = options ? json_loads(options, 0, NULL) : NULL;
    kt_error err;
    searcher *s = searcher_new("xgb", sp, o, seed, &err);
    if (!s)
        fail_msg("searcher_new: %s", err.message);
    json_decref(o);
    return s;
}

/* The strategy's own state, for the tests that read it. */
static xgb_state *state_new(const space *sp, const char *options, uint64_t seed)
{
    json_t *o = options ? json_loads(options, 0, NULL) : NULL;
    kt_error err;
    xgb_state *st = searcher_xgb_vtable.create(sp, o, seed, &err);
    if (!st)
        fail_msg("create: %s", err.message);
    json_decref(o);
    return st;
}

/* Asks n one at a time into ids and tells each result of o right away (all failing if fail). */
static void state_drive(xgb_state *st, const objective *o, config_id *ids, int n, int fail)
{
    for (int i = 0; i < n; i++) {
        trial_result r;
        assert_int_equal(searcher_xgb_vtable.ask(st, &ids[i], 1), 1);
        evaluate(o, &ids[i], &r, 1);
        if (fail) {
            r.status = TRIAL_RUNTIME_ERROR;
            r.time_ms = NAN;
        }
        searcher_xgb_vtable.tell(st, &ids[i], &r, 1);
    }
}

static double mean_time(const objective *o, const config_id *ids, int n)
{
    trial_result r;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        evaluate(o, &ids[i], &r, 1);
        sum += r.time_ms;
    }
    return sum / n;
}

/* a-recall@N on cases computed by hand from AutoTVM's metric.py / xgboost_cost_model.py. Labels
 * 1, 0.5, 0, 0.25; predictions 0.1, 0.9, 0.3, 0.2 give the order rows 1, 2, 3, 0, whose labels
 * rank 1, 3, 2, 0: curve 0, 1/2, 1/3, 3/4. */
static void average_recall_by_hand(void **state)
{
    (void)state;
    const float label[4] = {1.0f, 0.5f, 0.0f, 0.25f}, pred[4] = {0.1f, 0.9f, 0.3f, 0.2f};
    const float equal[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    xgb_rank_item items[4];
    int rank[4];
    assert_float_equal(xgb_average_recall(pred, label, 4, 4, items, rank),
                       (0 + 0.5 + 1.0 / 3 + 0.75) / 4, 1e-12);
    assert_float_equal(xgb_average_recall(pred, label, 4, 2, items, rank), 0.5 / 2, 1e-12);
    /* top beyond n: the curve's n entries over top */
    assert_float_equal(xgb_average_recall(pred, label, 4, 8, items, rank),
                       (0 + 0.5 + 1.0 / 3 + 0.75) / 8, 1e-12);
    /* A perfect ranking still scores below 1: the curve counts ranks[:i], excluding i. */
    assert_float_equal(xgb_average_recall(label, label, 4, 4, items, rank),
                       (0 + 0.5 + 2.0 / 3 + 0.75) / 4, 1e-12);
    /* Equal predictions: numpy's argsort(...)[::-1] puts the last row first (rows 3, 2, 1, 0,
     * labels 0.25, 0, 0.5, 1: ranks 2, 3, 1, 0). */
    assert_float_equal(xgb_average_recall(equal, label, 4, 4, items, rank),
                       (0 + 0 + 1.0 / 3 + 0.75) / 4, 1e-12);
}

/* The first 64 proposals do not depend on the told results (no plan before the first fit); the
 * next 64 do. */
static void first_plan_is_random(void **state)
{
    (void)state;
    space *sp = space_10k();
    int opt_a[4] = {1, 2, 3, 4}, opt_b[4] = {8, 7, 6, 5};
    objective oa = {sp, opt_a, 0}, ob = {sp, opt_b, 0};
    config_id a[128], b[128];
    searcher *sa = xgb_new(sp, NULL, 11), *sb = xgb_new(sp, NULL, 11);
    assert_int_equal(drive(sa, &oa, a, 128, 1), 128);
    assert_int_equal(drive(sb, &ob, b, 128, 1), 128);
    assert_memory_equal(a, b, 64 * sizeof *a);
    int differ = 0;
    for (int i = 64; i < 128; i++)
        differ += a[i] != b[i];
    printf("proposals 65-128 differing between the two objectives: %d of 64\n", differ);
    assert_true(differ > 32);
    assert_distinct_valid(a, 128, space_count(sp));
    searcher_free(sa);
    searcher_free(sb);
    space_free(sp);
}

/* Fits come once n >= 64 (fits + 1) with a success: at 64, 128, 192 asked one at a time; after
 * 150 failures the first success fits, and the next tells fit again until the count catches up
 * (AutoTVM's update). */
static void fit_cadence(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    config_id ids[400];
    xgb_state *st = state_new(sp, NULL, 5);
    for (int i = 0; i < 200; i++) {
        state_drive(st, &o, &ids[i], 1, 0);
        assert_int_equal(st->train_ct, (i + 1) / 64);
    }
    searcher_xgb_vtable.destroy(st);

    st = state_new(sp, NULL, 6);
    state_drive(st, &o, ids, 150, 1);
    assert_int_equal(st->train_ct, 0); /* nothing succeeded: no fit */
    int want[] = {1, 2, 2}; /* at 151: 151 >= 64; 152 >= 128; 153 >= 192? no, then at 192 */
    for (int i = 0; i < 3; i++) {
        state_drive(st, &o, &ids[150 + i], 1, 0);
        assert_int_equal(st->train_ct, want[i]);
    }
    state_drive(st, &o, &ids[153], 192 - 153 - 1, 0);
    assert_int_equal(st->train_ct, 2);
    state_drive(st, &o, &ids[191], 1, 0);
    assert_int_equal(st->train_ct, 3);
    searcher_xgb_vtable.destroy(st);
    space_free(sp);
}

/* After a fit the plan holds 64 unvisited candidates (on this objective none scores below 0); the
 * next 61 proposals are its first 61 entries in order, the last 3 random ones. */
static void plan_in_order_with_random_tail(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    config_id ids[128];
    xgb_state *st = state_new(sp, NULL, 3);
    state_drive(st, &o, ids, 64, 0);
    assert_int_equal(st->train_ct, 1);
    printf("first fit: %d rounds (best %d, a-recall %.3f), %d annealing steps, plan %d, %d "
           "dropped\n",
           st->last_rounds, st->last_best_round, st->last_recall, st->last_sa_iters, st->plan_len,
           st->last_dropped);
    assert_int_equal(st->plan_len + st->last_dropped, 64);
    assert_true(st->plan_len >= 32);
    config_id plan[64];
    int len = st->plan_len;
    memcpy(plan, st->plan, (size_t)len * sizeof *plan);
    for (int i = 0; i < len; i++)
        assert_false(search_set_has(&st->b.visited, plan[i]));
    state_drive(st, &o, ids + 64, len, 0);
    for (int i = 0; i < len - 3; i++)
        assert_true(ids[64 + i] == plan[i]);
    for (int i = len - 3; i < len; i++) {
        int in_plan = 0;
        for (int j = 0; j < len; j++)
            in_plan |= ids[64 + i] == plan[j];
        assert_false(in_plan);
    }
    searcher_xgb_vtable.destroy(st);
    space_free(sp);
}

/* A fit on a simple objective stops 20 rounds after its best a-recall, far before 8000; with
 * early_stopping 5 it stops sooner. */
static void early_stopping_stops(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    config_id ids[256];
    xgb_state *st = state_new(sp, NULL, 8);
    for (int k = 1; k <= 4; k++) {
        state_drive(st, &o, ids + 64 * (k - 1), 64, 0);
        assert_int_equal(st->train_ct, k);
        printf("fit %d on %d trials: %d rounds, best round %d, a-recall %.3f\n", k, st->n,
               st->last_rounds, st->last_best_round, st->last_recall);
        assert_int_equal(st->last_rounds, st->last_best_round + 20 + 1);
        assert_true(st->last_rounds < 8000);
        assert_true(st->last_recall > 0 && st->last_recall < 1);
    }
    searcher_xgb_vtable.destroy(st);
    st = state_new(sp, "{\"early_stopping\": 5}", 8);
    state_drive(st, &o, ids, 64, 0);
    assert_int_equal(st->last_rounds, st->last_best_round + 5 + 1);
    searcher_xgb_vtable.destroy(st);
    st = state_new(sp, "{\"rounds\": 3, \"early_stopping\": 100}", 8);
    state_drive(st, &o, ids, 64, 0);
    assert_int_equal(st->last_rounds, 3); /* the cap, not the stop */
    searcher_xgb_vtable.destroy(st);
    space_free(sp);
}

/* On the tiling space a walk step changes exactly one of the groups m, k, n, to another valid
 * factorisation (a move of any size, not x2 / /2), and each group is chosen about a third of the
 * time ((n_g - 1) / n_g: 285/286, 10/11, 285/286). */
static void walk_changes_one_group(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    xgb_state *st = state_new(sp, NULL, 21);
    assert_int_equal(st->move, XGB_MOVE_GROUP);
    kt_rng rng;
    kt_rng_seed(&rng, 4);
    int per_group[3] = {0}, far = 0, N = 3000;
    for (int t = 0; t < N; t++) {
        config_id id = space_sample(sp, &rng), to = xgb_walk(st, id);
        int a[10], b[10], changed = 0, which = -1;
        assert_int_equal(space_decode(sp, id, a), 0);
        assert_int_equal(space_decode(sp, to, b), 0);
        for (int g = 0; g < 3; g++) {
            int diff = 0;
            for (int i = 0; i < space_group_num_params(sp, g); i++) {
                int p = space_group_param(sp, g, i);
                diff |= a[p] != b[p];
                far |= abs(a[p] - b[p]) > 1; /* a factor moved by more than x2 */
            }
            if (diff) {
                changed++;
                which = g;
            }
        }
        assert_int_equal(changed, 1);
        per_group[which]++;
    }
    printf("walk moves per group (m, k, n) of %d: %d, %d, %d\n", N, per_group[0], per_group[1],
           per_group[2]);
    for (int g = 0; g < 3; g++)
        assert_true(per_group[g] > N / 4 && per_group[g] < N * 5 / 12);
    assert_true(far);
    searcher_xgb_vtable.destroy(st);
    space_free(sp);
}

/* An explicit space is one group: a walk step changes exactly one parameter and stays valid. */
static void walk_on_explicit_space_changes_one_parameter(void **state)
{
    (void)state;
    json_t *params = json_loads("[{\"name\":\"x\",\"values\":[0,1,2,3,4,5]},"
                                "{\"name\":\"y\",\"values\":[0,1,2,3,4,5]},"
                                "{\"name\":\"z\",\"values\":[0,1,2]}]",
                                0, NULL);
    json_t *configs = json_array();
    for (int x = 0; x < 6; x++) /* a sparse list: x + y even, z anything but (x + z) % 3 == 1 */
        for (int y = 0; y < 6; y++)
            for (int z = 0; z < 3; z++)
                if ((x + y) % 2 == 0 && (x + z) % 3 != 1)
                    json_array_append_new(configs, json_pack("[i,i,i]", x, y, z));
    kt_error err;
    space *sp = space_new_explicit(params, configs, &err);
    json_decref(params);
    json_decref(configs);
    assert_non_null(sp);
    assert_int_equal(space_num_groups(sp), 1);
    xgb_state *st = state_new(sp, NULL, 2);
    assert_int_equal(st->move, XGB_MOVE_PARAM);
    int moved[3] = {0};
    for (config_id id = 0; id < space_count(sp); id++) {
        for (int t = 0; t < 20; t++) {
            config_id to = xgb_walk(st, id);
            int a[3], b[3], changed = 0;
            assert_int_equal(space_decode(sp, id, a), 0);
            assert_int_equal(space_decode(sp, to, b), 0);
            for (int p = 0; p < 3; p++) {
                changed += a[p] != b[p];
                moved[p] += a[p] != b[p];
            }
            assert_int_equal(changed, 1);
        }
    }
    for (int p = 0; p < 3; p++)
        assert_true(moved[p] > 0);
    searcher_xgb_vtable.destroy(st);
    space_free(sp);
}

/* Same seed and results: the same proposals; another seed: others. None repeats. */
static void deterministic_and_distinct(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 7};
    config_id a[200], b[200], c[200];
    searcher *s1 = xgb_new(sp, NULL, 42), *s2 = xgb_new(sp, NULL, 42), *s3 = xgb_new(sp, NULL, 43);
    assert_int_equal(drive(s1, &o, a, 200, 1), 200);
    assert_int_equal(drive(s2, &o, b, 200, 1), 200);
    assert_int_equal(drive(s3, &o, c, 200, 1), 200);
    assert_memory_equal(a, b, sizeof a);
    assert_true(memcmp(a, c, sizeof a) != 0);
    assert_distinct_valid(a, 200, space_count(sp));
    searcher_free(s1);
    searcher_free(s2);
    searcher_free(s3);
    space_free(sp);
}

/* Defaults: proposals 1-64 random, 65-128 the model's plan. On the smooth objective the plan's mean
 * time must be far better, for every seed; by 256 proposals the best found is near the optimum. */
static void model_plan_beats_random(void **state)
{
    (void)state;
    space *sp = space_10k();
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int opt[4] = {(int)(seed * 3 % 10), (int)(seed * 7 % 10), (int)(seed + 4) % 10, 2};
        objective o = {sp, opt, 0};
        searcher *s = xgb_new(sp, NULL, seed);
        config_id ids[256];
        assert_int_equal(drive(s, &o, ids, 256, 1), 256);
        double random_mean = mean_time(&o, ids, 64), model_mean = mean_time(&o, ids + 64, 64);
        double best = 1e30;
        for (int i = 0; i < 256; i++) {
            double t = mean_time(&o, &ids[i], 1);
            best = t < best ? t : best;
        }
        printf("seed %llu: mean time of the random 64 %.1f, of the model's plan %.1f; best of 256 "
               "%.0f (optimum 10)\n",
               (unsigned long long)seed, random_mean, model_mean, best);
        assert_true(model_mean < 0.6 * random_mean);
        assert_true(best <= 12);
        assert_distinct_valid(ids, 256, space_count(sp));
        searcher_free(s);
    }
    space_free(sp);
}

/* Every trial fails: no label to rank by, so no fit; proposals go on, distinct, at random. */
static void all_failures_go_on_at_random(void **state)
{
    (void)state;
    space *sp = space_small();
    objective o = {sp, NULL, 1}; /* every id is divisible by 1: all fail */
    searcher *s = xgb_new(sp, "{\"batch\": 4}", 2);
    config_id ids[130];
    assert_int_equal(drive(s, &o, ids, 130, 3), 120);
    assert_distinct_valid(ids, 120, 120);
    searcher_free(s);
    space_free(sp);
}

/* xgb_local (the pre-issue-15 variant, search/xgb_local.c) through its vtable: n proposals asked
 * one at a time and told. */
static void local_drive(const space *sp, const char *options, uint64_t seed, const objective *o,
                        config_id *ids, int n)
{
    json_t *opt = options ? json_loads(options, 0, NULL) : NULL;
    kt_error err;
    void *st = searcher_xgb_local_vtable.create(sp, opt, seed, &err);
    if (!st)
        fail_msg("create: %s", err.message);
    json_decref(opt);
    for (int i = 0; i < n; i++) {
        trial_result r;
        assert_int_equal(searcher_xgb_local_vtable.ask(st, &ids[i], 1), 1);
        evaluate(o, &ids[i], &r, 1);
        searcher_xgb_local_vtable.tell(st, &ids[i], &r, 1);
    }
    searcher_xgb_local_vtable.destroy(st);
}

/* xgb_local, batch 32, no exploration: proposals 0-31 are random, 32-63 the model's plan, far
 * better for every seed; the same seed gives the same proposals, none repeated. */
static void local_variant_learns(void **state)
{
    (void)state;
    space *sp = space_10k();
    assert_string_equal(searcher_xgb_local_vtable.name, "xgb_local");
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int opt[4] = {(int)(seed * 3 % 10), (int)(seed * 7 % 10), (int)(seed + 4) % 10, 2};
        objective o = {sp, opt, 0};
        config_id ids[64], again[64];
        local_drive(sp, "{\"batch\": 32, \"exploration\": 0}", seed, &o, ids, 64);
        local_drive(sp, "{\"batch\": 32, \"exploration\": 0}", seed, &o, again, 64);
        assert_memory_equal(ids, again, sizeof ids);
        double random_mean = mean_time(&o, ids, 32), model_mean = mean_time(&o, ids + 32, 32);
        printf("xgb_local seed %llu: mean time of the random batch %.1f, of the model's batch "
               "%.1f\n",
               (unsigned long long)seed, random_mean, model_mean);
        assert_true(model_mean < 0.7 * random_mean);
        assert_distinct_valid(ids, 64, space_count(sp));
    }
    space_free(sp);
}

/* CPU seconds of the process (core/clock reads wall clocks only). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 900 proposals asked and told one at a time with the default options (14 fits and annealing
 * runs): all distinct and valid; the mean cost per proposal, fits included, is printed (make bench
 * measures it too: tests/bench/bench_search.c). */
static void overhead_on_tiling_space(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    objective o = {sp, NULL, 13};
    enum { N = 900 };
    config_id *ids = malloc(N * sizeof *ids);
    assert_non_null(ids);
    xgb_state *st = state_new(sp, NULL, 2024);
    double t0 = kt_clock_s(), c0 = cpu_s();
    state_drive(st, &o, ids, N, 0);
    double dt = kt_clock_s() - t0, dc = cpu_s() - c0;
    printf("xgb: %d proposals (one at a time) on the %llu-config tiling space: %.0f us each "
           "(%.0f us of CPU), %d fits (the last: %d rounds, %d annealing steps)\n",
           N, (unsigned long long)space_count(sp), dt * 1e6 / N, dc * 1e6 / N, st->train_ct,
           st->last_rounds, st->last_sa_iters);
    assert_int_equal(st->train_ct, N / 64);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_xgb_vtable.destroy(st);
    free(ids);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(average_recall_by_hand),
        cmocka_unit_test(first_plan_is_random),
        cmocka_unit_test(fit_cadence),
        cmocka_unit_test(plan_in_order_with_random_tail),
        cmocka_unit_test(early_stopping_stops),
        cmocka_unit_test(walk_changes_one_group),
        cmocka_unit_test(walk_on_explicit_space_changes_one_parameter),
        cmocka_unit_test(deterministic_and_distinct),
        cmocka_unit_test(model_plan_beats_random),
        cmocka_unit_test(all_failures_go_on_at_random),
        cmocka_unit_test(local_variant_learns),
        cmocka_unit_test(overhead_on_tiling_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
