/* bench/bench_accel_args — the options of `ktune bench --accel` / `--accel-predict` and their
 * parsing (see bench_accel.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/predictor.h"
#include "search/searcher.h"
#include "bench/bench_accel.h"

static const char *const ba_default_presets[] = {"resnet_conv3", "resnet_conv4",  "inception_conv2",
                                                 "vgg_conv2",    "alexnet_conv2", "alexnet_conv4",
                                                 "mttkrp_0",     "mttkrp_1"};

int bench_accel_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--accel") == 0 || strcmp(argv[i], "--accel-predict") == 0)
            return 1;
    }
    return 0;
}

void bench_accel_usage(FILE *out)
{
    fprintf(out,
            "\n"
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
            "--accel-predict: the learned-models predictors on cnn_layer layer shapes.\n"
            "  --accel-devices FILE   devices file [<ktune dir>/../accel/devices.json]\n"
            "  --accel-device NAME    the device [mindmap]\n"
            "  --presets LIST         Table 1 presets [all 8]\n"
            "  --strategies LIST      [mindmap,anneal,genetic,na2c,auto,random]\n"
            "  --seeds N              seeds 0..N-1, 1-%d [10]\n"
            "  --budget N             cost-model evaluations per run, 1-%d [1000]\n"
            "  --eval-latency-ms X    modelled cost of one evaluation, >= 0 [10]\n"
            "  --free-invalid         an invalid proposal costs no evaluation (a cheap validity\n"
            "                         check for every strategy; default: it counts)\n"
            "  --problems N           training problems per kernel [200]\n"
            "  --samples N            valid training mappings per kernel [40000]\n"
            "  --epochs N             surrogate epochs [40]\n"
            "  --hidden LIST          hidden widths [256,256,128]\n"
            "  --train-max-s X        stop training after X s [0: no limit]\n"
            "  --train-seed N         sampling and training seed [0]\n"
            "  --surrogate-cache DIR  trained surrogates kept here [<ktune dir>/accel-surrogates]\n"
            "  --shapes N             --accel-predict: sampled cnn_layer shapes [300]\n"
            "  --predict-evals N      --accel-predict: evaluations of the search per shape [2000]\n"
            "  --predict-strategy S   --accel-predict: that search [anneal]\n"
            "  --predictors LIST      --accel-predict: of %s [all]\n",
            BENCH_MAX_SEEDS, BENCH_MAX_BUDGET, predictor_kinds());
}

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

/* One option with a value; 0, 1 when a is not one of them, -1 with msg. */
static int ba_value(const char *a, const char *v, bench_accel_options *opt, char *msg, size_t cap)
{
    if (strcmp(a, "--accel-devices") == 0)
        opt->devices_path = v;
    else if (strcmp(a, "--accel-device") == 0) {
        if (!*v || strlen(v) >= sizeof opt->device) {
            snprintf(msg, cap, "--accel-device: '%.64s' is not a device name", v);
            return -1;
        }
        snprintf(opt->device, sizeof opt->device, "%s", v);
    } else if (strcmp(a, "--presets") == 0)
        return ba_list(a, v, &opt->presets[0][0], 32, BENCH_ACCEL_MAX_PRESETS, &opt->n_presets, 0,
                       msg, cap);
    else if (strcmp(a, "--strategies") == 0) {
        opt->n_strategies = 0;
        return bench_parse_strategy_list(v, opt->strategies, &opt->n_strategies, msg, cap);
    } else if (strcmp(a, "--seeds") == 0)
        return bench_int_flag(a, v, 1, BENCH_MAX_SEEDS, &opt->seeds, msg, cap);
    else if (strcmp(a, "--budget") == 0)
        return bench_int_flag(a, v, 1, BENCH_MAX_BUDGET, &opt->budget, msg, cap);
    else if (strcmp(a, "--eval-latency-ms") == 0)
        return bench_double_flag(a, v, 0, 1e6, &opt->eval_latency_ms, msg, cap);
    else if (strcmp(a, "--problems") == 0)
        return bench_int_flag(a, v, 2, 100000, &opt->problems, msg, cap);
    else if (strcmp(a, "--samples") == 0)
        return bench_int_flag(a, v, 10, 2000000, &opt->samples, msg, cap);
    else if (strcmp(a, "--epochs") == 0)
        return bench_int_flag(a, v, 1, 10000, &opt->epochs, msg, cap);
    else if (strcmp(a, "--hidden") == 0)
        return ba_hidden(v, opt, msg, cap);
    else if (strcmp(a, "--train-max-s") == 0)
        return bench_double_flag(a, v, 0, 1e7, &opt->train_max_s, msg, cap);
    else if (strcmp(a, "--train-seed") == 0) {
        return bench_seed_flag(a, v, &opt->train_seed, msg, cap);
    } else if (strcmp(a, "--surrogate-cache") == 0)
        opt->cache_dir = v;
    else if (strcmp(a, "--shapes") == 0)
        return bench_int_flag(a, v, 4, 100000, &opt->shapes, msg, cap);
    else if (strcmp(a, "--predict-evals") == 0)
        return bench_int_flag(a, v, 1, BENCH_MAX_BUDGET, &opt->predict_evals, msg, cap);
    else if (strcmp(a, "--predict-strategy") == 0) {
        if (!searcher_exists(v) || strlen(v) >= sizeof opt->predict_strategy) {
            snprintf(msg, cap, "--predict-strategy: unknown strategy '%.64s' (strategies: %s)", v,
                     searcher_names());
            return -1;
        }
        snprintf(opt->predict_strategy, sizeof opt->predict_strategy, "%s", v);
    } else if (strcmp(a, "--predictors") == 0)
        return ba_predictors(v, opt, msg, cap);
    else if (strcmp(a, "--test-fraction") == 0) {
        if (bench_double_flag(a, v, 0, 1, &opt->test_fraction, msg, cap) < 0)
            return -1;
        if (!(opt->test_fraction > 0 && opt->test_fraction < 1)) {
            snprintf(msg, cap, "--test-fraction: '%.64s' is not in (0, 1)", v);
            return -1;
        }
    } else if (strcmp(a, "--hyper") == 0)
        opt->hyper = v;
    else if (strcmp(a, "--json") == 0) {
        if (!*v) {
            snprintf(msg, cap, "--json needs a file name");
            return -1;
        }
        opt->json_path = v;
    } else if (strcmp(a, "--from-json") == 0)
        opt->from_json = v;
    else if (strcmp(a, "--log-level") == 0)
        opt->log_level = v;
    else
        return 1;
    return 0;
}

