/* Unit tests for the pure parts of the ktune command: argument parsing (problem arguments, values,
 * tune requests), best rendering (json, flags, header), Kernel Tuner and T4 conversions both ways
 * with every status, import chunking, exit codes and API error printing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_client.h"
#include "cli/cli_formats.h"
#include "space/config_render.h"
#include "space/tuner_export.h"
#include "cli/cli_tune.h"

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        fail_msg("bad test JSON: %s", je.text);
    return v;
}

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = load(want_text);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        fail_msg("got %s, want %s", g ? g : "NULL", want_text);
    }
    json_decref(want);
}

static void test_problem_arguments(void **state)
{
    (void)state;
    kt_error err;
    json_t *p = json_object();
    assert_int_equal(cli_parse_problem("M=1024,N=512,K=3", p, &err), 0);
    assert_json(p, "{\"M\": 1024, \"N\": 512, \"K\": 3}");
    json_object_clear(p);
    assert_int_equal(cli_parse_problem("problem_size=4096,4096", p, &err), 0);
    assert_json(p, "{\"problem_size\": [4096, 4096]}");
    json_object_clear(p);
    assert_int_equal(cli_parse_problem("a=1,2,3,b=0.5,c=x,d=true", p, &err), 0);
    assert_json(p, "{\"a\": [1, 2, 3], \"b\": 0.5, \"c\": \"x\", \"d\": true}");
    json_object_clear(p);
    assert_int_equal(cli_parse_problem("{\"n\": [1, 2]}", p, &err), 0);
    assert_json(p, "{\"n\": [1, 2]}");
    assert_int_equal(cli_parse_problem("4096", p, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "has no name"));
    assert_int_equal(cli_parse_problem("=3", p, &err), -1);
    assert_int_equal(cli_parse_problem("a=1,,b=2", p, &err), -1);
    assert_int_equal(cli_parse_problem("{not json", p, &err), -1);
    json_decref(p);

    json_t *o = json_object();
    assert_int_equal(cli_parse_pair("population=20", o, &err), 0);
    assert_int_equal(cli_parse_pair("mutation=0.25", o, &err), 0);
    assert_int_equal(cli_parse_pair("weights=[1,2]", o, &err), 0);
    assert_json(o, "{\"population\": 20, \"mutation\": 0.25, \"weights\": [1, 2]}");
    assert_int_equal(cli_parse_pair("novalue", o, &err), -1);
    assert_int_equal(cli_parse_pair("bad=[1,", o, &err), -1);
    json_decref(o);
}

static void test_tune_arguments(void **state)
{
    (void)state;
    cli_conn conn;
    cli_tune_args a;
    unsetenv("KTUNE_SERVER");
    assert_int_equal(cli_conn_init(&conn), 0);
    assert_string_equal(conn.server, "http://127.0.0.1:8080");
    char *argv[] = {"tune",
                    "--kernel",
                    "gemm",
                    "--device=cpu",
                    "--problem",
                    "M=64,N=32",
                    "--problem",
                    "K=16",
                    "--strategy",
                    "random",
                    "--option",
                    "x=1",
                    "--budget-evaluations",
                    "50",
                    "--budget-seconds",
                    "2.5",
                    "--seed",
                    "7",
                    "--history",
                    "none",
                    "--parallel",
                    "8",
                    "--objective",
                    "max:gflops",
                    "--wait",
                    "--server",
                    "http://h:1/",
                    "--token",
                    "t0k",
                    NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
    assert_int_equal(cli_tune_parse(argc, argv, &conn, &a), 0);
    assert_true(a.wait);
    assert_json(a.body, "{\"kernel\": \"gemm\", \"device\": \"cpu\", \"strategy\": \"random\","
                        " \"seed\": 7, \"history\": \"none\", \"parallel\": 8,"
                        " \"objective\": {\"metric\": \"gflops\", \"goal\": \"max\"},"
                        " \"problem\": {\"M\": 64, \"N\": 32, \"K\": 16},"
                        " \"strategy_options\": {\"x\": 1},"
                        " \"budget\": {\"evaluations\": 50, \"seconds\": 2.5}}");
    assert_string_equal(conn.server, "http://h:1");
    assert_string_equal(conn.token, "t0k");
    cli_tune_args_release(&a);

    char *missing[] = {"tune", "--kernel", "gemm", NULL};
    assert_int_equal(cli_tune_parse(3, missing, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    char *bad_budget[] = {"tune", "--kernel", "k", "--device", "d", "--budget-evaluations",
                          "0",    NULL};
    assert_int_equal(cli_tune_parse(7, bad_budget, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    char *bad_parallel[] = {"tune", "--kernel", "k", "--device", "d", "--parallel", "65", NULL};
    assert_int_equal(cli_tune_parse(7, bad_parallel, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    const char *bad_objectives[] = {"gflops", "max:", "best:gflops", "maxi:x", ":x"};
    for (size_t o = 0; o < sizeof bad_objectives / sizeof bad_objectives[0]; o++) {
        char *bad_objective[] = {
            "tune", "--kernel", "k", "--device", "d", "--objective", (char *)bad_objectives[o],
            NULL};
        assert_int_equal(cli_tune_parse(7, bad_objective, &conn, &a), CLI_EXIT_USAGE);
        cli_tune_args_release(&a);
    }
    char *no_value[] = {"tune", "--kernel", NULL};
    assert_int_equal(cli_tune_parse(2, no_value, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    char *bad_server[] = {"tune", "--server", "localhost:8080", NULL};
    assert_int_equal(cli_tune_parse(3, bad_server, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    char *unknown[] = {"tune", "--kernal", "k", NULL};
    assert_int_equal(cli_tune_parse(3, unknown, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    /* "--name=value" for every option with a value (an '=' in the value kept); a flag takes none */
    char *inline_values[] = {
        "tune",        "--kernel=k", "--device=cpu", "--problem=M=8", "--option=a=b",
        "--timeout=5", "--seed=3",   "--parallel=2", "--history=",    "--budget-seconds=1",
        NULL};
    assert_int_equal(cli_tune_parse(10, inline_values, &conn, &a), 0);
    assert_json(a.body, "{\"kernel\": \"k\", \"device\": \"cpu\", \"seed\": 3, \"parallel\": 2,"
                        " \"history\": \"\", \"problem\": {\"M\": 8},"
                        " \"strategy_options\": {\"a\": \"b\"}, \"budget\": {\"seconds\": 1.0}}");
    assert_int_equal(conn.timeout_s, 5);
    cli_tune_args_release(&a);
    char *flag_value[] = {"tune", "--kernel", "k", "--device", "d", "--wait=1", NULL};
    assert_int_equal(cli_tune_parse(6, flag_value, &conn, &a), CLI_EXIT_USAGE);
    cli_tune_args_release(&a);
    /* --help ends the parse: asked, exit 0 (the usage went to stdout) */
    char *help[] = {"tune", "--kernel", "k", "--help", "--bogus", NULL};
    assert_int_equal(cli_tune_parse(5, help, &conn, &a), 0);
    assert_true(a.help);
    cli_tune_args_release(&a);

    /* --json FILE: options override its fields. */
    char path[] = "/tmp/kt_cli_tune_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"kernel\": \"a\", \"device\": \"b\", \"budget\": {\"evaluations\": 9}, \"seed\": 1}",
          f);
    fclose(f);
    char *with_json[] = {"tune", "--json", path, "--kernel", "c", "--budget-seconds", "3", NULL};
    assert_int_equal(cli_tune_parse(7, with_json, &conn, &a), 0);
    assert_json(a.body, "{\"kernel\": \"c\", \"device\": \"b\", \"seed\": 1,"
                        " \"budget\": {\"evaluations\": 9, \"seconds\": 3.0}}");
    cli_tune_args_release(&a);
    unlink(path);
    char *no_file[] = {"tune", "--json", "/nonexistent/x.json", NULL};
    assert_int_equal(cli_tune_parse(3, no_file, &conn, &a), CLI_EXIT_FAILURE);
    cli_tune_args_release(&a);
}

