/* worker/final_pick: the candidates are the fastest distinct ok trials (ties by seq), the order is
 * interleaved and rotated per round, the winner has the lowest lower-median of its
 * re-measurements (ties to the better search rank), a candidate with a failed re-measurement is
 * not chosen, and with none qualified there is no winner. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "worker/final_pick.h"

static final_trial ok(long long id, int seq, config_id cid, double ms)
{
    return (final_trial){.trial_id = id, .seq = seq, .cid = cid, .status = TRIAL_OK, .time_ms = ms};
}

static void candidates_are_the_fastest_ok(void **state)
{
    (void)state;
    final_trial rows[] = {
        ok(1, 1, 10, 5.0),
        ok(2, 2, 11, 3.0),
        {.trial_id = 3, .seq = 3, .cid = 12, .status = TRIAL_TIMEOUT, .time_ms = 0.1},
        ok(4, 4, 13, 4.0),
        ok(5, 5, 14, 3.0), /* ties with seq 2: after it */
        ok(6, 6, 15, NAN), /* ok without a time: never a candidate */
        ok(7, 7, 16, 9.0),
    };
    final_candidate c[FINAL_PICK_MAX_COUNT];
    int n = final_pick_candidates(rows, 7, 3, c);
    assert_int_equal(n, 3);
    assert_int_equal(c[0].cid, 11);
    assert_int_equal(c[1].cid, 14);
    assert_int_equal(c[2].cid, 13);
    assert_int_equal(c[0].search_trial_id, 2);
    /* Fewer ok trials than asked: all of them. */
    assert_int_equal(final_pick_candidates(rows, 3, 8, c), 2);
    assert_int_equal(c[0].cid, 11);
    assert_int_equal(c[1].cid, 10);
    /* None asked. */
    assert_int_equal(final_pick_candidates(rows, 7, 0, c), 0);
    /* Above the cap: capped. */
    final_trial many[12];
    for (int i = 0; i < 12; i++)
        many[i] = ok(i + 1, i + 1, (config_id)(100 + i), 20.0 - i);
    assert_int_equal(final_pick_candidates(many, 12, 50, c), FINAL_PICK_MAX_COUNT);
    assert_int_equal(c[0].cid, 111);
    assert_int_equal(c[7].cid, 104);
}

static void order_interleaves_and_rotates(void **state)
{
    (void)state;
    int cand[12], round[12];
    final_pick_order(3, 4, cand, round);
    int want_c[] = {0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2};
    int want_r[] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4};
    for (int i = 0; i < 12; i++) {
        assert_int_equal(cand[i], want_c[i]);
        assert_int_equal(round[i], want_r[i]);
    }
    final_pick_order(1, 3, cand, round);
    assert_int_equal(cand[2], 0);
    assert_int_equal(round[2], 3);
}

/* Samples for candidate c: times[r] per round (NAN: failed with status fail). */
static int add(final_sample *s, int n, int c, const double *times, int rounds, trial_status fail)
{
    for (int r = 0; r < rounds; r++)
        s[n++] = (final_sample){.candidate = c,
                                .round = r + 1,
                                .trial_id = 1000 + c * 100 + r,
                                .status = isnan(times[r]) ? fail : TRIAL_OK,
                                .time_ms = times[r]};
    return n;
}

static void median_wins_not_the_search_time(void **state)
{
    (void)state;
    /* The search found A fastest once (a lucky 1.0); re-measured, B is faster. */
    final_candidate c[3] = {{.search_trial_id = 1, .search_seq = 1, .cid = 7, .search_ms = 1.0},
                            {.search_trial_id = 2, .search_seq = 2, .cid = 8, .search_ms = 1.2},
                            {.search_trial_id = 3, .search_seq = 3, .cid = 9, .search_ms = 1.3}};
    final_sample s[15];
    int n = 0;
    n = add(s, n, 0, (double[]){1.5, 1.4, 0.9, 1.6, 1.45}, 5, TRIAL_OK);    /* median 1.45 */
    n = add(s, n, 1, (double[]){1.3, 1.2, 5.0, 1.25, 1.22}, 5, TRIAL_OK);   /* median 1.25 */
    n = add(s, n, 2, (double[]){1.4, 1.35, 1.38, 1.36, 1.37}, 5, TRIAL_OK); /* median 1.37 */
    final_outcome o;
    assert_int_equal(final_pick_choose(c, 3, s, n, 5, &o), 1);
    assert_int_equal(o.winner, 1);
    assert_true(o.scores[1].median_ms == 1.25);
    assert_int_equal(o.scores[1].median_trial_id, 1000 + 100 + 3);
    assert_true(o.scores[1].min_ms == 1.2);
    assert_true(o.scores[1].max_ms == 5.0); /* one outlier does not move the median */
    assert_true(o.scores[0].median_ms == 1.45);
    assert_true(o.scores[0].qualified && o.scores[1].qualified && o.scores[2].qualified);
    /* The record says the same. */
    json_t *j = final_pick_json(c, 3, s, n, 5, &o);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "winner")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "winner_config_id")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "winner_trial_id")), 1103);
    json_t *b = json_array_get(json_object_get(j, "candidates"), 1);
    assert_int_equal(json_array_size(json_object_get(b, "times_ms")), 5);
    assert_true(json_real_value(json_object_get(b, "median_ms")) == 1.25);
    assert_true(fabs(json_real_value(json_object_get(b, "spread")) - (5.0 - 1.2) / 1.25) < 1e-12);
    json_decref(j);
}

