/* bench/accel/bench_accel_args — the options of `ktune bench --accel` / `--accel-predict` and their
 * parsing (see bench_accel.h). */
#include <stddef.h>
#include <string.h>

#include "model/predictor.h"
#include "search/searcher.h"
#include "bench/accel/bench_accel.h"

static const char *const ba_default_presets[] = {"resnet_conv3", "resnet_conv4",  "inception_conv2",
                                                 "vgg_conv2",    "alexnet_conv2", "alexnet_conv4",
                                                 "mttkrp_0",     "mttkrp_1"};

static int ba_hidden(const char *v, bench_accel_options *opt, char *msg, size_t cap)
{
    char names[BENCH_ACCEL_MAX_HIDDEN][16];
    int n = 0;
    if (bench_parse_list("--hidden", v, &names[0][0], 16, BENCH_ACCEL_MAX_HIDDEN, &n, 1, msg, cap) <
        0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (bench_int_flag("--hidden", names[i], 1, 4096, &opt->hidden[i], msg, cap) < 0)
            return -1;
    }
    opt->n_hidden = n;
    return 0;
}

static void ba_defaults(bench_accel_options *opt)
{
    memset(opt, 0, sizeof *opt);
    snprintf(opt->device, sizeof opt->device, "mindmap");
    opt->n_presets = (int)(sizeof ba_default_presets / sizeof ba_default_presets[0]);
    for (int i = 0; i < opt->n_presets; i++)
        snprintf(opt->presets[i], sizeof opt->presets[i], "%s", ba_default_presets[i]);
    opt->seeds = 10;
    opt->budget = 1000;
    opt->eval_latency_ms = 10;
    opt->problems = 200;
    opt->samples = 40000;
    opt->epochs = 40;
    opt->hidden[0] = 256;
    opt->hidden[1] = 256;
    opt->hidden[2] = 128;
    opt->n_hidden = 3;
    opt->shapes = 300;
    opt->predict_evals = 2000;
    snprintf(opt->predict_strategy, sizeof opt->predict_strategy, "anneal");
    opt->test_fraction = 0.25;
}

/* The default strategies that exist in this build (mindmap comes with the surrogate). */
static int ba_default_strategies(bench_accel_options *opt, char *msg, size_t cap)
{
    static const char *const all[] = {"mindmap", "anneal", "genetic", "na2c", "auto", "random"};
    opt->n_strategies = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!searcher_exists(all[i])) {
            snprintf(msg, cap, "--strategies: this build has no '%s' (strategies: %s)", all[i],
                     searcher_names());
            return -1;
        }
        snprintf(opt->strategies[opt->n_strategies++], 64, "%s", all[i]);
    }
    return 0;
}

static int ba_opt_device(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    bench_accel_options *opt = o;
    (void)ko;
    if (!*v || strlen(v) >= sizeof opt->device) {
        snprintf(msg, cap, "--accel-device: '%.64s' is not a device name", v);
        return -1;
    }
    snprintf(opt->device, sizeof opt->device, "%s", v);
    return 0;
}

static int ba_opt_presets(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    bench_accel_options *opt = o;
    return bench_parse_list(ko->name, v, &opt->presets[0][0], 32, BENCH_ACCEL_MAX_PRESETS,
                            &opt->n_presets, 0, msg, cap);
}

static int ba_opt_hidden(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    (void)ko;
    return ba_hidden(v, o, msg, cap);
}

static int ba_opt_predict_strategy(void *o, const kt_option *ko, const char *v, char *msg,
                                   size_t cap)
{
    bench_accel_options *opt = o;
    (void)ko;
    if (!searcher_exists(v) || strlen(v) >= sizeof opt->predict_strategy) {
        snprintf(msg, cap, "--predict-strategy: unknown strategy '%.64s' (strategies: %s)", v,
                 searcher_names());
        return -1;
    }
    snprintf(opt->predict_strategy, sizeof opt->predict_strategy, "%s", v);
    return 0;
}

#define O(f) offsetof(bench_accel_options, f)

