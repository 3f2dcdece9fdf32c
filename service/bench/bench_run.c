/* bench/bench_run — `ktune bench` offline: runs searchers on replayed Kernel Tuner caches and
 * computes the results as JSON (see bench_run.h). */
#include "bench/bench_run.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#include "search/searcher.h"
#include "bench/bench_history.h"
#include "bench/bench_space.h"

#define BENCH_WITHIN 1.05 /* "within 5% of the optimum": best <= 1.05 * optimum */

static const int bench_checkpoint_list[] = {25, 50, 100, 200, 400};
static const int bench_clock_list[] = {60, 300, 900, 1800, 3600}; /* seconds of recorded cost */
#define BENCH_N_STD   5
#define BENCH_N_CLOCK 5

/* One run (strategy, seed): the curves over len = min(budget, n) evaluations, carried forward. */
typedef struct bench_curve {
    int len;
    int evals; /* distinct evaluations actually made */
    double *best;
    double *cum_s;
    double overhead_ns;
    int proposals;
} bench_curve;

/* ---- runs ---- */

static void bench_curve_free(bench_curve *c)
{
    free(c->best);
    free(c->cum_s);
    memset(c, 0, sizeof *c);
}

/* One strategy, one seed: ask 1, tell 1, until budget or the searcher stops. hist: a warm start
 * (searcher_set_history), or NULL. */
