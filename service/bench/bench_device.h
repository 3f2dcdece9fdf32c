/* cli/bench_device — `ktune bench --device`: runs searchers against a real measuring backend (the
 * cpu device, or cuda:N) instead of replayed caches. Each (strategy, seed) run asks a fresh
 * searcher for configurations of the kernel's space for one problem, has every distinct one
 * measured by ktune-runner (compile, verify, time; failures are trial statuses told to the
 * searcher), and stops at the budget of distinct evaluations. Measurements go through a
 * measurement cache (bench_mcache.h) shared by all runs and optionally kept in a file, so that
 * configurations seen by several strategies or seeds are measured once and a killed experiment
 * resumes. bench_device_run returns everything as JSON; bench_device_print_table formats it.
 *
 * Call order: bench_device_parse_args -> bench_device_run -> bench_device_print_table, or all of it
 * with bench_device_main. Options keep pointers into argv; results are new references. */
#ifndef KT_CLI_BENCH_DEVICE_H
#define KT_CLI_BENCH_DEVICE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "../core/error.h"
#include "bench_run.h"

#define BENCH_DEVICE_MAX_BATCH   256
#define BENCH_DEVICE_MAX_PROBLEM 1024 /* characters of --problem */
#define BENCH_CPU_CORE_AUTO      (-2) /* --cpu-core not given: the last core when there are 2+ */

typedef struct bench_device_options {
    const char *kernel;  /* --kernel, required */
    const char *device;  /* --device, required: "cpu", "cuda:0" */
    const char *problem; /* --problem "M=1024,N=1024,K=1024" or a JSON object; NULL: defaults */
    char strategies[BENCH_MAX_STRATEGIES][64];
    int n_strategies;
    const char *relative_to;   /* --relative-to: the strategy costs are divided by; NULL: gbfs when
                                  run, else the first strategy */
    int budget;                /* distinct evaluations per run [100] */
    int seeds;                 /* seeds 0..seeds-1 [3] */
    int batch;                 /* configurations asked for (and told) at once [1] */
    int progress;              /* a progress line every N evaluations, 0 = none [25] */
    const char *measure_cache; /* --measure-cache FILE or NULL (memory only) */
    const char *json_path;     /* --json FILE or NULL */
    const char *runner;        /* --runner; NULL: <dir of ktune>/ktune-runner */
    const char *kernels;       /* --kernels DIR[,DIR...]; NULL: <dir of ktune>/../kernels, or
                                  ./kernels */
    const char *cache_dir;     /* --cache-dir: compiled kernels; NULL: ./var/cache */
    int cpu_core;              /* --cpu-core, -1 none, BENCH_CPU_CORE_AUTO */
    int min_repeats;           /* 0: the catalog default (5) */
    double min_seconds;        /* < 0: the catalog default (0.2) */
    int max_repeats;           /* 0: the catalog default (100) */
    double max_timing_s;       /* 0: the catalog default (3): timing stops after this long */
    double compile_timeout_s;  /* 0: default (60) */
    double run_timeout_s;      /* 0: default (60) */
    double slow_factor;        /* 0: off; else give up on calls slower than this x the best */
    const char *log_level;     /* --log-level [warn] */
} bench_device_options;

/* 1 when the arguments after "bench" ask for the device mode (--device or --kernel is given). */
int bench_device_wanted(int argc, char **argv);
/* The device mode's part of `ktune bench --help`. */
void bench_device_usage(FILE *out);
/* Parses the arguments after "bench". Returns 0, 1 when --help was asked (usage printed to out),
 * or -1 with a message in msg (a usage error: exit code 2). */
int bench_device_parse_args(int argc, char **argv, bench_device_options *opt, char *msg, size_t cap,
                            FILE *out);
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
/* Readable report of a bench_device_run result. */
void bench_device_print_table(const json_t *result, FILE *out);
/* The whole subcommand in device mode: argv[0] is "bench". Returns the exit code: 0, 1 failure,
 * 2 usage (also for the 4xx errors of bench_device_run). */
int bench_device_main(int argc, char **argv, const char *exe_dir);

#endif