static void test_progress_line(void **state)
{
    (void)state;
    char line[256];
    json_t *job = load("{\"id\": 12, \"status\": \"running\", \"budget\": {\"evaluations\": 100,"
                       " \"seconds\": null}, \"progress\": {\"trials\": 45, \"fraction\": 0.45,"
                       " \"clock_seconds\": 3.5}, \"best\": {\"time_ms\": 1.2345}}");
    cli_progress_line(job, 3.21, 10, line, sizeof line);
    assert_string_equal(line,
                        "job 12 running [#####.....] 45/100 evaluations  best 1.2345 ms  3.2 s");
    cli_progress_line(job, 3.21, 0, line, sizeof line);
    assert_string_equal(line, "job 12 running 45/100 evaluations  best 1.2345 ms  3.2 s");
    json_decref(job);
    job = load("{\"id\": 3, \"status\": \"queued\", \"budget\": {\"evaluations\": null,"
               " \"seconds\": 30}, \"progress\": {\"trials\": 0, \"fraction\": 0,"
               " \"clock_seconds\": 0}, \"best\": null}");
    cli_progress_line(job, 0, 4, line, sizeof line);
    assert_string_equal(line, "job 3 queued [....] 0 trials  0.0/30 s measured  best -  0.0 s");
    char tiny[16];
    cli_progress_line(job, 0, 4, tiny, sizeof tiny); /* truncated, still a string */
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    json_decref(job);
}

/* A prediction and a nearest answer are marked in every format but json; a measured one says its
 * provenance. */
