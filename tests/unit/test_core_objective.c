/* Unit tests of core/objective (issue 27): the "objective" of a tune request parsed with field
 * paths in every error, the stored form read back, each result's objective value, and the
 * transform to the cost searchers minimise (time as it is, a metric to min as it is, a metric to
 * max as its reciprocal; no value: told as a failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "core/objective.h"

/* Parses text (NULL: no objective); the error code, KT_OK on success. */
static kt_code parse(const char *text, kt_objective *o, kt_error *err)
{
    json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    if (text)
        assert_non_null(v);
    kt_error_clear(err);
    int rc = kt_objective_parse(v, o, err);
    json_decref(v);
    return rc == 0 ? KT_OK : err->code;
}

static void parses_and_defaults(void **state)
{
    (void)state;
    kt_objective o;
    kt_error err;
    assert_int_equal(parse(NULL, &o, &err), KT_OK);
    assert_true(kt_objective_is_time(&o));
    assert_int_equal(parse("null", &o, &err), KT_OK);
    assert_true(kt_objective_is_time(&o));
    assert_int_equal(parse("{\"metric\": \"gflops\", \"goal\": \"max\"}", &o, &err), KT_OK);
    assert_string_equal(o.metric, "gflops");
    assert_true(o.maximise);
    assert_string_equal(kt_objective_goal(&o), "max");
    assert_int_equal(parse("{\"metric\": \"joules\"}", &o, &err), KT_OK); /* goal: min */
    assert_string_equal(kt_objective_name(&o), "joules");
    assert_false(o.maximise);
    assert_int_equal(parse("{\"metric\": \"time_ms\", \"goal\": \"min\"}", &o, &err), KT_OK);
    assert_true(kt_objective_is_time(&o));
    assert_string_equal(kt_objective_name(&o), "time_ms");
    json_t *j = kt_objective_json(&o);
    assert_string_equal(json_string_value(json_object_get(j, "metric")), "time_ms");
    assert_string_equal(json_string_value(json_object_get(j, "goal")), "min");
    json_decref(j);
}

static void refuses_with_field_paths(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        kt_code code;
        const char *starts;
    } cases[] = {
        {"\"gflops\"", KT_ERR_WRONG_TYPE, "field 'objective'"},
        {"{\"goal\": \"max\"}", KT_ERR_MISSING_FIELD, "objective.metric:"},
        {"{\"metric\": 3}", KT_ERR_WRONG_TYPE, "objective.metric "},
        {"{\"metric\": \"\"}", KT_ERR_OUT_OF_RANGE, "objective.metric:"},
        {"{\"metric\": \"two words\"}", KT_ERR_OUT_OF_RANGE, "objective.metric:"},
        {"{\"metric\": "
         "\"m2345678901234567890123456789012345678901234567890123456789012345\"}",
         KT_ERR_OUT_OF_RANGE, "objective.metric:"},
        {"{\"metric\": \"gflops\", \"goal\": \"maximise\"}", KT_ERR_OUT_OF_RANGE,
         "objective.goal "},
        {"{\"metric\": \"gflops\", \"goal\": 1}", KT_ERR_WRONG_TYPE, "objective.goal "},
        {"{\"metric\": \"gflops\", \"sense\": \"max\"}", KT_ERR_UNKNOWN_FIELD, "objective.sense:"},
        {"{\"metric\": \"time_ms\", \"goal\": \"max\"}", KT_ERR_OUT_OF_RANGE, "objective.goal:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_objective o;
        kt_error err;
        kt_code code = parse(cases[i].text, &o, &err);
        if (code != cases[i].code ||
            strncmp(err.message, cases[i].starts, strlen(cases[i].starts)) != 0)
            fail_msg("case %zu (%s): got %s '%s'", i, cases[i].text, kt_error_code_name(code),
                     err.message);
    }
}

static void stored_form_reads_back(void **state)
{
    (void)state;
    kt_objective o;
    kt_objective_set(&o, NULL, "min");
    assert_true(kt_objective_is_time(&o));
    kt_objective_set(&o, "", "max"); /* no metric: the time, never maximised */
    assert_true(kt_objective_is_time(&o));
    assert_false(o.maximise);
    kt_objective_set(&o, "gbps", "max");
    assert_string_equal(o.metric, "gbps");
    assert_true(o.maximise);
    kt_objective_set(&o, "gbps", "min");
    assert_false(o.maximise);
}

