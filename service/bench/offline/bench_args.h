/* bench/offline/bench_args — the options of `ktune bench` in offline mode (replayed Kernel Tuner
 * caches) and their parsing. The device mode's are in bench_device_args.h. */
#ifndef KT_BENCH_ARGS_H
#define KT_BENCH_ARGS_H

#include <stddef.h>
#include <stdio.h>

#include "bench/bench_parse.h"

#define BENCH_MAX_BATCH 256 /* --batch: configurations asked for and told at once */

typedef struct bench_options {
    const char *spaces[BENCH_MAX_SPACES]; /* files or folders (folders: their *.json[.gz]) */
    int n_spaces;
    char strategies[BENCH_MAX_STRATEGIES][64];
    int n_strategies;
    int budget;         /* distinct evaluations per run, 1..BENCH_MAX_BUDGET */
    int seeds;          /* seeds 0..seeds-1, 1..BENCH_MAX_SEEDS */
    int batch;          /* configurations asked for and told at once, 1..BENCH_MAX_BATCH [1] */
    int include_failed; /* 1: failed configurations are in the space (evaluations finding nothing)
                         */
    int curves;         /* 1: per-seed curves in the result JSON */
    const char *json_path; /* --json, or NULL */
    /* --kt-reference; bench_main puts the default (shared/data/kerneltuner-dev/summary.csv next to
     * the build) here when it exists. bench_run: NULL = no Kernel Tuner comparison. */
    const char *kt_reference;
    char kt_reference_buf[BENCH_MAX_PATH]; /* the default reference's path, when found */
    /* Warm starts (bench_history.h): --history files or folders; each strategy then also runs
     * warm ("<strategy>+history") on every space that has related history. */
    const char *history[BENCH_MAX_SPACES];
    int n_history;
    int history_first;   /* --history-first: configurations measured first [8], 0-256 */
    int history_shuffle; /* --history-shuffle: history times shuffled (no information) */
    int history_invert;  /* --history-invert: history times t -> 1/t (misleading history) */
} bench_options;

/* The offline mode's arguments: its option table, defaults, checks and --help (every mode's). */
extern const bench_args bench_offline_args;

#endif
