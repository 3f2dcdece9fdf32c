/* cli/bench — `ktune bench`: the offline benchmark harness for searchers. Replays Kernel Tuner
 * cache files in process (no server, no database) with the tune_cache protocol of kerneltuner-dev,
 * so its fractions of the optimum compare with Kernel Tuner's reference curves. bench_run does the
 * work and returns the full result as JSON; bench_print_table formats it; bench_main is the
 * subcommand. */
#ifndef KT_CLI_BENCH_H
#define KT_CLI_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "../core/error.h"

#define BENCH_MAX_BUDGET     100000
#define BENCH_MAX_SEEDS      1000
#define BENCH_MAX_SPACES     256
#define BENCH_MAX_STRATEGIES 32
#define BENCH_MAX_PATH       4096

typedef struct bench_options {
    const char *spaces[BENCH_MAX_SPACES]; /* files or folders (folders: their *.json[.gz]) */
    int n_spaces;
    char strategies[BENCH_MAX_STRATEGIES][64];
    int n_strategies;
    int budget;         /* distinct evaluations per run, 1..BENCH_MAX_BUDGET */
    int seeds;          /* seeds 0..seeds-1, 1..BENCH_MAX_SEEDS */
    int include_failed; /* 1: failed configurations are in the space (evaluations finding nothing)
                         */
    int curves;         /* 1: per-seed curves in the result JSON */
    const char *json_path;    /* --json, or NULL */
    const char *kt_reference; /* --kt-reference, or NULL for the default */
} bench_options;

/* Parses the arguments after "bench". Returns 0, 1 when --help was asked (usage printed to out), or
 * -1 with a message in msg (a usage error: exit code 2). opt keeps pointers into argv. */
int bench_parse_args(int argc, char **argv, bench_options *opt, char *msg, size_t cap, FILE *out);

/* Runs every strategy on every space. Returns the result (new reference):
 * {"budget","seeds","include_failed","checkpoints":[25,...],"clock_budgets_s":[60,...],
 *  "spaces":[{"name","file","n_configs","n_valid","optimum_ms","strategies":{"<s>":{
 *    "fraction":{"25":f,...},"evals_to_5pct":{"median","success_rate"},
 *    "clock_fraction":{"60":f,...},"clock_to_5pct_s":{"median","success_rate"},"overhead_us",
 *    "runs":[{"seed","evaluations","best_so_far":[ms or null,...],"cum_cost_s":[...]}]}}}],
 *  "summary":{"<s>":{"25":f,...}}, "averages":{"<s>":{...same as per space, without runs}}}
 * NULL with err set on failure (unreadable space, unknown strategy, a repeated proposal). */
json_t *bench_run(const bench_options *opt, kt_error *err);

/* Readable table of a bench_run result; kt_reference: summary.csv of kerneltuner-dev or NULL. */
void bench_print_table(const json_t *result, const char *kt_reference, FILE *out);

/* The whole subcommand: argv[0] is "bench". exe_dir: folder of the ktune binary (default reference
 * file), or NULL. Returns the exit code: 0, 1 failure, 2 usage. */
int bench_main(int argc, char **argv, const char *exe_dir);

#endif