static void test_render_best_sources(void **state)
{
    (void)state;
    kt_error err;
    char how[256];
    json_t *best = load("{\"kernel\": \"gemm\", \"device\": \"cpu\", \"problem\": {\"M\": 64},"
                        " \"config\": {\"MR\": 6}, \"source\": \"predicted\", \"score\": -0.25,"
                        " \"model\": {\"id\": 4, \"algorithm\": \"seq2seq\", \"version\": 2}}");
    char *s = config_render_best(best, "flags", &err);
    assert_string_equal(s, "-DMR=6 -DKTUNE_PREDICTED=1\n");
    free(s);
    s = config_render_best(best, "header", &err);
    assert_non_null(strstr(s, "NOT MEASURED: predicted by model 4 (seq2seq, version 2)"));
    assert_non_null(strstr(s, "#define KTUNE_PREDICTED 1\n"));
    assert_non_null(strstr(s, "#define KTUNE_MR 6\n"));
    free(s);
    s = config_render_best(best, "json", &err);
    assert_string_equal(s, "{\"MR\":6}\n");
    free(s);
    assert_true(config_render_source_text(best, how, sizeof how) > 0);
    assert_string_equal(how, "predicted by model 4 (seq2seq, version 2), score -0.25");
    assert_int_equal(config_render_source_text(best, how, 10), -1);

    json_object_set_new(best, "source", json_string("nearest"));
    json_object_set_new(best, "nearest",
                        load("{\"problem\": {\"M\": 32}, \"distance\": 0.5,"
                             " \"time_ms\": 2}"));
    s = config_render_best(best, "flags", &err);
    assert_string_equal(s, "-DMR=6 -DKTUNE_NEAREST=1\n");
    free(s);
    assert_true(config_render_source_text(best, how, sizeof how) > 0);
    assert_string_equal(how, "nearest tuned problem {\"M\":32} (distance 0.5, 2 ms there)");

    json_object_set_new(best, "source", json_string("measured"));
    json_object_set_new(best, "time_ms", json_real(1.5));
    json_object_set_new(best, "job_id", json_integer(3));
    json_object_set_new(best, "trial_id", json_integer(9));
    json_object_set_new(best, "provenance", load("{\"repeats\": 7, \"noise_cv\": 0.012}"));
    s = config_render_best(best, "flags", &err);
    assert_string_equal(s, "-DMR=6\n");
    free(s);
    s = config_render_best(best, "header", &err);
    assert_null(strstr(s, "KTUNE_PREDICTED"));
    assert_null(strstr(s, "NOT MEASURED"));
    free(s);
    assert_true(config_render_source_text(best, how, sizeof how) > 0);
    assert_string_equal(how, "measured 1.5 ms (job 3, trial 9, 7 repeats, noise 1.2%)");
    /* An imported entry (issue #11) says so, and is no prediction. */
    json_object_set_new(best, "source", json_string("imported"));
    assert_true(config_render_source_text(best, how, sizeof how) > 0);
    assert_string_equal(how, "imported 1.5 ms (job 3, trial 9, 7 repeats, noise 1.2%)");
    s = config_render_best(best, "header", &err);
    assert_non_null(strstr(s, "imported (measured elsewhere): 1.5 ms (job 3, trial 9)"));
    assert_null(strstr(s, "NOT MEASURED"));
    free(s);
    json_decref(best);
}

