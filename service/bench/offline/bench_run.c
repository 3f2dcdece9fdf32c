/* bench/offline/bench_run — `ktune bench` offline: runs searchers on replayed Kernel Tuner caches
 * and computes the results as JSON (see bench_run.h). */
#include "bench/offline/bench_run.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#include "search/searcher.h"
#include "bench/offline/bench_cv.h"
#include "bench/offline/bench_history.h"
#include "bench/offline/bench_kt.h"
#include "bench/bench_loop.h"
#include "bench/offline/bench_score.h"
#include "bench/offline/bench_space.h"
#include "bench/offline/bench_summary.h"

#define BENCH_WITHIN 1.05 /* "within 5% of the optimum": best <= 1.05 * optimum */

static const int bench_checkpoint_list[] = {25, 50, 100, 200, 400};
static const int bench_clock_list[] = {60, 300, 900, 1800, 3600}; /* seconds of recorded cost */
#define BENCH_N_STD   5
#define BENCH_N_CLOCK 5

/* One run (strategy, seed): the curves over len = min(budget, n) evaluations, carried forward. */
typedef struct bench_curve {
    int len;
    int evals;  /* distinct evaluations actually made */
    int rounds; /* asks that proposed something (each followed by one tell) */
    double *best;
    double *cum_s;      /* recorded cost (s) up to each evaluation */
    double *clock_s;    /* cum_s plus the searcher's own time so far (the score's clock) */
    int *round_end;     /* evaluations made after each round (rounds entries) */
    double overhead_ns; /* searcher time in ask + tell, all calls */
    int proposals;
    double ovh400_ns; /* the same over the rounds asked once 350-399 results were told */
    int ovh400_proposals;
} bench_curve;

/* ---- runs ---- */

static void bench_curve_free(bench_curve *c)
{
    free(c->best);
    free(c->cum_s);
    free(c->clock_s);
    free(c->round_end);
    memset(c, 0, sizeof *c);
}

/* Evaluates configuration id of bs into r (the replay), updating the run's best and cost. */
static void bench_evaluate(const bench_space *bs, config_id id, trial_result *r, double *best,
                           double *cum)
{
    trial_result_init(r);
    if (isnan(bs->time[id])) {
        r->status = TRIAL_RUNTIME_ERROR;
    } else {
        r->status = TRIAL_OK;
        r->time_ms = bs->time[id];
        r->repeats = 1;
        if (r->time_ms < *best)
            *best = r->time_ms;
    }
    r->compile_ms = bs->cost_s[id] * 1000.0;
    *cum += bs->cost_s[id];
}

/* The offline evaluator of bench_loop: the replayed cache, the run's curves. */
typedef struct bench_replay {
    const bench_space *bs;
    bench_curve *c;
    double best, cum;
} bench_replay;

static int bench_replay_evaluate(bench_loop *l, config_id id, trial_result *r, kt_error *err)
{
    bench_replay *e = l->ctx;
    (void)err;
    bench_evaluate(e->bs, id, r, &e->best, &e->cum);
    e->c->best[l->evals] = e->best;
    e->c->cum_s[l->evals] = e->cum;
    e->c->clock_s[l->evals] = e->cum + l->searcher_s;
    return 0;
}

/* A round told: where it ended, and the overhead at 400 results (rounds asked at 350-399). */
static void bench_replay_told(bench_loop *l, const config_id *ids, const trial_result *res, int n,
                              double ask_s, double tell_s, int evals_before)
{
    bench_curve *c = ((bench_replay *)l->ctx)->c;
    (void)ids;
    (void)res;
    if (evals_before >= 350 && evals_before < 400) {
        c->ovh400_ns += (ask_s + tell_s) * 1e9;
        c->ovh400_proposals += n;
    }
    c->round_end[c->rounds++] = l->evals;
}

/* The run's searcher: maker's (--remote) or made in process with hist (a warm start, or NULL).
 * NULL with err. */
