#include "api/best_nearest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/problem_distance.h"

double best_problem_distance(const json_t *a, const json_t *b)
{
    return kt_problem_distance(a, b);
}

int best_nearest_pick(const json_t *entries, const json_t *problem, const space *sp,
                      double *distance)
{
    int best = -1;
    double best_d = 0;
    size_t i;
    json_t *e;
    json_array_foreach((json_t *)entries, i, e)
    {
        double d = best_problem_distance(problem, json_object_get(e, "problem"));
        if (d <= 0 || (best >= 0 && d >= best_d))
            continue;
        config_id id;
        kt_error err;
        kt_error_clear(&err);
        if (space_config_from_json(sp, json_object_get(e, "config"), &id, &err) < 0)
            continue; /* not valid for this problem: never offered */
        best = (int)i;
        best_d = d;
    }
    if (best >= 0)
        *distance = best_d;
    return best;
}