static void test_render_best(void **state)
{
    (void)state;
    kt_error err;
    json_t *best = load("{\"kernel\": \"gemm-v2\", \"device\": \"cpu\", \"problem\": {\"M\": 64},"
                        " \"config\": {\"block_size_x\": 32, \"ratio\": 0.5, \"use_x\": true,"
                        " \"tiny\": 1e-05, \"type\": \"float\"},"
                        " \"time_ms\": 1.5, \"job_id\": 3, \"trial_id\": 9}");
    char *s = config_render_best(best, "json", &err);
    assert_string_equal(
        s, "{\"block_size_x\":32,\"ratio\":0.5,\"use_x\":true,\"tiny\":1.0000000000000001e-5,"
           "\"type\":\"float\"}\n");
    free(s);
    s = config_render_best(best, "flags", &err);
    assert_string_equal(s, "-Dblock_size_x=32 -Dratio=0.5 -Duse_x=1 -Dtiny=1e-05 -Dtype=float\n");
    free(s);
    s = config_render_best(best, "header", &err);
    assert_non_null(s);
    assert_non_null(strstr(s, "#ifndef KTUNE_GEMM_V2_H\n#define KTUNE_GEMM_V2_H\n"));
    assert_non_null(strstr(s, "\n#define KTUNE_BLOCK_SIZE_X 32\n#define KTUNE_RATIO 0.5\n"
                              "#define KTUNE_USE_X 1\n#define KTUNE_TINY 1e-05\n"
                              "#define KTUNE_TYPE float\n"));
    assert_non_null(strstr(s, "1.5 ms (job 3, trial 9)"));
    assert_non_null(strstr(s, "#endif /* KTUNE_GEMM_V2_H */\n"));
    free(s);
    assert_null(config_render_best(best, "yaml", &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);

    /* A value with a space is quoted for the shell; a name that is no identifier is refused. */
    json_object_set_new(json_object_get(best, "config"), "type", json_string("unsigned int"));
    s = config_render_best(best, "flags", &err);
    assert_non_null(strstr(s, " '-Dtype=unsigned int'\n"));
    free(s);
    json_object_set_new(json_object_get(best, "config"), "2x", json_integer(1));
    assert_null(config_render_best(best, "flags", &err));
    assert_non_null(strstr(err.message, "'2x' is not a C identifier"));
    s = config_render_best(best, "header", &err); /* the macro name is made one */
    assert_non_null(strstr(s, "#define KTUNE_2X 1\n"));
    free(s);
    /* A comment terminator in the problem cannot end the header's comment. */
    json_object_set_new(best, "problem", load("{\"s\": \"*/ int x;\"}"));
    s = config_render_best(best, "header", &err);
    assert_null(strstr(s, "*/ int x"));
    free(s);
    json_object_set_new(json_object_get(best, "config"), "nested", load("[1]"));
    assert_null(config_render_best(best, "header", &err));
    json_object_del(best, "config");
    assert_null(config_render_best(best, "json", &err));
    json_decref(best);

    char buf[64];
    json_t *v = json_true();
    assert_int_equal(config_value_text(v, 0, buf, sizeof buf), 4);
    assert_string_equal(buf, "True");
    json_decref(v);
    v = json_real(4.0);
    config_value_text(v, 0, buf, sizeof buf);
    assert_string_equal(buf, "4.0");
    json_decref(v);
    v = json_string("a\nb");
    assert_int_equal(config_value_text(v, 0, buf, sizeof buf), -1);
    json_decref(v);
}

/* A job with one trial of each status, as the API returns them. */
static const char *job_text =
    "{\"id\": 7, \"kernel\": \"k\", \"device\": \"replay:k_x\", \"device_class\": \"replay:k_x\","
    " \"kernel_hash\": \"abc\", \"toolchain\": \"recorded\", \"problem\": {\"problem_size\": [8, "
    "8]},"
    " \"strategy\": \"random\"}";
static const char *trials_text =
    "["
    "{\"id\": 1, \"config\": {\"x\": 1, \"f\": 0.5}, \"status\": \"ok\", \"time_ms\": 2.25,"
    " \"compile_ms\": 10.5, \"measure_ms\": 3.0, \"finished_at\": \"2024-01-01T00:00:00Z\"},"
    "{\"id\": 2, \"config\": {\"x\": 2, \"f\": 0.5}, \"status\": \"compile_error\", \"time_ms\": "
    "null,"
    " \"compile_ms\": 4.0, \"measure_ms\": 0},"
    "{\"id\": 3, \"config\": {\"x\": 3, \"f\": 0.5}, \"status\": \"runtime_error\", \"time_ms\": "
    "null,"
    " \"compile_ms\": 1.0, \"measure_ms\": 0.25},"
    "{\"id\": 4, \"config\": {\"x\": 1, \"f\": 1.0}, \"status\": \"timeout\", \"time_ms\": null,"
    " \"compile_ms\": 0, \"measure_ms\": 60000},"
    "{\"id\": 5, \"config\": {\"x\": 2, \"f\": 1.0}, \"status\": \"wrong_result\", \"time_ms\": "
    "null,"
    " \"compile_ms\": 2.0, \"measure_ms\": 1.0},"
    "{\"id\": 6, \"config\": {\"x\": 3, \"f\": 1.0}, \"status\": \"invalid\", \"time_ms\": null,"
    " \"compile_ms\": null, \"measure_ms\": null}"
    "]";

/* Each imported trial agrees with the exported one (config, status, time, costs). */
static void assert_round_trip(const json_t *trials, const cli_import *im)
{
    assert_int_equal(json_array_size(im->trials), json_array_size(trials));
    for (size_t i = 0; i < json_array_size(trials); i++) {
        const json_t *a = json_array_get(trials, i), *b = json_array_get(im->trials, i);
        assert_true(json_equal(json_object_get(a, "config"), json_object_get(b, "config")));
        assert_string_equal(json_string_value(json_object_get(a, "status")),
                            json_string_value(json_object_get(b, "status")));
        json_t *ta = json_object_get(a, "time_ms"), *tb = json_object_get(b, "time_ms");
        assert_true(json_is_null(ta) ? json_is_null(tb)
                                     : json_number_value(ta) == json_number_value(tb));
        double ca = json_number_value(json_object_get(a, "compile_ms"));
        double ma = json_number_value(json_object_get(a, "measure_ms"));
        assert_true(ca == json_number_value(json_object_get(b, "compile_ms")));
        assert_true(ma == json_number_value(json_object_get(b, "measure_ms")));
    }
}

static void test_kerneltuner_round_trip(void **state)
{
    (void)state;
    kt_error err;
    json_t *job = load(job_text), *trials = load(trials_text);
    json_t *params = load("[{\"name\": \"x\", \"values\": [1, 2, 3]},"
                          " {\"name\": \"f\", \"values\": [0.5, 1.0]}]");
    json_t *restr = load("[\"x > 0\"]");
    json_t *doc = tuner_export_kerneltuner(job, params, restr, NULL, NULL, trials, &err);
    assert_non_null(doc);
    assert_json(json_object_get(doc, "tune_params_keys"), "[\"x\", \"f\"]");
    assert_json(json_object_get(doc, "tune_params"), "{\"x\": [1, 2, 3], \"f\": [0.5, 1.0]}");
    assert_json(json_object_get(doc, "problem_size"), "[8, 8]");
    assert_json(json_object_get(doc, "restrictions"), "[\"x > 0\"]");
    /* The job's key goes with the export, its toolchain included: what measured these trials. */
    const json_t *meta = json_object_get(doc, "ktune");
    assert_string_equal(json_string_value(json_object_get(meta, "kernel_hash")), "abc");
    assert_string_equal(json_string_value(json_object_get(meta, "toolchain")), "recorded");
    const json_t *cache = json_object_get(doc, "cache");
    assert_int_equal(json_object_size(cache), 6);
    const json_t *rec = json_object_get(cache, "1,0.5"); /* Python's key: floats as repr */
    assert_non_null(rec);
    assert_true(json_real_value(json_object_get(rec, "time")) == 2.25);
    assert_true(json_real_value(json_object_get(rec, "compile_time")) == 10.5);
    assert_true(json_real_value(json_object_get(rec, "benchmark_time")) == 3.0);
    assert_string_equal(json_string_value(json_object_get(rec, "timestamp")),
                        "2024-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "2,0.5"), "time")),
                        "CompilationFailedConfig");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "3,0.5"), "time")),
                        "RuntimeFailedConfig");
    const json_t *timeout = json_object_get(cache, "1,1.0");
    assert_string_equal(json_string_value(json_object_get(timeout, "time")), "RuntimeFailedConfig");
    assert_string_equal(json_string_value(json_object_get(timeout, "ktune_status")), "timeout");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "3,1.0"), "time")),
                        "InvalidConfig");

    cli_import im;
    assert_int_equal(cli_import_parse(doc, &im, &err), 0);
    assert_string_equal(im.format, "kerneltuner");
    assert_string_equal(im.kernel, "k");
    assert_string_equal(im.device, "replay:k_x");
    assert_json(im.problem, "{\"problem_size\": [8, 8]}");
    /* Invalid configurations carry no costs in the API (null); they come back as 0. */
    json_t *want = json_deep_copy(trials);
    json_object_set_new(json_array_get(want, 5), "compile_ms", json_real(0));
    json_object_set_new(json_array_get(want, 5), "measure_ms", json_real(0));
    assert_round_trip(want, &im);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(im.trials, 0), "repeats")),
                     1);
    cli_import_release(&im);
    json_decref(want);
    json_decref(doc);

    /* Without the kernel's parameters, names and values come from the trials. */
    doc = tuner_export_kerneltuner(job, NULL, NULL, NULL, NULL, trials, &err);
    assert_json(json_object_get(doc, "tune_params"), "{\"x\": [1, 2, 3], \"f\": [0.5, 1.0]}");
    assert_null(json_object_get(doc, "restrictions"));
    json_decref(doc);

    /* A cpu job: problem_size from the problem in the kernel's argument order, and the device's
     * limits and the problem written into the restrictions as numbers (not inside a parameter's
     * name, a number's exponent or quoted text); a parameter keeps its name. */
    json_t *cpu_job = load("{\"id\": 2, \"kernel\": \"g\", \"device\": \"cpu\","
                           " \"problem\": {\"N\": 80, \"M\": 96}}");
    json_t *cpu_restr = load("[\"x*M <= l2_bytes // 2 and x_M < 1e+3\", \"f != 'M' or N > 0\"]");
    json_t *constants = load("{\"M\": 96, \"N\": 80, \"l2_bytes\": 1048576}");
    json_t *args = load("[{\"name\": \"M\"}, {\"name\": \"N\"}]");
    doc = tuner_export_kerneltuner(cpu_job, params, cpu_restr, constants, args, trials, &err);
    assert_non_null(doc);
    assert_json(json_object_get(doc, "problem_size"), "[96, 80]");
    assert_json(json_object_get(doc, "restrictions"),
                "[\"x*96 <= 1048576 // 2 and x_M < 1e+3\", \"f != 'M' or 80 > 0\"]");
    json_decref(doc);
    /* A problem value Kernel Tuner's integer problem_size cannot hold is refused. */
    json_object_set_new(json_object_get(cpu_job, "problem"), "M", json_real(0.5));
    assert_null(
        tuner_export_kerneltuner(cpu_job, params, cpu_restr, constants, args, trials, &err));
    assert_non_null(strstr(err.message, "problem_size"));
    json_decref(args);
    json_decref(constants);
    json_decref(cpu_restr);
    json_decref(cpu_job);
    json_decref(restr);
    json_decref(params);
    json_decref(trials);
    json_decref(job);
}

