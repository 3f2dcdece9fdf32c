/* bench/device/bench_device_args — `ktune bench --device` arguments: usage, parsing, --problem (see
 * bench_device_args.h). */
#include "bench/device/bench_device_args.h"
#include "bench/bench_strategy.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/kernel_spec.h"
#include "core/log.h"
#include "core/number.h"
#include "search/searcher.h"

const char *bench_device_row_label(const bench_device_options *opt, int r)
{
    return r < opt->n_strategies ? opt->strategies[r] : opt->variants[r - opt->n_strategies].label;
}

const char *bench_device_row_strategy(const bench_device_options *opt, int r)
{
    return r < opt->n_strategies ? opt->strategies[r]
                                 : opt->variants[r - opt->n_strategies].strategy;
}

int bench_device_n_rows(const bench_device_options *opt)
{
    return opt->n_strategies + opt->n_variants;
}

/* --variant LABEL=STRATEGY:JSON. Its option values are checked against the space when the bench
 * starts (searcher_new); here the text, the label, the strategy and the option names. */
static int bench_device_parse_variant(void *dst, const kt_option *ko, const char *val, char *msg,
                                      size_t cap)
{
    bench_device_options *opt = dst;
    (void)ko;
    const char *eq = strchr(val, '='), *colon = eq ? strchr(eq + 1, ':') : NULL;
    bench_device_variant *v = &opt->variants[opt->n_variants];
    json_t *o = NULL;
    json_error_t je;
    const char *k;
    json_t *x;
    int rc = -1;

    if (!eq || !colon) {
        snprintf(msg, cap, "--variant: '%.100s' is not LABEL=STRATEGY:{options}", val);
        goto out;
    }
    if (opt->n_strategies + opt->n_variants >= BENCH_MAX_STRATEGIES) {
        snprintf(msg, cap, "--variant: at most %d rows with --strategies", BENCH_MAX_STRATEGIES);
        goto out;
    }
    if (eq == val || (size_t)(eq - val) >= sizeof v->label ||
        strspn(val, "abcdefghijklmnopqrstuvwxyz0123456789_-") != (size_t)(eq - val)) {
        snprintf(msg, cap, "--variant: label '%.*s' must be 1-%zu characters of a-z, 0-9, _ and -",
                 (int)(eq - val > 64 ? 64 : eq - val), val, sizeof v->label - 1);
        goto out;
    }
    if (colon == eq + 1 || (size_t)(colon - eq - 1) >= sizeof v->strategy) {
        snprintf(msg, cap, "--variant %.*s: no strategy before ':'", (int)(eq - val), val);
        goto out;
    }
    memcpy(v->label, val, (size_t)(eq - val));
    v->label[eq - val] = '\0';
    memcpy(v->strategy, eq + 1, (size_t)(colon - eq - 1));
    v->strategy[colon - eq - 1] = '\0';
    if (!searcher_exists(v->strategy)) {
        snprintf(msg, cap, "--variant %s: unknown strategy '%.64s' (strategies: %s)", v->label,
                 v->strategy, searcher_names());
        goto out;
    }
    if (strlen(colon + 1) > BENCH_DEVICE_MAX_OPTIONS) {
        snprintf(msg, cap, "--variant %s: options of at most %d characters", v->label,
                 BENCH_DEVICE_MAX_OPTIONS);
        goto out;
    }
    o = json_loads(colon + 1, 0, &je);
    if (!json_is_object(o)) {
        snprintf(msg, cap, "--variant %s: the options are not a JSON object (%.100s)", v->label,
                 o ? "another JSON value" : je.text);
        goto out;
    }
    json_object_foreach(o, k, x)
    {
        char list[512];
        if (!bench_strategy_option_known(v->strategy, k, list, sizeof list)) {
            snprintf(msg, cap, "--variant %s: strategy %s has no option '%.64s' (options: %s)",
                     v->label, v->strategy, k, list[0] ? list : "none");
            goto out;
        }
    }
    v->options = colon + 1;
    opt->n_variants++;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

/* --time-checkpoints: ascending positive seconds. */
static int bench_device_parse_times(void *o, const kt_option *ko, const char *val, char *msg,
                                    size_t cap)
{
    bench_device_options *opt = o;
    (void)ko;
    const char *p = val;
    opt->n_time_checkpoints = 0;
    while (*p) {
        char num[32];
        size_t len = strcspn(p, ",");
        double d;
        if (len == 0 || len >= sizeof num || opt->n_time_checkpoints == BENCH_DEVICE_MAX_TIME_CP) {
            snprintf(msg, cap, "--time-checkpoints: '%.100s' is not 1-%d seconds T1,T2,...", val,
                     BENCH_DEVICE_MAX_TIME_CP);
            return -1;
        }
        memcpy(num, p, len);
        num[len] = '\0';
        if (kt_parse_double(num, 0, BENCH_DEVICE_MAX_TIME_S, &d) < 0 || d == 0 ||
            (opt->n_time_checkpoints > 0 &&
             d <= opt->time_checkpoints[opt->n_time_checkpoints - 1])) {
            snprintf(msg, cap,
                     "--time-checkpoints: '%.31s' is not a number of seconds in (0, %g] above "
                     "the one before",
                     num, BENCH_DEVICE_MAX_TIME_S);
            return -1;
        }
        opt->time_checkpoints[opt->n_time_checkpoints++] = d;
        p += len;
        if (*p == ',' && !*++p) {
            snprintf(msg, cap, "--time-checkpoints: trailing comma in '%.100s'", val);
            return -1;
        }
    }
    return 0;
}

/* --test-strategies: row labels, checked against the rows once all flags are read. */
static int bench_device_parse_tests(void *o, const kt_option *ko, const char *val, char *msg,
                                    size_t cap)
{
    bench_device_options *opt = o;
    (void)ko;
    const char *p = val;
    opt->n_test_rows = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof opt->test_rows[0] ||
            opt->n_test_rows == BENCH_MAX_STRATEGIES) {
            snprintf(msg, cap, "--test-strategies: '%.100s' is not a list of row labels", val);
            return -1;
        }
        memcpy(opt->test_rows[opt->n_test_rows], p, len);
        opt->test_rows[opt->n_test_rows++][len] = '\0';
        p += len;
        if (*p == ',' && !*++p) {
            snprintf(msg, cap, "--test-strategies: trailing comma in '%.100s'", val);
            return -1;
        }
    }
    return 0;
}

