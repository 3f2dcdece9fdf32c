/* bench/device/bench_device — `ktune bench --device`: searchers against a real measuring backend
 * (see bench_device.h). This file: the runs; bench_device_summary.c: their summaries over seeds as
 * JSON; bench_device_args.c: the arguments; bench_device_report.c: the table. */
#include "bench/device/bench_device.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog/catalog.h"
#include "core/array.h"
#include "core/clock.h"
#include "core/log.h"
#include "measure/backend.h"
#include "measure/device.h"
#include "search/searcher.h"
#include "bench/device/bench_device_compare.h"
#include "bench/device/bench_device_impl.h"
#include "bench/device/bench_device_summary.h"
#include "bench/device/bench_device_time.h"
#include "bench/bench_cutoff.h"
#include "bench/bench_loop.h"
#include "bench/bench_mcache.h"

#define BENCH_DEVICE_MAX_KERNEL_DIRS 32
#define BENCH_DEVICE_MAX_DIRS_TEXT   4096

/* ---- runs ---- */

static void bench_device_run_free(bench_device_run_state *r)
{
    free(r->trials);
    memset(r, 0, sizeof *r);
}

static void bench_device_progress(const bench_device_ctx *ctx, const char *strategy,
                                  const bench_device_run_state *r)
{
    char best[64];
    if (!ctx->progress)
        return;
    if (isfinite(r->best_ms))
        snprintf(best, sizeof best, "%.4g ms (%.1f GFLOP/s)", r->best_ms,
                 ctx->flops > 0 ? ctx->flops / (r->best_ms * 1e6) : 0.0);
    else
        snprintf(best, sizeof best, "none yet");
    fprintf(ctx->progress,
            "ktune bench: %s seed %d: %d/%d evaluations, best %s, %d measured + %d cached, "
            "clock %.0f s, %.0f s\n",
            strategy, r->seed, r->evals, ctx->budget, best, r->measured, r->cached, r->clock_s,
            kt_clock_s() - ctx->t0);
    fflush(ctx->progress);
}

/* One configuration for a run whose best so far is best_ms (INFINITY: none yet): the backend's
 * limits scale from that best alone (issue 30: never from another run's), the cache's entry judged
 * by them (bench_cutoff.h), else measured under them (and cached). A backend that fails twice in a
 * row (not the kernel: the runner could not be used) ends the bench. */
static int bench_device_evaluate(bench_device_ctx *ctx, double best_ms, config_id id,
                                 trial_result *r, int *cached, double *wall_s, kt_error *err)
{
    bench_cutoff lim;
    *wall_s = 0;
    backend_set_best(ctx->backend, ctx->target, isfinite(best_ms) ? best_ms : 0);
    backend_limits(ctx->backend, ctx->target, &lim.call_limit_s, &lim.deadline_s);
    *cached = bench_mcache_get_for(ctx->cache, id, &lim, r);
    if (*cached)
        return 0;
    for (int attempt = 0;; attempt++) {
        double t0 = kt_clock_s();
        int rc = backend_measure(ctx->backend, ctx->target, id, r, err);
        *wall_s += kt_clock_s() - t0;
        if (rc == 0)
            break;
        trial_result_release(r);
        if (attempt == 1) {
            kt_error_prefix(err, "measuring configuration %llu", (unsigned long long)id);
            return -1;
        }
        log_warn("measuring configuration %llu failed (%s); retrying once", (unsigned long long)id,
                 err->message);
    }
    return bench_mcache_put(ctx->cache, id, r, err);
}

/* The duration of a measurement as the backend reported it (compile + measure), in seconds: the
 * modelled clock's step, the same whether the result is measured now or replayed from the cache. */
static double bench_device_cost_s(const trial_result *r)
{
    double c = isfinite(r->compile_ms) && r->compile_ms > 0 ? r->compile_ms : 0;
    double m = isfinite(r->measure_ms) && r->measure_ms > 0 ? r->measure_ms : 0;
    return (c + m) / 1e3;
}

