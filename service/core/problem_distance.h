/* core/problem_distance — how far apart two problems are: the one rule behind GET /v1/best's
 * nearest fallback (api/best_nearest.h) and a prediction's distance to the nearest problem its
 * model was trained on (training/model_confidence.h). Kernel Launcher's rule: the Euclidean
 * distance of sign(x) * log(1 + |x|) over every numeric argument. Pure: every argument borrowed. */
#ifndef KT_CORE_PROBLEM_DISTANCE_H
#define KT_CORE_PROBLEM_DISTANCE_H

#include <jansson.h>

/* Distance between two problems (objects of arguments): lists of numbers element by element.
 * Returns -1 when they are not comparable: an argument missing from one, a string or boolean that
 * differs, lists of different lengths. 0 for equal problems. */
double kt_problem_distance(const json_t *a, const json_t *b);

#endif