static int bench_device_row_index(const bench_device_options *opt, const char *label)
{
    for (int r = 0; r < bench_device_n_rows(opt); r++) {
        if (strcmp(bench_device_row_label(opt, r), label) == 0)
            return r;
    }
    return -1;
}

/* The rows once every flag is read: variant labels unique among all rows, the tested rows and
 * --relative-to among them. */
static int bench_device_check_rows(const bench_device_options *opt, char *msg, size_t cap)
{
    if (bench_device_n_rows(opt) > BENCH_MAX_STRATEGIES) {
        snprintf(msg, cap, "--strategies and --variant: at most %d rows", BENCH_MAX_STRATEGIES);
        return -1;
    }
    for (int v = 0; v < opt->n_variants; v++) {
        if (bench_device_row_index(opt, opt->variants[v].label) != opt->n_strategies + v) {
            snprintf(msg, cap,
                     "--variant %s: the label is already a row (of --strategies or an "
                     "earlier --variant)",
                     opt->variants[v].label);
            return -1;
        }
    }
    for (int t = 0; t < opt->n_test_rows; t++) {
        if (bench_device_row_index(opt, opt->test_rows[t]) < 0) {
            snprintf(msg, cap,
                     "--test-strategies: '%.64s' is not a row (--strategies or a "
                     "--variant label)",
                     opt->test_rows[t]);
            return -1;
        }
        for (int u = 0; u < t; u++) {
            if (strcmp(opt->test_rows[u], opt->test_rows[t]) == 0) {
                snprintf(msg, cap, "--test-strategies: '%.64s' given twice", opt->test_rows[t]);
                return -1;
            }
        }
    }
    if (opt->relative_to && bench_device_row_index(opt, opt->relative_to) < 0) {
        snprintf(msg, cap, "--relative-to: '%.64s' is not one of --strategies or a --variant label",
                 opt->relative_to);
        return -1;
    }
    return 0;
}

#define O(f) offsetof(bench_device_options, f)
#define NE   KT_OPT_NONEMPTY

