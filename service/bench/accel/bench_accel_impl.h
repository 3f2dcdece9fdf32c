/* bench/accel/bench_accel_impl — internal to `ktune bench --accel` / `--accel-predict`
 * (bench_accel*.c only): one problem ready to search (its space, minimum, surrogate features), one
 * search run against the cost model and what it records, phase 1 (the surrogate of a kernel,
 * trained or read from the cache) and the summary of phase 2's runs.
 *
 * Lifecycle: ba_problem_init -> ba_search* -> ba_problem_release; ba_run_alloc -> ba_search ->
 * (read) -> ba_run_release; ba_surrogate_get's surrogate and info are the caller's. */
#ifndef KT_BENCH_ACCEL_IMPL_H
#define KT_BENCH_ACCEL_IMPL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/accel_device.h"
#include "accel/accel_kernel.h"
#include "accel/accel_model.h"
#include "model/surrogate.h"
#include "space/space.h"
#include "bench/accel/bench_accel.h"

#define BA_TOP                   8   /* distinct valid mappings a run keeps (best first) */
#define BA_MAX_REJECTED_PER_EVAL 100 /* --free-invalid: a run stops after budget x this */

typedef struct ba_problem {
    const accel_device *dev;
    accel_problem p;
    space *sp;                                 /* owned */
    accel_stats lb;                            /* the algorithmic minimum */
    double pf[SURROGATE_MAX_PROBLEM_FEATURES]; /* surrogate_problem_features of p */
    int npf;
} ba_problem;

/* The space, minimum and features of p on d. 0, or -1 with err (bp released). */
int ba_problem_init(ba_problem *bp, const accel_device *d, const accel_problem *p, kt_error *err);
void ba_problem_release(ba_problem *bp);
/* Decodes and evaluates id: 1 valid (*obj = EDP / minimum EDP, st filled when not NULL), 0 invalid,
 * -1 with err (not a configuration of the space). */
int ba_evaluate(const ba_problem *bp, config_id id, double *obj, accel_stats *st, kt_error *err);

typedef struct ba_run {
    double *best;          /* [budget]: best objective after e + 1 evaluations (INFINITY: none) */
    double *t;             /* [budget]: wall seconds from the run's start after evaluation e */
    int n;                 /* evaluations made (< budget: the searcher had nothing more) */
    int valid;             /* of them valid */
    long oracle_calls;     /* validity checks the searcher asked for (no budget) */
    long rejected;         /* --free-invalid: invalid proposals told without an evaluation */
    double end_s;          /* wall seconds of the whole run */
    double searcher_s;     /* of which inside searcher_new / set_* / ask / tell */
    config_id top[BA_TOP]; /* the best distinct valid mappings, best first */
    double top_obj[BA_TOP];
    int n_top;
    json_t *sources; /* searcher_stats at the end (mindmap: where its proposals came from), owned;
                        NULL for a strategy without counters */
} ba_run;

int ba_run_alloc(ba_run *r, int budget);
void ba_run_release(ba_run *r);
/* One run: strategy (batch 1, default options) with seed on bp for budget evaluations; sur: the
 * kernel's surrogate, given to strategies that need one (searcher_needs_surrogate).
 * free_invalid: an invalid proposal is told (invalid) without counting as an evaluation (the
 * cheap validity check a searcher without an oracle lacks; run->rejected counts them). 0, or -1
 * with err. */
int ba_search(const ba_problem *bp, const char *strategy, uint64_t seed, int budget, surrogate *sur,
              int free_invalid, ba_run *run, kt_error *err);

/* The devices file (opt's, or <exe_dir>/../accel/devices.json; *devs the caller's:
 * accel_devices_free) and opt's device in it (KT_ERR_UNKNOWN_DEVICE with the names). */
int ba_devices(const bench_accel_options *opt, const char *exe_dir, accel_device **devs, int *n,
               const accel_device **dev, kt_error *err);

/* Phase 1 for kernel k on d: the surrogate read from opt's cache when a file of the same training
 * key is there, else trained (and saved there). *info: {"kernel","cached","key","file",
 * "problems","attempted","samples","valid_fraction","sample_s","train_s","metrics"}. */
int ba_surrogate_get(const bench_accel_options *opt, const char *exe_dir, const accel_device *d,
                     const accel_kernel *k, surrogate **out, json_t **info, FILE *progress,
                     kt_error *err);

/* The report of phase 2 (bench_accel_summary.c): runs[(preset * n_strategies + strategy) * seeds
 * + seed]. Returns {"checkpoints", "presets": [...], "iso_iteration", "iso_time_wall",
 * "iso_time_modelled", "valid_fraction", "paper"} (new reference, NULL: out of memory). */
json_t *ba_summary(const bench_accel_options *opt, const json_t *presets, const ba_run *runs);

/* bench_accel_ablation.c, both on the runs of ba_summary. The proposals' sources of each strategy
 * that counts them (searcher_stats): {"<strategy>": {"total": {"<source>": n, ...}, "presets":
 * {"<preset>": {...}}}} ({} when none does). Each named variant ("mindmap/gradient=false") against
 * its strategy when both ran: Welch's t-test over seeds of ln(best EDP / minimum) at each
 * checkpoint, per preset and on a seed's mean over the presets ("mean"): [{"variant","base",
 * "preset","checkpoint","mean_variant","mean_base" (geometric means over seeds of best / minimum),
 * "t","df","p"}], two-sided, uncorrected. NULL out of memory. */
json_t *ba_sources(const bench_accel_options *opt, const json_t *presets, const ba_run *runs);
json_t *ba_ablations(const bench_accel_options *opt, const json_t *presets, const ba_run *runs,
                     const json_t *checkpoints);

#endif
