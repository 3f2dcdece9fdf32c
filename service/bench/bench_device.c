/* bench/bench_device — `ktune bench --device`: searchers against a real measuring backend (see
 * bench_device.h). This file: the runs; bench_device_summary.c: their summaries over seeds as JSON;
 * bench_device_args.c: the arguments; bench_device_report.c: the table. */
#include "bench/bench_device.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog/catalog.h"
#include "core/clock.h"
#include "core/log.h"
#include "measure/backend.h"
#include "measure/device.h"
#include "search/search_set.h"
#include "search/searcher.h"
#include "bench/bench_device_impl.h"
#include "bench/bench_device_summary.h"
#include "bench/bench_mcache.h"

#define BENCH_DEVICE_MAX_KERNEL_DIRS 32
#define BENCH_DEVICE_MAX_DIRS_TEXT   4096

/* ---- runs ---- */

static void bench_device_run_free(bench_device_run_state *r)
{
    free(r->best_so_far);
    free(r->trial_ids);
    free(r->trial_status);
    free(r->trial_ms);
    free(r->trial_cached);
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
            "%.0f s\n",
            strategy, r->seed, r->evals, ctx->budget, best, r->measured, r->cached,
            kt_clock_s() - ctx->t0);
    fflush(ctx->progress);
}

/* One configuration: from the cache, else measured (and cached). A backend that fails twice in a
 * row (not the kernel: the runner could not be used) ends the bench. */
static int bench_device_evaluate(bench_device_ctx *ctx, config_id id, trial_result *r, int *cached,
                                 double *wall_s, kt_error *err)
{
    *wall_s = 0;
    *cached = bench_mcache_get(ctx->cache, id, r);
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

static void bench_device_record(bench_device_ctx *ctx, bench_device_run_state *run, config_id id,
                                const trial_result *r, int cached, double wall_s)
{
    int k = run->evals;
    run->trial_ids[k] = id;
    run->trial_status[k] = r->status;
    run->trial_ms[k] = r->status == TRIAL_OK ? r->time_ms : NAN;
    run->trial_cached[k] = (unsigned char)cached;
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
        run->best_eval = k + 1;
    }
    run->best_so_far[k] = run->best_ms;
    run->evals++;
    (void)ctx;
}

