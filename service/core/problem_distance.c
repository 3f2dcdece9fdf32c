/* core/problem_distance — the log-space distance between problems. See problem_distance.h. */
#include "core/problem_distance.h"

#include <math.h>

static double log_scale(double x)
{
    return x >= 0 ? log1p(x) : -log1p(-x);
}

/* Adds the squared log difference of a and b to *sum; -1 when they are not comparable. */
static int add_value(const json_t *a, const json_t *b, double *sum)
{
    if (json_is_number(a) && json_is_number(b)) {
        double d = log_scale(json_number_value(a)) - log_scale(json_number_value(b));
        *sum += d * d;
        return 0;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return -1;
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (add_value(json_array_get(a, i), json_array_get(b, i), sum) < 0)
                return -1;
        }
        return 0;
    }
    return json_equal((json_t *)a, (json_t *)b) ? 0 : -1;
}

double kt_problem_distance(const json_t *a, const json_t *b)
{
    if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b))
        return -1;
    double sum = 0;
    const char *key;
    json_t *va;
    json_object_foreach((json_t *)a, key, va)
    {
        json_t *vb = json_object_get(b, key);
        if (!vb || add_value(va, vb, &sum) < 0)
            return -1;
    }
    return sqrt(sum);
}