static searcher *bench_searcher(const bench_searcher_maker *maker, const bench_space *bs,
                                const char *strategy, uint64_t seed, int budget, int batch,
                                const searcher_history *hist, kt_error *err)
{
    searcher *s =
        maker ? maker->make(maker->ctx, bs->sp, bs->name, strategy, seed, budget, batch, err)
              : searcher_new(strategy, bs->sp, NULL, seed, err);
    if (s && searcher_set_history(s, hist, err) < 0) {
        searcher_free(s);
        s = NULL;
    }
    if (!s)
        kt_error_prefix(err, "strategy %s on %s", strategy, bs->name);
    return s;
}

/* One strategy, one seed through bench_loop, until budget or the searcher stops. hist: a warm
 * start (searcher_set_history), or NULL; maker: who makes the searcher (NULL: in process). */
static int bench_run_one(const bench_space *bs, const char *strategy, uint64_t seed, int budget,
                         int batch, const searcher_history *hist, const bench_searcher_maker *maker,
                         bench_curve *c, kt_error *err)
{
    bench_replay e = {bs, c, INFINITY, 0};
    bench_loop l = {0};
    char what[256];
    int rc = -1;

    memset(c, 0, sizeof *c);
    c->len = (uint64_t)budget < bs->n ? budget : (int)bs->n;
    c->best = malloc((size_t)c->len * sizeof *c->best);
    c->cum_s = malloc((size_t)c->len * sizeof *c->cum_s);
    c->clock_s = malloc((size_t)c->len * sizeof *c->clock_s);
    c->round_end = malloc((size_t)c->len * sizeof *c->round_end);
    if (!c->best || !c->cum_s || !c->clock_s || !c->round_end) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (!(l.s = bench_searcher(maker, bs, strategy, seed, c->len, batch, hist, err)))
        goto out;
    snprintf(what, sizeof what, "strategy %s on %s, seed %llu", strategy, bs->name,
             (unsigned long long)seed);
    l.budget = c->len;
    l.batch = batch;
    l.space_n = bs->n;
    l.what = what;
    l.ctx = &e;
    l.evaluate = bench_replay_evaluate;
    l.after_tell = bench_replay_told;
    if (bench_loop_run(&l, err) < 0)
        goto out;
    if (maker && maker->failed(maker->ctx, err) < 0) {
        kt_error_prefix(err, "%s", what);
        goto out;
    }
    c->evals = l.evals;
    c->proposals = l.proposals;
    c->overhead_ns = l.overhead_s * 1e9;
    for (int k = c->evals; k < c->len; k++) { /* stopped early: carry the last best forward */
        c->best[k] = e.best;
        c->cum_s[k] = e.cum;
        c->clock_s[k] = e.cum + l.searcher_s;
    }
    rc = 0;
out:
    searcher_free(l.s);
    if (rc < 0)
        bench_curve_free(c);
    return rc;
}

static double bench_frac(double optimum, double best)
{
    return isfinite(best) && best > 0 ? optimum / best : 0.0;
}

