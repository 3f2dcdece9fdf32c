/* Unit tests of the searchers' warm start (searcher_set_history): every strategy but auto proposes
 * the first ids first, in order, without duplicates or ids outside the space, then its own
 * proposals (still no repeats); a strategy that proposes a first id later gets its result again
 * instead; history after an ask or with bad counts is refused; the same history gives the same
 * proposals; auto's prior steers it towards the prior's optimum, and a prior without information
 * (shuffled times) leaves it exactly cold. Issue 29, a history the measurements overrule: the
 * prior's weight (search/auto_prior.h) falls fast when the results contradict it and stays when
 * they confirm it; suggestions without a prior earn their trust; a prior is trusted only once the
 * results confirm its ranking (auto_prior_trusted): auto with an inverted history measures none of
 * its suggestions and is at least as good as cold after every evaluation, with an honest one it
 * finds the optimum within 12. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "search/auto_prior.h"
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
        /* auto proposes the first ids itself, as far as the measurements trust them (below) */
        if (strcmp(name, "auto") == 0)
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
 * the same times x 1000 (source 1: another scale). shuffle 1: the times permuted at random; 2:
 * inverted (t -> 1 / t: every ranking backwards, a history that misleads). */
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
    for (int i = 0; shuffle == 2 && i < pb->n; i++)
        pb->ms[i] = 1.0 / pb->ms[i];
    if (shuffle == 1) {
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

/* The prior's weight (auto_prior_weight) on n synthetic (prior value, log time) pairs: y standard
 * normal, p = sign * y + noise (sign 1: the prior confirmed, -1: contradicted, 0: p unrelated).
 * The first result after which the weight is at most AUTO_PRIOR_TRUST into *first_low, the last
 * into *last_low (-1: never), the first below 0.05 into *first_out. */
static double weight_after(int sign, uint64_t seed, int n, int *first_low, int *last_low,
                           int *first_out, int *last_untrusted)
{
    auto_prior pr;
    kt_rng rng;
    memset(&pr, 0, sizeof pr);
    pr.usable = 1;
    kt_rng_seed(&rng, seed);
    *first_low = *last_low = *first_out = *last_untrusted = -1;
    assert_true(fabs(auto_prior_weight(&pr) - AUTO_PRIOR_ODDS / (1 + AUTO_PRIOR_ODDS)) < 1e-12);
    for (int i = 1; i <= n; i++) {
        double y = kt_rng_normal(&rng);
        double p = sign ? sign * y + 0.7 * kt_rng_normal(&rng) : kt_rng_normal(&rng);
        auto_prior_observe(&pr, (config_id)i, p, y);
        double w = auto_prior_weight(&pr);
        assert_true(w >= 0 && w <= 1);
        if (w <= AUTO_PRIOR_TRUST) {
            *first_low = *first_low < 0 ? i : *first_low;
            *last_low = i;
        }
        if (*first_out < 0 && w < 0.05)
            *first_out = i;
        if (!auto_prior_trusted(&pr))
            *last_untrusted = i;
    }
    return auto_prior_weight(&pr);
}

static void the_measurements_overrule_the_prior(void **state)
{
    (void)state;
    int first_low, last_low, out, untrusted, sum = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        /* contradicted: weight at most AUTO_PRIOR_TRUST within 8 results, and for good from 12
         * on; under 0.05 within 16; never trusted (auto uses nothing of it) */
        assert_true(weight_after(-1, seed, 50, &first_low, &last_low, &out, &untrusted) < 1e-3);
        assert_true(first_low > 0 && first_low <= 8);
        assert_int_equal(last_low, 50);
        assert_true(out > 0 && out <= 16);
        assert_int_equal(untrusted, 50);
        /* confirmed: weight above AUTO_PRIOR_TRUST from 6 results on (a few first ones may
         * disagree by chance) and growing towards 1; trusted from 10 results on, not before
         * AUTO_PRIOR_TEST_MIN */
        assert_true(weight_after(1, seed, 100, &first_low, &last_low, &out, &untrusted) > 0.99);
        assert_true(last_low <= 5);
        assert_int_equal(out, -1);
        assert_true(untrusted >= AUTO_PRIOR_TEST_MIN - 1 && untrusted < 10);
        /* unrelated: no longer trusted within 60 results */
        assert_true(weight_after(0, seed, 60, &first_low, &last_low, &out, &untrusted) <
                    AUTO_PRIOR_TRUST);
        assert_true(first_low > 0);
        sum += first_low;
    }
    printf("an unrelated prior loses trust after %.1f results (mean of 10 seeds)\n", sum / 10.0);
    assert_true(sum / 10 <= 40);
}

