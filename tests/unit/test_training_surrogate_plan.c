/* training/trainer_surrogate_plan: a surrogate model's hyper-parameters (POST /v1/models checks
 * them with the function the trainer uses): defaults, every key read, each bound refused with the
 * key named and its range in the hint, unknown keys and wrong types refused, and the stored JSON
 * round-trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "training/trainer_surrogate.h"

/* Parses text (a JSON object, or NULL for no hyper); returns the parse's result. */
static int parse(const char *text, trainer_surrogate_plan *p, kt_error *err)
{
    json_t *h = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    if (text)
        assert_non_null(h);
    kt_error_clear(err);
    int rc = trainer_surrogate_plan_parse(h, p, err);
    json_decref(h);
    return rc;
}

static void defaults_when_absent(void **state)
{
    (void)state;
    trainer_surrogate_plan p;
    kt_error err;
    for (int i = 0; i < 3; i++) {
        const char *text = i == 0 ? NULL : i == 1 ? "{}" : "null";
        assert_int_equal(parse(text, &p, &err), 0);
        assert_int_equal(p.samples, 60000);
        assert_int_equal(p.problems, 200);
        assert_int_equal(p.train.epochs, 40);
        assert_int_equal(p.train.n_hidden, 3);
        assert_int_equal(p.train.hidden[0], 256);
        assert_int_equal(p.train.hidden[1], 256);
        assert_int_equal(p.train.hidden[2], 128);
        assert_int_equal(p.train.batch, 128);
        assert_true(p.train.lr > 0.0009 && p.train.lr < 0.0011);
        assert_true(p.max_seconds == 600);
        assert_int_equal(p.has_seed, 0);
    }
}

static void every_key_is_read(void **state)
{
    (void)state;
    trainer_surrogate_plan p;
    kt_error err;
    assert_int_equal(parse("{\"samples\": 3000, \"problems\": 30, \"epochs\": 8, \"hidden\": [64, "
                           "32], \"batch\": 64, \"lr\": 0.01, \"seed\": 7, \"max_seconds\": 45.5}",
                           &p, &err),
                     0);
    assert_int_equal(p.samples, 3000);
    assert_int_equal(p.problems, 30);
    assert_int_equal(p.train.epochs, 8);
    assert_int_equal(p.train.n_hidden, 2);
    assert_int_equal(p.train.hidden[0], 64);
    assert_int_equal(p.train.hidden[1], 32);
    assert_int_equal(p.train.batch, 64);
    assert_true(p.train.lr == 0.01);
    assert_int_equal(p.has_seed, 1);
    assert_int_equal(p.train.seed, 7);
    assert_true(p.max_seconds == 45.5);
}

/* text is refused with code, and the message names key. */
static void refused(const char *text, kt_code code, const char *key)
{
    trainer_surrogate_plan p;
    kt_error err;
    if (parse(text, &p, &err) != -1)
        fail_msg("accepted: %s", text);
    if (err.code != code)
        fail_msg("%s: code %s, not %s (%s)", text, kt_error_code_name(err.code),
                 kt_error_code_name(code), err.message);
    if (!strstr(err.message, key))
        fail_msg("%s: message '%s' does not name %s", text, err.message, key);
    assert_true(err.hint[0] != '\0');
}