static void test_kerneltuner_import_plain_cache(void **state)
{
    (void)state;
    kt_error err;
    cli_import im;
    /* A cache as Kernel Tuner writes it: no "ktune" object; "space" names a replay device. */
    json_t *file =
        load("{\"space\": \"pnpoly_kt-RTX_3090\", \"tune_params_keys\": [\"a\", \"b\"],"
             " \"tune_params\": {\"a\": [1, 2], \"b\": [true, false]},"
             " \"cache\": {"
             "  \"1,True\": {\"a\": 1, \"b\": true, \"time\": 3.0, \"times\": [2.0, 4.0],"
             "   \"compile_time\": 5, \"verification_time\": 1, \"benchmark_time\": 2},"
             "  \"2,True\": {\"a\": 2, \"b\": true, \"time\": 1e20},"
             "  \"1,False\": {\"a\": 1, \"b\": false, \"time\": \"SomethingElse\"}}}");
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_string_equal(im.kernel, "pnpoly");
    assert_string_equal(im.device, "replay:pnpoly_kt-RTX_3090");
    assert_null(im.problem);
    assert_json(
        im.trials,
        "[{\"config\": {\"a\": 1, \"b\": true}, \"status\": \"ok\", \"time_ms\": 3.0,"
        "  \"repeats\": 2, \"compile_ms\": 5.0, \"measure_ms\": 3.0, \"noise_cv\": "
        "0.3333333333333333},"
        " {\"config\": {\"a\": 2, \"b\": true}, \"status\": \"invalid\", \"time_ms\": null,"
        "  \"repeats\": 0, \"compile_ms\": 0.0, \"measure_ms\": 0.0, \"noise_cv\": 0.0},"
        " {\"config\": {\"a\": 1, \"b\": false}, \"status\": \"invalid\", \"time_ms\": null,"
        "  \"repeats\": 0, \"compile_ms\": 0.0, \"measure_ms\": 0.0, \"noise_cv\": 0.0}]");
    cli_import_release(&im);
    json_decref(file);

    file = load("{\"tune_params\": {\"a\": [1]}, \"cache\": {\"1\": {\"time\": 1.0}}}");
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "cache[\"1\"].a is missing"));
    cli_import_release(&im);
    json_decref(file);
    file = load("{\"something\": 1}");
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "neither a Kernel Tuner cache file"));
    cli_import_release(&im);
    json_decref(file);
    file = load("{\"tune_params\": {\"a\": [1]}, \"cache\": {}}");
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "holds no results"));
    cli_import_release(&im);
    json_decref(file);
}