/* Appends one evaluation. Returns 0, or -1 with err (out of memory). */
static int bench_device_record(bench_device_run_state *run, config_id id, const trial_result *r,
                               int cached, double wall_s, double run_start, kt_error *err)
{
    bench_device_trial *t;
    if (KT_ARRAY_GROW(run->trials, run->trials_cap, (size_t)run->evals + 1, BENCH_MAX_BUDGET) != 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    t = &run->trials[run->evals];
    t->id = id;
    t->status = r->status;
    t->cached = cached;
    t->ms = r->status == TRIAL_OK ? r->time_ms : NAN;
    t->cost_s = bench_device_cost_s(r);
    run->clock_measure_s += t->cost_s;
    run->clock_s += t->cost_s;
    t->clock_s = run->clock_s;
    t->wall_s = kt_clock_s() - run_start;
    run->statuses[r->status]++;
    if (cached) {
        run->cached++;
    } else {
        run->measured++;
        run->measure_wall_s += wall_s;
        if (wall_s > run->eval_wall_max_s)
            run->eval_wall_max_s = wall_s;
    }
    if (r->status == TRIAL_OK && r->time_ms < run->best_ms) {
        run->best_ms = r->time_ms;
        run->best_id = id;
        run->best_eval = run->evals + 1;
    }
    t->best_ms = run->best_ms;
    run->evals++;
    return 0;
}

/* The device mode's evaluator of bench_loop: the cache, else the backend; the run's record. */
typedef struct bench_device_eval {
    bench_device_ctx *ctx;
    const bench_device_row *row;
    bench_device_run_state *run;
    double t_start;
} bench_device_eval;

static int bench_device_loop_evaluate(bench_loop *l, config_id id, trial_result *r, kt_error *err)
{
    bench_device_eval *e = l->ctx;
    bench_device_run_state *run = e->run;
    int cached;
    double wall;
    if (bench_device_evaluate(e->ctx, run->best_ms, id, r, &cached, &wall, err) < 0)
        return -1;
    run->clock_s = run->clock_measure_s + l->searcher_s; /* the modelled clock before this one */
    if (bench_device_record(run, id, r, cached, wall, e->t_start, err) < 0)
        return -1;
    if (e->ctx->progress_every > 0 && run->evals % e->ctx->progress_every == 0)
        bench_device_progress(e->ctx, e->row->label, run);
    if (e->ctx->time_budget_s > 0 && run->clock_s > e->ctx->time_budget_s) {
        run->stopped_by_time = 1;
        l->stop = 1; /* the rest of the batch is never evaluated, nor told */
    }
    return 0;
}

/* One (strategy, seed) run of a row through bench_loop. Stops at the budget of evaluations, when
 * the searcher has nothing more to propose, or once the modelled clock passes --time-budget (the
 * evaluation that passes it is recorded: its result is known at a clock past the budget, so no
 * time checkpoint up to the budget counts it). Returns 0, or -1 with err set (run freed). */
static int bench_device_run_one(bench_device_ctx *ctx, const bench_device_row *row, int seed,
                                bench_device_run_state *run, kt_error *err)
{
    bench_device_eval e = {ctx, row, run, kt_clock_s()};
    bench_loop l = {0};
    char what[128];
    int rc = -1;

    memset(run, 0, sizeof *run);
    run->seed = seed;
    run->best_ms = INFINITY;
    l.s = searcher_new(row->strategy, ctx->target->sp, row->options, (uint64_t)seed, err);
    if (!l.s) {
        kt_error_prefix(err, "strategy %s", row->label);
        goto out;
    }
    snprintf(what, sizeof what, "strategy %s, seed %d", row->label, seed);
    l.budget = ctx->budget;
    l.batch = ctx->batch;
    l.space_n = space_count(ctx->target->sp);
    l.what = what;
    l.ctx = &e;
    l.evaluate = bench_device_loop_evaluate;
    if (bench_loop_run(&l, err) < 0)
        goto out;
    if (ctx->progress_every > 0 && run->evals % ctx->progress_every != 0)
        bench_device_progress(ctx, row->label, run);
    rc = 0;
out:
    run->proposals = l.proposals;
    run->overhead_s = l.overhead_s;
    run->stopped_early = l.stopped_early;
    run->clock_s = run->clock_measure_s + l.overhead_s;
    run->wall_s = kt_clock_s() - e.t_start;
    searcher_free(l.s);
    if (rc < 0)
        bench_device_run_free(run);
    return rc;
}

/* ---- the bench ---- */

/* --cpu-core's automatic default, as ktuned's: the last core this process may use when it may use
 * two or more (the runner is pinned there), else no pinning. */
static int bench_device_auto_core(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2)
        return -1;
    for (int i = CPU_SETSIZE - 1; i >= 0; i--) {
        if (CPU_ISSET(i, &set))
            return i;
    }
    return -1;
}

