/* bench/offline/bench_args — the options of `ktune bench` in offline mode (replayed Kernel Tuner
 * caches) and their parsing. The device mode's are in bench_device_args.h. */
#ifndef KT_BENCH_ARGS_H
#define KT_BENCH_ARGS_H

#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "search/searcher.h"
#include "bench/bench_parse.h"

#define BENCH_MAX_BATCH 256 /* --batch: configurations asked for and told at once */
/* --cv-seeds: seeds per space that score auto's candidate constants (bench_cv.h) */
#define BENCH_CV_DEFAULT_SEEDS 5

typedef struct bench_options bench_options;

/* Who makes each run's searcher when it is not made in process (--remote, --server): a room above
 * bench/ (cli/cli_bench_remote.h: ktuned's searcher, reached through ask/tell) fills this and
 * hands it to bench_main_with. The calls come from one thread, in this order: open once before the
 * runs, then per run make -> the run (the replayed cache still evaluates) -> failed -> the
 * searcher freed. */
typedef struct bench_searcher_maker {
    /* Reads opt's connection options (server, token, timeout): 0, or an exit code after printing
     * why (nothing runs). */
    int (*open)(void *ctx, const bench_options *opt);
    /* The searcher of one run: strategy on sp (space_name: the cache's name), seed, at most
     * budget evaluations asked for batch at a time; sp outlives it. NULL with err. */
    searcher *(*make)(void *ctx, const space *sp, const char *space_name, const char *strategy,
                      uint64_t seed, int budget, int batch, kt_error *err);
    /* After a run: 0, or -1 with err when a searcher it made failed on its own (a lost
     * connection, a refused tell: its ask then answered nothing); the run fails with it. */
    int (*failed)(void *ctx, kt_error *err);
    void *ctx;
} bench_searcher_maker;

struct bench_options {
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
    /* --cv-seeds: the cross-validated table of auto (bench_cv.h) scores its candidates with this
     * many seeds per space; 0: no cross-validation */
    int cv_seeds;
    /* Remote searchers: --remote, or --server (which implies it); --server, --token and
     * --timeout as given, for the maker's open to read (NULL: not given). maker: set by
     * bench_main_with when remote; NULL: every searcher made in process (searcher_new). */
    int remote;
    const char *server, *token, *timeout;
    const bench_searcher_maker *maker;
};

/* The offline mode's arguments: its option table, defaults, checks and --help (every mode's). */
extern const bench_args bench_offline_args;

#endif
