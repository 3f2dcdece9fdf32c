/* Unit tests of api/tune_request: every field of POST /v1/tune is validated with a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>

#include "api/tune_request.h"

static kt_config limits(void)
{
    kt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_evaluations = 1000;
    cfg.max_seconds = 3600;
    return cfg;
}

/* Parses text; returns the error code (KT_OK on success) and leaves the message in err. */
static kt_code parse(const char *text, tune_request *t, kt_error *err)
{
    kt_config cfg = limits();
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    assert_non_null(body);
    kt_error_clear(err);
    int rc = tune_request_parse(&cfg, body, t, err);
    json_decref(body); /* the request borrows from body: only codes and numbers are checked after */
    return rc == 0 ? KT_OK : err->code;
}

static void accepts_a_full_request(void **state)
{
    (void)state;
    kt_config cfg = limits();
    json_t *body = json_loads("{\"kernel\":\"gemm\",\"device\":\"cpu\",\"problem\":{\"n\":64},"
                              "\"strategy\":\"exhaustive\",\"strategy_options\":{},"
                              "\"budget\":{\"evaluations\":10,\"seconds\":2.5},\"seed\":9}",
                              0, NULL);
    tune_request t;
    kt_error err;
    assert_int_equal(tune_request_parse(&cfg, body, &t, &err), 0);
    assert_string_equal(t.kernel, "gemm");
    assert_string_equal(t.strategy, "exhaustive");
    assert_int_equal(t.evaluations, 10);
    assert_true(t.seconds == 2.5);
    assert_int_equal(t.seed, 9);
    assert_non_null(t.problem);
    json_decref(body);
}

static void fills_defaults(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\"}", &t, &err), KT_OK);
    assert_int_equal(t.evaluations, TUNE_DEFAULT_EVALUATIONS);
    assert_true(t.seconds == 0);
    assert_null(t.problem);
    assert_null(t.options);
}

/* Issue 31: the seed as decimal text (what the job view answers), exact above 2^53. */
static void seed_as_text(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(
        parse("{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"9007199254740993\"}", &t, &err),
        KT_OK);
    assert_true(t.seed == 9007199254740993ULL);
    assert_int_equal(
        parse("{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"9223372036854775807\"}", &t, &err),
        KT_OK);
    assert_true(t.seed == (uint64_t)INT64_MAX);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"0\"}", &t, &err), KT_OK);
    assert_true(t.seed == 0);
}

static void fresh_seeds_differ(void **state)
{
    (void)state;
    tune_request a, b;
    kt_error err;
    parse("{\"kernel\":\"k\",\"device\":\"d\"}", &a, &err);
    parse("{\"kernel\":\"k\",\"device\":\"d\"}", &b, &err);
    assert_true(a.seed != b.seed);
    assert_true(a.seed <= INT64_MAX);
}

static void refuses_each_bad_field(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        kt_code code;
        const char *mention;
    } cases[] = {
        {"{\"kernel\":\"k\",\"device\":\"d\",\"colour\":1}", KT_ERR_UNKNOWN_FIELD, "colour"},
        {"{\"device\":\"d\"}", KT_ERR_MISSING_FIELD, "kernel"},
        {"{\"kernel\":\"k\"}", KT_ERR_MISSING_FIELD, "device"},
        {"{\"kernel\":1,\"device\":\"d\"}", KT_ERR_WRONG_TYPE, "kernel"},
        {"{\"kernel\":\"\",\"device\":\"d\"}", KT_ERR_OUT_OF_RANGE, "kernel"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"strategy\":\"magic\"}", KT_ERR_UNKNOWN_STRATEGY,
         "magic"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"problem\":3}", KT_ERR_WRONG_TYPE, "problem"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"strategy_options\":[]}", KT_ERR_WRONG_TYPE,
         "strategy_options"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":5}", KT_ERR_WRONG_TYPE, "budget"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{}}", KT_ERR_MISSING_FIELD, "evaluations"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"evaluations\":1001}}",
         KT_ERR_BUDGET_TOO_LARGE, "1000"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"evaluations\":0}}", KT_ERR_OUT_OF_RANGE,
         "evaluations"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"evaluations\":1.5}}", KT_ERR_WRONG_TYPE,
         "evaluations"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"seconds\":0}}", KT_ERR_OUT_OF_RANGE,
         "seconds"},
        /* #11: a budget of 1e-300 s was accepted and queued a job that could never measure */
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"seconds\":1e-300}}", KT_ERR_OUT_OF_RANGE,
         "seconds"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"seconds\":0.0009}}", KT_ERR_OUT_OF_RANGE,
         "0.001"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"seconds\":3601}}",
         KT_ERR_BUDGET_TOO_LARGE, "3600"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"budget\":{\"hours\":1}}", KT_ERR_UNKNOWN_FIELD,
         "hours"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":-1}", KT_ERR_WRONG_TYPE, "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"1x\"}", KT_ERR_WRONG_TYPE, "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"\"}", KT_ERR_WRONG_TYPE, "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"-1\"}", KT_ERR_WRONG_TYPE, "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"9223372036854775808\"}", KT_ERR_WRONG_TYPE,
         "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":\"99999999999999999999\"}", KT_ERR_WRONG_TYPE,
         "seed"},
        {"{\"kernel\":\"k\",\"device\":\"d\",\"seed\":1.5}", KT_ERR_WRONG_TYPE, "seed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tune_request t;
        kt_error err;
        kt_code code = parse(cases[i].body, &t, &err);
        if (code != cases[i].code ||
            !(strstr(err.message, cases[i].mention) || strstr(err.hint, cases[i].mention)))
            fail_msg("case %zu (%s): got %s '%s' (hint '%s')", i, cases[i].body,
                     kt_error_code_name(code), err.message, err.hint);
    }
}