static int bench_device_dir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The runner, kernel folders and compile cache, defaults filled. kdirs point into kbuf. */
static int bench_device_paths(const bench_device_options *opt, const char *exe_dir, char *runner,
                              size_t rcap, char *kbuf, size_t kcap, const char **kdirs, int *nk,
                              kt_error *err)
{
    int w;
    char *save = NULL;

    if (opt->runner)
        w = snprintf(runner, rcap, "%s", opt->runner);
    else
        w = snprintf(runner, rcap, "%s/ktune-runner", exe_dir ? exe_dir : ".");
    if (w < 0 || (size_t)w >= rcap)
        return kt_error_set(err, KT_ERR_CONFIG, "--runner: path too long");
    if (opt->kernels) {
        w = snprintf(kbuf, kcap, "%s", opt->kernels);
    } else {
        w = snprintf(kbuf, kcap, "%s/../kernels", exe_dir ? exe_dir : ".");
        if (w > 0 && (size_t)w < kcap && !bench_device_dir_exists(kbuf))
            w = snprintf(kbuf, kcap, "kernels");
        if (w > 0 && (size_t)w < kcap && !bench_device_dir_exists(kbuf)) {
            kt_error_set(err, KT_ERR_CONFIG, "no kernel folder found beside ktune or in ./kernels");
            kt_error_hint(err, "give --kernels DIR (the repository's kernels/ folder)");
            return -1;
        }
    }
    if (w < 0 || (size_t)w >= kcap)
        return kt_error_set(err, KT_ERR_CONFIG, "--kernels: too long");
    *nk = 0;
    for (char *tok = strtok_r(kbuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok)
            continue;
        if (*nk == BENCH_DEVICE_MAX_KERNEL_DIRS)
            return kt_error_set(err, KT_ERR_CONFIG, "--kernels names more than %d folders",
                                BENCH_DEVICE_MAX_KERNEL_DIRS);
        kdirs[(*nk)++] = tok;
    }
    if (*nk == 0)
        return kt_error_set(err, KT_ERR_CONFIG, "--kernels names no folder");
    return 0;
}

