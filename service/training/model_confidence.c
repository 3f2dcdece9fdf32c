/* training/model_confidence — a model's confidence facts. See model_confidence.h. */
#include "training/model_confidence.h"

#include <stdio.h>

#include "core/problem_distance.h"

static json_t *number_or_null(const json_t *v)
{
    return json_is_number(v) ? json_real(json_number_value(v)) : json_null();
}

json_t *model_confidence_json(const json_t *training, const json_t *metrics,
                              const model_minimum *min)
{
    json_int_t n_train = json_integer_value(json_object_get(training, "train_problems"));
    json_int_t n_test = json_integer_value(json_object_get(training, "test_problems"));
    const json_t *acc = json_object_get(metrics, "top1_within_1_10");
    char why[512] = "";
    int used = 0;
    if (n_train < min->problems)
        used += snprintf(why + used, sizeof why - (size_t)used,
                         "trained on %lld problems, fewer than the minimum %d "
                         "(--model-min-problems)",
                         (long long)n_train, min->problems);
    if (min->accuracy > 0 && !json_is_number(acc))
        used += snprintf(why + used, sizeof why - (size_t)used,
                         "%sits held-out accuracy is unknown: no held-out problem measured its "
                         "predicted configuration",
                         used ? "; " : "");
    else if (min->accuracy > 0 && json_number_value(acc) < min->accuracy)
        used +=
            snprintf(why + used, sizeof why - (size_t)used,
                     "%sheld-out accuracy %.2f (the share of held-out problems whose "
                     "predicted configuration is within %.2fx of their best) is below the "
                     "minimum %.2f (--model-min-accuracy)",
                     used ? "; " : "", json_number_value(acc), MODEL_ACCURATE_RATIO, min->accuracy);
    json_t *o =
        json_pack("{s:I, s:I, s:o, s:I, s:o, s:b, s:{s:i, s:f}}", "train_problems", n_train,
                  "test_problems", n_test, "accuracy", number_or_null(acc), "measured",
                  json_integer_value(json_object_get(metrics, "measured")), "param_accuracy",
                  number_or_null(json_object_get(metrics, "param_accuracy")), "weak", used > 0,
                  "minimum", "problems", min->problems, "accuracy", min->accuracy);
    if (o && used > 0 && json_object_set_new(o, "why", json_string(why)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *model_confidence_nearest(const json_t *trained_on, const json_t *problem)
{
    const json_t *best = NULL;
    double best_d = 0;
    size_t i;
    json_t *p;
    json_array_foreach((json_t *)trained_on, i, p)
    {
        double d = kt_problem_distance(problem, p);
        if (d >= 0 && (!best || d < best_d)) {
            best = p;
            best_d = d;
        }
    }
    return best ? json_pack("{s:O, s:f}", "problem", best, "distance", best_d) : json_null();
}
