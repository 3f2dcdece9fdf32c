/* bench/device/bench_device_args — the options of `ktune bench --device` (real measurements), their
 * usage and parsing, and the --problem text as JSON. Options keep pointers into argv. */
#ifndef KT_BENCH_DEVICE_ARGS_H
#define KT_BENCH_DEVICE_ARGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_parse.h"

#define BENCH_DEVICE_MAX_BATCH   256
#define BENCH_DEVICE_MAX_PROBLEM 1024 /* characters of --problem */
#define BENCH_CPU_CORE_AUTO      (-2) /* --cpu-core not given: the last core when there are 2+ */
#define BENCH_DEVICE_MAX_TIME_CP 16   /* --time-checkpoints */
#define BENCH_DEVICE_MAX_OPTIONS 4096 /* characters of a --variant's options */
#define BENCH_DEVICE_MAX_TIME_S  1e7  /* --time-budget and time checkpoints, seconds */

/* A --variant row: LABEL=STRATEGY:{options}. */
typedef struct bench_device_variant {
    char label[64];
    char strategy[64];
    const char *options; /* JSON object text, points into argv */
} bench_device_variant;

typedef struct bench_device_options {
    const char *kernel;  /* --kernel, required */
    const char *device;  /* --device, required: "cpu", "cuda:0" */
    const char *problem; /* --problem "M=1024,N=1024,K=1024" or a JSON object; NULL: defaults */
    char strategies[BENCH_MAX_STRATEGIES][64];
    int n_strategies;
    bench_device_variant variants[BENCH_MAX_STRATEGIES]; /* --variant, rows after --strategies */
    int n_variants;                           /* strategies + variants <= BENCH_MAX_STRATEGIES */
    char test_rows[BENCH_MAX_STRATEGIES][64]; /* --test-strategies: row labels */
    int n_test_rows;                          /* 0: gbfs and na2c, those that run */
    double time_budget_s; /* --time-budget: a run stops once its modelled clock passes it; 0 none */
    double time_checkpoints[BENCH_DEVICE_MAX_TIME_CP]; /* --time-checkpoints, ascending seconds */
    int n_time_checkpoints;    /* 0: the default set (bench_device_time.h) */
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

/* The device mode's arguments (selected by --device or --kernel): its option table, defaults,
 * checks and --help. */
extern const bench_args bench_device_args;
/* The label of row r: the strategy for r < n_strategies, else the variant's label. */
const char *bench_device_row_label(const bench_device_options *opt, int r);
/* The strategy of row r. */
const char *bench_device_row_strategy(const bench_device_options *opt, int r);
/* Rows in all: strategies then variants. */
int bench_device_n_rows(const bench_device_options *opt);
/* --problem text -> JSON object: "M=1024,N=512" or a JSON object; NULL or "": {} (new reference).
 * NULL with err (KT_ERR_BAD_PROBLEM) when malformed. */
json_t *bench_device_problem_json(const char *text, kt_error *err);

#endif
