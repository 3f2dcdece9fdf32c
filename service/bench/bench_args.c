/* bench/bench_args — `ktune bench` offline arguments: usage and parsing (see bench_args.h). */
#include "bench/bench_args.h"

#include <stdio.h>
#include <string.h>

#include "search/searcher.h"
#include "bench/bench_device_args.h"
#include "bench/bench_predict.h"

static void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: ktune bench --spaces PATH... --strategies A,B,... [--budget N] [--seeds N]\n"
            "                   [--include-failed] [--json FILE] [--kt-reference FILE]\n"
            "\n"
            "Replays Kernel Tuner cache files (files, or folders of *.json / *.json.gz) and runs\n"
            "each strategy on each, in process, with Kernel Tuner's tune_cache protocol.\n"
            "  --spaces PATH...     cache files or folders (one or more; repeatable)\n"
            "  --strategies LIST    comma-separated strategy names (%s)\n"
            "  --budget N           distinct evaluations per run, 1-%d [400]\n"
            "  --seeds N            seeds 0..N-1 per strategy and space, 1-%d [20]\n"
            "  --include-failed     keep failed configurations in the space (they find nothing)\n"
            "  --json FILE          write everything, per-seed curves included, to FILE\n"
            "  --kt-reference FILE  Kernel Tuner reference (kerneltuner-dev/summary.csv)\n"
            "Exit codes: 0 done, 1 failure, 2 usage error.\n",
            searcher_names(), BENCH_MAX_BUDGET, BENCH_MAX_SEEDS);
    bench_device_usage(out);
    bench_predict_usage(out);
}

int bench_parse_args(int argc, char **argv, bench_options *opt, char *msg, size_t cap, FILE *out)
{
    int rc = -1, have_strategies = 0;

    memset(opt, 0, sizeof *opt);
    opt->budget = 400;
    opt->seeds = 20;
    msg[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_usage(out);
            rc = 1;
            goto out;
        } else if (strcmp(a, "--include-failed") == 0) {
            opt->include_failed = 1;
        } else if (strcmp(a, "--spaces") == 0) {
            int before = opt->n_spaces;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (opt->n_spaces >= BENCH_MAX_SPACES || strlen(argv[i + 1]) >= BENCH_MAX_PATH) {
                    snprintf(msg, cap, "--spaces: at most %d paths of < %d characters",
                             BENCH_MAX_SPACES, BENCH_MAX_PATH);
                    goto out;
                }
                opt->spaces[opt->n_spaces++] = argv[++i];
            }
            if (opt->n_spaces == before) {
                snprintf(msg, cap, "--spaces needs at least one file or folder");
                goto out;
            }
        } else if (strcmp(a, "--strategies") == 0 || strcmp(a, "--budget") == 0 ||
                   strcmp(a, "--seeds") == 0 || strcmp(a, "--json") == 0 ||
                   strcmp(a, "--kt-reference") == 0) {
            if (!val) {
                snprintf(msg, cap, "%s needs a value", a);
                goto out;
            }
            i++;
            if (strcmp(a, "--strategies") == 0) {
                if (bench_parse_strategy_list(val, opt->strategies, &opt->n_strategies, msg, cap) <
                    0)
                    goto out;
                have_strategies = 1;
            } else if (strcmp(a, "--budget") == 0) {
                if (bench_int_flag(a, val, 1, BENCH_MAX_BUDGET, &opt->budget, msg, cap) < 0)
                    goto out;
            } else if (strcmp(a, "--seeds") == 0) {
                if (bench_int_flag(a, val, 1, BENCH_MAX_SEEDS, &opt->seeds, msg, cap) < 0)
                    goto out;
            } else if (strcmp(a, "--json") == 0) {
                if (!*val) {
                    snprintf(msg, cap, "--json needs a file name");
                    goto out;
                }
                opt->json_path = val;
            } else {
                if (!*val) {
                    snprintf(msg, cap, "--kt-reference needs a file name");
                    goto out;
                }
                opt->kt_reference = val;
            }
        } else {
            snprintf(msg, cap, "unknown argument '%.200s'", a);
            goto out;
        }
    }
    if (opt->n_spaces == 0) {
        snprintf(msg, cap, "--spaces is required");
        goto out;
    }
    if (!have_strategies) {
        snprintf(msg, cap, "--strategies is required (strategies: %s)", searcher_names());
        goto out;
    }
    opt->curves = opt->json_path != NULL;
    rc = 0;
out:
    return rc;
}
