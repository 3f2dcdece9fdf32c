/* bench/predict/bench_predict_args — the options of `ktune bench --predict` and their parsing (see
 * bench_predict.h). */
#include <stddef.h>
#include <string.h>

#include "model/predictor.h"
#include "bench/device/bench_device_args.h"
#include "bench/predict/bench_predict.h"
#include "bench/bench_parse.h"

static int bench_predict_kinds(const char *list, bench_predict_options *opt, char *msg, size_t cap)
{
    char buf[256];
    char *save = NULL;
    if (strlen(list) >= sizeof buf) {
        snprintf(msg, cap, "--predictors: too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", list);
    opt->n_kinds = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!predictor_kind_exists(t)) {
            snprintf(msg, cap, "--predictors: unknown predictor '%s' (predictors: %s)", t,
                     predictor_kinds());
            return -1;
        }
        for (int k = 0; k < opt->n_kinds; k++) {
            if (strcmp(opt->kinds[k], t) == 0) {
                snprintf(msg, cap, "--predictors: '%s' named twice", t);
                return -1;
            }
        }
        if (opt->n_kinds == BENCH_PREDICT_MAX_KINDS) {
            snprintf(msg, cap, "--predictors: too many");
            return -1;
        }
        snprintf(opt->kinds[opt->n_kinds++], sizeof opt->kinds[0], "%s", t);
    }
    if (opt->n_kinds == 0) {
        snprintf(msg, cap, "--predictors: empty list");
        return -1;
    }
    return 0;
}

static int bench_predict_opt_kinds(void *o, const kt_option *ko, const char *v, char *msg,
                                   size_t cap)
{
    (void)ko;
    return bench_predict_kinds(v, o, msg, cap);
}

#define O(f) offsetof(bench_predict_options, f)

static const kt_option bench_predict_option_list[] = {
    {.name = "--predict",
     .kind = KT_OPT_PATHS,
     .offset = O(dirs),
     .count_offset = O(n_dirs),
     .lo = 0,
     .hi = BENCH_PREDICT_MAX_DIRS,
     .max_len = BENCH_MAX_PATH,
     .arg = "--predict DIR...",
     .help = "folders of measurement caches (*.jsonl)"},
    {.name = "--predictors",
     .kind = KT_OPT_CALLBACK,
     .cb = bench_predict_opt_kinds,
     .arg = "--predictors LIST",
     .help = "comma-separated, of: %s [all]",
     .help_arg = predictor_kinds},
    {.name = "--test-fraction",
     .kind = KT_OPT_DOUBLE,
     .offset = O(test_fraction),
     .lo = 0,
     .hi = 1,
     .flags = KT_OPT_OPEN_LO | KT_OPT_OPEN_HI,
     .arg = "--test-fraction F",
     .help = "share of the problems held out, in (0, 1) [0.25]"},
    {.name = "--seed",
     .kind = KT_OPT_SEED,
     .offset = O(seed),
     .arg = "--seed N",
     .help = "split and training seed [0]"},
    {.name = "--hyper",
     .kind = KT_OPT_STRING,
     .offset = O(hyper),
     .arg = "--hyper JSON",
     .help = "hyper-parameters per predictor, e.g. '{\"xgb\":{\"rounds\":100}}'"},
    {.name = "--json",
     .kind = KT_OPT_STRING,
     .offset = O(json_path),
     .arg = "--json FILE",
     .help = "the whole result as one JSON line"},
    {.name = "--measure",
     .kind = KT_OPT_FLAG,
     .offset = O(measure),
     .help = "measure predicted configurations the caches lack on this\n"
             "machine's CPU (the caches' class only) and append them"},
    {.name = "--runner", .kind = KT_OPT_STRING, .offset = O(runner)},
    {.name = "--kernels", .kind = KT_OPT_STRING, .offset = O(kernels)},
    {.name = "--cache-dir", .kind = KT_OPT_STRING, .offset = O(cache_dir)},
    {.name = "--cpu-core", .kind = KT_OPT_INT, .offset = O(cpu_core), .lo = -1, .hi = 4095},
    {.kind = KT_OPT_TEXT,
     .help = "  --runner, --kernels, --cache-dir, --cpu-core: as in the device mode\n"},
    {.name = "--log-level",
     .kind = KT_OPT_CALLBACK,
     .offset = O(log_level),
     .cb = bench_opt_log_level},
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_predict_table = {
    .options = bench_predict_option_list,
    .mode = "--predict",
    .usage =
        "\n"
        "usage: ktune bench --predict DIR... [--predictors LIST] [--test-fraction F]\n"
        "                   [--seed N] [--hyper JSON] [--json FILE] [--measure]\n"
        "                   [--runner PATH] [--kernels DIR] [--cache-dir DIR]\n"
        "                   [--cpu-core N] [--log-level LEVEL]\n"
        "\n"
        "The prediction report: trains each predictor on the measurement caches of DIR\n"
        "(one <problem>.jsonl per problem of one kernel on one device, as written by\n"
        "`ktune bench --kernel ... --measure-cache FILE`) less a held-out quarter of the\n"
        "problems, and reports on the held-out ones: per-parameter accuracy and perfect\n"
        "predictions (greedy, free and constrained beam, k = 1, 10, 100), predicted top-1 and\n"
        "best-of-top-5 time over the best measured, training time and model size.\n"
        "\n"};

int bench_predict_wanted(int argc, char **argv)
{
    static const char *const selectors[] = {"--predict", NULL};
    return bench_args_has(argc, argv, selectors);
}

void bench_predict_usage(FILE *out)
{
    kt_opt_usage(&bench_predict_table, out);
}

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
        bench_predict_kinds("seq2seq,nearest,common,xgb,local,ensemble", opt, msg, cap) < 0)
        return -1;
    if (opt->n_dirs == 0) {
        snprintf(msg, cap, "--predict: give at least one folder of measurement caches");
        return -1;
    }
    return 0;
}

const bench_args bench_predict_args = {&bench_predict_table, bench_predict_defaults,
                                       bench_predict_check, bench_predict_usage};

int bench_predict_parse_args(int argc, char **argv, bench_predict_options *opt, char *msg,
                             size_t cap, FILE *out)
{
    return bench_args_parse(&bench_predict_args, argc, argv, opt, msg, cap, out);
}
