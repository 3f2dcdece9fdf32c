/* bench/accel/bench_accel — the run of `ktune bench --accel` (see bench_accel.h): the device, the
 * presets, phase 1 (bench_accel_train.c) and phase 2's runs (bench_accel_search.c), summarised by
 * bench_accel_summary.c. */
#include "bench/accel/bench_accel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "search/searcher.h"
#include "bench/bench_strategy.h"
#include "bench/accel/bench_accel_impl.h"

int ba_devices(const bench_accel_options *opt, const char *exe_dir, accel_device **devs, int *n,
               const accel_device **dev, kt_error *err)
{
    char path[BENCH_MAX_PATH], names[512];
    size_t used = 0;
    if (opt->devices_path)
        snprintf(path, sizeof path, "%s", opt->devices_path);
    else
        snprintf(path, sizeof path, "%s/../accel/devices.json", exe_dir ? exe_dir : "build");
    if (accel_devices_load(path, devs, n, err) < 0) {
        kt_error_hint(err, "give the devices file with --accel-devices FILE");
        return -1;
    }
    names[0] = '\0';
    for (int i = 0; i < *n; i++) {
        if (strcmp((*devs)[i].name, opt->device) == 0) {
            *dev = &(*devs)[i];
            return 0;
        }
        int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", (*devs)[i].name);
        used += w > 0 && (size_t)w < sizeof names - used ? (size_t)w : 0;
    }
    kt_error_set(err, KT_ERR_UNKNOWN_DEVICE, "--accel-device: no device '%s' in %s", opt->device,
                 path);
    kt_error_hint(err, "devices: %s", names);
    return -1;
}

/* The kernel that has the preset name, and the problem. 0, or -1 with err (hint: every preset). */
static int ba_preset(const char *name, accel_problem *out, kt_error *err)
{
    char all[1024];
    size_t used = 0;
    all[0] = '\0';
    for (int i = 0; i < accel_kernel_count(); i++) {
        const accel_kernel *k = accel_kernel_at(i);
        json_t *kj = accel_kernel_json(k), *presets = json_object_get(kj, "presets"), *v;
        const char *pn;
        int found = json_object_get(presets, name) != NULL;
        json_object_foreach(presets, pn, v)
        {
            int w = snprintf(all + used, sizeof all - used, "%s%s", used ? ", " : "", pn);
            used += w > 0 && (size_t)w < sizeof all - used ? (size_t)w : 0;
        }
        json_decref(kj);
        if (found) {
            json_t *pj = json_pack("{s:s}", "preset", name);
            int rc = pj ? accel_problem_parse(k, pj, out, err) : -1;
            json_decref(pj);
            return rc < 0 ? -1 : 0;
        }
    }
    kt_error_set(err, KT_ERR_BAD_PROBLEM, "no accel kernel has a preset '%s'", name);
    kt_error_hint(err, "presets: %s", all);
    return -1;
}

/* Phase 2 on one preset: every strategy and seed into runs (this preset's slice). */
static int ba_preset_runs(const bench_accel_options *opt, const ba_problem *bp, const char *name,
                          surrogate *sur, ba_run *runs, FILE *progress, kt_error *err)
{
    for (int s = 0; s < opt->n_strategies; s++) {
        double sum = 0, t = 0;
        int found = 0;
        for (int seed = 0; seed < opt->seeds; seed++) {
            ba_run *r = &runs[s * opt->seeds + seed];
            if (ba_search(bp, opt->strategies[s], (uint64_t)seed, opt->budget, sur,
                          opt->free_invalid, r, err) < 0) {
                kt_error_prefix(err, "%s, %s, seed %d", name, opt->strategies[s], seed);
                return -1;
            }
            if (r->n > 0 && isfinite(r->best[r->n - 1])) {
                sum += r->best[r->n - 1];
                found++;
            }
            t += r->end_s;
        }
        if (progress)
            fprintf(progress, "ktune bench: %-15s %-8s best EDP/min %8.3f (mean of %d), %.2f s\n",
                    name, opt->strategies[s], found ? sum / found : NAN, found, t);
    }
    return 0;
}

/* Phase 1 for every kernel of the presets when a strategy needs a surrogate: sur[i] for preset i
 * (borrowed from owned[]), info appended to infos. */