static void history_is_auto_or_none(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    kt_config cfg = limits();
    json_t *body = json_loads("{\"kernel\":\"k\",\"device\":\"d\"}", 0, NULL);
    assert_int_equal(tune_request_parse(&cfg, body, &t, &err), 0);
    assert_string_equal(t.history, "auto"); /* the default */
    json_object_set_new(body, "history", json_string("none"));
    assert_int_equal(tune_request_parse(&cfg, body, &t, &err), 0);
    assert_string_equal(t.history, "none");
    json_object_set_new(body, "history", json_null());
    assert_int_equal(tune_request_parse(&cfg, body, &t, &err), 0);
    assert_string_equal(t.history, "auto");
    json_decref(body);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"history\":\"always\"}", &t, &err),
                     KT_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(err.message, "'history' must be \"auto\" or \"none\""));
    assert_non_null(strstr(err.hint, "cold"));
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"history\":true}", &t, &err),
                     KT_ERR_WRONG_TYPE);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"history\":\"\"}", &t, &err),
                     KT_ERR_OUT_OF_RANGE);
}

static void unknown_strategy_hint_lists_the_valid_ones(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"strategy\":\"x\"}", &t, &err),
                     KT_ERR_UNKNOWN_STRATEGY);
    assert_non_null(strstr(err.hint, "random"));
    assert_non_null(strstr(err.hint, "exhaustive"));
}

/* The final pick's options: absent or null is -1 (api_tune_queue fills the per-device default),
 * 0..8 and 1..16 accepted, anything else a 400 naming the field with a hint. */
static void final_pick_options(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\"}", &t, &err), KT_OK);
    assert_int_equal(t.final_remeasure, -1);
    assert_int_equal(t.final_rounds, -1);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"final_remeasure\":null,"
                           "\"final_rounds\":null}",
                           &t, &err),
                     KT_OK);
    assert_int_equal(t.final_remeasure, -1);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"final_remeasure\":0,"
                           "\"final_rounds\":16}",
                           &t, &err),
                     KT_OK);
    assert_int_equal(t.final_remeasure, 0);
    assert_int_equal(t.final_rounds, 16);
    assert_int_equal(parse("{\"kernel\":\"k\",\"device\":\"d\",\"final_remeasure\":8,"
                           "\"final_rounds\":1}",
                           &t, &err),
                     KT_OK);
    assert_int_equal(t.final_remeasure, 8);
    assert_int_equal(t.final_rounds, 1);
    static const struct {
        const char *field;
        const char *value;
        kt_code code;
    } bad[] = {
        {"final_remeasure", "9", KT_ERR_OUT_OF_RANGE},
        {"final_remeasure", "-1", KT_ERR_OUT_OF_RANGE},
        {"final_remeasure", "\"3\"", KT_ERR_WRONG_TYPE},
        {"final_remeasure", "1.5", KT_ERR_WRONG_TYPE},
        {"final_rounds", "0", KT_ERR_OUT_OF_RANGE},
        {"final_rounds", "17", KT_ERR_OUT_OF_RANGE},
        {"final_rounds", "true", KT_ERR_WRONG_TYPE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[160];
        snprintf(body, sizeof body, "{\"kernel\":\"k\",\"device\":\"d\",\"%s\":%s}", bad[i].field,
                 bad[i].value);
        assert_int_equal(parse(body, &t, &err), bad[i].code);
        assert_non_null(strstr(err.message, bad[i].field));
        if (bad[i].code == KT_ERR_OUT_OF_RANGE)
            assert_true(err.hint[0] != '\0');
    }
    /* The budgeted request of tune_on_miss leaves the defaults to the device too, and carries the
     * key's parsed device. */
    target_key key = {.kernel = "k", .device = "replay:d", .dev = {.kind = KT_DEVICE_REPLAY}};
    tune_request_budgeted(&key, NULL, 5, &t);
    assert_int_equal(t.final_remeasure, -1);
    assert_int_equal(t.final_rounds, -1);
    assert_string_equal(t.device, "replay:d");
    assert_int_equal(t.device_kind, KT_DEVICE_REPLAY);
}

