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

/* A comma-separated list into names[cap][width]; 0, or -1 with msg. */
static int ba_list(const char *flag, const char *list, char *names, int width, int cap, int *n,
                   int dups, char *msg, size_t mcap)
{
    const char *p = list;
    *n = 0;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= (size_t)width || *n == cap) {
            snprintf(msg, mcap, "%s: bad list '%.200s' (at most %d names of < %d characters)", flag,
                     list, cap, width);
            return -1;
        }
        char *dst = names + (size_t)*n * (size_t)width;
        memcpy(dst, p, len);
        dst[len] = '\0';
        for (int i = 0; !dups && i < *n; i++) {
            if (strcmp(names + (size_t)i * (size_t)width, dst) == 0) {
                snprintf(msg, mcap, "%s: '%s' given twice", flag, dst);
                return -1;
            }
        }
        (*n)++;
        p += len;
        if (*p == ',' && !*++p) {
            snprintf(msg, mcap, "%s: trailing comma", flag);
            return -1;
        }
    }
    if (*n == 0) {
        snprintf(msg, mcap, "%s: empty list", flag);
        return -1;
    }
    return 0;
}

static int ba_hidden(const char *v, bench_accel_options *opt, char *msg, size_t cap)
{
    char names[BENCH_ACCEL_MAX_HIDDEN][16];
    int n = 0;
    if (ba_list("--hidden", v, &names[0][0], 16, BENCH_ACCEL_MAX_HIDDEN, &n, 1, msg, cap) < 0)
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

static int ba_predictors(const char *v, bench_accel_options *opt, char *msg, size_t cap)
{
    if (ba_list("--predictors", v, &opt->predictors[0][0], 16, BENCH_ACCEL_MAX_PREDICTORS,
                &opt->n_predictors, 0, msg, cap) < 0)
        return -1;
    for (int i = 0; i < opt->n_predictors; i++) {
        if (!predictor_kind_exists(opt->predictors[i])) {
            snprintf(msg, cap, "--predictors: unknown predictor '%s' (predictors: %s)",
                     opt->predictors[i], predictor_kinds());
            return -1;
        }
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
    return ba_list(ko->name, v, &opt->presets[0][0], 32, BENCH_ACCEL_MAX_PRESETS, &opt->n_presets,
                   0, msg, cap);
}

static int ba_opt_hidden(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    (void)ko;
    return ba_hidden(v, o, msg, cap);
}

static int ba_opt_predictors(void *o, const kt_option *ko, const char *v, char *msg, size_t cap)
{
    (void)ko;
    return ba_predictors(v, o, msg, cap);
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
    {.name = "--accel-predict", .kind = KT_OPT_FLAG, .offset = O(predict)},
    {.name = "--accel-devices",
     .kind = KT_OPT_STRING,
     .offset = O(devices_path),
     .arg = "--accel-devices FILE",
     .help = "devices file [<ktune dir>/../accel/devices.json]"},
    {.name = "--accel-device",
     .kind = KT_OPT_CALLBACK,
     .cb = ba_opt_device,
     .arg = "--accel-device NAME",
     .help = "the device [mindmap]"},
    {.name = "--presets",
     .kind = KT_OPT_CALLBACK,
     .cb = ba_opt_presets,
     .arg = "--presets LIST",
     .help = "Table 1 presets [all 8]"},
    {.name = "--strategies",
     .kind = KT_OPT_CALLBACK,
     .offset = O(strategies),
     .count_offset = O(n_strategies),
     .cb = bench_opt_strategies_new,
     .arg = "--strategies LIST",
     .help = "[mindmap,anneal,genetic,na2c,auto,random]"},
    {.name = "--seeds",
     .kind = KT_OPT_INT,
     .offset = O(seeds),
     .lo = 1,
     .hi = BENCH_MAX_SEEDS,
     .arg = "--seeds N",
     .help = "seeds 0..N-1, 1-" BENCH_STR(BENCH_MAX_SEEDS) " [10]"},
    {.name = "--budget",
     .kind = KT_OPT_INT,
     .offset = O(budget),
     .lo = 1,
     .hi = BENCH_MAX_BUDGET,
     .arg = "--budget N",
     .help = "cost-model evaluations per run, 1-" BENCH_STR(BENCH_MAX_BUDGET) " [1000]"},
    {.name = "--eval-latency-ms",
     .kind = KT_OPT_DOUBLE,
     .offset = O(eval_latency_ms),
     .lo = 0,
     .hi = 1e6,
     .arg = "--eval-latency-ms X",
     .help = "modelled cost of one evaluation, >= 0 [10]"},
    {.name = "--free-invalid",
     .kind = KT_OPT_FLAG,
     .offset = O(free_invalid),
     .help = "an invalid proposal costs no evaluation (a cheap validity\n"
             "check for every strategy; default: it counts)"},
    {.name = "--problems",
     .kind = KT_OPT_INT,
     .offset = O(problems),
     .lo = 2,
     .hi = 100000,
     .arg = "--problems N",
     .help = "training problems per kernel [200]"},
    {.name = "--samples",
     .kind = KT_OPT_INT,
     .offset = O(samples),
     .lo = 10,
     .hi = 2000000,
     .arg = "--samples N",
     .help = "valid training mappings per kernel [40000]"},
    {.name = "--epochs",
     .kind = KT_OPT_INT,
     .offset = O(epochs),
     .lo = 1,
     .hi = 10000,
     .arg = "--epochs N",
     .help = "surrogate epochs [40]"},
    {.name = "--hidden",
     .kind = KT_OPT_CALLBACK,
     .cb = ba_opt_hidden,
     .arg = "--hidden LIST",
     .help = "hidden widths [256,256,128]"},
    {.name = "--train-max-s",
     .kind = KT_OPT_DOUBLE,
     .offset = O(train_max_s),
     .lo = 0,
     .hi = 1e7,
     .arg = "--train-max-s X",
     .help = "stop training after X s [0: no limit]"},
    {.name = "--train-seed",
     .kind = KT_OPT_SEED,
     .offset = O(train_seed),
     .arg = "--train-seed N",
     .help = "sampling and training seed [0]"},
    {.name = "--surrogate-cache",
     .kind = KT_OPT_STRING,
     .offset = O(cache_dir),
     .arg = "--surrogate-cache DIR",
     .help = "trained surrogates kept here [<ktune dir>/accel-surrogates]"},
    {.name = "--shapes",
     .kind = KT_OPT_INT,
     .offset = O(shapes),
     .lo = 4,
     .hi = 100000,
     .arg = "--shapes N",
     .help = "--accel-predict: sampled cnn_layer shapes [300]"},
    {.name = "--predict-evals",
     .kind = KT_OPT_INT,
     .offset = O(predict_evals),
     .lo = 1,
     .hi = BENCH_MAX_BUDGET,
     .arg = "--predict-evals N",
     .help = "--accel-predict: evaluations of the search per shape [2000]"},
    {.name = "--predict-strategy",
     .kind = KT_OPT_CALLBACK,
     .cb = ba_opt_predict_strategy,
     .arg = "--predict-strategy S",
     .help = "--accel-predict: that search [anneal]"},
    {.name = "--predictors",
     .kind = KT_OPT_CALLBACK,
     .cb = ba_opt_predictors,
     .arg = "--predictors LIST",
     .help = "--accel-predict: of %s [all]",
     .help_arg = predictor_kinds},
    {.name = "--test-fraction",
     .kind = KT_OPT_DOUBLE,
     .offset = O(test_fraction),
     .lo = 0,
     .hi = 1,
     .flags = KT_OPT_OPEN_LO | KT_OPT_OPEN_HI},
    {.name = "--hyper", .kind = KT_OPT_STRING, .offset = O(hyper)},
    {.name = "--json", .kind = KT_OPT_STRING, .offset = O(json_path), .flags = KT_OPT_NONEMPTY},
    {.name = "--from-json", .kind = KT_OPT_STRING, .offset = O(from_json)},
    {.name = "--log-level",
     .kind = KT_OPT_CALLBACK,
     .offset = O(log_level),
     .cb = bench_opt_log_level},
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

int bench_accel_wanted(int argc, char **argv)
{
    static const char *const selectors[] = {"--accel", "--accel-predict", NULL};
    return bench_args_has(argc, argv, selectors);
}

void bench_accel_usage(FILE *out)
{
    kt_opt_usage(&bench_accel_table, out);
}

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
        ba_predictors("seq2seq,nearest,common,xgb,local,ensemble", opt, msg, cap) < 0)
        return -1;
    return 0;
}

const bench_args bench_accel_args = {&bench_accel_table, bench_accel_defaults, bench_accel_check,
                                     bench_accel_usage};

int bench_accel_parse_args(int argc, char **argv, bench_accel_options *opt, char *msg, size_t cap,
                           FILE *out)
{
    return bench_args_parse(&bench_accel_args, argc, argv, opt, msg, cap, out);
}