static int ba_phase1(const bench_accel_options *opt, const char *exe_dir, const accel_device *d,
                     const accel_problem *probs, surrogate **sur, surrogate **owned, json_t *infos,
                     FILE *progress, kt_error *err)
{
    int need = 0;
    for (int s = 0; s < opt->n_strategies; s++)
        need |= bench_strategy_needs_surrogate(opt->strategies[s]);
    if (!need)
        return 0;
    for (int i = 0; i < opt->n_presets; i++) {
        int j = 0;
        while (j < i && probs[j].kernel != probs[i].kernel)
            j++;
        if (j < i) {
            sur[i] = sur[j];
            continue;
        }
        json_t *info = NULL;
        if (ba_surrogate_get(opt, exe_dir, d, probs[i].kernel, &owned[i], &info, progress, err) < 0)
            return -1;
        json_array_append_new(infos, info);
        sur[i] = owned[i];
    }
    return 0;
}

json_t *bench_accel_run(const bench_accel_options *opt, const char *exe_dir, FILE *progress,
                        kt_error *err)
{
    accel_device *devs = NULL;
    const accel_device *d = NULL;
    accel_problem probs[BENCH_ACCEL_MAX_PRESETS];
    surrogate *sur[BENCH_ACCEL_MAX_PRESETS] = {NULL}, *owned[BENCH_ACCEL_MAX_PRESETS] = {NULL};
    ba_run *runs = NULL;
    ba_problem bp;
    json_t *res = NULL, *infos = json_array(), *presets = json_array(), *summary = NULL;
    size_t n_runs = (size_t)opt->n_presets * (size_t)opt->n_strategies * (size_t)opt->seeds;
    int n_devs = 0;
    double t0 = kt_clock_s(), t1 = 0;

    memset(&bp, 0, sizeof bp);
    kt_error_clear(err);
    if (!infos || !presets || !(runs = calloc(n_runs, sizeof *runs))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    for (size_t i = 0; i < n_runs; i++) {
        if (ba_run_alloc(&runs[i], opt->budget) < 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
    }
    if (ba_devices(opt, exe_dir, &devs, &n_devs, &d, err) < 0)
        goto out;
    for (int i = 0; i < opt->n_presets; i++) {
        if (ba_preset(opt->presets[i], &probs[i], err) < 0)
            goto out;
    }
    if (ba_phase1(opt, exe_dir, d, probs, sur, owned, infos, progress, err) < 0)
        goto out;
    t1 = kt_clock_s();
    for (int i = 0; i < opt->n_presets; i++) {
        if (ba_problem_init(&bp, d, &probs[i], err) < 0) {
            kt_error_prefix(err, "%s", opt->presets[i]);
            goto out;
        }
        json_t *pj =
            json_pack("{s:s, s:s, s:o, s:f, s:f, s:f, s:f}", "name", opt->presets[i], "kernel",
                      accel_kernel_name(probs[i].kernel), "problem", accel_problem_json(&probs[i]),
                      "min_edp", bp.lb.edp, "min_energy_pj", bp.lb.energy_pj_total, "min_cycles",
                      bp.lb.cycles, "space_count", (double)space_count(bp.sp));
        json_array_append_new(presets, pj);
        size_t base = (size_t)i * (size_t)opt->n_strategies * (size_t)opt->seeds;
        if (ba_preset_runs(opt, &bp, opt->presets[i], sur[i], runs + base, progress, err) < 0)
            goto out;
        ba_problem_release(&bp);
    }
    if (!(summary = ba_summary(opt, presets, runs))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    json_t *strategies = json_array();
    for (int s = 0; s < opt->n_strategies; s++)
        json_array_append_new(strategies, json_string(opt->strategies[s]));
    res =
        json_pack("{s:s, s:s, s:o, s:i, s:i, s:o, s:f, s:O, s:f, s:f}", "mode", "accel", "device",
                  d->name, "device_params", accel_device_json(d), "budget", opt->budget, "seeds",
                  opt->seeds, "strategies", strategies, "eval_latency_ms", opt->eval_latency_ms,
                  "surrogates", infos, "phase2_s", kt_clock_s() - t1, "wall_s", kt_clock_s() - t0);
    if (!res || json_object_update(res, summary) != 0) {
        json_decref(res);
        res = NULL;
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    }
out:
    ba_problem_release(&bp);
    for (size_t i = 0; runs && i < n_runs; i++)
        ba_run_release(&runs[i]);
    free(runs);
    for (int i = 0; i < BENCH_ACCEL_MAX_PRESETS; i++)
        surrogate_free(owned[i]);
    accel_devices_free(devs, n_devs);
    json_decref(infos);
    json_decref(presets);
    json_decref(summary);
    return res;
}