/* A genuine Kernel Tuner cache (no "space" name, no "ktune" object) becomes an external import:
 * its kernel_name, a class of its device_name, problem_size, and a space from tune_params with
 * its restrictions or, where they are missing or exclude a recorded configuration, the recorded
 * configurations. */
static void test_kerneltuner_import_external(void **state)
{
    (void)state;
    kt_error err;
    cli_import im;
    const char *text = "{\"kernel_name\": \"vadd\", \"device_name\": \"NVIDIA GeForce RTX 3090\","
                       " \"problem_size\": [4096, 2], \"tune_params_keys\": [\"b\", \"a\"],"
                       " \"tune_params\": {\"a\": [1, 2], \"b\": [16, 32]},"
                       " \"cache\": {\"16,1\": {\"a\": 1, \"b\": 16, \"time\": 2.5},"
                       "  \"32,2\": {\"a\": 2, \"b\": 32, \"time\": \"InvalidConfig\"}}}";
    json_t *file = load(text);
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_string_equal(im.kernel, ""); /* no catalog target: the caller goes external */
    assert_int_equal(cli_import_external(file, NULL, NULL, &im, &err), 0);
    assert_string_equal(im.kernel, "vadd");
    assert_string_equal(im.device, "external");
    assert_string_equal(im.device_class, "NVIDIA_GeForce_RTX_3090");
    assert_json(im.problem, "{\"problem_size\": [4096, 2]}");
    assert_json(im.space, "{\"parameters\": [{\"name\": \"b\", \"values\": [16, 32]},"
                          " {\"name\": \"a\", \"values\": [1, 2]}],"
                          " \"configurations\": [[16, 1], [32, 2]]}");
    assert_non_null(strstr(im.space_note, "2 recorded configurations"));
    assert_int_equal(json_array_size(im.trials), 2);
    cli_import_release(&im);

    /* Restrictions every recorded configuration satisfies make the space; the options win. */
    json_object_set_new(file, "restrictions", json_pack("[s]", "a * b <= 64"));
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_int_equal(cli_import_external(file, "mine", "lab-1", &im, &err), 0);
    assert_string_equal(im.kernel, "mine");
    assert_string_equal(im.device_class, "lab-1");
    assert_json(im.space, "{\"parameters\": [{\"name\": \"b\", \"values\": [16, 32]},"
                          " {\"name\": \"a\", \"values\": [1, 2]}],"
                          " \"restrictions\": [\"a * b <= 64\"]}");
    cli_import_release(&im);
    /* One that excludes a recorded configuration, or is no ktune expression: the list. */
    const char *bad[] = {"a * b < 64", "a && b"};
    for (size_t i = 0; i < 2; i++) {
        json_object_set_new(file, "restrictions", json_pack("[s]", bad[i]));
        assert_int_equal(cli_import_parse(file, &im, &err), 0);
        assert_int_equal(cli_import_external(file, NULL, NULL, &im, &err), 0);
        assert_non_null(json_object_get(im.space, "configurations"));
        assert_null(json_object_get(im.space, "restrictions"));
        cli_import_release(&im);
    }
    json_decref(file);

    /* Every missing field is named, with a hint. */
    static const struct {
        const char *drop, *message;
    } missing[] = {
        {"kernel_name", "kernel_name is missing"},
        {"device_name", "device_name is missing"},
        {"tune_params_keys", "tune_params_keys is missing"},
        {"tune_params", "tune_params is missing"},
    };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        file = load(text);
        json_object_del(file, missing[i].drop);
        kt_error_clear(&err);
        assert_int_equal(cli_import_parse(file, &im, &err), 0);
        assert_int_equal(cli_import_external(file, NULL, NULL, &im, &err), -1);
        assert_non_null(strstr(err.message, missing[i].message));
        assert_true(err.hint[0] != '\0');
        cli_import_release(&im);
        json_decref(file);
    }
    file = load(text);
    json_object_del(json_object_get(file, "tune_params"), "a");
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_int_equal(cli_import_external(file, NULL, NULL, &im, &err), -1);
    assert_non_null(strstr(err.message, "tune_params[\"a\"] is missing"));
    cli_import_release(&im);
    json_object_set_new(file, "problem_size", json_string("big"));
    json_object_set_new(json_object_get(file, "tune_params"), "a", json_pack("[i,i]", 1, 2));
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_int_equal(cli_import_external(file, NULL, NULL, &im, &err), -1);
    assert_non_null(strstr(err.message, "problem_size must be"));
    cli_import_release(&im);
    json_object_del(json_object_get(json_object_get(file, "cache"), "32,2"), "time");
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "cache[\"32,2\"].time is missing"));
    cli_import_release(&im);
    json_decref(file);

    /* ktune's export of an external job: its class, version and problem come back. */
    file = load(text);
    json_object_set_new(file, "ktune",
                        json_pack("{s:s,s:s,s:s,s:s,s:{s:i}}", "kernel", "vadd", "device",
                                  "external", "device_class", "lab", "kernel_hash", "v3", "problem",
                                  "n", 4));
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_string_equal(im.device, "external");
    assert_string_equal(im.device_class, "lab");
    assert_string_equal(im.kernel_version, "v3");
    assert_int_equal(cli_import_external(file, NULL, "lab", &im, &err), 0);
    assert_json(im.problem, "{\"n\": 4}");
    cli_import_release(&im);
    json_decref(file);

    char klass[16];
    cli_device_class_of("  AMD Instinct MI250X / MI250 ", klass, sizeof klass);
    assert_string_equal(klass, "AMD_Instinct_M"); /* cap - 2 characters */
    cli_device_class_of("???", klass, sizeof klass);
    assert_string_equal(klass, "");
}

