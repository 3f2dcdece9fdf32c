/* bench/bench_main — `ktune bench`: argument parsing, the run, the table and --json for both modes
 * (see bench_main.h). */
#include "bench/bench_main.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "bench/bench_accel.h"
#include "bench/bench_args.h"
#include "bench/bench_device.h"
#include "bench/bench_device_args.h"
#include "bench/bench_device_report.h"
#include "bench/bench_fisher.h"
#include "bench/bench_predict.h"
#include "bench/bench_report.h"
#include "bench/bench_run.h"

/* The steps both mains share, in call order. bench_args_exit: the exit code after a *_parse_args
 * that returned parsed != 0 (printing msg for a usage error): 2, or 0 after --help.
 * bench_json_open: opens --json FILE (path NULL: none, *json NULL) before the run, so that a bad
 * path fails early; 0, or -1 after printing why. bench_finish: after the table, writes result as
 * one JSON line to *json and closes it (setting *json NULL; the caller fcloses a *json left open by
 * a failure); result NULL: prints err. Returns 0, or 1 after printing why. */
static int bench_args_exit(int parsed, const char *msg)
{
    if (parsed < 0)
        fprintf(stderr, "ktune bench: %s\nTry 'ktune bench --help'.\n", msg);
    return parsed < 0 ? 2 : 0;
}

