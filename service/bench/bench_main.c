/* bench/bench_main — `ktune bench`: the mode table and its one driver (see bench_main.h). */
#include "bench/bench_main.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "bench/accel/bench_accel.h"
#include "bench/offline/bench_args.h"
#include "bench/combine/bench_combine.h"
#include "bench/device/bench_device.h"
#include "bench/device/bench_device_args.h"
#include "bench/device/bench_device_report.h"
#include "bench/fisher/bench_fisher.h"
#include "bench/predict/bench_predict.h"
#include "bench/offline/bench_report.h"
#include "bench/offline/bench_run.h"

#define BENCH_NO_FIELD ((size_t)-1)

/* One mode of `ktune bench`; args->selectors, the flags that choose it. json_path, log_level:
 * offsets of the const char * fields of its options struct (BENCH_NO_FIELD: none; without a log
 * level the log is left as it is). begin (NULL: none): after the arguments, before the --json file
 * is opened, with the caller's searcher maker (offline: --remote); 0, or an exit code after
 * printing why. run: the result, or NULL with err. print: the
 * tables. usage_errors: a run's 4xx error exits 2 (else every failure exits 1). */
typedef struct bench_mode {
    const char *name;
    const bench_args *args;
    size_t size;
    size_t json_path, log_level;
    int (*begin)(void *opts, const char *exe_dir, const bench_searcher_maker *remote);
    json_t *(*run)(void *opts, const char *exe_dir, kt_error *err);
    void (*print)(const json_t *res, const void *opts, FILE *out);
    int usage_errors;
} bench_mode;

/* offline: the remote searchers' maker opened (--remote); the Kernel Tuner reference, given (it
 * must be readable) or found next to the build */
static int offline_begin(void *o, const char *exe_dir, const bench_searcher_maker *remote)
{
    bench_options *opt = o;
    char *ref = NULL;
    if (opt->remote && !remote) {
        fprintf(stderr, "ktune bench: --remote: remote searchers are made by the ktune command\n");
        return 2;
    }
    if (opt->remote) {
        int rc = remote->open(remote->ctx, opt);
        if (rc != 0)
            return rc;
        opt->maker = remote;
    }
    if (opt->kt_reference) {
        if (access(opt->kt_reference, R_OK) != 0) {
            fprintf(stderr, "ktune bench: --kt-reference %s: %s\n", opt->kt_reference,
                    strerror(errno));
            return 2;
        }
        return 0;
    }
    if (exe_dir) {
        /* the options struct borrows its strings; this one is kept in the struct's own buffer */
        ref = opt->kt_reference_buf;
        int w = snprintf(ref, sizeof opt->kt_reference_buf,
                         "%s/../../shared/data/kerneltuner-dev/summary.csv", exe_dir);
        if (w > 0 && (size_t)w < sizeof opt->kt_reference_buf && access(ref, R_OK) == 0)
            opt->kt_reference = ref;
    }
    return 0;
}

static json_t *offline_run(void *o, const char *exe_dir, kt_error *err)
{
    (void)exe_dir;
    return bench_run(o, err);
}

static void offline_print(const json_t *res, const void *o, FILE *out)
{
    bench_print_table(res, ((const bench_options *)o)->kt_reference, out);
}

static json_t *device_run(void *o, const char *exe_dir, kt_error *err)
{
    return bench_device_run(o, exe_dir, stderr, err);
}

static void device_print(const json_t *res, const void *o, FILE *out)
{
    (void)o;
    bench_device_print_table(res, out);
}

static json_t *predict_run(void *o, const char *exe_dir, kt_error *err)
{
    return bench_predict_run(o, exe_dir, stderr, err);
}

static void predict_print(const json_t *res, const void *o, FILE *out)
{
    (void)o;
    bench_predict_print_table(res, out);
}

/* --accel, --accel-predict; with --from-json the tables of a saved result, its mode the file's */
static json_t *accel_run(void *o, const char *exe_dir, kt_error *err)
{
    bench_accel_options *opt = o;
    json_t *res;
    json_error_t je;
    if (!opt->from_json)
        return opt->predict ? bench_accel_predict_run(opt, exe_dir, stderr, err)
                            : bench_accel_run(opt, exe_dir, stderr, err);
    if (!(res = json_load_file(opt->from_json, 0, &je)))
        kt_error_set(err, KT_ERR_BAD_REQUEST, "--from-json %s: %s", opt->from_json, je.text);
    opt->predict =
        res && strcmp(json_string_value(json_object_get(res, "mode")) ?: "", "accel-predict") == 0;
    return res;
}

static void accel_print(const json_t *res, const void *o, FILE *out)
{
    if (((const bench_accel_options *)o)->predict)
        bench_accel_predict_print_table(res, out);
    else
        bench_accel_print_table(res, out);
}

/* --fisher; with --from-json the tables of a saved result, checked first */
static json_t *fisher_run(void *o, const char *exe_dir, kt_error *err)
{
    bench_fisher_options *opt = o;
    json_t *res;
    json_error_t je;
    if (opt->n_replay > 0)
        return bench_fisher_replay(opt->replay, opt->n_replay, opt->permutations, err);
    if (!opt->from_json)
        return bench_fisher_run(opt, exe_dir, stderr, err);
    if (!(res = json_load_file(opt->from_json, 0, &je))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "--from-json %s: %s", opt->from_json, je.text);
    } else if (bench_fisher_check(res, err) < 0) {
        kt_error_prefix(err, "--from-json %s", opt->from_json);
        json_decref(res);
        res = NULL;
    }
    return res;
}