static int bench_device_validate(const bench_device_options *opt, kt_error *err)
{
    if (!opt->kernel || !opt->device || opt->budget < 1 || opt->budget > BENCH_MAX_BUDGET ||
        opt->seeds < 1 || opt->seeds > BENCH_MAX_SEEDS || opt->batch < 1 ||
        opt->batch > BENCH_DEVICE_MAX_BATCH || bench_device_n_rows(opt) < 1 ||
        bench_device_n_rows(opt) > BENCH_MAX_STRATEGIES || opt->n_strategies < 0 ||
        opt->n_variants < 0 || opt->progress < 0 || !(opt->time_budget_s >= 0) ||
        opt->time_budget_s > BENCH_DEVICE_MAX_TIME_S || opt->n_time_checkpoints < 0 ||
        opt->n_time_checkpoints > BENCH_DEVICE_MAX_TIME_CP || opt->n_test_rows < 0 ||
        opt->n_test_rows > BENCH_MAX_STRATEGIES)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "kernel and device required, budget 1-%d, seeds 1-%d, batch 1-%d, "
                            "1-%d rows, time budget 0-%g s, at most %d time checkpoints",
                            BENCH_MAX_BUDGET, BENCH_MAX_SEEDS, BENCH_DEVICE_MAX_BATCH,
                            BENCH_MAX_STRATEGIES, BENCH_DEVICE_MAX_TIME_S,
                            BENCH_DEVICE_MAX_TIME_CP);
    for (int r = 0; r < bench_device_n_rows(opt); r++) {
        if (!searcher_exists(bench_device_row_strategy(opt, r))) {
            kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "unknown strategy '%s'",
                         bench_device_row_strategy(opt, r));
            kt_error_hint(err, "strategies: %s", searcher_names());
            return -1;
        }
    }
    for (int k = 0; k < opt->n_time_checkpoints; k++) {
        if (!(opt->time_checkpoints[k] > 0) ||
            (k > 0 && opt->time_checkpoints[k] <= opt->time_checkpoints[k - 1]))
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                                "time checkpoints must be positive and ascending");
    }
    return 0;
}

/* The rows with their options resolved ("start": "default" becomes the kernel variant's default
 * configuration) and checked once against the space (searcher_new), so that a bad --variant stops
 * the bench before anything is measured. rows[] must be zeroed; the caller frees the options. */
static int bench_device_rows(const bench_device_options *opt, catalog *cat, const target *t,
                             bench_device_row *rows, kt_error *err)
{
    json_t *def = catalog_default_config(cat, t), *parsed = NULL;
    int rc = -1;

    for (int r = 0; r < bench_device_n_rows(opt); r++) {
        const bench_device_variant *v =
            r >= opt->n_strategies ? &opt->variants[r - opt->n_strategies] : NULL;
        json_error_t je;
        searcher *s = NULL;
        rows[r].label = bench_device_row_label(opt, r);
        rows[r].strategy = bench_device_row_strategy(opt, r);
        json_decref(parsed);
        parsed = v ? json_loads(v->options, 0, &je) : NULL;
        if (v && !json_is_object(parsed)) {
            kt_error_set(err, KT_ERR_BAD_OPTION, "the options are not a JSON object");
        } else if (!(rows[r].options = searcher_options_resolve_start(parsed, def, err)) &&
                   parsed) {
            /* err set */
        } else if (v && !(s = searcher_new(rows[r].strategy, t->sp, rows[r].options, 0, err))) {
            /* err set: the values and ranges only the strategy knows */
        } else {
            searcher_free(s);
            continue;
        }
        kt_error_prefix(err, v ? "--variant %s" : "strategy %s", rows[r].label);
        goto out;
    }
    rc = 0;
out:
    json_decref(parsed);
    json_decref(def);
    return rc;
}

/* The strategy costs are divided by: --relative-to, else gbfs when it runs, else the first. */
static const char *bench_device_reference(const bench_device_options *opt)
{
    if (opt->relative_to)
        return opt->relative_to;
    for (int r = 0; r < bench_device_n_rows(opt); r++) {
        if (strcmp(bench_device_row_label(opt, r), "gbfs") == 0)
            return bench_device_row_label(opt, r);
    }
    return bench_device_row_label(opt, 0);
}

/* The rows Welch-tested against every other: --test-strategies, else gbfs and na2c when they are
 * rows, else the reference row. */
