/* model/derived — problem features derived from the kernel spec: quantities the kernel tiles over
 * that are not a problem argument themselves (a buffer's element count such as conv2d's
 * "N*K*(H-R+1)*(W-S+1)", the FLOP count), given as Kernel Tuner-syntax expressions of the problem
 * arguments (space/expr) and evaluated per problem. The predictors that learn from features
 * (xgb, seq2seq) see them as extra values after the arguments (problem_tokens.h).
 *
 * A description is a JSON array of at most DERIVED_MAX objects {"name": string, "expr": string}
 * (catalog's kernel_spec_derived_json builds it from a spec: its buffers' elements, then "flops").
 *
 * Lifecycle: derived_new -> derived_eval (any thread) -> derived_free. The set owns a copy of the
 * description. */
#ifndef KT_MODEL_DERIVED_H
#define KT_MODEL_DERIVED_H

#include <jansson.h>

#include "core/error.h"

#define DERIVED_MAX      16   /* derived features of one kernel */
#define DERIVED_MAX_EXPR 4096 /* characters of one expression */

typedef struct derived derived;

/* Parses desc against the argument names (1..16 strings; an expression may read only them).
 * Errors: KT_ERR_BAD_REQUEST (desc not such an array, a name missing or empty, an expression
 * KT_ERR_BAD_EXPRESSION (an expression that does not parse, or reads another name). */
derived *derived_new(const json_t *desc, const json_t *arg_names, kt_error *err);
void derived_free(derived *d);
/* Number of derived features (0 for NULL). */
int derived_count(const derived *d);
/* The description (borrowed; NULL for NULL). */
const json_t *derived_desc(const derived *d);
/* The derived values of a problem (its arguments in arg_names order) into out (derived_count of
 * them). Integral arguments are Python ints, others floats. Returns 0, or -1 with err
 * (KT_ERR_BAD_PROBLEM naming the feature) when an expression fails for this problem (division by
 * zero, ...) or gives a string or a non-finite number. */
int derived_eval(const derived *d, const double *args, double *out, kt_error *err);

#endif