static const kt_option bench_device_option_list[] = {
    KT_OPT_ROW_STRING("--kernel", O(kernel), 0, NE, "--kernel NAME",
                      "a kernel of the kernel folders (gemm_tiled, gemm, conv2d)"),
    KT_OPT_ROW_STRING("--device", O(device), 0, NE, "--device DEV", "cpu, or cuda:N"),
    KT_OPT_ROW_STRING("--problem", O(problem), BENCH_DEVICE_MAX_PROBLEM, 0, "--problem ARGS",
                      "problem arguments NAME=INT,... or a JSON object [defaults]"),
    BENCH_OPT_STRATEGIES(bench_device_options, NE, bench_opt_strategies,
                         "comma-separated strategy names (%s)"),
    KT_OPT_ROW_CALLBACK("--variant", 0, 0, NE, bench_device_parse_variant, "--variant L=S:JSON",
                        "a row labelled L ([a-z0-9_-]) running strategy S with those\n"
                        "options, e.g. 'na2c-eps1=na2c:{\"epsilon\":1}'; repeatable.\n"
                        "--strategies rows run with default options"),
    BENCH_OPT_BUDGET(bench_device_options, NE,
                     "distinct evaluations per run, 1-" BENCH_STR(BENCH_MAX_BUDGET) " [100]"),
    KT_OPT_ROW_DOUBLE("--time-budget", O(time_budget_s), 0.001, BENCH_DEVICE_MAX_TIME_S, NE,
                      "--time-budget S",
                      "a run also stops once its modelled clock (the compile and\n"
                      "measurement time recorded for each evaluation, cached or\n"
                      "not, plus the searcher's own time) passes S seconds [none]"),
    KT_OPT_ROW_CALLBACK("--time-checkpoints", 0, 0, NE, bench_device_parse_times,
                        "--time-checkpoints T",
                        "best cost at these modelled-clock seconds, ascending\n"
                        "[1-2-5 steps up to the longest clock, and --time-budget]"),
    KT_OPT_ROW_CALLBACK("--test-strategies", 0, 0, NE, bench_device_parse_tests,
                        "--test-strategies L",
                        "rows tested (Welch) against every other row [gbfs,na2c]"),
    BENCH_OPT_SEEDS(bench_device_options, NE,
                    "seeds 0..N-1 per strategy, 1-" BENCH_STR(BENCH_MAX_SEEDS) " [3]"),
    KT_OPT_ROW_INT(
        "--batch", O(batch), 1, BENCH_DEVICE_MAX_BATCH, NE, "--batch N",
        "configurations asked for and told at once, 1-" BENCH_STR(BENCH_DEVICE_MAX_BATCH) " [1]"),
    KT_OPT_ROW_STRING("--measure-cache", O(measure_cache), 0, NE, "--measure-cache FILE",
                      "measurements as JSON lines: read first, appended after every\n"
                      "measurement (a killed run resumes); refused when recorded\n"
                      "for another kernel, problem or CPU [in memory only]"),
    BENCH_OPT_JSON(bench_device_options, NE, "everything, best-so-far curves and trials included"),
    KT_OPT_ROW_INT("--progress", O(progress), 0, BENCH_MAX_BUDGET, NE, "--progress N",
                   "a progress line on stderr every N evaluations, 0 none [25]"),
    KT_OPT_ROW_STRING("--relative-to", O(relative_to), 0, NE, "--relative-to NAME",
                      "costs are shown relative to this strategy [gbfs, or the first]"),
    KT_OPT_ROW_STRING("--runner", O(runner), 0, NE, "--runner PATH",
                      "the ktune-runner binary [<dir of ktune>/ktune-runner]"),
    KT_OPT_ROW_STRING("--kernels", O(kernels), 0, NE, "--kernels DIRS",
                      "folders of kernel folders [<dir of ktune>/../kernels, or\n"
                      "./kernels]"),
    KT_OPT_ROW_STRING("--cache-dir", O(cache_dir), 0, NE, "--cache-dir DIR",
                      "the runner's compiled kernels [./var/cache]"),
    KT_OPT_ROW_INT("--cpu-core", O(cpu_core), -1, 4095, NE, "--cpu-core N",
                   "core cpu measurements are pinned to; -1 none [the last core]"),
    KT_OPT_ROW_INT("--min-repeats", O(min_repeats), 1, 100, NE, "--min-repeats N",
                   "timed runs per measurement at least, 1-100 [5]"),
    /* the seconds: same ranges as ktuned's flags (service/core/config.c) */
    KT_OPT_ROW_DOUBLE("--min-seconds", O(min_seconds), 0, 3, NE, "--min-seconds S",
                      "seconds of timed runs per measurement at least, 0-3 [0.2]"),
    KT_OPT_ROW_INT("--max-repeats", O(max_repeats), 1, 100000, NE, "--max-repeats N",
                   "timed runs per measurement at most [100]"),
    KT_OPT_ROW_DOUBLE("--max-timing-s", O(max_timing_s), 0.001, 3600, NE, "--max-timing-s S",
                      "timing stops after S seconds (at least one run) [3]"),
    KT_OPT_ROW_DOUBLE("--run-timeout-s", O(run_timeout_s), 0.5, 3600, NE, "--run-timeout-s S",
                      "seconds a measurement may run before the first ok result;\n"
                      "later ones get 20x the best time per run, 5-60 s [60]"),
    KT_OPT_ROW_DOUBLE("--compile-timeout-s", O(compile_timeout_s), 1, 3600, NE,
                      "--compile-timeout-s S", "seconds a configuration may take to compile [60]"),
    KT_OPT_ROW_DOUBLE("--slow-factor", O(slow_factor), 0, 1e6, NE, "--slow-factor F",
                      "give up on a configuration (status timeout) once one call takes\n"
                      "more than F x the run's own best time so far (each seed of each\n"
                      "row starts with none); 0 waits for every call [0]"),
    BENCH_OPT_LOG_LEVEL(bench_device_options, NE, "debug, info, warn or error [warn]"),
    {.kind = KT_OPT_END}};

