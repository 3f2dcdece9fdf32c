/* Unit tests of core/: the error table, the rng, trial status names and the cost rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/early_stop.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/trial.h"

/* The runner's timing loop (runner/cpu_measure.c) over the repeat times given (ms, in order):
 * how many it timed and why it stopped. */
static int repeats_timed(const kt_timing_limits *l, const double *times, int n_times, int *why)
{
    double elapsed_s = 0, fastest = INFINITY;
    for (int n = 1; n <= n_times; n++) {
        elapsed_s += times[n - 1] * 1e-3;
        fastest = times[n - 1] < fastest ? times[n - 1] : fastest;
        *why = kt_timing_next(l, n, elapsed_s, fastest);
        if (*why != KT_TIMING_GO_ON)
            return n;
    }
    fail_msg("the loop did not stop within %d repeats", n_times);
    return -1;
}

static void early_stop_cuts_only_clearly_slower_configurations(void **state)
{
    (void)state;
    double times[200];
    int why = -1;
    /* the job's best: 10 ms, cv 1% -> the margin is the floor, 10% */
    double above = kt_early_stop_above_ms(10.0, 0.01);
    assert_true(fabs(above - 10.0 * (1 + KT_EARLY_STOP_FLOOR)) < 1e-12);
    kt_timing_limits l = {.min_repeats = 5,
                          .max_repeats = 100,
                          .min_seconds = 0.2,
                          .max_seconds = 3.0,
                          .early_after = 3,
                          .early_above_ms = above};
    /* twice as slow: stopped after the 3 repeats the decision needs, not 5 or 0.2 s (10 runs) */
    for (int i = 0; i < 200; i++)
        times[i] = 20.0 + (i % 3);
    assert_int_equal(repeats_timed(&l, times, 200, &why), 3);
    assert_int_equal(why, KT_TIMING_EARLY_STOP);
    /* close to the best (5% slower, within the margin): the full count, 0.2 s of 10.5 ms runs */
    for (int i = 0; i < 200; i++)
        times[i] = 10.5;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 20);
    assert_int_equal(why, KT_TIMING_DONE);
    /* noise only slows a run: two slow first repeats (an interrupt) are outvoted by a fast third,
     * which keeps the fastest below the threshold for good */
    times[0] = times[1] = 30.0;
    times[2] = 10.2;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 16); /* 70.2 ms + 13 x 10.5 ms */
    assert_int_equal(why, KT_TIMING_DONE);
    /* 20% slower: stopped at the 3rd repeat; one repeat within the margin keeps it going */
    for (int i = 0; i < 200; i++)
        times[i] = 12.0;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 3);
    assert_int_equal(why, KT_TIMING_EARLY_STOP);
    times[1] = 10.9;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 17);
    assert_int_equal(why, KT_TIMING_DONE);
    /* the best's spread sets the margin: the same 12 ms runs against a best with cv 10% (margin
     * 30%, 13 ms) are within noise and run the full count */
    l.early_above_ms = kt_early_stop_above_ms(10.0, 0.10);
    assert_true(fabs(l.early_above_ms - 13.0) < 1e-9);
    for (int i = 0; i < 200; i++)
        times[i] = 12.0;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 17);
    assert_int_equal(why, KT_TIMING_DONE);
    /* the spread is the median's distance from the fastest repeat: a best whose one slow outlier
     * made its cv 2 keeps a 5% spread (margin 15%); the cv counts only without a fastest repeat */
    assert_true(fabs(kt_early_stop_spread(10.0, 9.5, 2.0) - 0.05) < 1e-12);
    assert_true(kt_early_stop_spread(10.0, NAN, 0.02) == 0.02);
    assert_true(kt_early_stop_spread(10.0, 11.0, 0.02) == 0.02); /* not a fastest repeat */
    assert_true(isnan(kt_early_stop_spread(10.0, NAN, NAN)));
    /* a best without a recorded spread: the wider fixed margin */
    assert_true(fabs(kt_early_stop_above_ms(10.0, NAN) -
                     10.0 * (1 + KT_EARLY_STOP_UNKNOWN_SPREAD_MARGIN)) < 1e-12);
    /* no best yet, or early stop off: the full count, however slow */
    assert_true(kt_early_stop_above_ms(NAN, 0.01) == 0 && kt_early_stop_above_ms(0, 0.01) == 0);
    l.early_above_ms = 0;
    for (int i = 0; i < 200; i++)
        times[i] = 100.0;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 5);
    assert_int_equal(why, KT_TIMING_DONE);
    l.early_above_ms = 11.0;
    l.early_after = 0;
    assert_int_equal(repeats_timed(&l, times, 200, &why), 5);
    /* the full count reached with the stop: not an early stop (nothing was cut) */
    l = (kt_timing_limits){.min_repeats = 3,
                           .max_repeats = 100,
                           .min_seconds = 0,
                           .max_seconds = 3.0,
                           .early_after = 3,
                           .early_above_ms = 11.0};
    assert_int_equal(repeats_timed(&l, times, 200, &why), 3);
    assert_int_equal(why, KT_TIMING_DONE);
}