static json_t *bench_device_tested(const bench_device_options *opt)
{
    json_t *a = json_array();
    for (int k = 0; a && k < opt->n_test_rows; k++)
        json_array_append_new(a, json_string(opt->test_rows[k]));
    for (int r = 0; a && opt->n_test_rows == 0 && r < bench_device_n_rows(opt); r++) {
        const char *l = bench_device_row_label(opt, r);
        if (strcmp(l, "gbfs") == 0 || strcmp(l, "na2c") == 0)
            json_array_append_new(a, json_string(l));
    }
    if (a && json_array_size(a) == 0)
        json_array_append_new(a, json_string(bench_device_reference(opt)));
    return a;
}

/* The whole result (shape in bench_device.h). NULL when out of memory. */
static json_t *bench_device_result_json(const bench_device_ctx *ctx,
                                        const bench_device_options *opt,
                                        const bench_device_run_state *runs, const int *cps,
                                        int n_cp, const double *tcps, int n_tcp,
                                        const kspec_problem *kp, json_t *measure)
{
    const target *t = ctx->target;
    bench_mcache_stats st = bench_mcache_get_stats(ctx->cache);
    json_t *strategies =
        bench_device_summary_json(ctx, runs, cps, n_cp, tcps, n_tcp, bench_device_reference(opt));
    json_t *jcps = json_array(), *jtcps = json_array(), *tested = bench_device_tested(opt);
    json_t *welch = NULL, *res = NULL;
    char key[32];

    for (int k = 0; jcps && k < n_cp; k++)
        json_array_append_new(jcps, json_integer(cps[k]));
    for (int k = 0; jtcps && k < n_tcp; k++)
        json_array_append_new(jtcps, json_real(tcps[k]));
    if (!strategies || !jcps || !jtcps || !tested)
        goto out;
    snprintf(key, sizeof key, "%d", cps[n_cp - 1]);
    welch = json_pack("{s:{s:i, s:o*}}", "evaluations", "at", cps[n_cp - 1], "tests",
                      bench_device_welch_json(strategies, tested, "checkpoints", key));
    if (welch && n_tcp > 0) {
        snprintf(key, sizeof key, "%g", tcps[n_tcp - 1]);
        json_object_set_new(
            welch, "time",
            json_pack("{s:f, s:o*}", "at", tcps[n_tcp - 1], "tests",
                      bench_device_welch_json(strategies, tested, "time_checkpoints", key)));
    }
    res = json_pack(
        "{s:s, s:s, s:s, s:s, s:O, s:I, s:f, s:i, s:i, s:i, s:O, s:o, s:O, s:s, s:O, "
        "s:{s:s?, s:I, s:I, s:I, s:I, s:I, s:I}, s:f, s:O, s:O*, s:O}",
        "kernel", t->key.kernel, "device", t->key.device, "device_class", t->key.device_class,
        "kernel_hash", t->key.kernel_hash, "problem", t->problem, "space_size",
        (json_int_t)space_count(t->sp), "flops", kp->flops, "budget", opt->budget, "seeds",
        opt->seeds, "batch", opt->batch, "checkpoints", jcps, "time_budget_s",
        opt->time_budget_s > 0 ? json_real(opt->time_budget_s) : json_null(), "time_checkpoints",
        jtcps, "reference_strategy", bench_device_reference(opt), "measure", measure,
        "measure_cache", "file", opt->measure_cache, "loaded", (json_int_t)st.loaded, "skipped",
        (json_int_t)st.skipped, "hits", (json_int_t)st.hits, "measured", (json_int_t)st.stored,
        "renewed", (json_int_t)st.renewed, "cut_by_run", (json_int_t)st.cut_by_run, "wall_s",
        kt_clock_s() - ctx->t0, "test_strategies", tested, "welch", welch, "strategies",
        strategies);
out:
    json_decref(strategies);
    json_decref(jcps);
    json_decref(jtcps);
    json_decref(tested);
    json_decref(welch);
    return res;
}