static const kt_opt_table bench_device_table = {
    .options = bench_device_option_list,
    .mode = "--device",
    .usage = "\n"
             "usage: ktune bench --kernel NAME --device cpu|cuda:N --strategies A,B,...\n"
             "                   [--problem M=1024,N=1024,K=1024] [--budget N] [--seeds N]\n"
             "                   [--batch N] [--measure-cache FILE] [--json FILE] [--progress N]\n"
             "                   [--relative-to NAME] [--runner PATH] [--kernels DIR[,DIR]]\n"
             "                   [--cache-dir DIR] [--cpu-core N] [--min-repeats N]\n"
             "                   [--min-seconds S] [--max-repeats N] [--max-timing-s S]\n"
             "                   [--run-timeout-s S] [--compile-timeout-s S] [--log-level L]\n"
             "                   [--variant LABEL=STRATEGY:JSON]... [--time-budget S]\n"
             "                   [--time-checkpoints T1,T2,...] [--test-strategies A,B]\n"
             "\n"
             "Device mode: measures for real with ktune-runner (compile, verify, time). Each\n"
             "(strategy, seed) run stops after N distinct evaluations; failed configurations\n"
             "(compile errors, timeouts, wrong results, crashes) count as evaluations.\n"
             "A measurement costs about one verification call plus the timed calls: at "
             "gemm_tiled\n"
             "1024^3 on one CPU core 0.4-17 s (4 s on average for random configurations).\n"};

static const char *const bench_device_selectors[] = {"--device", "--kernel", NULL};

static void bench_device_defaults(void *o)
{
    bench_device_options *opt = o;
    memset(opt, 0, sizeof *opt);
    opt->budget = 100;
    opt->seeds = 3;
    opt->batch = 1;
    opt->progress = 25;
    opt->cpu_core = BENCH_CPU_CORE_AUTO;
    opt->min_seconds = -1;
}

/* Once every flag is read: the required ones, the rows, the files. */
static int bench_device_check(void *o, char *msg, size_t cap)
{
    bench_device_options *opt = o;
    if (!opt->kernel || !opt->device) {
        snprintf(msg, cap, "%s is required with %s", opt->kernel ? "--device" : "--kernel",
                 opt->kernel ? "--kernel" : "--device");
        return -1;
    }
    if (bench_device_n_rows(opt) == 0) {
        snprintf(msg, cap, "--strategies is required (or a --variant; strategies: %s)",
                 searcher_names());
        return -1;
    }
    if (bench_device_check_rows(opt, msg, cap) < 0)
        return -1;
    if (opt->measure_cache && opt->json_path && strcmp(opt->measure_cache, opt->json_path) == 0) {
        snprintf(msg, cap, "--json and --measure-cache name the same file");
        return -1;
    }
    return 0;
}

const bench_args bench_device_args = {bench_device_selectors, &bench_device_table,
                                      bench_device_defaults, bench_device_check, NULL};

/* --problem text -> JSON object: "M=1024,N=512" or a JSON object. NULL with err when malformed. */
json_t *bench_device_problem_json(const char *text, kt_error *err)
{
    json_t *o = NULL;
    const char *p = text;

    if (!text || !*text)
        return json_object();
    if (*text == '{') {
        json_error_t je;
        o = json_loads(text, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: not a JSON object: %.200s", je.text);
            return NULL;
        }
        return o;
    }
    if (!(o = json_object())) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    while (*p) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        char name[KSPEC_MAX_NAME + 1], num[32];
        long long v;
        if (!eq || eq > end || eq == p || (size_t)(eq - p) > KSPEC_MAX_NAME ||
            (size_t)(end - eq - 1) >= sizeof num || end == eq + 1) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: '%.200s' is not NAME=INTEGER,...",
                         text);
            goto fail;
        }
        memcpy(name, p, (size_t)(eq - p));
        name[eq - p] = '\0';
        memcpy(num, eq + 1, (size_t)(end - eq - 1));
        num[end - eq - 1] = '\0';
        if (kt_parse_ll(num, LLONG_MIN, LLONG_MAX, &v) < 0) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: %s=%s is not an integer", name, num);
            goto fail;
        }
        if (json_object_get(o, name)) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: %s given twice", name);
            goto fail;
        }
        if (json_object_size(o) >= KSPEC_MAX_ARGS ||
            json_object_set_new(o, name, json_integer(v)) < 0) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: at most %d arguments",
                         KSPEC_MAX_ARGS);
            goto fail;
        }
        p = comma ? comma + 1 : end;
        if (comma && !*p) {
            kt_error_set(err, KT_ERR_BAD_PROBLEM, "--problem: trailing comma in '%.200s'", text);
            goto fail;
        }
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}