static const kt_option bench_accel_option_list[] = {
    {.name = "--accel", .kind = KT_OPT_FLAG, .flags = KT_OPT_IGNORED},
    KT_OPT_ROW_FLAG("--accel-predict", O(predict), NULL),
    KT_OPT_ROW_STRING("--accel-devices", O(devices_path), 0, 0, "--accel-devices FILE",
                      "devices file [<ktune dir>/../accel/devices.json]"),
    KT_OPT_ROW_CALLBACK("--accel-device", 0, 0, 0, ba_opt_device, "--accel-device NAME",
                        "the device [mindmap]"),
    KT_OPT_ROW_CALLBACK("--presets", 0, 0, 0, ba_opt_presets, "--presets LIST",
                        "Table 1 presets [all 8]"),
    BENCH_OPT_STRATEGIES(bench_accel_options, 0, bench_opt_strategies_new,
                         "[mindmap,anneal,genetic,na2c,auto,random]"),
    BENCH_OPT_SEEDS(bench_accel_options, 0, "seeds 0..N-1, 1-" BENCH_STR(BENCH_MAX_SEEDS) " [10]"),
    BENCH_OPT_BUDGET(bench_accel_options, 0,
                     "cost-model evaluations per run, 1-" BENCH_STR(BENCH_MAX_BUDGET) " [1000]"),
    KT_OPT_ROW_DOUBLE("--eval-latency-ms", O(eval_latency_ms), 0, 1e6, 0, "--eval-latency-ms X",
                      "modelled cost of one evaluation, >= 0 [10]"),
    KT_OPT_ROW_FLAG("--free-invalid", O(free_invalid),
                    "an invalid proposal costs no evaluation (a cheap validity\n"
                    "check for every strategy; default: it counts)"),
    KT_OPT_ROW_INT("--problems", O(problems), 2, 100000, 0, "--problems N",
                   "training problems per kernel [200]"),
    KT_OPT_ROW_INT("--samples", O(samples), 10, 2000000, 0, "--samples N",
                   "valid training mappings per kernel [40000]"),
    KT_OPT_ROW_INT("--epochs", O(epochs), 1, 10000, 0, "--epochs N", "surrogate epochs [40]"),
    KT_OPT_ROW_CALLBACK("--hidden", 0, 0, 0, ba_opt_hidden, "--hidden LIST",
                        "hidden widths [256,256,128]"),
    KT_OPT_ROW_DOUBLE("--train-max-s", O(train_max_s), 0, 1e7, 0, "--train-max-s X",
                      "stop training after X s [0: no limit]"),
    KT_OPT_ROW_SEED("--train-seed", O(train_seed), "--train-seed N",
                    "sampling and training seed [0]"),
    KT_OPT_ROW_STRING("--surrogate-cache", O(cache_dir), 0, 0, "--surrogate-cache DIR",
                      "trained surrogates kept here [<ktune dir>/accel-surrogates]"),
    KT_OPT_ROW_INT("--shapes", O(shapes), 4, 100000, 0, "--shapes N",
                   "--accel-predict: sampled cnn_layer shapes [300]"),
    KT_OPT_ROW_INT("--predict-evals", O(predict_evals), 1, BENCH_MAX_BUDGET, 0, "--predict-evals N",
                   "--accel-predict: evaluations of the search per shape [2000]"),
    KT_OPT_ROW_FLAG("--no-grid", O(no_grid),
                    "--accel-predict: skip seed 001's decoding grid (greedy / free /\n"
                    "constrained at k = 1, 10, 100): the ratios and paired tests only"),
    KT_OPT_ROW_CALLBACK("--predict-strategy", 0, 0, 0, ba_opt_predict_strategy,
                        "--predict-strategy S", "--accel-predict: that search [anneal]"),
    BENCH_OPT_PREDICTORS(bench_accel_options, predictors, n_predictors, BENCH_ACCEL_MAX_PREDICTORS,
                         "--accel-predict: of %s [all]"),
    BENCH_OPT_TEST_FRACTION(bench_accel_options, NULL),
    BENCH_OPT_HYPER(bench_accel_options, NULL),
    BENCH_OPT_JSON(bench_accel_options, KT_OPT_NONEMPTY, NULL),
    BENCH_OPT_FROM_JSON(bench_accel_options, NULL),
    BENCH_OPT_LOG_LEVEL(bench_accel_options, 0, NULL),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_accel_table = {
    .options = bench_accel_option_list,
    .mode = "--accel",
    .width = 22,
    .usage = "\n"
             "usage: ktune bench --accel [--accel-devices FILE] [--accel-device NAME]\n"
             "                   [--presets LIST] [--strategies LIST] [--seeds N] [--budget N]\n"
             "                   [--eval-latency-ms X] [--free-invalid] [--problems N]\n"
             "                   [--samples N] [--epochs N] [--hidden W,W,...]\n"
             "                   [--train-max-s X] [--train-seed N]\n"
             "                   [--surrogate-cache DIR|none] [--json FILE]\n"
             "       ktune bench --accel --from-json FILE   (the tables of a saved --json)\n"
             "       ktune bench --accel-predict [--shapes N] [--predict-evals N]\n"
             "                   [--predict-strategy NAME] [--predictors LIST]\n"
             "                   [--test-fraction F] [--hyper JSON] [--json FILE] ...\n"
             "\n"
             "Mind Mappings' report on the accel cost model, in process: per kernel a surrogate\n"
             "trained on random valid mappings of sampled problems (cached), then every strategy\n"
             "on the paper's Table 1 problems; best EDP / algorithmic minimum at equal\n"
             "evaluations and at equal time (wall, and modelled at X ms per evaluation).\n"
             "--accel-predict: the learned-models predictors on cnn_layer layer shapes.\n"};

static const char *const bench_accel_selectors[] = {"--accel", "--accel-predict", NULL};

static void bench_accel_defaults(void *o)
{
    ba_defaults(o);
}

/* The defaults of the lists not given. */
static int bench_accel_check(void *o, char *msg, size_t cap)
{
    bench_accel_options *opt = o;
    if (opt->n_strategies == 0 && !opt->predict && ba_default_strategies(opt, msg, cap) < 0)
        return -1;
    if (opt->n_predictors == 0 &&
        bench_parse_predictors(BENCH_PREDICTORS_ALL, opt->predictors, BENCH_ACCEL_MAX_PREDICTORS,
                               &opt->n_predictors, msg, cap) < 0)
        return -1;
    return 0;
}

const bench_args bench_accel_args = {bench_accel_selectors, &bench_accel_table,
                                     bench_accel_defaults, bench_accel_check, NULL};