/* Replay and accel devices answer a configuration the same every time: no final re-measure. */
/* Issue 27: kernel_version, device_class and space are fields of the external device only (the
 * space itself is checked by the catalog: catalog_external_resolve). */
static void external_fields(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(parse("{\"kernel\": \"v\", \"device\": \"external\", \"device_class\": \"c\","
                           " \"kernel_version\": \"v1\", \"space\": {\"parameters\": []}}",
                           &t, &err),
                     KT_OK);
    assert_int_equal(
        parse("{\"kernel\": \"gemm\", \"device\": \"cpu\", \"device_class\": \"c\"}", &t, &err),
        KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "'device_class' is only for device external"));
    assert_int_equal(parse("{\"kernel\": \"gemm\", \"device\": \"cpu\", \"space\": {}}", &t, &err),
                     KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "'space'"));
    assert_int_equal(
        parse("{\"kernel\": \"v\", \"device\": \"external\", \"kernel_version\": 5}", &t, &err),
        KT_ERR_WRONG_TYPE);
}

/* Issue 27: "objective" names a metric and a goal (its name is checked against the kernel by
 * api_tune_queue); absent, the time. */
static void objective_field(void **state)
{
    (void)state;
    tune_request t;
    kt_error err;
    assert_int_equal(parse("{\"kernel\": \"k\", \"device\": \"d\"}", &t, &err), KT_OK);
    assert_true(kt_objective_is_time(&t.objective));
    assert_int_equal(parse("{\"kernel\": \"k\", \"device\": \"d\", \"objective\": "
                           "{\"metric\": \"gflops\", \"goal\": \"max\"}}",
                           &t, &err),
                     KT_OK);
    assert_string_equal(t.objective.metric, "gflops");
    assert_true(t.objective.maximise);
    assert_int_equal(parse("{\"kernel\": \"k\", \"device\": \"d\", \"objective\": "
                           "{\"metric\": \"gflops\", \"goal\": \"up\"}}",
                           &t, &err),
                     KT_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(err.message, "objective.goal"));
    assert_int_equal(parse("{\"kernel\": \"k\", \"device\": \"d\", \"objective\": []}", &t, &err),
                     KT_ERR_WRONG_TYPE);
    /* a budgeted request (tune_on_miss) minimises the time */
    target_key key = {.kernel = "k", .device = "cpu", .dev = {.kind = KT_DEVICE_CPU}};
    tune_request_budgeted(&key, NULL, 10, &t);
    assert_true(kt_objective_is_time(&t.objective));
}

/* The request's device is parsed once, by tune_request_parse; -1 when it is no device name. */
static int parsed_kind(const char *device)
{
    char body[160];
    tune_request t;
    kt_error err;
    snprintf(body, sizeof body, "{\"kernel\": \"k\", \"device\": \"%s\"}", device);
    assert_int_equal(parse(body, &t, &err), KT_OK);
    return t.device_kind;
}

static void deterministic_devices(void **state)
{
    (void)state;
    assert_int_equal(tune_device_deterministic(parsed_kind("replay:pnpoly_kt-RTX_3090")), 1);
    assert_int_equal(tune_device_deterministic(parsed_kind("accel:mindmap")), 1);
    assert_int_equal(tune_device_deterministic(parsed_kind("cpu")), 0);
    assert_int_equal(tune_device_deterministic(parsed_kind("cuda:0")), 0);
    assert_int_equal(tune_device_deterministic(parsed_kind("external")), 0);
    assert_int_equal(parsed_kind("accel"), -1);
    assert_int_equal(tune_device_deterministic(-1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_a_full_request),
        cmocka_unit_test(fills_defaults),
        cmocka_unit_test(fresh_seeds_differ),
        cmocka_unit_test(seed_as_text),
        cmocka_unit_test(refuses_each_bad_field),
        cmocka_unit_test(unknown_strategy_hint_lists_the_valid_ones),
        cmocka_unit_test(history_is_auto_or_none),
        cmocka_unit_test(final_pick_options),
        cmocka_unit_test(deterministic_devices),
        cmocka_unit_test(external_fields),
        cmocka_unit_test(objective_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