static void the_agreement_counts_failures_slowest_and_stops_at_its_cap(void **state)
{
    (void)state;
    auto_prior pr;
    memset(&pr, 0, sizeof pr);
    auto_prior_observe(&pr, 1, 0.5, 1.0); /* neither a usable prior nor suggestions: ignored */
    assert_int_equal(pr.n_seen, 0);
    assert_true(auto_prior_weight(&pr) == 0);
    pr.usable = 1;
    auto_prior_observe(&pr, 1, -1.0, 0.0);
    auto_prior_observe(&pr, 2, 1.0, INFINITY); /* predicted slow, failed: concordant */
    assert_true(auto_prior_tau(&pr) == 1.0);
    /* predicted fastest, failed: discordant with the first, tied in time with the second */
    auto_prior_observe(&pr, 3, -2.0, INFINITY);
    assert_true(auto_prior_tau(&pr) == 0.0);
    for (int i = 0; i < AUTO_PRIOR_AGREE_MAX + 50; i++)
        auto_prior_observe(&pr, (config_id)(10 + i), i, i);
    assert_int_equal(pr.n_seen, AUTO_PRIOR_AGREE_MAX);
}

/* Without a usable prior, suggestions (first ids) are judged by their measurements against the
 * rest: measured fast, they keep their trust; measured slow, they lose it. */
static void suggestions_alone_earn_their_trust(void **state)
{
    (void)state;
    const config_id first[] = {1, 2, 3};
    for (int good = 0; good < 2; good++) {
        auto_prior pr;
        memset(&pr, 0, sizeof pr);
        assert_int_equal(auto_prior_suggest(&pr, first, 3, NULL), 0);
        assert_int_equal(pr.n_sugg, 3);
        assert_true(fabs(auto_prior_weight(&pr) - 0.5) < 1e-12);
        for (int i = 0; i < 6; i++) { /* alternately a suggestion and another configuration */
            config_id id = i % 2 ? (config_id)(100 + i) : first[i / 2];
            double y = (i % 2 == 0) == good ? 0.0 + 0.01 * i : 5.0 + 0.01 * i;
            auto_prior_observe(&pr, id, 0, y);
        }
        double w = auto_prior_weight(&pr);
        assert_true(good ? w > AUTO_PRIOR_TRUST : w < AUTO_PRIOR_TRUST);
        auto_prior_free(&pr);
    }
}

/* The first 8 of pb's configurations by time (source 0): the history's best. */
static void best_of_prior(const prior_buf *pb, config_id *first)
{
    int n = 0;
    for (int k = 0; k < 8; k++) {
        int bi = -1;
        for (int i = 0; i < pb->n; i++) {
            int taken = 0;
            for (int j = 0; j < n && !taken; j++)
                taken = first[j] == pb->id[i];
            if (pb->src[i] == 0 && !taken && (bi < 0 || pb->ms[i] < pb->ms[bi]))
                bi = i;
        }
        first[n++] = pb->id[bi];
    }
}

/* auto with a history: first ids and prior both honest, or both inverted (the history's best
 * are the slowest configurations). n proposals; how many first ids among them, and the best time
 * within `within` into *best. */
static int run_auto_history(space *sp, const int *opt, int inverted, uint64_t seed, int n,
                            int within, double *best)
{
    prior_buf pb;
    config_id first[8], ids[64];
    objective o = {sp, opt, 0};
    make_prior(sp, opt, inverted ? 2 : 0, &pb);
    best_of_prior(&pb, first);
    searcher *s = searcher_new("auto", sp, NULL, seed, NULL);
    searcher_history h = {first, 8, pb.id, pb.ms, pb.src, pb.n};
    assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    assert_true(n <= 64 && within <= n);
    assert_int_equal(drive(s, &o, ids, n, 1), n);
    assert_distinct_valid(ids, n, space_count(sp));
    trial_result r[64];
    evaluate(&o, ids, r, within);
    *best = INFINITY;
    for (int i = 0; i < within; i++)
        *best = r[i].time_ms < *best ? r[i].time_ms : *best;
    int used = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            used += ids[i] == first[k];
    assert_int_equal(searcher_first_proposed(s), used);
    searcher_free(s);
    free_prior(&pb);
    return used;
}