/* What the catalog of a device bench is opened from: its strings outlive the catalog. */
typedef struct bench_device_setup {
    char runner[PATH_MAX], kbuf[BENCH_DEVICE_MAX_DIRS_TEXT], cache_dir[PATH_MAX];
    const char *kdirs[BENCH_DEVICE_MAX_KERNEL_DIRS];
    int nk;
} bench_device_setup;

/* The catalog of this machine's real devices (discovered), the target resolved (kernel, device,
 * problem) and the rows' searcher options checked against its space. 0, or -1 with err. */
static int bench_device_open(const bench_device_options *opt, const char *exe_dir,
                             const json_t *problem, bench_device_setup *su, catalog **cat,
                             target *t, bench_device_row *rows, kt_error *err)
{
    if (bench_device_paths(opt, exe_dir, su->runner, sizeof su->runner, su->kbuf, sizeof su->kbuf,
                           su->kdirs, &su->nk, err) < 0)
        return -1;
    snprintf(su->cache_dir, sizeof su->cache_dir, "%s",
             opt->cache_dir ? opt->cache_dir : "var/cache");
    catalog_options copt = {.dataset_dirs = NULL, .n_dataset_dirs = 0, .replay_speed = 0};
    catalog_real_options real = {
        .kernel_dirs = su->kdirs,
        .n_kernel_dirs = su->nk,
        .runner = su->runner,
        .cache_dir = su->cache_dir,
        .cpu_core = opt->cpu_core == BENCH_CPU_CORE_AUTO ? bench_device_auto_core() : opt->cpu_core,
        .min_repeats = opt->min_repeats,
        /* 0 in the catalog means "the default": an explicit 0 becomes a nanosecond */
        .min_seconds = opt->min_seconds < 0    ? 0
                       : opt->min_seconds == 0 ? 1e-9
                                               : opt->min_seconds,
        .max_repeats = opt->max_repeats,
        .max_seconds = opt->max_timing_s,
        .compile_timeout_s = opt->compile_timeout_s,
        .run_timeout_s = opt->run_timeout_s,
        .slow_factor = opt->slow_factor};
    catalog_device *devs = NULL;
    int n_devs = 0;
    if (device_discover(&real, &devs, &n_devs, err) < 0 ||
        !(*cat = catalog_new_real(&copt, &real, devs, n_devs, err)) ||
        catalog_resolve(*cat, opt->kernel, opt->device, problem, t, err) < 0 ||
        bench_device_rows(opt, *cat, t, rows, err) < 0)
        return -1;
    return 0;
}

/* What the measurement cache is recorded for (kernel, its hash, device, class, problem) and with
 * (the measurement settings). 0, or -1 with err. */
static int bench_device_identity(const catalog *cat, const target *t, json_t **identity,
                                 json_t **measure, kt_error *err)
{
    const catalog_real_options *mo = catalog_measure_options(cat);
    *identity = json_pack("{s:s, s:s, s:s, s:s, s:O}", "kernel", t->key.kernel, "kernel_hash",
                          t->key.kernel_hash, "device", t->key.device, "device_class",
                          t->key.device_class, "problem", t->problem);
    *measure = json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "min_repeats", mo->min_repeats,
                         "max_repeats", mo->max_repeats, "min_seconds", mo->min_seconds,
                         "max_seconds", mo->max_seconds, "compile_timeout_s", mo->compile_timeout_s,
                         "run_timeout_s", mo->run_timeout_s, "slow_factor", mo->slow_factor);
    if (!*identity || !*measure)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    return 0;
}

/* The evaluation checkpoints: 100, 300, 900 up to the budget, and the budget. */
static int bench_device_eval_checkpoints(int budget, int *checkpoints)
{
    static const int cp_list[] = {100, 300, 900};
    int n = 0;
    for (size_t k = 0; k < sizeof cp_list / sizeof cp_list[0]; k++) {
        if (cp_list[k] <= budget)
            checkpoints[n++] = cp_list[k];
    }
    if (n == 0 || checkpoints[n - 1] != budget)
        checkpoints[n++] = budget;
    return n;
}

