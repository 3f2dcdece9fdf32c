/* bench/bench_predict_args — the options of `ktune bench --predict` and their parsing (see
 * bench_predict.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/predictor.h"
#include "bench/bench_device_args.h"
#include "bench/bench_predict.h"
#include "core/number.h"

int bench_predict_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--predict") == 0)
            return 1;
    }
    return 0;
}

void bench_predict_usage(FILE *out)
{
    fprintf(
        out,
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
        "\n"
        "  --predict DIR...     folders of measurement caches (*.jsonl)\n"
        "  --predictors LIST    comma-separated, of: %s [all]\n"
        "  --test-fraction F    share of the problems held out, in (0, 1) [0.25]\n"
        "  --seed N             split and training seed [0]\n"
        "  --hyper JSON         hyper-parameters per predictor, e.g. '{\"xgb\":{\"rounds\":100}}'\n"
        "  --json FILE          the whole result as one JSON line\n"
        "  --measure            measure predicted configurations the caches lack on this\n"
        "                       machine's CPU (the caches' class only) and append them\n"
        "  --runner, --kernels, --cache-dir, --cpu-core: as in the device mode\n",
        predictor_kinds());
}

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

int bench_predict_parse_args(int argc, char **argv, bench_predict_options *opt, char *msg,
                             size_t cap, FILE *out)
{
    memset(opt, 0, sizeof *opt);
    opt->test_fraction = 0.25;
    opt->cpu_core = BENCH_CPU_CORE_AUTO;
    if (bench_predict_kinds("seq2seq,nearest,common,xgb,local,ensemble", opt, msg, cap) < 0)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_predict_usage(out);
            return 1;
        }
        if (strcmp(a, "--predict") == 0) {
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (opt->n_dirs == BENCH_PREDICT_MAX_DIRS) {
                    snprintf(msg, cap, "--predict: at most %d folders", BENCH_PREDICT_MAX_DIRS);
                    return -1;
                }
                opt->dirs[opt->n_dirs++] = argv[++i];
            }
            continue;
        }
        if (strcmp(a, "--measure") == 0) {
            opt->measure = 1;
            continue;
        }
        if (!v) {
            snprintf(msg, cap, "%s: needs a value (or is not an option of --predict)", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--predictors") == 0) {
            if (bench_predict_kinds(v, opt, msg, cap) < 0)
                return -1;
        } else if (strcmp(a, "--test-fraction") == 0) {
            if (kt_parse_double(v, 0, 1, &opt->test_fraction) < 0 || opt->test_fraction == 0 ||
                opt->test_fraction == 1) {
                snprintf(msg, cap, "--test-fraction: '%s' is not in (0, 1)", v);
                return -1;
            }
        } else if (strcmp(a, "--seed") == 0) {
            if (bench_seed_flag(a, v, &opt->seed, msg, cap) < 0)
                return -1;
        } else if (strcmp(a, "--cpu-core") == 0) {
            if (kt_parse_int(v, -1, 4095, &opt->cpu_core) < 0) {
                snprintf(msg, cap, "--cpu-core: '%s' is not -1..4095", v);
                return -1;
            }
        } else if (strcmp(a, "--hyper") == 0) {
            opt->hyper = v;
        } else if (strcmp(a, "--json") == 0) {
            opt->json_path = v;
        } else if (strcmp(a, "--runner") == 0) {
            opt->runner = v;
        } else if (strcmp(a, "--kernels") == 0) {
            opt->kernels = v;
        } else if (strcmp(a, "--cache-dir") == 0) {
            opt->cache_dir = v;
        } else if (strcmp(a, "--log-level") == 0) {
            opt->log_level = v;
        } else {
            snprintf(msg, cap, "%s: not an option of --predict", a);
            return -1;
        }
    }
    if (opt->n_dirs == 0) {
        snprintf(msg, cap, "--predict: give at least one folder of measurement caches");
        return -1;
    }
    return 0;
}
