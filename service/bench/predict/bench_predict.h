/* bench/predict/bench_predict — `ktune bench --predict DIR...`: the prediction report of issue #10.
 * Every DIR is a folder of measurement caches of one kernel on one device (one JSON-lines file per
 * problem, as `ktune bench --kernel ... --measure-cache FILE` writes them, bench_mcache.h). The
 * ok trials make a training_set (model/training_set.h); it is split by problem (a quarter held
 * out, deterministic for --seed); every predictor (model/predictor.h) is trained on the rest and
 * judged on the held-out problems:
 *   - seed 001's metrics: mean per-parameter accuracy and perfect-prediction rate against the
 *     problem's best measured configuration, for greedy, free beam and constrained beam decoding
 *     at k = 1, 10, 100 (k > 1: the best-matching of the k), with the share of valid ones;
 *   - what users care about: time of the predicted top-1 / best measured, and best of the top-5
 *     measured / best (median, share within 1.10x and 1.05x);
 *   - training time and model size.
 * A predicted configuration the cache lacks has no time: with --measure it is measured on the
 * device (the same CPU class as the cache header, refused otherwise) and appended to the cache
 * file; without, it is counted as unmeasured and the ratios are over the measured ones.
 * With --replay-as FILE (a recorded device: name, class and the limits its spaces were built
 * with) nothing is probed or measured: the spaces are built with the recorded limits, so checked-in
 * caches replay alike on any machine (a cache of another class is refused).
 *
 * Call order: bench_args_wanted(&bench_predict_args) -> bench_args_parse ->
 * bench_predict_run -> bench_predict_print_table (bench_predict_report.c), or bench_main
 * (bench_main.h) for all of it. Results are new references. */
#ifndef KT_BENCH_PREDICT_H
#define KT_BENCH_PREDICT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_parse.h"

#define BENCH_PREDICT_MAX_DIRS       64
#define BENCH_PREDICT_MAX_FILES      10000 /* caches (problems) in all */
#define BENCH_PREDICT_MAX_FILE_BYTES (256L << 20)
#define BENCH_PREDICT_MAX_KINDS      8

typedef struct bench_predict_options {
    const char *dirs[BENCH_PREDICT_MAX_DIRS]; /* --predict DIR... */
    int n_dirs;
    char kinds[BENCH_PREDICT_MAX_KINDS]
              [BENCH_PREDICTOR_NAME]; /* --predictors [all of predictor_kinds()] */
    int n_kinds;
    double test_fraction;  /* --test-fraction [0.25] */
    uint64_t seed;         /* --seed [0]: the split and the training */
    const char *hyper;     /* --hyper '{"xgb":{"rounds":100},...}' or NULL */
    int measure;           /* --measure */
    int pool;              /* --pool: the paths are saved --json reports, pooled (bench_paired.h) */
    const char *replay_as; /* --replay-as FILE: the recorded device, no probe (NULL: probe) */
    const char *json_path;
    const char *runner, *kernels, *cache_dir; /* as `ktune bench --device` */
    int cpu_core;                             /* -1 none, BENCH_CPU_CORE_AUTO */
    const char *log_level;
} bench_predict_options;

/* The --predict mode's arguments (selected by --predict): its option table, defaults, checks and
 * --help. */
extern const bench_args bench_predict_args;
/* The report as JSON (service/bench/README.md, "--predict", documents the fields). exe_dir
 * places the default runner and kernels. progress: where progress lines go (NULL: none). NULL
 * with err: 4xx codes for what was asked (no cache, mixed kernels, an unknown predictor, a cache
 * of another machine with --measure). */
json_t *bench_predict_run(const bench_predict_options *opt, const char *exe_dir, FILE *progress,
                          kt_error *err);
/* The tables for people. */
void bench_predict_print_table(const json_t *res, FILE *out);

#endif
