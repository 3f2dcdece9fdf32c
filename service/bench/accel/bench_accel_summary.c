/* bench/accel/bench_accel_summary — the figures of `ktune bench --accel` from phase 2's runs (data
 * only; bench_accel_report.c prints them). For every preset and strategy, the mean over seeds of
 * the best EDP / minimum at evaluation checkpoints (iso-iteration) and at clock times (iso-time: on
 * the wall clock, and on a modelled clock that charges --eval-latency-ms per evaluation); the
 * geometric mean over presets of each strategy's mean / the reference's (mindmap when it ran,
 * else the first strategy); valid fractions; the paper's figures (Mind Mappings, section 6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/searcher.h"
#include "bench/bench_strategy.h"
#include "bench/accel/bench_accel_impl.h"

#define BA_MAX_POINTS  24
#define BA_TIME_POINTS 10 /* times of an iso-time table, at most (but for decades) */

/* Mind Mappings' figures: how many times better MM's EDP was (Fig. 5 / 6 and the text). */
static const struct {
    const char *strategy, *paper_name;
    double iso_iteration, iso_time;
} ba_paper[] = {
    {"anneal", "SA", 1.40, 3.16}, {"genetic", "GA", 1.76, 4.19}, {"na2c", "RL", 1.29, 2.90}};
#define BA_PAPER_MM_OVER_MIN 5.32

typedef struct ba_ctx {
    const bench_accel_options *opt;
    const ba_run *runs;
    int n_presets, ref; /* the reference strategy */
    int paper_clock;    /* strategies with a surrogate are charged no latency */
} ba_ctx;

/* The latency charged per evaluation of strategy s. */
static double ba_lat(const ba_ctx *c, int s, double lat_s)
{
    return c->paper_clock && bench_strategy_needs_surrogate(c->opt->strategies[s]) ? 0 : lat_s;
}

static const ba_run *ba_at(const ba_ctx *c, int p, int s, int seed)
{
    return &c->runs[((size_t)p * (size_t)c->opt->n_strategies + (size_t)s) * (size_t)c->opt->seeds +
                    (size_t)seed];
}

/* Best after n evaluations (a run that stopped earlier keeps its last best). */
static double ba_best_evals(const ba_run *r, int n)
{
    if (r->n == 0 || n <= 0)
        return INFINITY;
    return r->best[(n < r->n ? n : r->n) - 1];
}

/* The run's clock after evaluation e: wall seconds plus lat_s per evaluation made. */
static double ba_clock(const ba_run *r, int e, double lat_s)
{
    return r->t[e] + (e + 1) * lat_s;
}

/* Best at clock time t (INFINITY: no evaluation done by then, or none valid). */
static double ba_best_time(const ba_run *r, double t, double lat_s)
{
    int lo = 0, hi = r->n; /* first e with clock > t */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ba_clock(r, mid, lat_s) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? INFINITY : r->best[lo - 1];
}

/* Mean over seeds of the finite values of f(run, x); *found how many were finite. */
static double ba_mean(const ba_ctx *c, int p, int s, int by_time, double x, double lat_s,
                      int *found)
{
    double sum = 0;
    *found = 0;
    for (int seed = 0; seed < c->opt->seeds; seed++) {
        const ba_run *r = ba_at(c, p, s, seed);
        double v = by_time ? ba_best_time(r, x, ba_lat(c, s, lat_s)) : ba_best_evals(r, (int)x);
        if (isfinite(v)) {
            sum += v;
            (*found)++;
        }
    }
    return *found ? sum / *found : INFINITY;
}

static json_t *ba_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Geometric mean over presets of mean(s) / mean(ref) at x; presets where either is unknown are
 * left out (*n says how many counted). */