/* One (strategy, seed) run. Returns 0, or -1 with err set (run freed). */
static int bench_device_run_one(bench_device_ctx *ctx, const char *strategy, int seed,
                                bench_device_run_state *run, kt_error *err)
{
    searcher *s = NULL;
    search_set seen = {0}; /* ids proposed so far */
    config_id ids[BENCH_DEVICE_MAX_BATCH];
    trial_result res[BENCH_DEVICE_MAX_BATCH];
    int n = 0, rc = -1, budget = ctx->budget;
    double t_start = kt_clock_s();

    memset(run, 0, sizeof *run);
    run->seed = seed;
    run->best_ms = INFINITY;
    run->best_so_far = malloc((size_t)budget * sizeof *run->best_so_far);
    run->trial_ids = malloc((size_t)budget * sizeof *run->trial_ids);
    run->trial_status = malloc((size_t)budget * sizeof *run->trial_status);
    run->trial_ms = malloc((size_t)budget * sizeof *run->trial_ms);
    run->trial_cached = malloc((size_t)budget);
    if (!run->best_so_far || !run->trial_ids || !run->trial_status || !run->trial_ms ||
        !run->trial_cached) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    s = searcher_new(strategy, ctx->target->sp, NULL, (uint64_t)seed, err);
    if (!s) {
        kt_error_prefix(err, "strategy %s", strategy);
        goto out;
    }
    while (run->evals < budget) {
        int want = budget - run->evals < ctx->batch ? budget - run->evals : ctx->batch;
        double t0 = kt_clock_s();
        n = searcher_ask(s, ids, want);
        run->overhead_s += kt_clock_s() - t0;
        if (n <= 0) {
            run->stopped_early = 1;
            n = 0;
            break;
        }
        run->proposals += n;
        for (int i = 0; i < n; i++)
            trial_result_init(&res[i]);
        for (int i = 0; i < n; i++) {
            int cached;
            double wall;
            if (ids[i] >= space_count(ctx->target->sp) || search_set_has(&seen, ids[i])) {
                kt_error_set(err, KT_ERR_INTERNAL,
                             "strategy %s, seed %d: configuration %llu %s at evaluation %d",
                             strategy, seed, (unsigned long long)ids[i],
                             ids[i] >= space_count(ctx->target->sp) ? "is outside the space"
                                                                    : "proposed twice",
                             run->evals + 1);
                goto out;
            }
            if (search_set_add(&seen, ids[i]) < 0) {
                kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
                goto out;
            }
            if (bench_device_evaluate(ctx, ids[i], &res[i], &cached, &wall, err) < 0)
                goto out;
            bench_device_record(ctx, run, ids[i], &res[i], cached, wall);
            if (ctx->progress_every > 0 && run->evals % ctx->progress_every == 0)
                bench_device_progress(ctx, strategy, run);
        }
        t0 = kt_clock_s();
        searcher_tell(s, ids, res, n);
        run->overhead_s += kt_clock_s() - t0;
        for (int i = 0; i < n; i++)
            trial_result_release(&res[i]);
        n = 0;
    }
    for (int k = run->evals; k < budget; k++) /* stopped early: carry the last best forward */
        run->best_so_far[k] = run->best_ms;
    if (ctx->progress_every > 0 && run->evals % ctx->progress_every != 0)
        bench_device_progress(ctx, strategy, run);
    rc = 0;
out:
    run->wall_s = kt_clock_s() - t_start;
    for (int i = 0; i < n; i++)
        trial_result_release(&res[i]);
    searcher_free(s);
    search_set_free(&seen);
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
        opt->batch > BENCH_DEVICE_MAX_BATCH || opt->n_strategies < 1 ||
        opt->n_strategies > BENCH_MAX_STRATEGIES || opt->progress < 0)
        return kt_error_set(err, KT_ERR_OUT_OF_RANGE,
                            "kernel and device required, budget 1-%d, seeds 1-%d, batch 1-%d, "
                            "1-%d strategies",
                            BENCH_MAX_BUDGET, BENCH_MAX_SEEDS, BENCH_DEVICE_MAX_BATCH,
                            BENCH_MAX_STRATEGIES);
    for (int s = 0; s < opt->n_strategies; s++) {
        if (!searcher_exists(opt->strategies[s])) {
            kt_error_set(err, KT_ERR_UNKNOWN_STRATEGY, "unknown strategy '%s'", opt->strategies[s]);
            kt_error_hint(err, "strategies: %s", searcher_names());
            return -1;
        }
    }
    return 0;
}

/* The strategy costs are divided by: --relative-to, else gbfs when it runs, else the first. */
static const char *bench_device_reference(const bench_device_options *opt)
{
    if (opt->relative_to)
        return opt->relative_to;
    for (int s = 0; s < opt->n_strategies; s++) {
        if (strcmp(opt->strategies[s], "gbfs") == 0)
            return opt->strategies[s];
    }
    return opt->strategies[0];
}

