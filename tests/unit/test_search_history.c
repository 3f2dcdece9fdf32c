/* Unit tests of the searchers' warm start (searcher_set_history): every strategy proposes the
 * first ids first, in order, without duplicates or ids outside the space, then its own proposals
 * (still no repeats); a strategy that proposes a first id later gets its result again instead;
 * history after an ask or with bad counts is refused; the same history gives the same proposals;
 * auto's prior steers it towards the prior's optimum, and a prior without information (shuffled
 * times) leaves it exactly cold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "search/searcher.h"

#include "search_test_util.h"

static void every_strategy_proposes_first_ids_first(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    /* a duplicate (5) and an id outside the space are dropped */
    const config_id first[] = {5, 17, 5, 99999999, 42, 9999};
    searcher_history h = {first, 6, NULL, NULL, NULL, 0};
    json_t *cat = searcher_catalog_json();
    config_id ids[200];
    for (size_t i = 0; i < json_array_size(cat); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(cat, i), "name"));
        /* mindmap proposes nothing without a trained surrogate of this space's parameters (it is
         * checked with one, first ids included, in test_search_mindmap) */
        if (searcher_needs_surrogate(name))
            continue;
        kt_error err;
        searcher *s = searcher_new(name, sp, NULL, 7, &err);
        assert_non_null(s);
        assert_int_equal(searcher_set_history(s, &h, &err), 0);
        assert_int_equal(searcher_first_count(s), 4);
        assert_int_equal(drive(s, &o, ids, 200, 3), 200);
        assert_int_equal(ids[0], 5);
        assert_int_equal(ids[1], 17);
        assert_int_equal(ids[2], 42);
        assert_int_equal(ids[3], 9999);
        assert_int_equal(searcher_first_proposed(s), 4);
        assert_distinct_valid(ids, 200, space_count(sp));
        searcher_free(s);
    }
    json_decref(cat);
    space_free(sp);
}

/* exhaustive proposes 0, 1, 2, ...: the first ids it reaches are skipped (their results told to it
 * again), the rest of its order is unchanged. */
static void a_strategy_never_repeats_a_first_id(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    const config_id first[] = {10, 3};
    searcher_history h = {first, 2, NULL, NULL, NULL, 0};
    config_id ids[12];
    searcher *s = searcher_new("exhaustive", sp, NULL, 1, NULL);
    assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    assert_int_equal(drive(s, &o, ids, 12, 4), 12);
    const config_id want[12] = {10, 3, 0, 1, 2, 4, 5, 6, 7, 8, 9, 11};
    for (int i = 0; i < 12; i++)
        assert_int_equal(ids[i], want[i]);
    searcher_free(s);
    space_free(sp);
}

static void history_is_refused_after_an_ask_or_with_bad_counts(void **state)
{
    (void)state;
    space *sp = space_10k();
    const config_id first[] = {1};
    searcher_history h = {first, 1, NULL, NULL, NULL, 0};
    searcher_history bad = {first, -1, NULL, NULL, NULL, 0};
    kt_error err;
    config_id id;
    searcher *s = searcher_new("auto", sp, NULL, 1, NULL);
    kt_error_clear(&err);
    assert_int_equal(searcher_set_history(s, &bad, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(searcher_first_count(s), 0);
    assert_int_equal(searcher_set_history(s, NULL, &err), 0); /* no history: a no-op */
    assert_int_equal(searcher_ask(s, &id, 1), 1);
    kt_error_clear(&err);
    assert_int_equal(searcher_set_history(s, &h, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "after the first ask"));
    searcher_free(s);
    space_free(sp);
}

/* A prior: every configuration of sp timed by an objective whose optimum is opt (source 0), and
 * the same times x 1000 (source 1: another scale). shuffle: the times permuted at random. */
typedef struct prior_buf {
    config_id *id;
    double *ms;
    int *src;
    int n;
} prior_buf;

static void make_prior(const space *sp, const int *opt, int shuffle, prior_buf *pb)
{
    int n = (int)space_count(sp);
    objective o = {sp, opt, 0};
    pb->id = malloc(2 * (size_t)n * sizeof *pb->id);
    pb->ms = malloc(2 * (size_t)n * sizeof *pb->ms);
    pb->src = malloc(2 * (size_t)n * sizeof *pb->src);
    assert_true(pb->id && pb->ms && pb->src);
    pb->n = 0;
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < n; i++) {
            trial_result r;
            config_id id = (config_id)i;
            evaluate(&o, &id, &r, 1);
            pb->id[pb->n] = id;
            pb->ms[pb->n] = r.time_ms * (s ? 1000.0 : 1.0);
            pb->src[pb->n] = s;
            pb->n++;
        }
    }
    if (shuffle) {
        kt_rng rng;
        kt_rng_seed(&rng, 99);
        for (int i = pb->n; i > 1; i--) {
            int j = (int)kt_rng_below(&rng, (uint64_t)i);
            double t = pb->ms[i - 1];
            pb->ms[i - 1] = pb->ms[j];
            pb->ms[j] = t;
        }
    }
}