static double ba_ratio(const ba_ctx *c, int s, int by_time, double x, double lat_s, int *n)
{
    double lsum = 0;
    int f;
    *n = 0;
    for (int p = 0; p < c->n_presets; p++) {
        double a = ba_mean(c, p, s, by_time, x, lat_s, &f);
        double b = ba_mean(c, p, c->ref, by_time, x, lat_s, &f);
        if (isfinite(a) && isfinite(b) && a > 0 && b > 0) {
            lsum += log(a / b);
            (*n)++;
        }
    }
    return *n ? exp(lsum / *n) : NAN;
}

static int ba_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over presets and seeds of strategy s's final clock. */
static double ba_median_end(const ba_ctx *c, int s, double lat_s)
{
    int n = 0, total = c->n_presets * c->opt->seeds;
    double *v = malloc((size_t)(total ? total : 1) * sizeof *v), m = NAN;
    if (!v)
        return NAN;
    for (int p = 0; p < c->n_presets; p++) {
        for (int seed = 0; seed < c->opt->seeds; seed++) {
            const ba_run *r = ba_at(c, p, s, seed);
            if (r->n > 0)
                v[n++] = ba_clock(r, r->n - 1, ba_lat(c, s, lat_s));
        }
    }
    if (n) {
        qsort(v, (size_t)n, sizeof *v, ba_dbl_cmp);
        m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    free(v);
    return m;
}

/* The times of an iso-time table: 1, 2, 5 x 10^k from the earliest first evaluation to the latest
 * end (at most BA_MAX_POINTS - 1), and the headline: the longest time at which the median run of
 * every strategy is still searching (min over strategies of the median end), so that no strategy
 * is judged past the end of its budget; on the paper's accounting the reference's median end (the
 * paper's iso-time: MM run until convergence, the others cut at that time). */
static int ba_times(const ba_ctx *c, double lat_s, double *times, double *headline)
{
    double lo = INFINITY, hi = 0;
    int n = 0;
    *headline = INFINITY;
    for (int s = 0; s < c->opt->n_strategies; s++) {
        double m = ba_median_end(c, s, lat_s);
        if (isfinite(m) && m < *headline && (!c->paper_clock || s == c->ref))
            *headline = m;
        for (int p = 0; p < c->n_presets; p++) {
            for (int seed = 0; seed < c->opt->seeds; seed++) {
                const ba_run *r = ba_at(c, p, s, seed);
                if (r->n == 0)
                    continue;
                lo = fmin(lo, ba_clock(r, 0, ba_lat(c, s, lat_s)));
                hi = fmax(hi, ba_clock(r, r->n - 1, ba_lat(c, s, lat_s)));
            }
        }
    }
    if (!isfinite(lo) || !(lo > 0))
        return 0;
    /* 1, 2, 5 x 10^k; when that makes more than BA_TIME_POINTS, 1, 3 x 10^k; then decades */
    static const double steps[3][3] = {{1, 2, 5}, {1, 3, 0}, {1, 0, 0}};
    for (int g = 0; g < 3; g++) {
        n = 0;
        for (double dec = pow(10, floor(log10(lo))); dec <= hi * 10 && n < BA_MAX_POINTS - 1;
             dec *= 10) {
            for (int i = 0; i < 3 && steps[g][i] > 0 && n < BA_MAX_POINTS - 1; i++) {
                double t = dec * steps[g][i];
                if (t >= lo && t <= hi)
                    times[n++] = t;
            }
        }
        if (n <= BA_TIME_POINTS)
            break;
    }
    return n;
}

/* Per preset, per strategy the means at the points: {"preset": {"strategy": {"mean": [...],
 * "found": [...]}}}; and per strategy the ratio to the reference at each point. */
static int ba_table(const ba_ctx *c, const json_t *presets, int by_time, const double *pts,
                    int n_pts, double lat_s, json_t *out)
{
    json_t *per = json_object(), *ratio = json_object(), *ratio_n = json_object();
    int rc = -1, f;
    if (!per || !ratio || !ratio_n)
        goto out;
    for (int p = 0; p < c->n_presets; p++) {
        json_t *ps = json_object();
        json_object_set_new(
            per, json_string_value(json_object_get(json_array_get(presets, p), "name")), ps);
        for (int s = 0; s < c->opt->n_strategies; s++) {
            json_t *m = json_array(), *fa = json_array();
            for (int i = 0; i < n_pts; i++) {
                json_array_append_new(m, ba_num(ba_mean(c, p, s, by_time, pts[i], lat_s, &f)));
                json_array_append_new(fa, json_integer(f));
            }
            json_object_set_new(ps, c->opt->strategies[s],
                                json_pack("{s:o, s:o}", "mean", m, "found", fa));
        }
    }
    for (int s = 0; s < c->opt->n_strategies; s++) {
        json_t *r = json_array(), *rn = json_array();
        for (int i = 0; i < n_pts; i++) {
            json_array_append_new(r, ba_num(ba_ratio(c, s, by_time, pts[i], lat_s, &f)));
            json_array_append_new(rn, json_integer(f));
        }
        json_object_set_new(ratio, c->opt->strategies[s], r);
        json_object_set_new(ratio_n, c->opt->strategies[s], rn);
    }
    json_object_set(out, "per_preset", per);
    json_object_set(out, "ratio_vs_reference", ratio);
    json_object_set(out, "ratio_presets", ratio_n);
    rc = 0;
out:
    json_decref(per);
    json_decref(ratio);
    json_decref(ratio_n);
    return rc;
}

/* An iso-time block on the clock with lat_s per evaluation (paper: none for strategies with a
 * surrogate). */
static json_t *ba_iso_time(const ba_ctx *c0, const json_t *presets, double lat_s, int paper)
{
    ba_ctx cc = *c0, *c = &cc;
    cc.paper_clock = paper;
    double pts[BA_MAX_POINTS], headline;
    int n = ba_times(c, lat_s, pts, &headline);
    json_t *o = json_object(), *t = json_array();
    if (!o || !t) {
        json_decref(t);
        goto fail;
    }
    for (int i = 0; i < n; i++)
        json_array_append_new(t, json_real(pts[i]));
    if (isfinite(headline))
        pts[n++] = headline; /* the last point of the table is the headline */
    json_object_set_new(o, "eval_latency_ms", json_real(lat_s * 1e3));
    json_object_set_new(o, "surrogate_evaluations_free", json_boolean(paper));
    json_object_set_new(o, "times_s", t);
    json_object_set_new(o, "headline_s", ba_num(headline));
    if (ba_table(c, presets, 1, pts, n, lat_s, o) < 0)
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

/* Valid fraction, wall seconds per run, searcher ms per evaluation and oracle checks per run, per
 * strategy over every preset and seed. */
static json_t *ba_costs(const ba_ctx *c)
{
    json_t *o = json_object();
    for (int s = 0; o && s < c->opt->n_strategies; s++) {
        long long evals = 0, valid = 0, oracle = 0, rejected = 0;
        double wall = 0, searcher = 0;
        int runs = 0;
        for (int p = 0; p < c->n_presets; p++) {
            for (int seed = 0; seed < c->opt->seeds; seed++) {
                const ba_run *r = ba_at(c, p, s, seed);
                evals += r->n;
                valid += r->valid;
                oracle += r->oracle_calls;
                rejected += r->rejected;
                wall += r->end_s;
                searcher += r->searcher_s;
                runs++;
            }
        }
        json_object_set_new(o, c->opt->strategies[s],
                            json_pack("{s:o, s:I, s:f, s:o, s:f, s:f}", "valid_fraction",
                                      ba_num(evals ? (double)valid / (double)evals : NAN),
                                      "evaluations", (json_int_t)evals, "wall_s_per_run",
                                      runs ? wall / runs : 0.0, "searcher_ms_per_eval",
                                      ba_num(evals ? 1e3 * searcher / (double)evals : NAN),
                                      "oracle_checks_per_run", runs ? (double)oracle / runs : 0.0,
                                      "rejected_per_run", runs ? (double)rejected / runs : 0.0));
    }
    return o;
}

static json_t *ba_paper_json(void)
{
    json_t *it = json_object(), *tm = json_object(), *names = json_object();
    for (size_t i = 0; i < sizeof ba_paper / sizeof ba_paper[0]; i++) {
        json_object_set_new(it, ba_paper[i].strategy, json_real(ba_paper[i].iso_iteration));
        json_object_set_new(tm, ba_paper[i].strategy, json_real(ba_paper[i].iso_time));
        json_object_set_new(names, ba_paper[i].strategy, json_string(ba_paper[i].paper_name));
    }
    return json_pack("{s:o, s:o, s:o, s:f, s:s}", "iso_iteration", it, "iso_time", tm, "names",
                     names, "mindmap_over_min", BA_PAPER_MM_OVER_MIN, "source",
                     "Mind Mappings (Hegde et al., ASPLOS 2021), section 6: MM's EDP this many "
                     "times better than SA / GA / RL; 5.32x above the lower bound on average");
}

json_t *ba_summary(const bench_accel_options *opt, const json_t *presets, const ba_run *runs)
{
    static const int marks[] = {50, 100, 200, 500, 1000};
    ba_ctx c = {opt, runs, (int)json_array_size(presets), 0, 0};
    double pts[BA_MAX_POINTS];
    int n = 0, f;
    json_t *res = NULL, *iso = json_object(), *cp = json_array(), *wall = NULL, *model = NULL,
           *paper = NULL;

    for (int s = 0; s < opt->n_strategies; s++) {
        if (strcmp(opt->strategies[s], "mindmap") == 0)
            c.ref = s;
    }
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        if (marks[i] <= opt->budget)
            pts[n++] = marks[i];
    }
    if (n == 0 || pts[n - 1] != opt->budget)
        pts[n++] = opt->budget;
    for (int i = 0; i < n; i++)
        json_array_append_new(cp, json_integer((json_int_t)pts[i]));
    if (!iso || !cp || ba_table(&c, presets, 0, pts, n, 0, iso) < 0)
        goto out;
    /* The reference above the lower bound at the final budget: mean and geometric mean over
     * presets of its mean over seeds. */
    double sum = 0, lsum = 0;
    int k = 0;
    for (int p = 0; p < c.n_presets; p++) {
        double m = ba_mean(&c, p, c.ref, 0, opt->budget, 0, &f);
        if (isfinite(m)) {
            sum += m;
            lsum += log(m);
            k++;
        }
    }
    json_object_set_new(iso, "reference_over_min",
                        json_pack("{s:o, s:o, s:i}", "mean", ba_num(k ? sum / k : NAN), "geomean",
                                  ba_num(k ? exp(lsum / k) : NAN), "presets", k));
    if (!(wall = ba_iso_time(&c, presets, 0, 0)) ||
        !(model = ba_iso_time(&c, presets, opt->eval_latency_ms / 1e3, 0)) ||
        !(paper = ba_iso_time(&c, presets, opt->eval_latency_ms / 1e3, 1)))
        goto out;
    res = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:o, s:o, s:o*, s:o*}", "reference",
                    opt->strategies[c.ref], "presets", presets, "checkpoints", cp, "iso_iteration",
                    iso, "iso_time_wall", wall, "iso_time_modelled", model,
                    "iso_time_modelled_paper", paper, "costs", ba_costs(&c), "paper",
                    ba_paper_json(), "sources", ba_sources(opt, presets, runs), "ablations",
                    ba_ablations(opt, presets, runs, cp));
out:
    json_decref(iso);
    json_decref(cp);
    json_decref(wall);
    json_decref(model);
    json_decref(paper);
    return res;
}