static void test_t4_round_trip(void **state)
{
    (void)state;
    kt_error err;
    json_t *job = load(job_text), *trials = load(trials_text);
    json_t *doc = tuner_export_t4(job, trials, &err);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "schema_version")), "1.0.0");
    const json_t *results = json_object_get(doc, "results");
    assert_int_equal(json_array_size(results), 6);
    static const char *const invalidity[] = {"correct", "compile",     "runtime",
                                             "timeout", "correctness", "constraints"};
    for (size_t i = 0; i < 6; i++) {
        const json_t *r = json_array_get(results, i);
        assert_string_equal(json_string_value(json_object_get(r, "invalidity")), invalidity[i]);
        assert_int_equal(json_integer_value(json_object_get(r, "correctness")), i == 4 ? 0 : 1);
        assert_json(json_object_get(r, "objectives"), "[\"time\"]");
        assert_true(json_is_object(json_object_get(r, "times")));
        assert_true(json_is_object(json_object_get(r, "configuration")));
    }
    assert_json(json_object_get(json_array_get(results, 0), "measurements"),
                "[{\"name\": \"time\", \"value\": 2.25, \"unit\": \"ms\"}]");
    cli_import im;
    assert_int_equal(cli_import_parse(doc, &im, &err), 0);
    assert_string_equal(im.format, "t4");
    assert_string_equal(im.kernel, "k");
    json_t *want = json_deep_copy(trials);
    json_object_set_new(json_array_get(want, 5), "compile_ms", json_real(0));
    json_object_set_new(json_array_get(want, 5), "measure_ms", json_real(0));
    assert_round_trip(want, &im);
    cli_import_release(&im);
    json_decref(want);
    json_decref(doc);

    /* As Kernel Tuner writes it: "compilation", runtimes, no "time" measurement. */
    json_t *file =
        load("{\"schema_version\": \"1.0.0\", \"results\": [{\"timestamp\": \"t\","
             " \"configuration\": {\"x\": 1}, \"objectives\": [\"time\"],"
             " \"times\": {\"compilation\": 7.0, \"benchmark\": 2.0, \"validation\": 1.0,"
             "  \"runtimes\": [1.0, 3.0]}, \"invalidity\": \"correct\", \"correctness\": 1,"
             " \"measurements\": [{\"name\": \"GFLOP/s\", \"value\": 9, \"unit\": \"\"}]}]}");
    assert_int_equal(cli_import_parse(file, &im, &err), 0);
    assert_json(im.trials, "[{\"config\": {\"x\": 1}, \"status\": \"ok\", \"time_ms\": 2.0,"
                           " \"repeats\": 2, \"compile_ms\": 7.0, \"measure_ms\": 3.0,"
                           " \"noise_cv\": 0.5}]");
    assert_string_equal(im.kernel, "");
    cli_import_release(&im);
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(file, "results"), 0), "times"), "runtimes",
        json_array());
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "results[0] is correct but has neither"));
    cli_import_release(&im);
    json_object_set_new(json_array_get(json_object_get(file, "results"), 0), "invalidity",
                        json_string("odd"));
    assert_int_equal(cli_import_parse(file, &im, &err), -1);
    assert_non_null(strstr(err.message, "results[0].invalidity 'odd'"));
    cli_import_release(&im);
    json_decref(file);
    json_decref(trials);
    json_decref(job);
}

