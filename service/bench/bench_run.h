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

/* Parses a comma-separated list of strategies (each known to searcher_exists, none twice) into
 * names[*n_names...], at most BENCH_MAX_STRATEGIES in all. Returns 0, or -1 with a message in msg.
 * Shared with the device mode (bench_device.h). */
int bench_parse_strategy_list(const char *list, char (*names)[64], int *n_names, char *msg,
                              size_t cap);
/* A decimal integer in lo..hi into *out; 0, or -1 when s is not one. */
int bench_parse_int(const char *s, int lo, int hi, int *out);
/* The value val of the flag name ("--budget") as bench_parse_int; 0, or -1 with "<name>: '<val>'
 * is not an integer in lo-hi" in msg. */
int bench_int_flag(const char *name, const char *val, int lo, int hi, int *out, char *msg,
                   size_t cap);

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

/* The parts of the subcommand's main shared with the device mode (bench_device_main), in call
 * order. bench_args_exit: the exit code after a *_parse_args that returned parsed != 0 (printing
 * msg for a usage error): 2, or 0 after --help. bench_json_open: opens --json FILE (path NULL:
 * none, *json NULL) before the run, so that a bad path fails early; 0, or -1 after printing why.
 * bench_finish: after the table, writes result as one JSON line to *json and closes it (setting
 * *json NULL; the caller fcloses a *json left open by a failure); result NULL: prints err. Returns
 * 0, or 1 after printing why. */
int bench_args_exit(int parsed, const char *msg);
int bench_json_open(const char *path, FILE **json);
int bench_finish(const json_t *result, const kt_error *err, FILE **json, const char *json_path);

/* The whole subcommand: argv[0] is "bench". exe_dir: folder of the ktune binary (default reference
 * file), or NULL. Returns the exit code: 0, 1 failure, 2 usage. */
int bench_main(int argc, char **argv, const char *exe_dir);

#endif