static void even_rounds_take_the_lower_median(void **state)
{
    (void)state;
    final_candidate c[1] = {{.search_trial_id = 1, .search_seq = 1, .cid = 3, .search_ms = 1.0}};
    final_sample s[4];
    int n = add(s, 0, 0, (double[]){4.0, 2.0, 3.0, 1.0}, 4, TRIAL_OK);
    final_outcome o;
    assert_int_equal(final_pick_choose(c, 1, s, n, 4, &o), 0);
    assert_true(o.scores[0].median_ms == 2.0);
    assert_int_equal(o.scores[0].median_trial_id, 1001); /* round 2's trial */
}

static void ties_go_to_the_better_search_rank(void **state)
{
    (void)state;
    final_candidate c[2] = {{.search_trial_id = 5, .search_seq = 5, .cid = 1, .search_ms = 2.0},
                            {.search_trial_id = 2, .search_seq = 2, .cid = 2, .search_ms = 2.5}};
    final_sample s[6];
    int n = 0;
    /* Listed second first: the order of the samples does not matter. */
    n = add(s, n, 1, (double[]){3.0, 2.0, 2.2}, 3, TRIAL_OK);
    n = add(s, n, 0, (double[]){2.2, 2.1, 9.0}, 3, TRIAL_OK);
    final_outcome o;
    assert_int_equal(final_pick_choose(c, 2, s, n, 3, &o), 0);
    /* Equal search times too: the earlier trial. */
    c[1].search_ms = 2.0;
    assert_int_equal(final_pick_choose(c, 2, s, n, 3, &o), 1);
}

static void a_failed_re_measurement_disqualifies(void **state)
{
    (void)state;
    final_candidate c[3] = {{.search_trial_id = 1, .search_seq = 1, .cid = 1, .search_ms = 1.0},
                            {.search_trial_id = 2, .search_seq = 2, .cid = 2, .search_ms = 1.1},
                            {.search_trial_id = 3, .search_seq = 3, .cid = 3, .search_ms = 1.2}};
    final_sample s[9];
    int n = 0;
    n = add(s, n, 0, (double[]){1.0, NAN, 1.0}, 3, TRIAL_TIMEOUT);      /* fastest, once failed */
    n = add(s, n, 1, (double[]){1.5, 1.6, 1.4}, 3, TRIAL_OK);           /* clean */
    n = add(s, n, 2, (double[]){NAN, NAN, NAN}, 3, TRIAL_WRONG_RESULT); /* broken */
    final_outcome o;
    assert_int_equal(final_pick_choose(c, 3, s, n, 3, &o), 1);
    assert_false(o.scores[0].qualified);
    assert_int_equal(o.scores[0].ok, 2);
    assert_int_equal(o.scores[0].measured, 3);
    assert_true(o.scores[0].median_ms == 1.0); /* still shown */
    assert_int_equal(o.scores[2].ok, 0);
    assert_true(isnan(o.scores[2].median_ms));
    /* Every candidate failed once: no winner, and the record says so. */
    s[4].status = TRIAL_RUNTIME_ERROR;
    s[4].time_ms = NAN;
    assert_int_equal(final_pick_choose(c, 3, s, n, 3, &o), -1);
    json_t *j = final_pick_json(c, 3, s, n, 3, &o);
    assert_non_null(j);
    assert_true(json_is_null(json_object_get(j, "winner")));
    assert_true(json_is_null(json_object_get(j, "winner_trial_id")));
    json_t *c2 = json_array_get(json_object_get(j, "candidates"), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(c2, "statuses"), 0)),
                        "wrong_result");
    assert_true(json_is_null(json_array_get(json_object_get(c2, "times_ms"), 0)));
    json_decref(j);
}

static void unfinished_samples_do_not_qualify(void **state)
{
    (void)state;
    final_candidate c[1] = {{.search_trial_id = 1, .search_seq = 1, .cid = 1, .search_ms = 1.0}};
    final_sample s[3];
    int n = add(s, 0, 0, (double[]){1.0, 1.1, 1.2}, 3, TRIAL_OK);
    s[2].status = TRIAL_RUNNING;
    final_outcome o;
    assert_int_equal(final_pick_choose(c, 1, s, n, 3, &o), -1);
    assert_int_equal(o.scores[0].measured, 2);
    /* A missing round is not a pass either. */
    assert_int_equal(final_pick_choose(c, 1, s, 2, 3, &o), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(candidates_are_the_fastest_ok),
        cmocka_unit_test(order_interleaves_and_rotates),
        cmocka_unit_test(median_wins_not_the_search_time),
        cmocka_unit_test(even_rounds_take_the_lower_median),
        cmocka_unit_test(ties_go_to_the_better_search_rank),
        cmocka_unit_test(a_failed_re_measurement_disqualifies),
        cmocka_unit_test(unfinished_samples_do_not_qualify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