int bench_accel_parse_args(int argc, char **argv, bench_accel_options *opt, char *msg, size_t cap,
                           FILE *out)
{
    int have_strategies = 0, have_predictors = 0;
    ba_defaults(opt);
    msg[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_accel_usage(out);
            return 1;
        }
        if (strcmp(a, "--free-invalid") == 0) {
            opt->free_invalid = 1;
            continue;
        }
        if (strcmp(a, "--accel") == 0 || strcmp(a, "--accel-predict") == 0) {
            opt->predict |= a[7] == '-';
            continue;
        }
        if (!v) {
            snprintf(msg, cap, "%s: needs a value (or is not an option of --accel)", a);
            return -1;
        }
        int r = ba_value(a, v, opt, msg, cap);
        if (r < 0)
            return -1;
        if (r > 0) {
            snprintf(msg, cap, "%s: not an option of --accel", a);
            return -1;
        }
        have_strategies |= strcmp(a, "--strategies") == 0;
        have_predictors |= strcmp(a, "--predictors") == 0;
        i++;
    }
    if (!have_strategies && !opt->predict && ba_default_strategies(opt, msg, cap) < 0)
        return -1;
    if (!have_predictors &&
        ba_predictors("seq2seq,nearest,common,xgb,local,ensemble", opt, msg, cap) < 0)
        return -1;
    return 0;
}
