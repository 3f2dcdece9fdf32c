/* bench/offline/bench_args — `ktune bench` offline arguments: usage and parsing (see bench_args.h).
 */
#include "bench/offline/bench_args.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "search/searcher.h"
#include "bench/accel/bench_accel.h"
#include "bench/combine/bench_combine.h"
#include "bench/device/bench_device_args.h"
#include "bench/fisher/bench_fisher.h"
#include "bench/offline/bench_history.h"
#include "bench/predict/bench_predict.h"

#define O(f) offsetof(bench_options, f)

static const kt_option bench_offline_options[] = {
    {.name = "--spaces",
     .kind = KT_OPT_PATHS,
     .offset = O(spaces),
     .count_offset = O(n_spaces),
     .lo = 1,
     .hi = BENCH_MAX_SPACES,
     .max_len = BENCH_MAX_PATH,
     .arg = "--spaces PATH...",
     .help = "cache files or folders (one or more; repeatable)"},
    {.name = "--strategies",
     .kind = KT_OPT_CALLBACK,
     .offset = O(strategies),
     .count_offset = O(n_strategies),
     .cb = bench_opt_strategies,
     .arg = "--strategies LIST",
     .help = "comma-separated strategy names (%s)",
     .help_arg = searcher_names},
    {.name = "--budget",
     .kind = KT_OPT_INT,
     .offset = O(budget),
     .lo = 1,
     .hi = BENCH_MAX_BUDGET,
     .arg = "--budget N",
     .help = "distinct evaluations per run, 1-" BENCH_STR(BENCH_MAX_BUDGET) " [400]"},
    {.name = "--seeds",
     .kind = KT_OPT_INT,
     .offset = O(seeds),
     .lo = 1,
     .hi = BENCH_MAX_SEEDS,
     .arg = "--seeds N",
     .help = "seeds 0..N-1 per strategy and space, 1-" BENCH_STR(BENCH_MAX_SEEDS) " [20]"},
    {.name = "--batch",
     .kind = KT_OPT_INT,
     .offset = O(batch),
     .lo = 1,
     .hi = BENCH_MAX_BATCH,
     .arg = "--batch N",
     .help = "configurations asked for, evaluated and told at once, 1-" BENCH_STR(
         BENCH_MAX_BATCH) "\n[1]; figures also against rounds (one ask + tell each)"},
    {.name = "--include-failed",
     .kind = KT_OPT_FLAG,
     .offset = O(include_failed),
     .help = "keep failed configurations in the space (they find nothing)"},
    {.name = "--json",
     .kind = KT_OPT_STRING,
     .offset = O(json_path),
     .flags = KT_OPT_NONEMPTY,
     .arg = "--json FILE",
     .help = "write everything, per-seed curves included, to FILE"},
    {.name = "--kt-reference",
     .kind = KT_OPT_STRING,
     .offset = O(kt_reference),
     .flags = KT_OPT_NONEMPTY,
     .arg = "--kt-reference FILE",
     .help = "Kernel Tuner reference (kerneltuner-dev/summary.csv)"},
    {.name = "--history",
     .kind = KT_OPT_PATHS,
     .offset = O(history),
     .count_offset = O(n_history),
     .lo = 1,
     .hi = BENCH_MAX_SPACES,
     .max_len = BENCH_MAX_PATH,
     .arg = "--history PATH...",
     .help = "warm starts: each strategy also runs as <name>+history with\n"
             "the history of the spaces of the same kernel and parameters\n"
             "(never the space itself); printed warm against cold"},
    {.name = "--history-first",
     .kind = KT_OPT_INT,
     .offset = O(history_first),
     .lo = 0,
     .hi = BENCH_HISTORY_MAX_FIRST,
     .arg = "--history-first N",
     .help = "history configurations measured first, 0-" BENCH_STR(
         BENCH_HISTORY_MAX_FIRST) " [" BENCH_STR(BENCH_HISTORY_DEFAULT_FIRST) "]"},
    {.name = "--history-shuffle",
     .kind = KT_OPT_FLAG,
     .offset = O(history_shuffle),
     .help = "shuffle the history's times (a history without information)"},
    {.name = "--history-invert",
     .kind = KT_OPT_FLAG,
     .offset = O(history_invert),
     .help = "history times t -> 1/t (a history that misleads)"},
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_offline_table = {
    .options = bench_offline_options,
    .usage = "usage: ktune bench --spaces PATH... --strategies A,B,... [--budget N] [--seeds N]\n"
             "                   [--batch N] [--include-failed] [--json FILE] [--kt-reference "
             "FILE]\n"
             "                   [--history PATH... [--history-first N]\n"
             "                    [--history-shuffle | --history-invert]]\n"
             "\n"
             "Replays Kernel Tuner cache files (files, or folders of *.json / *.json.gz) and runs\n"
             "each strategy on each, in process, with Kernel Tuner's tune_cache protocol.\n",
    .footer = "Exit codes: 0 done, 1 failure, 2 usage error.\n"};

/* The offline usage, then every other mode's: `ktune bench --help` is the whole story. */
static void bench_usage(FILE *out)
{
    kt_opt_usage(&bench_offline_table, out);
    bench_device_usage(out);
    bench_predict_usage(out);
    bench_accel_usage(out);
    bench_fisher_usage(out);
    bench_combine_usage(out);
}

static void bench_defaults(void *o)
{
    bench_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->budget = 400;
    opt->seeds = 20;
    opt->batch = 1;
    opt->history_first = BENCH_HISTORY_DEFAULT_FIRST;
}

static int bench_check(void *o, char *msg, size_t cap)
{
    bench_options *opt = o;
    if (opt->n_spaces == 0) {
        snprintf(msg, cap, "--spaces is required");
        return -1;
    }
    if (opt->n_strategies == 0) {
        snprintf(msg, cap, "--strategies is required (strategies: %s)", searcher_names());
        return -1;
    }
    if (opt->n_history == 0 && (opt->history_shuffle || opt->history_invert)) {
        snprintf(msg, cap, "--history-shuffle and --history-invert need --history");
        return -1;
    }
    if (opt->history_shuffle && opt->history_invert) {
        snprintf(msg, cap, "--history-shuffle and --history-invert exclude each other");
        return -1;
    }
    opt->curves = opt->json_path != NULL;
    return 0;
}

const bench_args bench_offline_args = {&bench_offline_table, bench_defaults, bench_check,
                                       bench_usage};

int bench_parse_args(int argc, char **argv, bench_options *opt, char *msg, size_t cap, FILE *out)
{
    return bench_args_parse(&bench_offline_args, argc, argv, opt, msg, cap, out);
}