static double bench_median(double *v, int n)
{
    for (int i = 1; i < n; i++) { /* insertion sort: n <= seeds <= 1000 */
        double x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static json_t *bench_real_or_null(double x, int valid)
{
    return valid && isfinite(x) ? json_real(x) : json_null();
}

/* Best time at clock t: the last evaluation whose cumulative cost is <= t. */
static double bench_best_at_clock(const bench_curve *c, double t)
{
    double best = INFINITY;
    for (int k = 0; k < c->evals && c->cum_s[k] <= t; k++)
        best = c->best[k];
    return best;
}

static json_t *bench_median_json(double *v, int n, int seeds)
{
    return json_pack("{s:o, s:f}", "median", bench_real_or_null(n ? bench_median(v, n) : 0, n),
                     "success_rate", (double)n / seeds);
}

/* What the runs on one space share. */
typedef struct bench_space_ctx {
    const bench_options *opt;
    const bench_space *bs;
    const bench_score_range *score; /* the methodology score's range and baseline */
    const json_t *checkpoints;      /* evaluations */
    const json_t *round_checkpoints;
    int batch;
} bench_space_ctx;

/* Best after n rounds (n > 0), the last best when the run made fewer. */
static double bench_best_at_round(const bench_curve *c, int n)
{
    if (c->rounds == 0)
        return INFINITY;
    return c->best[c->round_end[(n < c->rounds ? n : c->rounds) - 1] - 1];
}

/* {"<checkpoint>": mean fraction over seeds} of a list of integers; at(c, n) the best. */
static json_t *bench_fraction_at(const bench_space_ctx *x, const bench_curve *curves,
                                 const json_t *list, double (*at)(const bench_curve *, int))
{
    json_t *o = json_object(), *cp;
    size_t i;
    json_array_foreach(list, i, cp)
    {
        int b = (int)json_integer_value(cp);
        double sum = 0;
        for (int s = 0; s < x->opt->seeds; s++)
            sum += bench_frac(x->bs->optimum, at(&curves[s], b));
        char key[24];
        snprintf(key, sizeof key, "%d", b);
        json_object_set_new(o, key, json_real(sum / x->opt->seeds));
    }
    return o;
}

static double bench_best_at_eval(const bench_curve *c, int n)
{
    return c->best[(n < c->len ? n : c->len) - 1];
}

static double bench_best_at_clock_int(const bench_curve *c, int t)
{
    return bench_best_at_clock(c, (double)t);
}

/* The methodology score of the runs into o ("score", "score_beyond"). */
static int bench_score_into(const bench_space_ctx *x, const bench_curve *curves, json_t *o)
{
    int n = x->opt->seeds, rc = -1;
    const double **best = calloc((size_t)n, sizeof *best);
    const double **clock = calloc((size_t)n, sizeof *clock);
    int *evals = calloc((size_t)n, sizeof *evals);
    double beyond = NAN;
    if (!best || !clock || !evals)
        goto out;
    for (int s = 0; s < n; s++) {
        best[s] = curves[s].best;
        clock[s] = curves[s].clock_s;
        evals[s] = curves[s].evals;
    }
    double score = bench_score_runs(x->score, n, best, clock, evals, &beyond);
    json_object_set_new(o, "score", bench_real_or_null(score, 1));
    json_object_set_new(o, "score_beyond", bench_real_or_null(beyond, 1));
    rc = 0;
out:
    free(best);
    free(clock);
    free(evals);
    return rc;
}

/* The per-seed record of a run (--json with curves). */
static json_t *bench_run_json(const bench_curve *c, int seed)
{
    json_t *b = json_array(), *cu = json_array();
    for (int k = 0; b && cu && k < c->len; k++) {
        json_array_append_new(b, bench_real_or_null(c->best[k], 1));
        json_array_append_new(cu, json_real(c->cum_s[k]));
    }
    return json_pack("{s:i, s:i, s:i, s:o*, s:o*}", "seed", seed, "evaluations", c->evals, "rounds",
                     c->rounds, "best_so_far", b, "cum_cost_s", cu);
}

/* The figures of one strategy's runs on one space (see bench_run.h). NULL without memory. */
static json_t *bench_figures(const bench_space_ctx *x, const bench_curve *curves)
{
    int seeds = x->opt->seeds, n_ok = 0, n_round_ok = 0, props400 = 0;
    double *evals_ok = calloc((size_t)seeds, sizeof *evals_ok);
    double *clock_ok = calloc((size_t)seeds, sizeof *clock_ok);
    double *rounds_ok = calloc((size_t)seeds, sizeof *rounds_ok);
    double ns = 0, proposals = 0, ns400 = 0;
    json_t *o = json_object(), *runs = json_array(), *clocks = json_array(), *res = NULL;

    if (!evals_ok || !clock_ok || !rounds_ok || !o || !runs || !clocks)
        goto out;
    for (int t = 0; t < BENCH_N_CLOCK; t++)
        json_array_append_new(clocks, json_integer(bench_clock_list[t]));
    for (int s = 0; s < seeds; s++) {
        const bench_curve *c = &curves[s];
        ns += c->overhead_ns;
        proposals += c->proposals;
        ns400 += c->ovh400_ns;
        props400 += c->ovh400_proposals;
        for (int k = 0; k < c->evals; k++) {
            if (c->best[k] <= BENCH_WITHIN * x->bs->optimum) {
                evals_ok[n_ok] = k + 1;
                clock_ok[n_ok] = c->cum_s[k];
                n_ok++;
                break;
            }
        }
        for (int r = 0; r < c->rounds; r++) {
            if (c->best[c->round_end[r] - 1] <= BENCH_WITHIN * x->bs->optimum) {
                rounds_ok[n_round_ok++] = r + 1;
                break;
            }
        }
        if (x->opt->curves)
            json_array_append_new(runs, bench_run_json(c, s));
    }
    json_object_set_new(o, "fraction",
                        bench_fraction_at(x, curves, x->checkpoints, bench_best_at_eval));
    json_object_set_new(o, "evals_to_5pct", bench_median_json(evals_ok, n_ok, seeds));
    json_object_set_new(o, "clock_fraction",
                        bench_fraction_at(x, curves, clocks, bench_best_at_clock_int));
    json_object_set_new(o, "clock_to_5pct_s", bench_median_json(clock_ok, n_ok, seeds));
    json_object_set_new(o, "overhead_us", json_real(proposals > 0 ? ns / proposals / 1e3 : 0));
    json_object_set_new(o, "overhead_at_400_us",
                        bench_real_or_null(props400 ? ns400 / props400 / 1e3 : 0, props400));
    json_object_set_new(o, "rounds_fraction",
                        bench_fraction_at(x, curves, x->round_checkpoints, bench_best_at_round));
    json_object_set_new(o, "rounds_to_5pct", bench_median_json(rounds_ok, n_round_ok, seeds));
    if (bench_score_into(x, curves, o) < 0)
        goto out;
    if (x->opt->curves)
        json_object_set(o, "runs", runs);
    res = o;
    o = NULL;
out:
    free(evals_ok);
    free(clock_ok);
    free(rounds_ok);
    json_decref(o);
    json_decref(runs);
    json_decref(clocks);
    return res;
}

/* Runs all seeds of one strategy on one space and summarises them. */
static json_t *bench_strategy_on_space(const bench_space_ctx *x, const char *strategy,
                                       const searcher_history *hist, kt_error *err)
{
    bench_curve *curves = calloc((size_t)x->opt->seeds, sizeof *curves);
    json_t *res = NULL;
    int done = 0;

    if (!curves) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (done = 0; done < x->opt->seeds; done++) {
        if (bench_run_one(x->bs, strategy, (uint64_t)done, x->opt->budget, x->batch, hist,
                          x->opt->maker, &curves[done], err) < 0)
            goto out;
    }
    res = bench_figures(x, curves);
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    for (int s = 0; curves && s < done; s++)
        bench_curve_free(&curves[s]);
    free(curves);
    return res;
}

/* The strategies on one loaded space: cold, and warm where its history is not empty. */
static int bench_space_strategies(const bench_space_ctx *x, const bench_history *hist,
                                  json_t *entry, kt_error *err)
{
    const bench_options *opt = x->opt;
    bench_seed seed;
    json_t *strats = json_object_get(entry, "strategies");
    int rc = -1, warm = 0;

    memset(&seed, 0, sizeof seed);
    if (opt->n_history > 0) {
        if (bench_history_for(hist, x->bs, opt->history_first, &seed, err) < 0)
            goto out;
        json_object_set(entry, "history", seed.sources);
        json_object_set_new(entry, "history_first", json_integer(seed.h.n_first));
        json_object_set_new(entry, "history_prior", json_integer(seed.h.n_prior));
        warm = seed.h.n_first > 0 || seed.h.n_prior > 0;
    }
    for (int r = 0; r < opt->n_strategies * (warm ? 2 : 1); r++) {
        const char *name = opt->strategies[r % opt->n_strategies];
        char key[80];
        snprintf(key, sizeof key, "%s", name);
        if (r >= opt->n_strategies)
            bench_warm_name(name, key, sizeof key);
        json_t *res =
            bench_strategy_on_space(x, name, r >= opt->n_strategies ? &seed.h : NULL, err);
        if (!res)
            goto out;
        json_object_set_new(strats, key, res);
    }
    rc = 0;
out:
    bench_seed_free(&seed);
    return rc;
}

/* The checkpoint lists: evaluations (25 ... 400 up to the budget, plus the budget; 10 first with
 * --history) and rounds (5, 10, 25 ... up to ceil(budget / batch), plus that). */
static void bench_checkpoint_lists(const bench_options *opt, int batch, json_t *checkpoints,
                                   json_t *round_checkpoints)
{
    static const int round_list[] = {5, 10, 25, 50, 100, 200, 400};
    int have_budget = 0, max_rounds = (opt->budget + batch - 1) / batch, have_rounds = 0;

    if (opt->n_history > 0 && opt->budget > 10) /* warm starts are judged early too */
        json_array_append_new(checkpoints, json_integer(10));
    for (int k = 0; k < BENCH_N_STD; k++) {
        if (bench_checkpoint_list[k] <= opt->budget)
            json_array_append_new(checkpoints, json_integer(bench_checkpoint_list[k]));
        have_budget |= bench_checkpoint_list[k] == opt->budget;
    }
    if (!have_budget)
        json_array_append_new(checkpoints, json_integer(opt->budget));
    for (size_t k = 0; k < sizeof round_list / sizeof round_list[0]; k++) {
        if (round_list[k] <= max_rounds)
            json_array_append_new(round_checkpoints, json_integer(round_list[k]));
        have_rounds |= round_list[k] == max_rounds;
    }
    if (!have_rounds)
        json_array_append_new(round_checkpoints, json_integer(max_rounds));
}

/* Loads one space, runs every strategy on it and appends its entry to spaces. */
static int bench_one_space(bench_space_ctx *x, const char *path, const bench_history *hist,
                           const json_t *kt_ref, json_t *spaces, kt_error *err)
{
    bench_space bs;
    bench_score_range sr;
    int rc = -1;

    memset(&sr, 0, sizeof sr);
    if (bench_space_load(path, x->opt->include_failed, &bs, err) < 0)
        goto out;
    if (bench_score_range_init(&bs, &sr, err) < 0)
        goto out;
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:o, s:o}", "name", bs.name, "file", bs.file,
                          "n_configs", (json_int_t)bs.n, "n_valid", (json_int_t)bs.valid,
                          "optimum_ms", bs.optimum, "strategies", json_object(), "score_range",
                          bench_score_range_json(&sr));
    if (!o || json_array_append_new(spaces, o) < 0) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (kt_ref)
        json_object_set_new(o, "kt_best", bench_kt_space_best(kt_ref, bs.name, x->checkpoints));
    x->bs = &bs;
    x->score = &sr;
    rc = bench_space_strategies(x, hist, o, err);
out:
    x->bs = NULL;
    x->score = NULL;
    bench_score_range_free(&sr);
    bench_space_free(&bs);
    return rc;
}

