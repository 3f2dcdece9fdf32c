/* bench/device/bench_device — `ktune bench --device`: runs searchers against a real measuring
 * backend (the cpu device, or cuda:N) instead of replayed caches. Each (strategy, seed) run asks a
 * fresh searcher for configurations of the kernel's space for one problem, has every distinct one
 * measured by ktune-runner (compile, verify, time; failures are trial statuses told to the
 * searcher), and stops at the budget of distinct evaluations. Measurements go through a
 * measurement cache (bench_mcache.h) shared by all runs and optionally kept in a file, so that
 * configurations seen by several strategies or seeds are measured once and a killed experiment
 * resumes. The slow-factor cut-off and the deadline are each run's own (issue 30, bench_cutoff.h):
 * a run starts with no best time, the backend's limits scale from the run's best alone, and a
 * cached entry is judged by the asking run's limits (measured again when it was cut off below
 * them), so no run inherits a threshold from a run before it. bench_device_run returns everything
 * as JSON; bench_device_report.h formats it.
 *
 * Call order: bench_args_parse(&bench_device_args) (bench_device_args.h) -> bench_device_run ->
 * bench_device_print_table (bench_device_report.h), or all of it with bench_main
 * (bench_main.h). Results are new references. */
#ifndef KT_BENCH_DEVICE_H
#define KT_BENCH_DEVICE_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/device/bench_device_args.h"

/* Runs every row (each --strategies entry with default options, then each --variant) for every
 * seed. exe_dir (folder of ktune, may be NULL) places the default runner and kernels. progress:
 * where progress lines go (NULL: none). Returns the result:
 * {"kernel","device","device_class","kernel_hash","problem":{...},"space_size","flops","budget",
 *  "seeds","batch","checkpoints":[100,300,900],"time_budget_s":S|null,"time_checkpoints":[T,...],
 *  "reference_strategy","measure":{...},"measure_cache":{"file","loaded","skipped","hits",
 *  "measured","renewed","cut_by_run"},"wall_s","test_strategies":[label,...],
 *  "welch":{"evaluations":{"at":N,"tests":[W,...]},"time":{"at":T,"tests":[W,...]}},
 *  "strategies":{"<label>":{"strategy","options":{...},
 *     "checkpoints":{"<N>":C},"time_checkpoints":{"<T>":C},"best":{"time_ms","gflops","seed",
 *     "evaluation","config"}|null,"evaluations","measured","cached","statuses":{...},
 *     "measure_wall_s","eval_wall_s":{"mean","max"},"clock_s":{"mean","max"},"stopped_by_time",
 *     "overhead_ms",
 *     "runs":[{"seed","evaluations","stopped_early","stopped_by_time","best_ms":{"<N>":ms|null},
 *       "best_at_time":{"<T>":ms|null},"best_time_ms","best_config","best_evaluation","measured",
 *       "cached","statuses","wall_s","clock_s","clock_measure_s","measure_wall_s","overhead_ms",
 *       "best_so_far":[ms|null,...],
 *       "trials":[[id,"status",ms|null,cached,wall_s,clock_s,cost_s],...]}]}}}
 * C = {"mean_ms","median_ms","min_ms","q1_ms","q3_ms","max_ms","per_seed":[ms|null],"reached",
 *      "relative","reference_saves"} over seeds (quartiles type 7; mean null when a seed found
 *      nothing; reached: seeds whose run got to N evaluations / T seconds, the others carry their
 *      final best). "<T>" keys are the seconds as printf's %g.
 * W = {"a","b","n_a","n_b","mean_a","mean_b","t","df","p","p_holm","lower_by"}
 * (bench_device_compare.h: p_holm is Holm-adjusted over the tests of its array).
 * measure_cache: renewed = cut-off entries replaced by a run with a higher limit; cut_by_run =
 * cached completed measurements that a run's own call limit turned into a timeout.
 * A trial: the first four as before issue 15 (readers of [id,status,ms,cached] keep working), then
 * wall_s (seconds since the run's start on this run's real clock when the result was known),
 * clock_s (the modelled tuning clock then: the cost_s of the run's evaluations so far plus its
 * searcher ask/tell time) and cost_s (compile + measurement seconds the backend reported when the
 * configuration was measured, kept in the measurement cache: a replayed run has the same cost_s,
 * so the same clock up to the searcher's own time). best_so_far has one value per evaluation made.
 * NULL with err set on failure; errors about the request (unknown kernel, device or strategy, bad
 * problem, a --variant's options the strategy refuses, a measure cache of another problem or
 * machine) have 4xx codes. */
json_t *bench_device_run(const bench_device_options *opt, const char *exe_dir, FILE *progress,
                         kt_error *err);

#endif