static void test_import_chunks(void **state)
{
    (void)state;
    json_t *trials = json_array();
    for (int i = 0; i < 100; i++)
        json_array_append_new(trials, json_pack("{s:{s:i},s:s}", "config", "x", i, "status", "ok"));
    size_t one = strlen("{\"config\":{\"x\":10},\"status\":\"ok\"}") + 1;
    size_t pos = 0, total = 0, chunks = 0;
    json_t *chunk;
    while ((chunk = cli_import_chunk(trials, &pos, 10 * one)) != NULL) {
        char *text = json_dumps(chunk, JSON_COMPACT);
        assert_true(strlen(text) <= 10 * one + 2);
        free(text);
        assert_true(json_equal(json_array_get(chunk, 0), json_array_get(trials, total)));
        total += json_array_size(chunk);
        chunks++;
        json_decref(chunk);
    }
    assert_int_equal(total, 100);
    assert_true(chunks >= 10 && chunks <= 12);
    pos = 0; /* a budget smaller than one trial still moves on, one at a time */
    chunk = cli_import_chunk(trials, &pos, 1);
    assert_int_equal(json_array_size(chunk), 1);
    assert_int_equal(pos, 1);
    json_decref(chunk);
    json_decref(trials);
}

static void test_exit_codes_and_errors(void **state)
{
    (void)state;
    assert_int_equal(cli_exit_for_status(200), CLI_EXIT_OK);
    assert_int_equal(cli_exit_for_status(202), CLI_EXIT_OK);
    assert_int_equal(cli_exit_for_status(400), CLI_EXIT_REJECTED);
    assert_int_equal(cli_exit_for_status(409), CLI_EXIT_REJECTED);
    assert_int_equal(cli_exit_for_status(401), CLI_EXIT_UNAUTHORIZED);
    assert_int_equal(cli_exit_for_status(404), CLI_EXIT_NOT_FOUND);
    assert_int_equal(cli_exit_for_status(503), CLI_EXIT_SERVER_ERROR);
    assert_int_equal(cli_exit_for_status(302), CLI_EXIT_UNREACHABLE);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    const char *body = "{\"error\": {\"code\": \"no_best\", \"message\": \"nothing known\", "
                       "\"hint\": \"tune it\"}}";
    cli_print_api_error(f, 404, body, strlen(body));
    cli_print_api_error(f, 502, "<html>", 6);
    body = "{\"error\": {\"code\": \"x\", \"message\": \"m\"}}";
    cli_print_api_error(f, 400, body, strlen(body));
    fclose(f);
    assert_string_equal(text, "ktune: nothing known\n  hint: tune it\n"
                              "ktune: the server answered HTTP 502 without an API error body\n"
                              "ktune: m\n");
    free(text);

    char buf[64];
    assert_int_equal(cli_url_escape("replay:a b/c&d=é", buf, sizeof buf), 31);
    assert_string_equal(buf, "replay%3Aa%20b%2Fc%26d%3D%C3%A9");
    assert_int_equal(cli_url_escape("abcdef", buf, 4), -1);

    cli_conn conn;
    setenv("KTUNE_SERVER", "https://tuner.example:9000///", 1);
    setenv("KTUNE_TOKEN", "s3cret", 1);
    setenv("KTUNE_TIMEOUT", "5", 1);
    assert_int_equal(cli_conn_init(&conn), 0);
    assert_string_equal(conn.server, "https://tuner.example:9000");
    assert_string_equal(conn.token, "s3cret");
    assert_int_equal(conn.timeout_s, 5);
    setenv("KTUNE_TIMEOUT", "0", 1);
    assert_int_equal(cli_conn_init(&conn), -1);
    setenv("KTUNE_TIMEOUT", "5", 1);
    setenv("KTUNE_SERVER", "tuner:9000", 1);
    assert_int_equal(cli_conn_init(&conn), -1);
    unsetenv("KTUNE_SERVER");
    unsetenv("KTUNE_TOKEN");
    unsetenv("KTUNE_TIMEOUT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem_arguments),
        cmocka_unit_test(test_tune_arguments),
        cmocka_unit_test(test_progress_line),
        cmocka_unit_test(test_render_best),
        cmocka_unit_test(test_render_best_sources),
        cmocka_unit_test(test_kerneltuner_round_trip),
        cmocka_unit_test(test_kerneltuner_import_plain_cache),
        cmocka_unit_test(test_kerneltuner_import_external),
        cmocka_unit_test(test_t4_round_trip),
        cmocka_unit_test(test_import_chunks),
        cmocka_unit_test(test_exit_codes_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