static void fisher_print(const json_t *res, const void *o, FILE *out)
{
    (void)o;
    bench_fisher_print_table(res, out);
}

static json_t *combine_run(void *o, const char *exe_dir, kt_error *err)
{
    (void)exe_dir;
    return bench_combine_run(o, err);
}

static void combine_print(const json_t *res, const void *o, FILE *out)
{
    (void)o;
    bench_combine_print_table(res, out);
}

#define MODE_FIELDS(T) sizeof(T), offsetof(T, json_path), offsetof(T, log_level)

/* In the order the selectors are tried; the last row, the default. */
static const bench_mode bench_modes[] = {
    {"combine", &bench_combine_args, sizeof(bench_combine_options), BENCH_NO_FIELD, BENCH_NO_FIELD,
     NULL, combine_run, combine_print, 0},
    {"accel", &bench_accel_args, MODE_FIELDS(bench_accel_options), NULL, accel_run, accel_print, 1},
    {"fisher", &bench_fisher_args, MODE_FIELDS(bench_fisher_options), NULL, fisher_run,
     fisher_print, 1},
    {"predict", &bench_predict_args, MODE_FIELDS(bench_predict_options), NULL, predict_run,
     predict_print, 1},
    {"device", &bench_device_args, MODE_FIELDS(bench_device_options), NULL, device_run,
     device_print, 1},
    {"offline", &bench_offline_args, sizeof(bench_options), offsetof(bench_options, json_path),
     BENCH_NO_FIELD, offline_begin, offline_run, offline_print, 0},
};

static const bench_mode *bench_mode_of(int argc, char **argv)
{
    size_t n = sizeof bench_modes / sizeof bench_modes[0];
    for (size_t i = 0; i + 1 < n; i++) {
        if (bench_args_wanted(bench_modes[i].args, argc, argv))
            return &bench_modes[i];
    }
    return &bench_modes[n - 1];
}

static const char *mode_string(const void *opts, size_t offset)
{
    return offset == BENCH_NO_FIELD ? NULL : *(const char *const *)((const char *)opts + offset);
}

/* After the table: result as one JSON line to json (closed here); 0, or -1 after printing why. */
static int bench_write_json(const json_t *res, FILE *json, const char *path)
{
    int bad = json_dumpf(res, json, JSON_COMPACT) != 0 || fputc('\n', json) == EOF;
    if (fclose(json) != 0 || bad) {
        fprintf(stderr, "ktune bench: cannot write %s%s%s\n", path, bad ? "" : ": ",
                bad ? "" : strerror(errno));
        return -1;
    }
    return 0;
}

/* The driver: arguments -> begin -> log level -> --json opened (a bad path fails before the run)
 * -> run -> table -> --json written -> exit code. */
int bench_main(int argc, char **argv, const char *exe_dir)
{
    return bench_main_with(argc, argv, exe_dir, NULL);
}

int bench_main_with(int argc, char **argv, const char *exe_dir, const bench_searcher_maker *remote)
{
    const bench_mode *m = bench_mode_of(argc, argv);
    void *opts = calloc(1, m->size);
    const char *json_path = NULL, *level;
    char msg[1024];
    kt_error err;
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = 1, parsed;

    if (!opts) {
        fprintf(stderr, "ktune bench: out of memory\n");
        goto out;
    }
    if ((parsed = bench_args_parse(m->args, argc, argv, opts, msg, sizeof msg, stdout)) != 0) {
        if (parsed < 0)
            fprintf(stderr, "ktune bench: %s\nTry 'ktune bench --help'.\n", msg);
        rc = parsed < 0 ? 2 : 0;
        goto out;
    }
    if (m->begin && (rc = m->begin(opts, exe_dir, remote)) != 0)
        goto out;
    if (m->log_level != BENCH_NO_FIELD) {
        kt_log_level l = KT_LOG_WARN;
        if ((level = mode_string(opts, m->log_level)))
            kt_log_parse_level(level, &l);
        kt_log_init(l);
    }
    json_path = mode_string(opts, m->json_path);
    if (json_path && !(jf = fopen(json_path, "w"))) {
        fprintf(stderr, "ktune bench: --json %s: %s\n", json_path, strerror(errno));
        rc = m->usage_errors ? 2 : 1;
        goto out;
    }
    if (!(res = m->run(opts, exe_dir, &err))) {
        int status = kt_error_http_status(err.code);
        fprintf(stderr, "ktune bench: error: %s%s%s\n", err.message, err.hint[0] ? " — " : "",
                err.hint);
        rc = m->usage_errors && status >= 400 && status < 500 ? 2 : 1;
        goto out;
    }
    m->print(res, opts, stdout);
    rc = 0;
    if (jf) {
        rc = bench_write_json(res, jf, json_path) < 0 ? 1 : 0;
        jf = NULL;
    }
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    free(opts);
    return rc;
}