static void out_of_range_values_are_refused(void **state)
{
    (void)state;
    refused("{\"samples\": 99}", KT_ERR_OUT_OF_RANGE, "samples");
    refused("{\"samples\": 2000001}", KT_ERR_OUT_OF_RANGE, "samples");
    refused("{\"problems\": 1}", KT_ERR_OUT_OF_RANGE, "problems");
    refused("{\"problems\": 100001}", KT_ERR_OUT_OF_RANGE, "problems");
    refused("{\"samples\": 100, \"problems\": 101}", KT_ERR_OUT_OF_RANGE, "problems");
    refused("{\"epochs\": 0}", KT_ERR_OUT_OF_RANGE, "epochs");
    refused("{\"epochs\": 1001}", KT_ERR_OUT_OF_RANGE, "epochs");
    refused("{\"hidden\": []}", KT_ERR_OUT_OF_RANGE, "hidden");
    refused("{\"hidden\": [1,1,1,1,1,1,1,1]}", KT_ERR_OUT_OF_RANGE, "hidden");
    refused("{\"hidden\": [64, 0]}", KT_ERR_OUT_OF_RANGE, "hidden[1]");
    refused("{\"hidden\": [1025]}", KT_ERR_OUT_OF_RANGE, "hidden[0]");
    refused("{\"hidden\": [1024, 1024, 1024, 1024, 1024, 1024]}", KT_ERR_OUT_OF_RANGE, "hidden");
    refused("{\"batch\": 0}", KT_ERR_OUT_OF_RANGE, "batch");
    refused("{\"lr\": 0}", KT_ERR_OUT_OF_RANGE, "lr");
    refused("{\"lr\": 1.5}", KT_ERR_OUT_OF_RANGE, "lr");
    refused("{\"seed\": -1}", KT_ERR_OUT_OF_RANGE, "seed");
    refused("{\"max_seconds\": 0.5}", KT_ERR_OUT_OF_RANGE, "max_seconds");
    refused("{\"max_seconds\": 86401}", KT_ERR_OUT_OF_RANGE, "max_seconds");
}

static void wrong_types_and_unknown_keys_are_refused(void **state)
{
    (void)state;
    refused("{\"samples\": 3000.5}", KT_ERR_WRONG_TYPE, "samples");
    refused("{\"samples\": \"many\"}", KT_ERR_WRONG_TYPE, "samples");
    refused("{\"epochs\": true}", KT_ERR_WRONG_TYPE, "epochs");
    refused("{\"hidden\": 64}", KT_ERR_WRONG_TYPE, "hidden");
    refused("{\"hidden\": [64, \"wide\"]}", KT_ERR_WRONG_TYPE, "hidden[1]");
    refused("{\"lr\": \"fast\"}", KT_ERR_WRONG_TYPE, "lr");
    refused("{\"top\": 8}", KT_ERR_BAD_OPTION, "top");
    refused("[1, 2]", KT_ERR_WRONG_TYPE, "hyper");
}

static void stored_json_round_trips(void **state)
{
    (void)state;
    trainer_surrogate_plan p, q;
    kt_error err;
    assert_int_equal(parse("{\"samples\": 5000, \"hidden\": [32], \"seed\": 11}", &p, &err), 0);
    json_t *j = trainer_surrogate_plan_json(&p);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "samples")), 5000);
    assert_int_equal(json_integer_value(json_object_get(j, "problems")), 200);
    assert_int_equal(json_array_size(json_object_get(j, "hidden")), 1);
    assert_int_equal(trainer_surrogate_plan_parse(j, &q, &err), 0);
    json_decref(j);
    assert_int_equal(q.samples, p.samples);
    assert_int_equal(q.problems, p.problems);
    assert_int_equal(q.train.epochs, p.train.epochs);
    assert_int_equal(q.train.n_hidden, 1);
    assert_int_equal(q.train.hidden[0], 32);
    assert_int_equal(q.has_seed, 1);
    assert_int_equal(q.train.seed, 11);
    assert_true(q.max_seconds == p.max_seconds && q.train.lr == p.train.lr);
    /* No seed: none stored (the trainer derives and stores one). */
    assert_int_equal(parse("{}", &p, &err), 0);
    j = trainer_surrogate_plan_json(&p);
    assert_null(json_object_get(j, "seed"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_when_absent),
        cmocka_unit_test(every_key_is_read),
        cmocka_unit_test(out_of_range_values_are_refused),
        cmocka_unit_test(wrong_types_and_unknown_keys_are_refused),
        cmocka_unit_test(stored_json_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