json_t *bench_device_run(const bench_device_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err)
{
    bench_device_setup su;
    int n_cp = 0, n_runs = 0, n_tcp = 0, checkpoints[4];
    double tcps[BENCH_DEVICE_MAX_TIME_CP];
    bench_device_row rows[BENCH_MAX_STRATEGIES];
    catalog *cat = NULL;
    target t;
    backend *b = NULL;
    bench_mcache *mc = NULL;
    bench_device_run_state *runs = NULL;
    json_t *problem = NULL, *identity = NULL, *measure = NULL, *res = NULL;
    kspec_problem kp;

    memset(&t, 0, sizeof t);
    memset(rows, 0, sizeof rows);
    kt_error_clear(err);
    if (bench_device_validate(opt, err) < 0 ||
        !(problem = bench_device_problem_json(opt->problem, err)) ||
        bench_device_open(opt, exe_dir, problem, &su, &cat, &t, rows, err) < 0)
        goto out;
    const kernel_spec *ks = catalog_find_kernel(cat, t.key.kernel);
    if (!ks || kernel_spec_problem(ks, t.problem, &kp, err) < 0) {
        if (!ks)
            kt_error_set(err, KT_ERR_INTERNAL, "kernel %s has no spec", t.key.kernel);
        goto out;
    }
    if (bench_device_identity(cat, &t, &identity, &measure, err) < 0 ||
        !(mc = bench_mcache_open(opt->measure_cache, t.sp, identity, measure, err)) ||
        !(b = backend_open(cat, t.key.device, err)))
        goto out;
    n_cp = bench_device_eval_checkpoints(opt->budget, checkpoints);
    bench_device_ctx ctx = {.target = &t,
                            .backend = b,
                            .cache = mc,
                            .rows = rows,
                            .n_rows = bench_device_n_rows(opt),
                            .seeds = opt->seeds,
                            .budget = opt->budget,
                            .batch = opt->batch,
                            .time_budget_s = opt->time_budget_s,
                            .progress_every = progress ? opt->progress : 0,
                            .flops = kp.flops,
                            .t0 = kt_clock_s(),
                            .progress = progress};
    if (progress) {
        bench_mcache_stats st = bench_mcache_get_stats(mc);
        fprintf(progress,
                "ktune bench: %s on %s (%s), %llu configurations; %lld measurements loaded from "
                "%s\n",
                t.key.kernel, t.key.device, t.key.device_class,
                (unsigned long long)space_count(t.sp), st.loaded,
                opt->measure_cache ? opt->measure_cache : "(no cache file)");
        fflush(progress);
    }
    n_runs = bench_device_n_rows(opt) * opt->seeds;
    if (!(runs = calloc((size_t)n_runs, sizeof *runs))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    /* Seed-major, so that an experiment stopped part-way has every row on the same seeds. */
    for (int k = 0; k < opt->seeds; k++) {
        for (int r = 0; r < ctx.n_rows; r++) {
            if (bench_device_run_one(&ctx, &rows[r], k, &runs[r * opt->seeds + k], err) < 0)
                goto out;
        }
    }
    n_tcp = bench_device_time_checkpoints(opt, runs, n_runs, tcps);
    res = bench_device_result_json(&ctx, opt, runs, checkpoints, n_cp, tcps, n_tcp, &kp, measure);
    if (!res)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
out:
    for (int k = 0; runs && k < n_runs; k++) /* calloc'd: a run not made is all zeros */
        bench_device_run_free(&runs[k]);
    free(runs);
    for (int r = 0; r < BENCH_MAX_STRATEGIES; r++)
        json_decref(rows[r].options);
    backend_close(b);
    bench_mcache_free(mc);
    target_release(&t);
    catalog_free(cat);
    json_decref(problem);
    json_decref(identity);
    json_decref(measure);
    return res;
}
