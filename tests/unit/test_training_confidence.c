/* Unit tests of training/model_confidence (issue 31): a predictor's confidence facts from its
 * stored training and metrics, weak below the minimum (problems, held-out accuracy, unknown
 * accuracy) with every reason in words, and the nearest trained problem of a problem asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "training/model_confidence.h"

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

static json_t *confidence(const char *training, const char *metrics, int problems, double acc)
{
    json_t *t = load(training), *m = load(metrics);
    model_minimum min = {problems, acc};
    json_t *c = model_confidence_json(t, m, &min);
    assert_non_null(c);
    json_decref(t);
    json_decref(m);
    return c;
}

static const char *why(const json_t *c)
{
    return json_string_value(json_object_get(c, "why"));
}

static void weak_and_why(void **state)
{
    (void)state;
    const char *training = "{\"train_problems\": 4, \"test_problems\": 2, \"problems\": 6}";
    /* 4 problems < 8, accuracy unknown (nothing measured): weak for both reasons */
    json_t *c = confidence(
        training, "{\"top1_within_1_10\": null, \"measured\": 0, \"param_accuracy\": 0.5}", 8, 0.5);
    assert_true(json_is_true(json_object_get(c, "weak")));
    assert_int_equal(json_integer_value(json_object_get(c, "train_problems")), 4);
    assert_int_equal(json_integer_value(json_object_get(c, "test_problems")), 2);
    assert_true(json_is_null(json_object_get(c, "accuracy")));
    assert_non_null(strstr(why(c), "trained on 4 problems, fewer than the minimum 8"));
    assert_non_null(strstr(why(c), "; its held-out accuracy is unknown"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "minimum"), "problems")),
                     8);
    json_decref(c);
    /* enough problems, accuracy 0.25 < 0.5: weak for that alone */
    c = confidence(training, "{\"top1_within_1_10\": 0.25, \"measured\": 4}", 4, 0.5);
    assert_true(json_is_true(json_object_get(c, "weak")));
    assert_string_equal(why(c), "held-out accuracy 0.25 (the share of held-out problems whose "
                                "predicted configuration is within 1.10x of their best) is below "
                                "the minimum 0.50 (--model-min-accuracy)");
    assert_true(json_number_value(json_object_get(c, "accuracy")) == 0.25);
    json_decref(c);
    /* at the minimum: served, no why */
    c = confidence(training, "{\"top1_within_1_10\": 0.5, \"measured\": 2}", 4, 0.5);
    assert_true(json_is_false(json_object_get(c, "weak")));
    assert_null(json_object_get(c, "why"));
    json_decref(c);
    /* no minimum at all: an unknown accuracy is no reason */
    c = confidence(training, "{\"top1_within_1_10\": null}", 0, 0);
    assert_true(json_is_false(json_object_get(c, "weak")));
    json_decref(c);
    /* a row without the counts (written by hand, or unreadable): 0 problems, weak */
    c = confidence("{}", "{}", 1, 0);
    assert_true(json_is_true(json_object_get(c, "weak")));
    assert_int_equal(json_integer_value(json_object_get(c, "train_problems")), 0);
    json_decref(c);
}

static void nearest_trained(void **state)
{
    (void)state;
    json_t *trained = load("[{\"M\": 16, \"N\": 16}, {\"M\": 64, \"N\": 64}, {\"M\": 256, "
                           "\"N\": 256}, {\"M\": 1, \"t\": \"x\"}]");
    json_t *problem = load("{\"N\": 100, \"M\": 50}");
    json_t *n = model_confidence_nearest(trained, problem);
    assert_true(json_is_object(n));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(n, "problem"), "M")), 64);
    double want = sqrt(pow(log1p(50) - log1p(64), 2) + pow(log1p(100) - log1p(64), 2));
    assert_true(fabs(json_number_value(json_object_get(n, "distance")) - want) < 1e-12);
    json_decref(n);
    json_decref(problem);
    /* nothing comparable, or nothing listed (a model from before issue 31): null */
    problem = load("{\"K\": 3}");
    n = model_confidence_nearest(trained, problem);
    assert_true(json_is_null(n));
    json_decref(n);
    json_t *none = json_array();
    n = model_confidence_nearest(none, problem);
    assert_true(json_is_null(n));
    json_decref(n);
    json_decref(none);
    json_decref(problem);
    json_decref(trained);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(weak_and_why),
        cmocka_unit_test(nearest_trained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
