/* model_test_util — a synthetic kernel for the model room's tests: parameters A, B, C, D whose
 * valid set depends on the problem (restriction A*B <= M), E of one value, problems (M, N), and a
 * cost with a known best per problem (A tracks M, B tracks N), so that a predictor that learns does
 * better than chance. Header-only, for tests/unit/test_model_*.c. */
#ifndef KT_TEST_MODEL_TEST_UTIL_H
#define KT_TEST_MODEL_TEST_UTIL_H

#include <math.h>
#include <stdio.h>

#include "model/training_set.h"
#include "space/space.h"

static const char *const mt_params_text =
    "[{\"name\":\"A\",\"values\":[1,2,4,8,16]},{\"name\":\"B\",\"values\":[1,2,4,8]},"
    "{\"name\":\"C\",\"values\":[0,1]},{\"name\":\"D\",\"values\":[\"x\",\"y\",\"z\"]},"
    "{\"name\":\"E\",\"values\":[7]}]";
static const char *const mt_restr_text = "[\"A*B <= M\", \"C == 0 or A >= 2\"]";

static json_t *mt_params(void)
{
    return json_loads(mt_params_text, 0, NULL);
}

static json_t *mt_arg_names(void)
{
    return json_loads("[\"M\",\"N\"]", 0, NULL);
}

static json_t *mt_problem(int m, int n)
{
    return json_pack("{s:i, s:i}", "M", m, "N", n);
}

/* The space of problem (m, n): the caller frees it. */
static space *mt_space(int m, int n)
{
    json_t *params = mt_params(), *restr = json_loads(mt_restr_text, 0, NULL);
    json_t *consts = json_pack("{s:i, s:i}", "M", m, "N", n);
    kt_error err;
    space *sp = space_new(params, restr, consts, NULL, &err);
    if (!sp)
        fprintf(stderr, "mt_space: %s\n", err.message);
    json_decref(params);
    json_decref(restr);
    json_decref(consts);
    return sp;
}

/* Time of a configuration (value indices) for (m, n): best A near log2(m)/2, B near log2(n)/3,
 * C = 1 when m is large, D = "y". */
static double mt_time(const int *idx, int m, int n)
{
    double a = idx[0] - floor(log2((double)m) / 2), b = idx[1] - floor(log2((double)n) / 3);
    double c = idx[2] - (m >= 64 ? 1 : 0), d = idx[3] - 1;
    return 1.0 + a * a + 0.7 * b * b + 0.5 * c * c + 0.3 * d * d + 0.01 * (idx[0] + idx[1]);
}

/* Adds problem (m, n) with every valid configuration of its space measured. Returns its index. */
static int mt_add_problem(training_set *ts, int m, int n)
{
    json_t *pr = mt_problem(m, n);
    kt_error err;
    int p = training_set_add_problem(ts, pr, &err);
    json_decref(pr);
    space *sp = mt_space(m, n);
    int idx[5];
    for (config_id id = 0; p >= 0 && sp && id < space_count(sp); id++) {
        space_decode(sp, id, idx);
        json_t *cfg = space_config_json(sp, id);
        training_set_add_trial(ts, p, cfg, mt_time(idx, m, n));
        json_decref(cfg);
    }
    space_free(sp);
    return p;
}

#endif