static trial_result ok_with(double time_ms, const char *metrics_json)
{
    trial_result r;
    trial_result_init(&r);
    r.status = TRIAL_OK;
    r.time_ms = time_ms;
    if (metrics_json)
        r.extras = json_pack("{s:o}", "metrics", json_loads(metrics_json, 0, NULL));
    return r;
}

static void values_and_costs(void **state)
{
    (void)state;
    kt_objective time, max, min;
    kt_objective_time(&time);
    kt_objective_set(&max, "gflops", "max");
    kt_objective_set(&min, "joules", "min");
    trial_result r = ok_with(2.0, "{\"gflops\": 8, \"joules\": 0.5}");
    assert_true(kt_objective_value(&time, &r) == 2.0);
    assert_true(kt_objective_value(&max, &r) == 8.0);
    assert_true(kt_objective_value(&min, &r) == 0.5);
    /* min: the value itself; max: its reciprocal, so more gflops is a lower cost */
    assert_true(kt_objective_cost(&time, 2.0) == 2.0);
    assert_true(kt_objective_cost(&min, 0.5) == 0.5);
    assert_true(kt_objective_cost(&max, 8.0) == 0.125);
    assert_true(kt_objective_cost(&max, 16.0) < kt_objective_cost(&max, 8.0));
    /* not > 0, not finite: no cost (searchers assume positive costs, as times are) */
    assert_true(isnan(kt_objective_cost(&max, 0)));
    assert_true(isnan(kt_objective_cost(&min, -1)));
    assert_true(isnan(kt_objective_cost(&max, INFINITY)));
    assert_true(isnan(kt_objective_cost(&max, 1e-320))); /* 1/x overflows */
    trial_result_release(&r);
    /* absent, not a number, not > 0, or a failed trial: no value */
    const char *bad[] = {NULL, "{\"other\": 3}", "{\"gflops\": \"8\"}", "{\"gflops\": 0}",
                         "{\"gflops\": -2.5}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = ok_with(1.0, bad[i]);
        assert_true(isnan(kt_objective_value(&max, &r)));
        trial_result_release(&r);
    }
    r = ok_with(1.0, "{\"gflops\": 3}");
    r.status = TRIAL_TIMEOUT;
    assert_true(isnan(kt_objective_value(&max, &r)));
    trial_result_release(&r);
}

static void told_to_searchers(void **state)
{
    (void)state;
    kt_objective time, max;
    kt_objective_time(&time);
    kt_objective_set(&max, "gflops", "max");
    trial_result r = ok_with(2.0, "{\"gflops\": 4}"), out;
    /* time: as it is (extras never passed on) */
    assert_int_equal(kt_objective_told(&time, &r, &out), 0);
    assert_int_equal(out.status, TRIAL_OK);
    assert_true(out.time_ms == 2.0);
    assert_null(out.extras);
    /* max: ok with the reciprocal as its "time" */
    assert_int_equal(kt_objective_told(&max, &r, &out), 0);
    assert_int_equal(out.status, TRIAL_OK);
    assert_true(out.time_ms == 0.25);
    assert_null(out.extras);
    trial_result_release(&r);
    /* ok without the metric: a failure for the objective, and said so */
    r = ok_with(0.5, "{\"gbps\": 9}");
    assert_int_equal(kt_objective_told(&max, &r, &out), 1);
    assert_int_equal(out.status, TRIAL_INVALID);
    assert_true(isnan(out.time_ms));
    trial_result_release(&r);
    /* a failure stays what it is, and is not counted as unvalued */
    r = ok_with(0.5, NULL);
    r.status = TRIAL_COMPILE_ERROR;
    assert_int_equal(kt_objective_told(&max, &r, &out), 0);
    assert_int_equal(out.status, TRIAL_COMPILE_ERROR);
    trial_result_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_and_defaults),    cmocka_unit_test(refuses_with_field_paths),
        cmocka_unit_test(stored_form_reads_back), cmocka_unit_test(values_and_costs),
        cmocka_unit_test(told_to_searchers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
