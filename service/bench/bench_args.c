/* bench/bench_args — `ktune bench` offline arguments: usage and parsing (see bench_args.h). */
#include "bench/bench_args.h"

#include <stdio.h>
#include <string.h>

#include "search/searcher.h"
#include "bench/bench_accel.h"
#include "bench/bench_device_args.h"
#include "bench/bench_fisher.h"
#include "bench/bench_history.h"
#include "bench/bench_predict.h"

static void bench_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ktune bench --spaces PATH... --strategies A,B,... [--budget N] [--seeds N]\n"
        "                   [--batch N] [--include-failed] [--json FILE] [--kt-reference FILE]\n"
        "                   [--history PATH... [--history-first N]\n"
        "                    [--history-shuffle | --history-invert]]\n"
        "\n"
        "Replays Kernel Tuner cache files (files, or folders of *.json / *.json.gz) and runs\n"
        "each strategy on each, in process, with Kernel Tuner's tune_cache protocol.\n"
        "  --spaces PATH...     cache files or folders (one or more; repeatable)\n"
        "  --strategies LIST    comma-separated strategy names (%s)\n"
        "  --budget N           distinct evaluations per run, 1-%d [400]\n"
        "  --seeds N            seeds 0..N-1 per strategy and space, 1-%d [20]\n"
        "  --batch N            configurations asked for, evaluated and told at once, 1-%d\n"
        "                       [1]; figures also against rounds (one ask + tell each)\n"
        "  --include-failed     keep failed configurations in the space (they find nothing)\n"
        "  --json FILE          write everything, per-seed curves included, to FILE\n"
        "  --kt-reference FILE  Kernel Tuner reference (kerneltuner-dev/summary.csv)\n"
        "  --history PATH...    warm starts: each strategy also runs as <name>+history with\n"
        "                       the history of the spaces of the same kernel and parameters\n"
        "                       (never the space itself); printed warm against cold\n"
        "  --history-first N    history configurations measured first, 0-%d [%d]\n"
        "  --history-shuffle    shuffle the history's times (a history without information)\n"
        "  --history-invert     history times t -> 1/t (a history that misleads)\n"
        "Exit codes: 0 done, 1 failure, 2 usage error.\n",
        searcher_names(), BENCH_MAX_BUDGET, BENCH_MAX_SEEDS, BENCH_MAX_BATCH,
        BENCH_HISTORY_MAX_FIRST, BENCH_HISTORY_DEFAULT_FIRST);
    bench_device_usage(out);
    bench_predict_usage(out);
    bench_accel_usage(out);
    bench_fisher_usage(out);
}

int bench_parse_args(int argc, char **argv, bench_options *opt, char *msg, size_t cap, FILE *out)
{
    int rc = -1, have_strategies = 0;

    memset(opt, 0, sizeof *opt);
    opt->budget = 400;
    opt->seeds = 20;
    opt->batch = 1;
    opt->history_first = BENCH_HISTORY_DEFAULT_FIRST;
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
        } else if (strcmp(a, "--history-shuffle") == 0) {
            opt->history_shuffle = 1;
        } else if (strcmp(a, "--history-invert") == 0) {
            opt->history_invert = 1;
        } else if (strcmp(a, "--spaces") == 0 || strcmp(a, "--history") == 0) {
            int hist = a[2] == 'h';
            const char **list = hist ? opt->history : opt->spaces;
            int *n = hist ? &opt->n_history : &opt->n_spaces, before = *n;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (*n >= BENCH_MAX_SPACES || strlen(argv[i + 1]) >= BENCH_MAX_PATH) {
                    snprintf(msg, cap, "%s: at most %d paths of < %d characters", a,
                             BENCH_MAX_SPACES, BENCH_MAX_PATH);
                    goto out;
                }
                list[(*n)++] = argv[++i];
            }
            if (*n == before) {
                snprintf(msg, cap, "%s needs at least one file or folder", a);
                goto out;
            }
        } else if (strcmp(a, "--strategies") == 0 || strcmp(a, "--budget") == 0 ||
                   strcmp(a, "--seeds") == 0 || strcmp(a, "--batch") == 0 ||
                   strcmp(a, "--json") == 0 || strcmp(a, "--kt-reference") == 0 ||
                   strcmp(a, "--history-first") == 0) {
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
            } else if (strcmp(a, "--history-first") == 0) {
                if (bench_int_flag(a, val, 0, BENCH_HISTORY_MAX_FIRST, &opt->history_first, msg,
                                   cap) < 0)
                    goto out;
            } else if (strcmp(a, "--batch") == 0) {
                if (bench_int_flag(a, val, 1, BENCH_MAX_BATCH, &opt->batch, msg, cap) < 0)
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
    if (opt->n_history == 0 && (opt->history_shuffle || opt->history_invert)) {
        snprintf(msg, cap, "--history-shuffle and --history-invert need --history");
        goto out;
    }
    if (opt->history_shuffle && opt->history_invert) {
        snprintf(msg, cap, "--history-shuffle and --history-invert exclude each other");
        goto out;
    }
    opt->curves = opt->json_path != NULL;
    rc = 0;
out:
    return rc;
}