static int bench_run_one(const bench_space *bs, const char *strategy, uint64_t seed, int budget,
                         const searcher_history *hist, bench_curve *c, kt_error *err)
{
    searcher *s = NULL;
    unsigned char *seen = NULL;
    int rc = -1;
    double best = INFINITY, cum = 0;

    memset(c, 0, sizeof *c);
    c->len = (uint64_t)budget < bs->n ? budget : (int)bs->n;
    c->best = malloc((size_t)c->len * sizeof *c->best);
    c->cum_s = malloc((size_t)c->len * sizeof *c->cum_s);
    seen = calloc(bs->n, 1);
    if (!c->best || !c->cum_s || !seen) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    s = searcher_new(strategy, bs->sp, NULL, seed, err);
    if (s && searcher_set_history(s, hist, err) < 0) {
        searcher_free(s);
        s = NULL;
    }
    if (!s) {
        kt_error_prefix(err, "strategy %s on %s", strategy, bs->name);
        goto out;
    }
    while (c->evals < c->len) {
        config_id id;
        uint64_t t0 = kt_clock_ns();
        int k = searcher_ask(s, &id, 1);
        c->overhead_ns += (double)kt_clock_since_ns(t0);
        if (k <= 0)
            break;
        c->proposals++;
        if (id >= bs->n || seen[id]) {
            kt_error_set(err, KT_ERR_INTERNAL,
                         "strategy %s on %s, seed %llu: configuration %llu %s at evaluation %d",
                         strategy, bs->name, (unsigned long long)seed, (unsigned long long)id,
                         id >= bs->n ? "is outside the space" : "proposed twice", c->evals + 1);
            goto out;
        }
        seen[id] = 1;
        trial_result r;
        trial_result_init(&r);
        if (isnan(bs->time[id])) {
            r.status = TRIAL_RUNTIME_ERROR;
        } else {
            r.status = TRIAL_OK;
            r.time_ms = bs->time[id];
            r.repeats = 1;
            if (r.time_ms < best)
                best = r.time_ms;
        }
        r.compile_ms = bs->cost_s[id] * 1000.0;
        cum += bs->cost_s[id];
        t0 = kt_clock_ns();
        searcher_tell(s, &id, &r, 1);
        c->overhead_ns += (double)kt_clock_since_ns(t0);
        c->best[c->evals] = best;
        c->cum_s[c->evals] = cum;
        c->evals++;
    }
    for (int k = c->evals; k < c->len; k++) { /* stopped early: carry the last best forward */
        c->best[k] = best;
        c->cum_s[k] = cum;
    }
    rc = 0;
out:
    searcher_free(s);
    free(seen);
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

/* Runs all seeds of one strategy on one space and summarises them. */
static json_t *bench_strategy_on_space(const bench_options *opt, const bench_space *bs,
                                       const char *strategy, const searcher_history *hist,
                                       const json_t *checkpoints, kt_error *err)
{
    bench_curve *curves = calloc((size_t)opt->seeds, sizeof *curves);
    double *evals_ok = calloc((size_t)opt->seeds, sizeof *evals_ok);
    double *clock_ok = calloc((size_t)opt->seeds, sizeof *clock_ok);
    json_t *res = NULL, *o = json_object(), *fr = json_object(), *cf = json_object();
    json_t *runs = json_array();
    int n_ok = 0, done = 0;
    double ns = 0, proposals = 0;
    size_t i;
    json_t *cp;

    if (!curves || !evals_ok || !clock_ok || !o || !fr || !cf || !runs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (done = 0; done < opt->seeds; done++) {
        if (bench_run_one(bs, strategy, (uint64_t)done, opt->budget, hist, &curves[done], err) < 0)
            goto out;
    }
    json_array_foreach(checkpoints, i, cp)
    {
        int b = (int)json_integer_value(cp);
        double sum = 0;
        for (int s = 0; s < opt->seeds; s++) {
            int k = (b < curves[s].len ? b : curves[s].len) - 1;
            sum += bench_frac(bs->optimum, curves[s].best[k]);
        }
        char key[16];
        snprintf(key, sizeof key, "%d", b);
        json_object_set_new(fr, key, json_real(sum / opt->seeds));
    }
    for (int t = 0; t < BENCH_N_CLOCK; t++) {
        double sum = 0;
        for (int s = 0; s < opt->seeds; s++)
            sum += bench_frac(bs->optimum, bench_best_at_clock(&curves[s], bench_clock_list[t]));
        char key[16];
        snprintf(key, sizeof key, "%d", bench_clock_list[t]);
        json_object_set_new(cf, key, json_real(sum / opt->seeds));
    }
    for (int s = 0; s < opt->seeds; s++) {
        const bench_curve *c = &curves[s];
        ns += c->overhead_ns;
        proposals += c->proposals;
        for (int k = 0; k < c->evals; k++) {
            if (c->best[k] <= BENCH_WITHIN * bs->optimum) {
                evals_ok[n_ok] = k + 1;
                clock_ok[n_ok] = c->cum_s[k];
                n_ok++;
                break;
            }
        }
        if (opt->curves) {
            json_t *b = json_array(), *cu = json_array();
            for (int k = 0; b && cu && k < c->len; k++) {
                json_array_append_new(b, bench_real_or_null(c->best[k], 1));
                json_array_append_new(cu, json_real(c->cum_s[k]));
            }
            json_array_append_new(runs,
                                  json_pack("{s:i, s:i, s:o*, s:o*}", "seed", s, "evaluations",
                                            c->evals, "best_so_far", b, "cum_cost_s", cu));
        }
    }
    json_object_set(o, "fraction", fr);
    json_object_set_new(o, "evals_to_5pct", bench_median_json(evals_ok, n_ok, opt->seeds));
    json_object_set(o, "clock_fraction", cf);
    json_object_set_new(o, "clock_to_5pct_s", bench_median_json(clock_ok, n_ok, opt->seeds));
    json_object_set_new(o, "overhead_us", json_real(proposals > 0 ? ns / proposals / 1e3 : 0));
    if (opt->curves)
        json_object_set(o, "runs", runs);
    res = o;
    o = NULL;
out:
    for (int s = 0; curves && s < done; s++)
        bench_curve_free(&curves[s]);
    free(curves);
    free(evals_ok);
    free(clock_ok);
    json_decref(o);
    json_decref(fr);
    json_decref(cf);
    json_decref(runs);
    return res;
}

/* Mean of a numeric field over spaces (nulls skipped); null when none. */
static json_t *bench_mean_of(const json_t *spaces, const char *strategy, const char *group,
                             const char *key)
{
    double sum = 0;
    int n = 0;
    size_t i;
    json_t *sp;
    json_array_foreach(spaces, i, sp)
    {
        const json_t *st = json_object_get(json_object_get(sp, "strategies"), strategy);
        const json_t *v =
            group ? json_object_get(json_object_get(st, group), key) : json_object_get(st, key);
        if (json_is_number(v)) {
            sum += json_number_value(v);
            n++;
        }
    }
    return n ? json_real(sum / n) : json_null();
}

/* The result name of a strategy run warm. */
static void bench_warm_name(const char *strategy, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s+history", strategy);
}

static json_t *bench_averages(const bench_options *opt, const json_t *spaces,
                              const json_t *checkpoints, json_t **summary_out)
{
    json_t *avg = json_object(), *summary = json_object();
    int n_runs = opt->n_strategies * (opt->n_history > 0 ? 2 : 1);
    for (int r = 0; avg && summary && r < n_runs; r++) {
        char warm[80];
        const char *name = opt->strategies[r % opt->n_strategies];
        if (r >= opt->n_strategies) {
            bench_warm_name(name, warm, sizeof warm);
            name = warm;
        }
        json_t *fr = json_object(), *cf = json_object();
        size_t i;
        json_t *cp;
        json_array_foreach(checkpoints, i, cp)
        {
            char key[16];
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
            json_object_set_new(fr, key, bench_mean_of(spaces, name, "fraction", key));
        }
        for (int t = 0; t < BENCH_N_CLOCK; t++) {
            char key[16];
            snprintf(key, sizeof key, "%d", bench_clock_list[t]);
            json_object_set_new(cf, key, bench_mean_of(spaces, name, "clock_fraction", key));
        }
        json_object_set_new(summary, name, json_copy(fr));
        json_object_set_new(
            avg, name,
            json_pack("{s:o, s:{s:o, s:o}, s:o, s:{s:o, s:o}, s:o}", "fraction", fr,
                      "evals_to_5pct", "median",
                      bench_mean_of(spaces, name, "evals_to_5pct", "median"), "success_rate",
                      bench_mean_of(spaces, name, "evals_to_5pct", "success_rate"),
                      "clock_fraction", cf, "clock_to_5pct_s", "median",
                      bench_mean_of(spaces, name, "clock_to_5pct_s", "median"), "success_rate",
                      bench_mean_of(spaces, name, "clock_to_5pct_s", "success_rate"), "overhead_us",
                      bench_mean_of(spaces, name, NULL, "overhead_us")));
    }
    *summary_out = summary;
    return avg;
}

/* Warm against cold, each averaged over the spaces that have history only:
 * {"spaces":[names],"first":n,"times":"as
 * recorded"|"shuffled"|"inverted","strategies":{"<s>":{"cold":{"10":f,...},"warm":{...}}}}
 */
static json_t *bench_warm_summary(const bench_options *opt, const json_t *spaces,
                                  const json_t *checkpoints)
{
    json_t *with = json_array(), *strat = json_object();
    size_t i;
    json_t *sp;
    json_array_foreach(spaces, i, sp)
    {
        if (json_array_size(json_object_get(sp, "history")) > 0)
            json_array_append(with, json_object_get(sp, "name"));
    }
    for (int s = 0; strat && s < opt->n_strategies; s++) {
        char warm[80];
        bench_warm_name(opt->strategies[s], warm, sizeof warm);
        json_t *cold_f = json_object(), *warm_f = json_object();
        size_t k;
        json_t *cp;
        json_array_foreach(checkpoints, k, cp)
        {
            char key[16];
            double sc = 0, sw = 0;
            int n = 0;
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(cp));
            json_array_foreach(spaces, i, sp)
            {
                const json_t *st = json_object_get(sp, "strategies");
                const json_t *w =
                    json_object_get(json_object_get(json_object_get(st, warm), "fraction"), key);
                const json_t *c = json_object_get(
                    json_object_get(json_object_get(st, opt->strategies[s]), "fraction"), key);
                if (json_is_number(w) && json_is_number(c)) {
                    sw += json_number_value(w);
                    sc += json_number_value(c);
                    n++;
                }
            }
            json_object_set_new(cold_f, key, n ? json_real(sc / n) : json_null());
            json_object_set_new(warm_f, key, n ? json_real(sw / n) : json_null());
        }
        json_object_set_new(strat, opt->strategies[s],
                            json_pack("{s:o, s:o}", "cold", cold_f, "warm", warm_f));
    }
    return json_pack("{s:o, s:i, s:s, s:o}", "spaces", with, "first", opt->history_first, "times",
                     opt->history_shuffle  ? "shuffled"
                     : opt->history_invert ? "inverted"
                                           : "as recorded",
                     "strategies", strat);
}

/* The strategies on one loaded space: cold, and warm where its history is not empty. */
static int bench_space_strategies(const bench_options *opt, const bench_space *bs,
                                  const bench_history *hist, const json_t *checkpoints,
                                  json_t *entry, kt_error *err)
{
    bench_seed seed;
    json_t *strats = json_object_get(entry, "strategies");
    int rc = -1, warm = 0;

    memset(&seed, 0, sizeof seed);
    if (opt->n_history > 0) {
        if (bench_history_for(hist, bs, opt->history_first, &seed, err) < 0)
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
        json_t *res = bench_strategy_on_space(
            opt, bs, name, r >= opt->n_strategies ? &seed.h : NULL, checkpoints, err);
        if (!res)
            goto out;
        json_object_set_new(strats, key, res);
    }
    rc = 0;
out:
    bench_seed_free(&seed);
    return rc;
}

json_t *bench_run(const bench_options *opt, kt_error *err)
{
    json_t *paths = NULL, *spaces = json_array(), *checkpoints = json_array(),
           *clocks = json_array();
    json_t *res = NULL, *summary = NULL, *avg = NULL;
    bench_space bs;
    bench_history hist;
    int have_budget = 0;
    size_t i;
    json_t *p;

    memset(&bs, 0, sizeof bs);
    memset(&hist, 0, sizeof hist);
    kt_error_clear(err);
    if (!spaces || !checkpoints || !clocks) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (opt->budget < 1 || opt->budget > BENCH_MAX_BUDGET || opt->seeds < 1 ||
        opt->seeds > BENCH_MAX_SEEDS || opt->n_strategies < 1 || opt->n_spaces < 1) {
        kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                     "budget 1-%d, seeds 1-%d, at least one strategy and one space",
                     BENCH_MAX_BUDGET, BENCH_MAX_SEEDS);
        goto out;
    }
    for (int s = 0; s < opt->n_strategies; s++) {
        if (!searcher_exists(opt->strategies[s])) {
            kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "unknown strategy '%s'", opt->strategies[s]);
            kt_error_hint(err, "strategies: %s", searcher_names());
            goto out;
        }
    }
    if (opt->n_history > 0 && opt->budget > 10) /* warm starts are judged early too */
        json_array_append_new(checkpoints, json_integer(10));
    for (int k = 0; k < BENCH_N_STD; k++) {
        if (bench_checkpoint_list[k] <= opt->budget)
            json_array_append_new(checkpoints, json_integer(bench_checkpoint_list[k]));
        have_budget |= bench_checkpoint_list[k] == opt->budget;
    }
    if (!have_budget)
        json_array_append_new(checkpoints, json_integer(opt->budget));
    for (int t = 0; t < BENCH_N_CLOCK; t++)
        json_array_append_new(clocks, json_integer(bench_clock_list[t]));
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
        if (bench_space_load(json_string_value(p), opt->include_failed, &bs, err) < 0)
            goto out;
        json_t *strats = json_object();
        json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:o*}", "name", bs.name, "file", bs.file,
                              "n_configs", (json_int_t)bs.n, "n_valid", (json_int_t)bs.valid,
                              "optimum_ms", bs.optimum, "strategies", strats);
        if (!o) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        json_array_append_new(spaces, o);
        if (bench_space_strategies(opt, &bs, &hist, checkpoints, o, err) < 0)
            goto out;
        bench_space_free(&bs);
    }
    avg = bench_averages(opt, spaces, checkpoints, &summary);
    res =
        json_pack("{s:i, s:i, s:b, s:O, s:O, s:O, s:O, s:O}", "budget", opt->budget, "seeds",
                  opt->seeds, "include_failed", opt->include_failed, "checkpoints", checkpoints,
                  "clock_budgets_s", clocks, "spaces", spaces, "summary", summary, "averages", avg);
    if (res && opt->n_history > 0)
        json_object_set_new(res, "warm_start", bench_warm_summary(opt, spaces, checkpoints));
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    bench_space_free(&bs);
    bench_history_free(&hist);
    json_decref(paths);
    json_decref(spaces);
    json_decref(checkpoints);
    json_decref(clocks);
    json_decref(summary);
    json_decref(avg);
    return res;
}