static void error_table_maps_codes_to_statuses(void **state)
{
    (void)state;
    assert_int_equal(kt_error_http_status(KT_ERR_NOT_FOUND), 404);
    assert_int_equal(kt_error_http_status(KT_ERR_BODY_TOO_LARGE), 413);
    assert_int_equal(kt_error_http_status(KT_ERR_NOT_IMPLEMENTED), 501);
    assert_string_equal(kt_error_code_name(KT_ERR_UNKNOWN_STRATEGY), "unknown_strategy");
    assert_int_equal(kt_error_http_status((kt_code)9999), 500);
}

static void error_set_formats_and_prefixes(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    assert_int_equal(kt_error_set(&err, KT_ERR_BAD_OPTION, "option %s is %d", "x", 3), -1);
    kt_error_hint(&err, "accepted: %s", "a, b");
    kt_error_prefix(&err, "strategy %s", "random");
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_string_equal(err.message, "strategy random: option x is 3");
    assert_string_equal(err.hint, "accepted: a, b");
    assert_int_equal(kt_error_set(NULL, KT_ERR_INTERNAL, "ignored"), -1);
}

static void rng_is_deterministic_and_in_range(void **state)
{
    (void)state;
    kt_rng a, b;
    kt_rng_seed(&a, 42);
    kt_rng_seed(&b, 42);
    int counts[7] = {0};
    for (int i = 0; i < 70000; i++) {
        uint64_t x = kt_rng_below(&a, 7);
        assert_true(x < 7);
        assert_int_equal(x, kt_rng_below(&b, 7));
        counts[x]++;
    }
    for (int i = 0; i < 7; i++)
        assert_in_range(counts[i], 9000, 11000);
    kt_rng_seed(&b, 43);
    assert_true(kt_rng_next(&a) != kt_rng_next(&b));
    double u = kt_rng_uniform(&a);
    assert_true(u >= 0.0 && u < 1.0);
}

static void trial_status_names_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < TRIAL__STATUS_COUNT; i++) {
        trial_status s;
        assert_int_equal(trial_status_parse(trial_status_name((trial_status)i), &s), 0);
        assert_int_equal(s, i);
    }
    trial_status s;
    assert_int_equal(trial_status_parse("bogus", &s), -1);
    assert_false(trial_status_is_final(TRIAL_PENDING));
    assert_true(trial_status_is_final(TRIAL_COMPILE_ERROR));
}

static void trial_cost_is_compile_plus_measure_seconds(void **state)
{
    (void)state;
    trial_result r;
    trial_result_init(&r);
    r.compile_ms = 1500;
    r.measure_ms = 250;
    assert_true(trial_cost_seconds(&r) == 1.75);
    r.compile_ms = NAN; /* unknown (a NULL column) counts 0 */
    assert_true(trial_cost_seconds(&r) == 0.25);
    r.measure_ms = INFINITY;
    assert_true(trial_cost_seconds(&r) == 0.0);
    assert_true(trial_cost_seconds_of(100, 100) == 0.2);
}

