/* bench/predict/bench_predict_args — the options of `ktune bench --predict` and their parsing (see
 * bench_predict.h). */
#include <stddef.h>
#include <string.h>

#include "model/predictor.h"
#include "bench/device/bench_device_args.h"
#include "bench/predict/bench_predict.h"
#include "bench/bench_parse.h"

#define O(f) offsetof(bench_predict_options, f)

static const kt_option bench_predict_option_list[] = {
    KT_OPT_ROW_PATHS("--predict", O(dirs), O(n_dirs), 0, BENCH_PREDICT_MAX_DIRS, BENCH_MAX_PATH,
                     "--predict DIR...", "folders of measurement caches (*.jsonl)"),
    BENCH_OPT_PREDICTORS(bench_predict_options, kinds, n_kinds, BENCH_PREDICT_MAX_KINDS,
                         "comma-separated, of: %s [all]"),
    BENCH_OPT_TEST_FRACTION(bench_predict_options,
                            "share of the problems held out, in (0, 1) [0.25]"),
    BENCH_OPT_SEED(bench_predict_options, "split and training seed [0]"),
    BENCH_OPT_HYPER(bench_predict_options,
                    "hyper-parameters per predictor, e.g. '{\"xgb\":{\"rounds\":100}}'"),
    BENCH_OPT_JSON(bench_predict_options, 0, "the whole result as one JSON line"),
    KT_OPT_ROW_FLAG("--measure", O(measure),
                    "measure predicted configurations the caches lack on this\n"
                    "machine's CPU (the caches' class only) and append them"),
    KT_OPT_ROW_FLAG("--pool", O(pool),
                    "the paths are saved --json reports (several seeds):\n"
                    "the paired tables pooled per kernel, nothing trained"),
    KT_OPT_ROW_STRING("--replay-as", O(replay_as), 0, 0, "--replay-as FILE",
                      "replay as the recorded device of FILE (its class and\n"
                      "limits), probing nothing: the same report on any machine"),
    KT_OPT_ROW_STRING("--runner", O(runner), 0, 0, NULL, NULL),
    KT_OPT_ROW_STRING("--kernels", O(kernels), 0, 0, NULL, NULL),
    KT_OPT_ROW_STRING("--cache-dir", O(cache_dir), 0, 0, NULL, NULL),
    KT_OPT_ROW_INT("--cpu-core", O(cpu_core), -1, 4095, 0, NULL, NULL),
    {.kind = KT_OPT_TEXT,
     .help = "  --runner, --kernels, --cache-dir, --cpu-core: as in the device mode\n"},
    BENCH_OPT_LOG_LEVEL(bench_predict_options, 0, NULL),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_predict_table = {
    .options = bench_predict_option_list,
    .mode = "--predict",
    .usage =
        "\n"
        "usage: ktune bench --predict DIR... [--predictors LIST] [--test-fraction F]\n"
        "                   [--seed N] [--hyper JSON] [--json FILE]\n"
        "                   [--measure | --replay-as FILE]\n"
        "                   [--runner PATH] [--kernels DIR] [--cache-dir DIR]\n"
        "                   [--cpu-core N] [--log-level LEVEL]\n"
        "       ktune bench --predict REPORT.json... --pool\n"
        "\n"
        "The prediction report: trains each predictor on the measurement caches of DIR\n"
        "(one <problem>.jsonl per problem of one kernel on one device, as written by\n"
        "`ktune bench --kernel ... --measure-cache FILE`) less a held-out quarter of the\n"
        "problems, and reports on the held-out ones: per-parameter accuracy and perfect\n"
        "predictions (greedy, free and constrained beam, k = 1, 10, 100), predicted top-1 and\n"
        "best-of-top-5 time over the best measured, training time and model size.\n"
        "\n"};

static const char *const bench_predict_selectors[] = {"--predict", NULL};

static void bench_predict_defaults(void *o)
{
    bench_predict_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->test_fraction = 0.25;
    opt->cpu_core = BENCH_CPU_CORE_AUTO;
}

static int bench_predict_check(void *o, char *msg, size_t cap)
{
    bench_predict_options *opt = o;
    if (opt->n_kinds == 0 &&
        bench_parse_predictors(BENCH_PREDICTORS_ALL, opt->kinds, BENCH_PREDICT_MAX_KINDS,
                               &opt->n_kinds, msg, cap) < 0)
        return -1;
    if (opt->pool && (opt->measure || opt->replay_as)) {
        snprintf(msg, cap, "--pool: reads saved reports only; leave out --measure, --replay-as");
        return -1;
    }
    if (opt->measure && opt->replay_as) {
        snprintf(msg, cap, "--replay-as: replays only; leave out --measure");
        return -1;
    }
    if (opt->n_dirs == 0) {
        snprintf(msg, cap, "--predict: give at least one folder of measurement caches");
        return -1;
    }
    return 0;
}

const bench_args bench_predict_args = {bench_predict_selectors, &bench_predict_table,
                                       bench_predict_defaults, bench_predict_check, NULL};
