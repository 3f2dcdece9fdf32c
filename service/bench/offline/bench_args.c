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
    KT_OPT_ROW_PATHS("--spaces", O(spaces), O(n_spaces), 1, BENCH_MAX_SPACES, BENCH_MAX_PATH,
                     "--spaces PATH...", "cache files or folders (one or more; repeatable)"),
    BENCH_OPT_STRATEGIES(bench_options, 0, bench_opt_strategies,
                         "comma-separated strategy names (%s)"),
    BENCH_OPT_BUDGET(bench_options, 0,
                     "distinct evaluations per run, 1-" BENCH_STR(BENCH_MAX_BUDGET) " [400]"),
    BENCH_OPT_SEEDS(bench_options, 0,
                    "seeds 0..N-1 per strategy and space, 1-" BENCH_STR(BENCH_MAX_SEEDS) " [20]"),
    KT_OPT_ROW_INT("--batch", O(batch), 1, BENCH_MAX_BATCH, 0, "--batch N",
                   "configurations asked for, evaluated and told at once, 1-" BENCH_STR(
                       BENCH_MAX_BATCH) "\n[1]; figures also against rounds (one ask + tell each)"),
    KT_OPT_ROW_FLAG("--include-failed", O(include_failed),
                    "keep failed configurations in the space (they find nothing)"),
    BENCH_OPT_JSON(bench_options, KT_OPT_NONEMPTY,
                   "write everything, per-seed curves included, to FILE"),
    KT_OPT_ROW_STRING("--kt-reference", O(kt_reference), 0, KT_OPT_NONEMPTY, "--kt-reference FILE",
                      "Kernel Tuner reference (kerneltuner-dev/summary.csv)"),
    KT_OPT_ROW_PATHS("--history", O(history), O(n_history), 1, BENCH_MAX_SPACES, BENCH_MAX_PATH,
                     "--history PATH...",
                     "warm starts: each strategy also runs as <name>+history with\n"
                     "the history of the spaces of the same kernel and parameters\n"
                     "(never the space itself); printed warm against cold"),
    KT_OPT_ROW_INT("--history-first", O(history_first), 0, BENCH_HISTORY_MAX_FIRST, 0,
                   "--history-first N",
                   "history configurations measured first, 0-" BENCH_STR(
                       BENCH_HISTORY_MAX_FIRST) " [" BENCH_STR(BENCH_HISTORY_DEFAULT_FIRST) "]"),
    KT_OPT_ROW_FLAG("--history-shuffle", O(history_shuffle),
                    "shuffle the history's times (a history without information)"),
    KT_OPT_ROW_FLAG("--history-invert", O(history_invert),
                    "history times t -> 1/t (a history that misleads)"),
    KT_OPT_ROW_INT("--cv-seeds", O(cv_seeds), 0, BENCH_MAX_SEEDS, 0, "--cv-seeds N",
                   "with auto among the strategies and two kernel families or\n"
                   "more: the cross-validated table of auto (leave one family out;\n"
                   "its constants chosen on the others with N seeds per space), 0:\n"
                   "none [" BENCH_STR(BENCH_CV_DEFAULT_SEEDS) "]"),
    KT_OPT_ROW_FLAG("--remote", O(remote),
                    "each run's searcher is ktuned's, reached through ask/tell: an\n"
                    "external job (the space inline, the strategy, the seed, --batch,\n"
                    "the budget, history none); the replayed cache still answers"),
    KT_OPT_ROW_STRING("--server", O(server), 0, KT_OPT_NONEMPTY, "--server URL",
                      "ktuned's address, implies --remote [KTUNE_SERVER, else\n"
                      "http://127.0.0.1:8080]"),
    KT_OPT_ROW_STRING("--token", O(token), 0, 0, "--token T",
                      "with --remote: API token (tune scope) [KTUNE_TOKEN]"),
    KT_OPT_ROW_STRING("--timeout", O(timeout), 0, KT_OPT_NONEMPTY, "--timeout S",
                      "with --remote: seconds per request, 1-3600 [KTUNE_TIMEOUT, else 60]"),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_offline_table = {
    .options = bench_offline_options,
    .usage =
        "usage: ktune bench --spaces PATH... --strategies A,B,... [--budget N] [--seeds N]\n"
        "                   [--batch N] [--include-failed] [--json FILE] [--kt-reference "
        "FILE]\n"
        "                   [--history PATH... [--history-first N]\n"
        "                    [--history-shuffle | --history-invert]]\n"
        "                   [--cv-seeds N] [--remote | --server URL] [--token T] [--timeout S]\n"
        "\n"
        "Replays Kernel Tuner cache files (files, or folders of *.json / *.json.gz) and runs\n"
        "each strategy on each, in process, with Kernel Tuner's tune_cache protocol\n"
        "(--remote: the searchers are ktuned's, the caches still answer).\n",
    .footer = "Exit codes: 0 done, 1 failure, 2 usage error.\n"};

/* The offline usage, then every other mode's: `ktune bench --help` is the whole story. */
static void bench_usage(FILE *out)
{
    static const bench_args *const others[] = {&bench_device_args, &bench_predict_args,
                                               &bench_accel_args, &bench_fisher_args,
                                               &bench_combine_args};
    kt_opt_usage(&bench_offline_table, out);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        bench_args_usage(others[i], out);
}

static void bench_defaults(void *o)
{
    bench_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->budget = 400;
    opt->seeds = 20;
    opt->batch = 1;
    opt->history_first = BENCH_HISTORY_DEFAULT_FIRST;
    opt->cv_seeds = BENCH_CV_DEFAULT_SEEDS;
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
    opt->remote |= opt->server != NULL;
    if (!opt->remote && (opt->token || opt->timeout)) {
        snprintf(msg, cap, "--token and --timeout go with --remote or --server");
        return -1;
    }
    if (opt->remote && opt->n_history > 0) {
        snprintf(msg, cap,
                 "--history runs in process only: a remote searcher's job has history "
                 "none (leave out --history or --remote)");
        return -1;
    }
    opt->curves = opt->json_path != NULL;
    return 0;
}

const bench_args bench_offline_args = {NULL, &bench_offline_table, bench_defaults, bench_check,
                                       bench_usage};