/* The Kernel Tuner reference into res: "kt_reference" (the file), "kt_strategies", "kt_best"
 * (mean over the spaces), or "kt_error" when it cannot be read. */
static void bench_kt_into(json_t *res, const char *path, const json_t *ref, int read_errno,
                          const json_t *spaces, const json_t *checkpoints)
{
    if (!path)
        return;
    json_object_set_new(res, "kt_reference", json_string(path));
    if (!ref) {
        json_object_set_new(res, "kt_error", json_string(strerror(read_errno)));
        return;
    }
    json_object_set_new(res, "kt_strategies", json_integer((json_int_t)bench_kt_strategies(ref)));
    json_object_set_new(res, "kt_best", bench_kt_mean_best(ref, spaces, checkpoints));
}

json_t *bench_run(const bench_options *opt, kt_error *err)
{
    json_t *paths = NULL, *spaces = json_array(), *checkpoints = json_array(),
           *clocks = json_array(), *rounds = json_array(), *kt_ref = NULL;
    json_t *res = NULL, *summary = NULL, *avg = NULL;
    bench_history hist;
    int batch = opt->batch > 0 ? opt->batch : 1, kt_errno = 0;
    bench_space_ctx x = {opt, NULL, NULL, checkpoints, rounds, batch};
    size_t i;
    json_t *p;

    memset(&hist, 0, sizeof hist);
    kt_error_clear(err);
    if (!spaces || !checkpoints || !clocks || !rounds) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (opt->budget < 1 || opt->budget > BENCH_MAX_BUDGET || opt->seeds < 1 ||
        opt->seeds > BENCH_MAX_SEEDS || opt->n_strategies < 1 || opt->n_spaces < 1 ||
        batch > BENCH_MAX_BATCH) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "budget 1-%d, seeds 1-%d, batch 1-%d, at least one strategy and one space",
                     BENCH_MAX_BUDGET, BENCH_MAX_SEEDS, BENCH_MAX_BATCH);
        goto out;
    }
    for (int s = 0; s < opt->n_strategies; s++) {
        if (!searcher_exists(opt->strategies[s])) {
            kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "unknown strategy '%s'", opt->strategies[s]);
            kt_error_hint(err, "strategies: %s", searcher_names());
            goto out;
        }
    }
    bench_checkpoint_lists(opt, batch, checkpoints, rounds);
    for (int t = 0; t < BENCH_N_CLOCK; t++)
        json_array_append_new(clocks, json_integer(bench_clock_list[t]));
    if (opt->kt_reference) {
        kt_ref = bench_kt_read(opt->kt_reference);
        kt_errno = errno;
    }
    paths = bench_space_paths(opt->spaces, opt->n_spaces, err);
    if (!paths)
        goto out;
    if (opt->n_history > 0 && bench_history_load(opt->history, opt->n_history,
                                                 opt->history_shuffle  ? BENCH_HISTORY_SHUFFLED
                                                 : opt->history_invert ? BENCH_HISTORY_INVERTED
                                                                       : BENCH_HISTORY_AS_RECORDED,
                                                 &hist, err) < 0)
        goto out;
    json_array_foreach(paths, i, p)
    {
        if (bench_one_space(&x, json_string_value(p), &hist, kt_ref, spaces, err) < 0)
            goto out;
    }
    avg = bench_averages(opt, spaces, checkpoints, clocks, rounds, &summary);
    res = json_pack("{s:i, s:i, s:i, s:b, s:O, s:O, s:O, s:O, s:O, s:O}", "budget", opt->budget,
                    "seeds", opt->seeds, "batch", batch, "include_failed", opt->include_failed,
                    "checkpoints", checkpoints, "round_checkpoints", rounds, "clock_budgets_s",
                    clocks, "spaces", spaces, "summary", summary, "averages", avg);
    if (res && opt->n_history > 0)
        json_object_set_new(res, "warm_start", bench_warm_summary(opt, spaces, checkpoints));
    if (res && bench_cv_wanted(opt)) { /* auto's cross-validated table (issue 29) */
        json_t *cv = bench_cv_run(opt, paths, checkpoints, kt_ref, spaces, err);
        if (!cv && err->code != KT_OK) {
            json_decref(res);
            res = NULL;
            goto out;
        }
        if (cv)
            json_object_set_new(res, "cross_validation", cv);
    }
    if (res && opt->maker) /* --remote: the searchers were the maker's */
        json_object_set_new(res, "remote", json_true());
    if (res)
        bench_kt_into(res, opt->kt_reference, kt_ref, kt_errno, spaces, checkpoints);
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    bench_history_free(&hist);
    json_decref(paths);
    json_decref(spaces);
    json_decref(checkpoints);
    json_decref(clocks);
    json_decref(rounds);
    json_decref(kt_ref);
    json_decref(summary);
    json_decref(avg);
    return res;
}