static int bench_json_open(const char *path, FILE **json)
{
    *json = NULL;
    if (!path)
        return 0;
    *json = fopen(path, "w");
    if (!*json) {
        fprintf(stderr, "ktune bench: --json %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int bench_finish(const json_t *result, const kt_error *err, FILE **json,
                        const char *json_path)
{
    int rc = 1;
    if (!result) {
        fprintf(stderr, "ktune bench: error: %s%s%s\n", err->message, err->hint[0] ? " — " : "",
                err->hint);
        goto out;
    }
    if (*json) {
        if (json_dumpf(result, *json, JSON_COMPACT) != 0 || fputc('\n', *json) == EOF) {
            fprintf(stderr, "ktune bench: cannot write %s\n", json_path);
            goto out;
        }
        int cr = fclose(*json);
        *json = NULL;
        if (cr != 0) {
            fprintf(stderr, "ktune bench: cannot write %s: %s\n", json_path, strerror(errno));
            goto out;
        }
    }
    rc = 0;
out:
    return rc;
}

/* 4xx errors are about what was asked (exit 2); the others are failures (exit 1). */
static int rep_exit_code(const kt_error *err)
{
    int status = kt_error_http_status(err->code);
    return status >= 400 && status < 500 ? 2 : 1;
}

/* A mode's start: its log level, then its JSON file. 0, or 2 (usage) when the file cannot be
 * opened. */
static int mode_begin(const char *log_level, const char *json_path, FILE **jf)
{
    kt_log_level level = KT_LOG_WARN;
    if (log_level)
        kt_log_parse_level(log_level, &level);
    kt_log_init(level);
    return bench_json_open(json_path, jf) < 0 ? 2 : 0;
}

/* A mode's exit code once res (NULL: err) is printed: the JSON file written and closed. */
static int mode_end(json_t *res, kt_error *err, FILE **jf, const char *json_path)
{
    int rc = bench_finish(res, err, jf, json_path);
    return res ? rc : rep_exit_code(err);
}

int bench_device_main(int argc, char **argv, const char *exe_dir)
{
    bench_device_options opt;
    kt_error err;
    char msg[1024];
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = bench_device_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (rc != 0) {
        rc = bench_args_exit(rc, msg);
        goto out;
    }
    if ((rc = mode_begin(opt.log_level, opt.json_path, &jf)) != 0)
        goto out;
    res = bench_device_run(&opt, exe_dir, stderr, &err);
    if (res)
        bench_device_print_table(res, stdout);
    rc = mode_end(res, &err, &jf, opt.json_path);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}

int bench_predict_main(int argc, char **argv, const char *exe_dir)
{
    bench_predict_options opt;
    kt_error err;
    char msg[1024];
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = bench_predict_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (rc != 0) {
        rc = bench_args_exit(rc, msg);
        goto out;
    }
    if ((rc = mode_begin(opt.log_level, opt.json_path, &jf)) != 0)
        goto out;
    res = bench_predict_run(&opt, exe_dir, stderr, &err);
    if (res)
        bench_predict_print_table(res, stdout);
    rc = mode_end(res, &err, &jf, opt.json_path);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}

int bench_accel_main(int argc, char **argv, const char *exe_dir)
{
    bench_accel_options opt;
    kt_error err;
    char msg[1024];
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = bench_accel_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (rc != 0) {
        rc = bench_args_exit(rc, msg);
        goto out;
    }
    if ((rc = mode_begin(opt.log_level, opt.json_path, &jf)) != 0)
        goto out;
    if (opt.from_json) { /* the tables of a saved result: the mode is the file's */
        json_error_t je;
        if (!(res = json_load_file(opt.from_json, 0, &je)))
            kt_error_set(&err, KT_ERR_BAD_REQUEST, "--from-json %s: %s", opt.from_json, je.text);
        opt.predict = res && strcmp(json_string_value(json_object_get(res, "mode")) ?: "",
                                    "accel-predict") == 0;
    } else
        res = opt.predict ? bench_accel_predict_run(&opt, exe_dir, stderr, &err)
                          : bench_accel_run(&opt, exe_dir, stderr, &err);
    if (res && opt.predict)
        bench_accel_predict_print_table(res, stdout);
    else if (res)
        bench_accel_print_table(res, stdout);
    rc = mode_end(res, &err, &jf, opt.json_path);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}

int bench_fisher_main(int argc, char **argv, const char *exe_dir)
{
    bench_fisher_options opt;
    kt_error err;
    char msg[1024];
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = bench_fisher_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (rc != 0) {
        rc = bench_args_exit(rc, msg);
        goto out;
    }
    if ((rc = mode_begin(opt.log_level, opt.json_path, &jf)) != 0)
        goto out;
    if (opt.from_json) { /* the tables of a saved result, checked first */
        json_error_t je;
        if (!(res = json_load_file(opt.from_json, 0, &je))) {
            kt_error_set(&err, KT_ERR_BAD_REQUEST, "--from-json %s: %s", opt.from_json, je.text);
        } else if (bench_fisher_check(res, &err) < 0) {
            kt_error_prefix(&err, "--from-json %s", opt.from_json);
            json_decref(res);
            res = NULL;
        }
    } else {
        res = bench_fisher_run(&opt, exe_dir, stderr, &err);
    }
    if (res)
        bench_fisher_print_table(res, stdout);
    rc = mode_end(res, &err, &jf, opt.json_path);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}

int bench_main(int argc, char **argv, const char *exe_dir)
{
    bench_options opt;
    kt_error err;
    char msg[1024], ref_path[BENCH_MAX_PATH];
    const char *ref = NULL;
    json_t *res = NULL;
    FILE *jf = NULL;
    int rc = 1;

    if (bench_accel_wanted(argc, argv)) { /* --accel, --accel-predict: Mind Mappings' report */
        rc = bench_accel_main(argc, argv, exe_dir);
        goto out;
    }
    if (bench_fisher_wanted(argc, argv)) { /* --fisher: the Fisher Potential check validated */
        rc = bench_fisher_main(argc, argv, exe_dir);
        goto out;
    }
    if (bench_predict_wanted(argc, argv)) { /* --predict: the prediction report */
        rc = bench_predict_main(argc, argv, exe_dir);
        goto out;
    }
    if (bench_device_wanted(argc, argv)) { /* --device: measured for real (bench_device.h) */
        rc = bench_device_main(argc, argv, exe_dir);
        goto out;
    }
    int p = bench_parse_args(argc, argv, &opt, msg, sizeof msg, stdout);
    if (p != 0) {
        rc = bench_args_exit(p, msg);
        goto out;
    }
    if (opt.kt_reference) {
        if (access(opt.kt_reference, R_OK) != 0) {
            fprintf(stderr, "ktune bench: --kt-reference %s: %s\n", opt.kt_reference,
                    strerror(errno));
            rc = 2;
            goto out;
        }
        ref = opt.kt_reference;
    } else if (exe_dir) {
        int w = snprintf(ref_path, sizeof ref_path,
                         "%s/../../shared/data/kerneltuner-dev/summary.csv", exe_dir);
        if (w > 0 && (size_t)w < sizeof ref_path && access(ref_path, R_OK) == 0)
            ref = ref_path;
    }
    opt.kt_reference = ref; /* bench_run compares with it, per space and on average */
    if (bench_json_open(opt.json_path, &jf) < 0)
        goto out;
    res = bench_run(&opt, &err);
    if (res)
        bench_print_table(res, ref, stdout);
    rc = bench_finish(res, &err, &jf, opt.json_path);
out:
    if (jf)
        fclose(jf);
    json_decref(res);
    return rc;
}
