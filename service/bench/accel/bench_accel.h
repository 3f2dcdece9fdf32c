/* bench/accel/bench_accel — `ktune bench --accel` and `ktune bench --accel-predict`: the report of
 * issue 13 (Mind Mappings), in process, no database, no catalog: the accel room's cost model
 * directly.
 *
 * --accel: phase 1, per kernel (cnn_layer, mttkrp) on the device (--accel-device, default
 * mindmap): --problems sampled problems (accel_problem_sample), random mappings of each
 * (space_sample) until --samples valid ones in all, their meta-statistics (accel_meta), and a
 * surrogate trained on them (model/surrogate.h); the trained bytes are cached in
 * --surrogate-cache DIR under a name that hashes everything the training depends on, so a rerun
 * skips it. Phase 2, for each Table 1 preset x --seeds x --strategies, a searcher (batch 1) with a
 * budget of --budget cost-model evaluations: each proposal is decoded and evaluated
 * (accel_evaluate), told as ok with time_ms = EDP / algorithmic minimum (accel_lower_bound), or
 * as invalid (which counts in the budget). Every searcher gets an oracle (the cost model's
 * validity, counted apart: no budget); mindmap gets the kernel's surrogate. Per evaluation the run
 * records the best objective so far and its elapsed wall time (searcher_new, ask, tell,
 * evaluation, surrogate work). The report: iso-iteration (mean over seeds at 50, 100, 200, 500,
 * 1000 evaluations, geometric-mean ratios strategy / mindmap over presets), iso-time on the wall
 * clock and on a modelled clock (--eval-latency-ms per evaluation charged, not slept), valid
 * fractions, the paper's figures beside ours.
 *
 * --accel-predict: the learned-models predictors (model/predictor.h) on cnn_layer: --shapes sampled
 * layer shapes, the best mappings of each found by a fixed search (--predict-strategy, default
 * anneal, --predict-evals evaluations, seed 0), a held-out share, bench_predict's metrics.
 *
 * Call order: bench_args_wanted(&bench_accel_args) -> bench_args_parse -> bench_accel_run or
 * bench_accel_predict_run -> bench_accel_print_table / bench_accel_predict_print_table; or
 * bench_main (bench_main.h, its mode table) for all of it. Results are new references. */
#ifndef KT_BENCH_ACCEL_H
#define KT_BENCH_ACCEL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/bench_parse.h"

#define BENCH_ACCEL_MAX_PRESETS    32
#define BENCH_ACCEL_MAX_HIDDEN     8
#define BENCH_ACCEL_MAX_PREDICTORS 8

typedef struct bench_accel_options {
    int predict;              /* --accel-predict (else --accel) */
    const char *devices_path; /* --accel-devices [<exe dir>/../accel/devices.json] */
    char device[32];          /* --accel-device [mindmap] */
    char presets[BENCH_ACCEL_MAX_PRESETS][32]; /* --presets [the 8 of Table 1] */
    int n_presets;
    char strategies[BENCH_MAX_STRATEGIES][64]; /* --strategies [mindmap,anneal,genetic,na2c,auto,
                                                  random] */
    int n_strategies;
    int seeds;              /* --seeds [10]: 0..N-1 */
    int budget;             /* --budget [1000] cost-model evaluations per run */
    double eval_latency_ms; /* --eval-latency-ms [10]: the modelled clock's charge */
    int free_invalid;       /* --free-invalid: invalid proposals cost no evaluation */
    /* phase 1 */
    int problems;                       /* --problems [200] per kernel */
    int samples;                        /* --samples [40000] valid mappings per kernel */
    int epochs;                         /* --epochs [40] */
    int hidden[BENCH_ACCEL_MAX_HIDDEN]; /* --hidden [256,256,128] */
    int n_hidden;
    double train_max_s;    /* --train-max-s [0: none] */
    uint64_t train_seed;   /* --train-seed [0] */
    const char *cache_dir; /* --surrogate-cache [<exe dir>/accel-surrogates]; "none": no cache */
    /* --accel-predict */
    int shapes;        /* --shapes [300] */
    int predict_evals; /* --predict-evals [2000] */
    int no_grid;       /* --no-grid: no decoding grid (top-1 / top-5 and paired tests only) */
    char predict_strategy[64]; /* --predict-strategy [anneal] */
    char predictors[BENCH_ACCEL_MAX_PREDICTORS][BENCH_PREDICTOR_NAME]; /* --predictors [all] */
    int n_predictors;
    double test_fraction;  /* --test-fraction [0.25] */
    const char *hyper;     /* --hyper JSON per predictor */
    const char *json_path; /* --json FILE */
    const char *from_json; /* --from-json FILE: the tables of a saved --json result */
    const char *log_level;
} bench_accel_options;

/* The --accel modes' arguments (selected by --accel or --accel-predict): their option table,
 * defaults, checks and --help. */
extern const bench_args bench_accel_args;
/* --accel: the report as JSON (service/bench/README.md, "--accel"). exe_dir places the default
 * devices file and surrogate cache. progress: progress lines (NULL: none). NULL with err: 4xx
 * codes for what was asked (an unknown device or preset, a strategy that needs a surrogate the
 * run could not train). */
json_t *bench_accel_run(const bench_accel_options *opt, const char *exe_dir, FILE *progress,
                        kt_error *err);
void bench_accel_print_table(const json_t *res, FILE *out);
/* --accel-predict: the prediction report as JSON. */
json_t *bench_accel_predict_run(const bench_accel_options *opt, const char *exe_dir, FILE *progress,
                                kt_error *err);
void bench_accel_predict_print_table(const json_t *res, FILE *out);

#endif
