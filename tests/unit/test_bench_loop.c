/* Unit tests of bench/bench_loop, the one ask/tell loop of `ktune bench`: the budget and the batch
 * (the last ask cut), rounds and what each told, a searcher that runs out, free evaluations that
 * do not count, a hook's stop (mid-round: nothing told; after a tell: the run ends), an
 * evaluation's error. The offline, device and accel modes' exact figures are in test_bench_run,
 * test_bench_device and test_bench_accel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "space/space.h"
#include "bench/bench_loop.h"

typedef struct probe {
    int evaluated, free_every, stop_at, fail_at, told_rounds, told[8], before[8];
    int stop_after_round;
    config_id seen[64];
} probe;

static int probe_evaluate(bench_loop *l, config_id id, trial_result *r, kt_error *err)
{
    probe *p = l->ctx;
    p->seen[p->evaluated++] = id;
    if (p->fail_at && p->evaluated == p->fail_at)
        return kt_error_set(err, KT_ERR_INTERNAL, "evaluation %d failed", p->evaluated);
    r->status = TRIAL_OK;
    r->time_ms = 1.0 + (double)id;
    if (p->stop_at && p->evaluated == p->stop_at)
        l->stop = 1;
    return p->free_every && p->evaluated % p->free_every == 0;
}

static void probe_told(bench_loop *l, const config_id *ids, const trial_result *res, int n,
                       double ask_s, double tell_s, int evals_before)
{
    probe *p = l->ctx;
    (void)ids;
    (void)res;
    assert_true(ask_s >= 0 && tell_s >= 0);
    if (p->told_rounds < 8) {
        p->told[p->told_rounds] = n;
        p->before[p->told_rounds] = evals_before;
    }
    if (++p->told_rounds == p->stop_after_round)
        l->stop = 1;
}

static space *line_space(int n)
{
    char text[512];
    size_t used = (size_t)snprintf(text, sizeof text, "[{\"name\":\"x\",\"values\":[");
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i ? "," : "", i);
    snprintf(text + used, sizeof text - used, "]}]");
    json_t *params = json_loads(text, 0, NULL);
    kt_error err;
    space *sp = space_new(params, NULL, NULL, NULL, &err);
    json_decref(params);
    assert_non_null(sp);
    return sp;
}

static int run(space *sp, int budget, int batch, probe *p, bench_loop *l, kt_error *err)
{
    memset(l, 0, sizeof *l);
    l->s = searcher_new("random", sp, NULL, 7, err);
    assert_non_null(l->s);
    l->budget = budget;
    l->batch = batch;
    l->space_n = space_count(sp);
    l->what = "random, seed 7";
    l->ctx = p;
    l->evaluate = probe_evaluate;
    l->after_tell = probe_told;
    int rc = bench_loop_run(l, err);
    searcher_free(l->s);
    return rc;
}

static void budget_batch_rounds(void **state)
{
    (void)state;
    space *sp = line_space(10);
    bench_loop l;
    kt_error err;
    probe p = {0};
    assert_int_equal(run(sp, 7, 3, &p, &l, &err), 0);
    assert_int_equal(l.evals, 7);
    assert_int_equal(l.proposals, 7);
    assert_int_equal(l.rounds, 3);
    assert_int_equal(p.told_rounds, 3);
    assert_int_equal(p.told[0], 3); /* 3 + 3 + the last ask cut to 1 */
    assert_int_equal(p.told[2], 1);
    assert_int_equal(p.before[1], 3);
    assert_int_equal(p.before[2], 6);
    assert_false(l.stopped_early);
    for (int i = 0; i < 7; i++) { /* distinct, inside the space */
        assert_true(p.seen[i] < 10);
        for (int j = 0; j < i; j++)
            assert_true(p.seen[i] != p.seen[j]);
    }
    assert_true(l.overhead_s >= l.searcher_s && l.searcher_s >= 0);

    memset(&p, 0, sizeof p); /* a space smaller than the budget: the searcher runs out */
    assert_int_equal(run(sp, 50, 4, &p, &l, &err), 0);
    assert_int_equal(l.evals, 10);
    assert_true(l.stopped_early);
    space_free(sp);
}

static void free_stop_and_errors(void **state)
{
    (void)state;
    space *sp = line_space(20);
    bench_loop l;
    kt_error err;
    probe p = {.free_every = 2}; /* every second evaluation is free */
    assert_int_equal(run(sp, 5, 1, &p, &l, &err), 0);
    assert_int_equal(l.evals, 5);
    assert_int_equal(p.evaluated, 9); /* counted 1, 3, 5, 7, 9 */
    assert_int_equal(l.proposals, 9);

    memset(&p, 0, sizeof p); /* a stop mid-round: the round is not told */
    p.stop_at = 5;
    assert_int_equal(run(sp, 12, 4, &p, &l, &err), 0);
    assert_int_equal(p.evaluated, 5);
    assert_int_equal(l.evals, 5);
    assert_int_equal(l.rounds, 1);
    assert_int_equal(p.told_rounds, 1);

    memset(&p, 0, sizeof p); /* a stop after a tell ends the run */
    p.stop_after_round = 2;
    assert_int_equal(run(sp, 12, 3, &p, &l, &err), 0);
    assert_int_equal(l.evals, 6);
    assert_int_equal(l.rounds, 2);

    memset(&p, 0, sizeof p); /* an evaluation's error fails the run */
    p.fail_at = 3;
    assert_int_equal(run(sp, 12, 2, &p, &l, &err), -1);
    assert_non_null(strstr(err.message, "evaluation 3 failed"));
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(budget_batch_rounds),
        cmocka_unit_test(free_stop_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
