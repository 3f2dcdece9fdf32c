/* api/best_nearest — the nearest tuned problem, for GET /v1/best?fallback=nearest: of the problems
 * tuned for the same (kernel, device class, kernel hash), the one whose arguments are closest in
 * log space (Kernel Launcher's rule) and whose best configuration is valid for the asked problem.
 * Pure functions over JSON and a space: no database, no catalog; unit-tested on their own.
 *
 * Call order: best_store_problems_json gives the tuned problems -> best_nearest_pick. Nothing is
 * allocated that outlives a call; every argument is borrowed. */
#ifndef KT_API_BEST_NEAREST_H
#define KT_API_BEST_NEAREST_H

#include <jansson.h>

#include "space/space.h"

/* Distance between two problems: core/problem_distance.h's kt_problem_distance (the one rule,
 * shared with a prediction's distance to its model's nearest trained problem). */
double best_problem_distance(const json_t *a, const json_t *b);

/* The index in entries (an array of {"problem","config",...}) of the entry nearest to problem whose
 * config is a valid configuration of sp (sp built for problem), leaving out entries of the same
 * problem (distance 0: those are measured answers, not fallbacks). Ties go to the earlier entry.
 * Returns -1 when none qualifies; *distance gets the winner's distance. */
int best_nearest_pick(const json_t *entries, const json_t *problem, const space *sp,
                      double *distance);

#endif