static void auto_drops_a_history_the_measurements_contradict(void **state)
{
    (void)state;
    space *sp = space_10k();
    const int opt[4] = {2, 7, 3, 6};
    double warm = 0, cold = 0, honest = 0, b;
    config_id ids[50];
    for (uint64_t seed = 0; seed < 12; seed++) {
        /* inverted: none of its 8 suggestions is measured (the first results contradict it) */
        assert_int_equal(run_auto_history(sp, opt, 1, seed, 50, 50, &b), 0);
        warm += b;
        run_auto(sp, opt, NULL, seed, ids, 50, 50, &b);
        cold += b;
        /* honest: its suggestions are measured first, and the optimum is found at once */
        assert_true(run_auto_history(sp, opt, 0, seed, 12, 12, &b) >= 6);
        honest += b;
    }
    printf("best within 50, mean of 12 seeds: cold %.2f, inverted history %.2f; honest history "
           "within 12: %.2f\n",
           cold / 12, warm / 12, honest / 12);
    assert_true(warm <= cold); /* at least the cold search within 50 */
    assert_true(honest / 12 < 10.5);
    space_free(sp);
}

/* The best time after each of the n evaluations of ids (n at most 64) into best. */
static void best_so_far(const space *sp, const int *opt, const config_id *ids, int n, double *best)
{
    objective o = {sp, opt, 0};
    trial_result r[64];
    assert_true(n <= 64);
    evaluate(&o, ids, r, n);
    for (int i = 0; i < n; i++)
        best[i] = i == 0 || r[i].time_ms < best[i - 1] ? r[i].time_ms : best[i - 1];
}

/* Issue 29, warm starts that never hurt: a history whose ranking is backwards (its best are the
 * space's slowest configurations) leaves auto at least as good as cold after every one of 50
 * evaluations, seed by seed. Before the prior was tested before use, auto measured its first
 * suggestion (the slowest configuration) first, and was behind cold from the first evaluation. */
static void an_inverted_history_never_leaves_auto_behind_cold(void **state)
{
    (void)state;
    space *sp = space_10k();
    const int opt[4] = {6, 1, 4, 8};
    prior_buf pb;
    config_id first[8], cold_ids[50], warm_ids[50];
    double cold[50], warm[50], gap = 0;
    make_prior(sp, opt, 2, &pb);
    best_of_prior(&pb, first);
    for (uint64_t seed = 0; seed < 6; seed++) {
        objective o = {sp, opt, 0};
        searcher *s = searcher_new("auto", sp, NULL, seed, NULL);
        assert_int_equal(drive(s, &o, cold_ids, 50, 1), 50);
        searcher_free(s);
        s = searcher_new("auto", sp, NULL, seed, NULL);
        searcher_history h = {first, 8, pb.id, pb.ms, pb.src, pb.n};
        assert_int_equal(searcher_set_history(s, &h, NULL), 0);
        assert_int_equal(drive(s, &o, warm_ids, 50, 1), 50);
        searcher_free(s);
        best_so_far(sp, opt, cold_ids, 50, cold);
        best_so_far(sp, opt, warm_ids, 50, warm);
        for (int i = 0; i < 50; i++) {
            assert_true(warm[i] <= cold[i]);
            gap += warm[i] - cold[i];
        }
    }
    printf("inverted history: best time behind cold by %.3f on average over 6 seeds x 50 "
           "evaluations\n",
           gap / 300);
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
        cmocka_unit_test(the_measurements_overrule_the_prior),
        cmocka_unit_test(the_agreement_counts_failures_slowest_and_stops_at_its_cap),
        cmocka_unit_test(suggestions_alone_earn_their_trust),
        cmocka_unit_test(auto_drops_a_history_the_measurements_contradict),
        cmocka_unit_test(an_inverted_history_never_leaves_auto_behind_cold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
