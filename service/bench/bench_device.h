/* bench/bench_device — `ktune bench --device`: runs searchers against a real measuring backend (the
 * cpu device, or cuda:N) instead of replayed caches. Each (strategy, seed) run asks a fresh
 * searcher for configurations of the kernel's space for one problem, has every distinct one
 * measured by ktune-runner (compile, verify, time; failures are trial statuses told to the
 * searcher), and stops at the budget of distinct evaluations. Measurements go through a
 * measurement cache (bench_mcache.h) shared by all runs and optionally kept in a file, so that
 * configurations seen by several strategies or seeds are measured once and a killed experiment
 * resumes. bench_device_run returns everything as JSON; bench_device_report.h formats it.
 *
 * Call order: bench_device_parse_args (bench_device_args.h) -> bench_device_run ->
 * bench_device_print_table (bench_device_report.h), or all of it with bench_device_main
 * (bench_main.h). Results are new references. */
#ifndef KT_BENCH_DEVICE_H
#define KT_BENCH_DEVICE_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_device_args.h"

/* Runs every strategy for every seed. exe_dir (folder of ktune, may be NULL) places the default
 * runner and kernels. progress: where progress lines go (NULL: none). Returns the result:
 * {"kernel","device","device_class","kernel_hash","problem":{...},"space_size","flops","budget",
 *  "seeds","batch","checkpoints":[100,300,900],"reference_strategy","measure":{...},
 *  "measure_cache":{"file","loaded","skipped","hits","measured"},"wall_s",
 *  "strategies":{"<s>":{"checkpoints":{"<N>":{"mean_ms","median_ms","min_ms","max_ms",
 *     "per_seed":[ms|null],"relative","reference_saves"}},"best":{"time_ms","gflops","seed",
 *     "evaluation","config"}|null,"evaluations","measured","cached","statuses":{...},
 *     "measure_wall_s","eval_wall_s":{"mean","max"},"overhead_ms",
 *     "runs":[{"seed","evaluations","stopped_early","best_ms":{"<N>":ms|null},"best_config",
 *       "measured","cached","statuses","wall_s","measure_wall_s","overhead_ms",
 *       "best_so_far":[ms|null,...],"trials":[[id,"status",ms|null,cached],...]}]}}}
 * NULL with err set on failure; errors about the request (unknown kernel, device or strategy, bad
 * problem, a measure cache of another problem or machine) have 4xx codes. */
json_t *bench_device_run(const bench_device_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err);

#endif
