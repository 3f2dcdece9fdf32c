/* bench/accel/bench_accel_search — one problem ready to search and one search run against the accel
 * cost model (see bench_accel_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "search/searcher.h"
#include "bench/bench_strategy.h"
#include "bench/accel/bench_accel_impl.h"
#include "bench/bench_loop.h"

int ba_problem_init(ba_problem *bp, const accel_device *d, const accel_problem *p, kt_error *err)
{
    json_t *pj = NULL;
    int rc = -1;

    memset(bp, 0, sizeof *bp);
    bp->dev = d;
    bp->p = *p;
    if (!(bp->sp = accel_space_new(p, d, err)))
        goto out;
    accel_lower_bound(d, p, &bp->lb);
    if (!(bp->lb.edp > 0) || !isfinite(bp->lb.edp)) {
        kt_error_set(err, KT_ERR_INTERNAL, "the algorithmic minimum EDP is %g", bp->lb.edp);
        goto out;
    }
    pj = accel_problem_json(p);
    bp->npf = pj ? surrogate_problem_features(pj, bp->pf, SURROGATE_MAX_PROBLEM_FEATURES) : -1;
    if (bp->npf < 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "the problem's surrogate features");
        goto out;
    }
    rc = 0;
out:
    json_decref(pj);
    if (rc < 0)
        ba_problem_release(bp);
    return rc;
}

void ba_problem_release(ba_problem *bp)
{
    space_free(bp->sp);
    bp->sp = NULL;
}

int ba_evaluate(const ba_problem *bp, config_id id, double *obj, accel_stats *st, kt_error *err)
{
    accel_mapping m;
    accel_stats local;
    accel_stats *s = st ? st : &local;
    if (accel_mapping_decode(&bp->p, bp->sp, id, &m, err) < 0)
        return -1;
    if (!accel_evaluate(bp->dev, &bp->p, &m, s))
        return 0;
    *obj = s->edp / bp->lb.edp;
    return 1;
}

int ba_run_alloc(ba_run *r, int budget)
{
    memset(r, 0, sizeof *r);
    r->best = malloc((size_t)budget * sizeof *r->best);
    r->t = malloc((size_t)budget * sizeof *r->t);
    if (!r->best || !r->t) {
        ba_run_release(r);
        return -1;
    }
    return 0;
}

void ba_run_release(ba_run *r)
{
    free(r->best);
    free(r->t);
    json_decref(r->sources);
    r->best = r->t = NULL;
    r->sources = NULL;
}

/* The oracle every searcher gets: the cost model's validity of id (accel_mapping_valid: its limits
 * only, no energy or cycles), 1 / 0, -1 when id cannot be decoded. Counted in the run. */
typedef struct ba_oracle_ctx {
    const ba_problem *bp;
    long calls;
} ba_oracle_ctx;

static int ba_oracle(void *arg, config_id id)
{
    ba_oracle_ctx *c = arg;
    kt_error err;
    accel_mapping m;
    c->calls++;
    if (accel_mapping_decode(&c->bp->p, c->bp->sp, id, &m, &err) < 0)
        return -1;
    return accel_mapping_valid(c->bp->dev, &c->bp->p, &m);
}

/* Keeps the BA_TOP best distinct valid mappings of the run, best first (ids are never repeated
 * by a searcher, so distinct by construction). */
static void ba_top_add(ba_run *r, config_id id, double obj)
{
    if (r->n_top == BA_TOP && obj >= r->top_obj[BA_TOP - 1])
        return;
    int i = r->n_top < BA_TOP ? r->n_top++ : BA_TOP - 1;
    while (i > 0 && r->top_obj[i - 1] > obj) {
        r->top[i] = r->top[i - 1];
        r->top_obj[i] = r->top_obj[i - 1];
        i--;
    }
    r->top[i] = id;
    r->top_obj[i] = obj;
}

/* The accel evaluator of bench_loop: the cost model; a free rejection does not count. */
typedef struct ba_loop_eval {
    const ba_problem *bp;
    ba_run *run;
    int free_invalid;
    long max_rejected;
    double t0, best;
} ba_loop_eval;

static int ba_loop_evaluate(bench_loop *l, config_id id, trial_result *r, kt_error *err)
{
    ba_loop_eval *e = l->ctx;
    double obj = INFINITY;
    int v = ba_evaluate(e->bp, id, &obj, NULL, err);
    if (v < 0)
        return -1;
    r->status = v ? TRIAL_OK : TRIAL_INVALID;
    r->time_ms = v ? obj : 0;
    r->repeats = 1;
    return !v && e->free_invalid; /* rejected by the cheap check: no budget */
}

/* After the tell: the curve point (best so far, seconds since the run began) of a counted
 * evaluation, the run's top mappings; too many free rejections end the run. */
static void ba_loop_told(bench_loop *l, const config_id *ids, const trial_result *res, int n,
                         double ask_s, double tell_s, int evals_before)
{
    ba_loop_eval *e = l->ctx;
    ba_run *run = e->run;
    (void)ask_s;
    (void)tell_s;
    (void)evals_before;
    for (int i = 0; i < n; i++) {
        int v = res[i].status == TRIAL_OK;
        if (!v && e->free_invalid) {
            if (++run->rejected > e->max_rejected)
                l->stop = 1;
            continue;
        }
        if (v) {
            run->valid++;
            e->best = res[i].time_ms < e->best ? res[i].time_ms : e->best;
            ba_top_add(run, ids[i], res[i].time_ms);
        }
        run->best[run->n] = e->best;
        run->t[run->n] = kt_clock_s() - e->t0;
        run->n++;
    }
}

int ba_search(const ba_problem *bp, const char *strategy, uint64_t seed, int budget, surrogate *sur,
              int free_invalid, ba_run *run, kt_error *err)
{
    ba_oracle_ctx oc = {bp, 0};
    ba_loop_eval e = {bp,           run,     free_invalid, BA_MAX_REJECTED_PER_EVAL * (long)budget,
                      kt_clock_s(), INFINITY};
    bench_loop l = {0};
    double setup_s = 0;
    int rc = -1;

    run->n = run->valid = run->n_top = 0;
    run->rejected = 0;
    if (!(l.s = bench_strategy_searcher_new(strategy, bp->sp, seed, err)))
        goto out;
    searcher_set_oracle(l.s, ba_oracle, &oc);
    if (bench_strategy_needs_surrogate(strategy)) {
        if (!sur) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "strategy %s needs a trained surrogate",
                         strategy);
            goto out;
        }
        if (searcher_set_surrogate(l.s, sur, bp->pf, bp->npf, err) < 0)
            goto out;
    }
    setup_s = kt_clock_s() - e.t0;
    l.budget = budget;
    l.batch = 1;
    l.what = strategy;
    l.ctx = &e;
    l.evaluate = ba_loop_evaluate;
    l.after_tell = ba_loop_told;
    rc = bench_loop_run(&l, err);
    json_decref(run->sources);
    run->sources = searcher_stats(l.s);
out:
    searcher_free(l.s);
    run->oracle_calls = oc.calls;
    run->end_s = kt_clock_s() - e.t0;
    run->searcher_s = setup_s + l.overhead_s;
    return rc;
}
