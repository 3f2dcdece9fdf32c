/* Unit tests of core/: the error table, the rng, trial status names and the cost rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/trial.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(error_table_maps_codes_to_statuses),
        cmocka_unit_test(error_set_formats_and_prefixes),
        cmocka_unit_test(rng_is_deterministic_and_in_range),
        cmocka_unit_test(trial_status_names_round_trip),
        cmocka_unit_test(trial_cost_is_compile_plus_measure_seconds),
        cmocka_unit_test(fnv1a_matches_known_vectors),
        cmocka_unit_test(config_accel_devices),
        cmocka_unit_test(config_model_retrain_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