static void fnv1a_matches_known_vectors(void **state)
{
    (void)state;
    /* Published FNV-1a 64 test vectors. */
    assert_true(kt_fnv1a(KT_FNV1A_OFFSET, "", 0) == 0xcbf29ce484222325ULL);
    assert_true(kt_fnv1a(KT_FNV1A_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(kt_fnv1a(KT_FNV1A_OFFSET, "foobar", 6) == 0x85944171f73967e8ULL);
    /* Fields: "ab"+"c" and "a"+"bc" differ, although the bytes are the same. */
    uint64_t x = kt_fnv1a_field(kt_fnv1a_field(KT_FNV1A_OFFSET, "ab", 2), "c", 1);
    uint64_t y = kt_fnv1a_field(kt_fnv1a_field(KT_FNV1A_OFFSET, "a", 1), "bc", 2);
    assert_true(x != y);
}

/* --model-retrain-after: default 200, 0 turns it off, the environment twin, negatives refused. */
static void config_model_retrain_after(void **state)
{
    (void)state;
    kt_config cfg;
    kt_error err;
    char arg0[] = "ktuned", flag[] = "--model-retrain-after", zero[] = "0", neg[] = "-1";
    char *plain[] = {arg0, NULL}, *off[] = {arg0, flag, zero, NULL},
         *bad[] = {arg0, flag, neg, NULL};
    unsetenv("KTUNE_MODEL_RETRAIN_AFTER");
    assert_int_equal(config_parse(&cfg, 1, plain, NULL, &err), 0);
    assert_int_equal(cfg.model_retrain_after, 200);
    assert_int_equal(config_parse(&cfg, 3, off, NULL, &err), 0);
    assert_int_equal(cfg.model_retrain_after, 0);
    setenv("KTUNE_MODEL_RETRAIN_AFTER", "50", 1);
    assert_int_equal(config_parse(&cfg, 1, plain, NULL, &err), 0);
    assert_int_equal(cfg.model_retrain_after, 50);
    unsetenv("KTUNE_MODEL_RETRAIN_AFTER");
    assert_int_equal(config_parse(&cfg, 3, bad, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "--model-retrain-after"));
}

/* --http-threads: the cores this process may run on, at least 1, at most 4, unless the variable or
 * the flag says (the flag wins); --http-heavy-threads: 2, from 1 to 64 (issue 32). */
static void config_http_threads(void **state)
{
    (void)state;
    kt_config cfg;
    kt_error err;
    cpu_set_t mine, one;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    long cpus = CPU_COUNT(&mine);
    int want = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
    char arg0[] = "ktuned", flag[] = "--http-threads", three[] = "3",
         heavy[] = "--http-heavy-threads", zero[] = "0", max[] = "64", over[] = "65";
    char *plain[] = {arg0, NULL}, *given[] = {arg0, flag, three, NULL},
         *none[] = {arg0, heavy, zero, NULL}, *most[] = {arg0, heavy, max, NULL},
         *too_many[] = {arg0, heavy, over, NULL};
    unsetenv("KTUNE_HTTP_THREADS");
    unsetenv("KTUNE_HTTP_HEAVY_THREADS");
    assert_int_equal(config_parse(&cfg, 1, plain, NULL, &err), 0);
    assert_int_equal(cfg.http_threads, want);
    assert_int_equal(config_default_http_threads(), want);
    /* confined to one core (taskset, a cpuset): one light thread, whatever is online */
    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &mine)) {
            CPU_SET(i, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(config_default_http_threads(), 1);
    assert_int_equal(sched_setaffinity(0, sizeof mine, &mine), 0);
    assert_int_equal(cfg.http_heavy_threads, 2);
    assert_int_equal(config_parse(&cfg, 3, given, NULL, &err), 0);
    assert_int_equal(cfg.http_threads, 3);
    setenv("KTUNE_HTTP_THREADS", "7", 1);
    setenv("KTUNE_HTTP_HEAVY_THREADS", "5", 1);
    assert_int_equal(config_parse(&cfg, 1, plain, NULL, &err), 0);
    assert_int_equal(cfg.http_threads, 7);
    assert_int_equal(cfg.http_heavy_threads, 5);
    assert_int_equal(config_parse(&cfg, 3, given, NULL, &err), 0);
    assert_int_equal(cfg.http_threads, 3);
    unsetenv("KTUNE_HTTP_THREADS");
    unsetenv("KTUNE_HTTP_HEAVY_THREADS");
    assert_int_equal(config_parse(&cfg, 3, most, NULL, &err), 0);
    assert_int_equal(cfg.http_heavy_threads, 64);
    assert_int_equal(config_parse(&cfg, 3, none, NULL, &err), -1);
    assert_string_equal(err.message, "--http-heavy-threads must be between 1 and 64, not 0");
    assert_int_equal(config_parse(&cfg, 3, too_many, NULL, &err), -1);
    assert_string_equal(err.message, "--http-heavy-threads must be between 1 and 64, not 65");
}

/* --accel-devices: <exe_dir>/../accel/devices.json when it exists (a built or installed ktuned
 * beside the repository's accel/), else none; the flag wins. */
static void config_accel_devices(void **state)
{
    (void)state;
    kt_config cfg;
    kt_error err;
    char arg0[] = "ktuned", flag[] = "--accel-devices", file[] = "/tmp/devices.json", none[] = "";
    char *plain[] = {arg0, NULL}, *given[] = {arg0, flag, file, NULL},
         *off[] = {arg0, flag, none, NULL};
    unsetenv("KTUNE_ACCEL_DEVICES");
    assert_int_equal(config_parse(&cfg, 1, plain, KT_SOURCE_DIR "/service", &err), 0);
    assert_string_equal(cfg.accel_devices, KT_SOURCE_DIR "/service/../accel/devices.json");
    assert_int_equal(config_parse(&cfg, 1, plain, "/nonexistent/bin", &err), 0);
    assert_string_equal(cfg.accel_devices, "");
    assert_int_equal(config_parse(&cfg, 3, given, KT_SOURCE_DIR "/service", &err), 0);
    assert_string_equal(cfg.accel_devices, "/tmp/devices.json");
    assert_int_equal(config_parse(&cfg, 3, off, KT_SOURCE_DIR "/service", &err), 0);
    assert_string_equal(cfg.accel_devices, "");
}

/* ktuned's options through core/options: the messages start-up prints, a switch with an optional
 * value, --help that still reads what follows it, and the environment twins named by KTUNE_<FLAG>.
 */
static void config_options_and_messages(void **state)
{
    (void)state;
    kt_config cfg;
    kt_error err;
    struct {
        const char *args[4];
        const char *message, *hint;
    } bad[] = {
        {{"--workers"}, "option --workers needs a value", ""},
        {{"--bogus"}, "unknown option '--bogus'", "run ktuned --help for the list of options"},
        {{"--version=1"},
         "unknown option '--version=1'",
         "run ktuned --help for the list of options"},
        {{"--workers=0"}, "--workers must be between 1 and 256, not 0", ""},
        {{"--workers", "2.5"}, "--workers must be an integer, not '2.5'", ""},
        {{"--max-seconds", "inf"}, "--max-seconds must be a number, not 'inf'", ""},
        {{"--allow-insecure-listen=maybe"},
         "--allow-insecure-listen must be 1 or 0 (true or false), not 'maybe'",
         ""},
        {{"--allow-insecure-listen", "yes"},
         "unknown option 'yes'",
         "run ktuned --help for the list of options"},
        {{"--help", "--workers", "0"}, "--workers must be between 1 and 256, not 0", ""},
        {{"--log-level=loud", "--help"},
         "--log-level must be debug, info, warn or error, not 'loud'",
         ""},
        {{"--role", "x"},
         "--role must be api, worker or all, not 'x'",
         "api serves the HTTP API only; worker measures; all does both"},
    };
    unsetenv("KTUNE_WORKERS");
    unsetenv("KTUNE_ALLOW_INSECURE_LISTEN");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[5] = {"ktuned"};
        int argc = 1;
        while (argc < 5 && bad[i].args[argc - 1])
            argv[argc] = (char *)bad[i].args[argc - 1], argc++;
        kt_error_clear(&err);
        assert_int_equal(config_parse(&cfg, argc, argv, NULL, &err), -1);
        assert_int_equal(err.code, KT_ERR_CONFIG);
        assert_string_equal(err.message, bad[i].message);
        assert_string_equal(err.hint, bad[i].hint);
    }
    char long_listen[300];
    memset(long_listen, 'a', sizeof long_listen - 1);
    long_listen[sizeof long_listen - 1] = '\0';
    char *too_long[] = {"ktuned", "--listen", long_listen, NULL};
    assert_int_equal(config_parse(&cfg, 3, too_long, NULL, &err), -1);
    assert_string_equal(err.message, "--listen is too long (at most 255 characters)");

    char *ok[] = {"ktuned", "--allow-insecure-listen", "--workers", "3", "-h", "--version", NULL};
    assert_int_equal(config_parse(&cfg, 6, ok, NULL, &err), 0);
    assert_int_equal(cfg.allow_insecure_listen, 1);
    assert_int_equal(cfg.workers, 3);
    assert_int_equal(cfg.help, 1);
    assert_int_equal(cfg.version, 1);
    assert_string_equal(cfg.listen, "127.0.0.1:8080");
    char *off[] = {"ktuned", "--allow-insecure-listen=0", "--listen=", NULL};
    assert_int_equal(config_parse(&cfg, 3, off, NULL, &err), 0);
    assert_int_equal(cfg.allow_insecure_listen, 0);
    assert_int_equal(cfg.help, 0);
    assert_string_equal(cfg.listen, "");

    /* the environment, named by its variable; the flag wins */
    setenv("KTUNE_WORKERS", "abc", 1);
    assert_int_equal(config_parse(&cfg, 1, ok, NULL, &err), -1);
    assert_string_equal(err.message, "KTUNE_WORKERS must be a number, not 'abc'");
    setenv("KTUNE_WORKERS", "7", 1);
    setenv("KTUNE_ALLOW_INSECURE_LISTEN", "true", 1);
    assert_int_equal(config_parse(&cfg, 1, ok, NULL, &err), 0);
    assert_int_equal(cfg.workers, 7);
    assert_int_equal(cfg.allow_insecure_listen, 1);
    assert_int_equal(config_parse(&cfg, 4, ok, NULL, &err), 0);
    assert_int_equal(cfg.workers, 3);
    unsetenv("KTUNE_WORKERS");
    unsetenv("KTUNE_ALLOW_INSECURE_LISTEN");

    /* the help: every flag beside its variable */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    config_usage(out);
    fclose(out);
    assert_non_null(strstr(text, "\n  --max-jobs           KTUNE_MAX_JOBS           jobs this "));
    assert_non_null(
        strstr(text, "\n  --max-queued-jobs-per-token KTUNE_MAX_QUEUED_JOBS_PER_TOKEN "));
    assert_non_null(strstr(text, "\n  --version                                     print the "
                                 "version and exit\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(error_table_maps_codes_to_statuses),
        cmocka_unit_test(error_set_formats_and_prefixes),
        cmocka_unit_test(rng_is_deterministic_and_in_range),
        cmocka_unit_test(trial_status_names_round_trip),
        cmocka_unit_test(trial_cost_is_compile_plus_measure_seconds),
        cmocka_unit_test(early_stop_cuts_only_clearly_slower_configurations),
        cmocka_unit_test(fnv1a_matches_known_vectors),
        cmocka_unit_test(config_accel_devices),
        cmocka_unit_test(config_model_retrain_after),
        cmocka_unit_test(config_http_threads),
        cmocka_unit_test(config_options_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