json_t *bench_device_run(const bench_device_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err)
{
    static const int cp_list[] = {100, 300, 900};
    char runner[PATH_MAX], kbuf[BENCH_DEVICE_MAX_DIRS_TEXT], cache_dir[PATH_MAX];
    const char *kdirs[BENCH_DEVICE_MAX_KERNEL_DIRS];
    int nk = 0, n_cp = 0, done = 0, checkpoints[4];
    catalog *cat = NULL;
    target t;
    backend *b = NULL;
    bench_mcache *mc = NULL;
    bench_device_run_state *runs = NULL;
    json_t *problem = NULL, *identity = NULL, *measure = NULL, *strategies = NULL, *res = NULL;
    kspec_problem kp;

    memset(&t, 0, sizeof t);
    kt_error_clear(err);
    if (bench_device_validate(opt, err) < 0 ||
        !(problem = bench_device_problem_json(opt->problem, err)) ||
        bench_device_paths(opt, exe_dir, runner, sizeof runner, kbuf, sizeof kbuf, kdirs, &nk,
                           err) < 0)
        goto out;
    snprintf(cache_dir, sizeof cache_dir, "%s", opt->cache_dir ? opt->cache_dir : "var/cache");
    catalog_options copt = {.dataset_dirs = NULL, .n_dataset_dirs = 0, .replay_speed = 0};
    catalog_real_options real = {
        .kernel_dirs = kdirs,
        .n_kernel_dirs = nk,
        .runner = runner,
        .cache_dir = cache_dir,
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
        !(cat = catalog_new_real(&copt, &real, devs, n_devs, err)) ||
        catalog_resolve(cat, opt->kernel, opt->device, problem, &t, err) < 0)
        goto out;
    const kernel_spec *ks = catalog_find_kernel(cat, t.key.kernel);
    if (!ks || kernel_spec_problem(ks, t.problem, &kp, err) < 0) {
        if (!ks)
            kt_error_set(err, KT_ERR_INTERNAL, "kernel %s has no spec", t.key.kernel);
        goto out;
    }
    const catalog_real_options *mo = catalog_measure_options(cat);
    identity = json_pack("{s:s, s:s, s:s, s:s, s:O}", "kernel", t.key.kernel, "kernel_hash",
                         t.key.kernel_hash, "device", t.key.device, "device_class",
                         t.key.device_class, "problem", t.problem);
    measure = json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "min_repeats", mo->min_repeats,
                        "max_repeats", mo->max_repeats, "min_seconds", mo->min_seconds,
                        "max_seconds", mo->max_seconds, "compile_timeout_s", mo->compile_timeout_s,
                        "run_timeout_s", mo->run_timeout_s, "slow_factor", mo->slow_factor);
    if (!identity || !measure) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (!(mc = bench_mcache_open(opt->measure_cache, t.sp, identity, measure, err)) ||
        !(b = backend_open(cat, t.key.device, err)))
        goto out;
    for (size_t k = 0; k < sizeof cp_list / sizeof cp_list[0]; k++) {
        if (cp_list[k] <= opt->budget)
            checkpoints[n_cp++] = cp_list[k];
    }
    if (n_cp == 0 || checkpoints[n_cp - 1] != opt->budget)
        checkpoints[n_cp++] = opt->budget;
    bench_device_ctx ctx = {.target = &t,
                            .backend = b,
                            .cache = mc,
                            .budget = opt->budget,
                            .batch = opt->batch,
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
    runs = calloc((size_t)opt->n_strategies * (size_t)opt->seeds, sizeof *runs);
    if (!runs) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    /* Seed-major, so that an experiment stopped part-way has every strategy on the same seeds. */
    for (int k = 0; k < opt->seeds; k++) {
        for (int s = 0; s < opt->n_strategies; s++) {
            if (bench_device_run_one(&ctx, opt->strategies[s], k, &runs[s * opt->seeds + k], err) <
                0)
                goto out;
            done++;
        }
    }
    strategies =
        bench_device_summary_json(&ctx, opt, runs, checkpoints, n_cp, bench_device_reference(opt));
    json_t *cps = json_array();
    for (int k = 0; cps && k < n_cp; k++)
        json_array_append_new(cps, json_integer(checkpoints[k]));
    bench_mcache_stats st = bench_mcache_get_stats(mc);
    res =
        json_pack("{s:s, s:s, s:s, s:s, s:O, s:I, s:f, s:i, s:i, s:i, s:o*, s:s, s:O, "
                  "s:{s:s?, s:I, s:I, s:I, s:I}, s:f, s:O*}",
                  "kernel", t.key.kernel, "device", t.key.device, "device_class",
                  t.key.device_class, "kernel_hash", t.key.kernel_hash, "problem", t.problem,
                  "space_size", (json_int_t)space_count(t.sp), "flops", kp.flops, "budget",
                  opt->budget, "seeds", opt->seeds, "batch", opt->batch, "checkpoints", cps,
                  "reference_strategy", bench_device_reference(opt), "measure", measure,
                  "measure_cache", "file", opt->measure_cache, "loaded", (json_int_t)st.loaded,
                  "skipped", (json_int_t)st.skipped, "hits", (json_int_t)st.hits, "measured",
                  (json_int_t)st.stored, "wall_s", kt_clock_s() - ctx.t0, "strategies", strategies);
    if (!res || !strategies) {
        json_decref(res);
        res = NULL;
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
out:
    for (int k = 0; runs && k < done; k++)
        bench_device_run_free(&runs[k]);
    free(runs);
    backend_close(b);
    bench_mcache_free(mc);
    target_release(&t);
    catalog_free(cat);
    json_decref(problem);
    json_decref(identity);
    json_decref(measure);
    json_decref(strategies);
    return res;
}