static void free_prior(prior_buf *pb)
{
    free(pb->id);
    free(pb->ms);
    free(pb->src);
}

/* n proposals of auto (seed) on sp against the objective with optimum opt; the best time found in
 * the first `within` into *best. */
static void run_auto(space *sp, const int *opt, const prior_buf *pb, uint64_t seed, config_id *ids,
                     int n, int within, double *best)
{
    objective o = {sp, opt, 0};
    searcher *s = searcher_new("auto", sp, NULL, seed, NULL);
    assert_non_null(s);
    if (pb) {
        searcher_history h = {NULL, 0, pb->id, pb->ms, pb->src, pb->n};
        assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    }
    assert_int_equal(drive(s, &o, ids, n, 1), n);
    trial_result r[64];
    assert_true(within <= 64);
    evaluate(&o, ids, r, within);
    *best = INFINITY;
    for (int i = 0; i < within; i++)
        *best = r[i].time_ms < *best ? r[i].time_ms : *best;
    searcher_free(s);
}

static void a_prior_steers_auto_and_is_deterministic(void **state)
{
    (void)state;
    space *sp = space_10k();
    const int opt[4] = {7, 2, 8, 1};
    prior_buf pb;
    make_prior(sp, opt, 0, &pb);
    double sum_cold = 0, sum_warm = 0, b;
    config_id a[60], c[60];
    for (uint64_t seed = 0; seed < 8; seed++) {
        run_auto(sp, opt, NULL, seed, a, 60, 10, &b);
        sum_cold += b;
        run_auto(sp, opt, &pb, seed, c, 60, 10, &b);
        sum_warm += b;
        assert_memory_not_equal(a, c, sizeof a); /* the prior changes the proposals */
        assert_distinct_valid(c, 60, space_count(sp));
        run_auto(sp, opt, &pb, seed, a, 60, 10, &b); /* the same history: the same proposals */
        assert_memory_equal(a, c, sizeof a);
    }
    /* The objective is 10 + squared index distance: a prior of it finds the optimum (10) at once;
     * cold auto is still filling the space after 10. */
    printf("best after 10 proposals, mean of 8 seeds: cold %.2f, with the prior %.2f\n",
           sum_cold / 8, sum_warm / 8);
    assert_true(sum_warm / 8 < 10.5);
    assert_true(sum_warm < sum_cold);
    free_prior(&pb);
    space_free(sp);
}

static void a_prior_without_information_leaves_auto_cold(void **state)
{
    (void)state;
    space *sp = space_10k();
    const int opt[4] = {7, 2, 8, 1};
    prior_buf pb;
    make_prior(sp, opt, 1, &pb);
    config_id a[80], c[80];
    double b;
    for (uint64_t seed = 0; seed < 4; seed++) {
        run_auto(sp, opt, NULL, seed, a, 80, 10, &b);
        run_auto(sp, opt, &pb, seed, c, 80, 10, &b);
        assert_memory_equal(a, c, sizeof a);
    }
    free_prior(&pb);
    space_free(sp);
}

/* Resume by replay: a searcher given the same history and re-fed the first proposals' results in
 * the same batches continues with the same proposals. */
static void replay_with_the_same_history_continues_alike(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 0};
    const int opt[4] = {1, 1, 6, 6};
    prior_buf pb;
    make_prior(sp, opt, 0, &pb);
    const config_id first[] = {77, 4242, 9};
    searcher_history h = {first, 3, pb.id, pb.ms, pb.src, pb.n};
    config_id ids[48], again[48];
    searcher *s = searcher_new("auto", sp, NULL, 3, NULL);
    assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    assert_int_equal(drive(s, &o, ids, 48, 4), 48);
    searcher_free(s);
    s = searcher_new("auto", sp, NULL, 3, NULL);
    assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    assert_int_equal(drive(s, &o, again, 24, 4), 24); /* the replayed part */
    assert_int_equal(drive(s, &o, again + 24, 24, 4), 24);
    assert_memory_equal(ids, again, sizeof ids);
    searcher_free(s);
    free_prior(&pb);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_strategy_proposes_first_ids_first),
        cmocka_unit_test(a_strategy_never_repeats_a_first_id),
        cmocka_unit_test(history_is_refused_after_an_ask_or_with_bad_counts),
        cmocka_unit_test(a_prior_steers_auto_and_is_deterministic),
        cmocka_unit_test(a_prior_without_information_leaves_auto_cold),
        cmocka_unit_test(replay_with_the_same_history_continues_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
