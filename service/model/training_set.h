/* model/training_set — what a predictor learns from, for one kernel on one device class: the
 * kernel's parameters (names and value lists, the same for every problem), the problem argument
 * names, and per tuned problem its arguments and measured ok configurations. Configurations are
 * value indices per parameter, not config ids: a space may differ between problems (restrictions
 * that read the problem).
 *
 * Lifecycle: training_set_new[_from_space] -> training_set_add_problem / training_set_add_trial
 * (any order, one thread) -> readers (any thread once filling stopped) -> training_set_free. The
 * set owns copies of everything given to it; pointers and borrowed JSON it returns stay valid
 * until the next add or the free. */
#ifndef KT_MODEL_TRAINING_SET_H
#define KT_MODEL_TRAINING_SET_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"
#include "space/space.h"

#define TS_MAX_PARAMS   64      /* parameters */
#define TS_MAX_VALUES   4096    /* values of one parameter */
#define TS_MAX_ARGS     16      /* problem arguments */
#define TS_MAX_PROBLEMS 100000  /* problems of one set */
#define TS_MAX_TRIALS   1000000 /* trials of one problem */

typedef struct training_set training_set;

/* params: [{"name":..., "values":[...]}] in parameter order (a space's, or a kernel spec
 * variant's); arg_names: ["M","N","K"] (problem argument names in spec order). Both copied.
 * Errors: KT_ERR_BAD_SPACE (params malformed: names must be distinct strings, values distinct
 * numbers, strings or booleans), KT_ERR_BAD_REQUEST (arg_names not 1..16 distinct strings). */
training_set *training_set_new(const json_t *params, const json_t *arg_names, kt_error *err);
/* The same parameters as sp (space_param_name / space_param_value_json). */
training_set *training_set_new_from_space(const space *sp, const json_t *arg_names, kt_error *err);
void training_set_free(training_set *ts);
/* Derived features (model/derived.h: [{"name", "expr"}] of the problem arguments, e.g. the spec's
 * buffer element counts and FLOPs; kernel_spec_derived_json builds it), evaluated for every problem
 * added from then on; NULL or [] for none (the default). Only before the first problem
 * (KT_ERR_INTERNAL after); errors as derived_new. Splits carry them. */
int training_set_set_derived(training_set *ts, const json_t *desc, kt_error *err);
const json_t *training_set_derived(const training_set *ts); /* borrowed; NULL: none */
int training_set_num_derived(const training_set *ts);
/* Adds a problem (object with every argument as a finite number, no other key); returns its
 * index, or -1 with err (KT_ERR_BAD_PROBLEM naming the argument or the derived feature that
 * cannot be evaluated; KT_ERR_OUT_OF_RANGE past
 * TS_MAX_PROBLEMS). The same problem (same canonical arguments) added twice returns the first
 * index. */
int training_set_add_problem(training_set *ts, const json_t *problem, kt_error *err);
/* Adds an ok measurement of config ({"param": value}) for problem p: 1 added, 0 skipped (a
 * parameter missing or a value not in its list, time not finite or <= 0, p out of range, the
 * problem full), -1 out of memory. A config measured twice for a problem keeps the lower time. */
int training_set_add_trial(training_set *ts, int p, const json_t *config, double time_ms);
int training_set_num_problems(const training_set *ts);
int training_set_num_params(const training_set *ts);
int training_set_num_values(const training_set *ts, int param);
int training_set_num_args(const training_set *ts);
const json_t *training_set_params(const training_set *ts);           /* borrowed */
const json_t *training_set_arg_names(const training_set *ts);        /* borrowed */
const json_t *training_set_problem(const training_set *ts, int p);   /* borrowed */
const char *training_set_problem_key(const training_set *ts, int p); /* compact, sorted keys */
/* Problem p's arguments as numbers, in arg_names order (training_set_num_args of them), followed by
 * its derived values (training_set_num_derived of them). */
const double *training_set_problem_args(const training_set *ts, int p);
/* The arguments of any problem object in arg_names order into out (num_args doubles); 0, or -1
 * with err (KT_ERR_BAD_PROBLEM) as training_set_add_problem would refuse it. */
int training_set_args_of(const training_set *ts, const json_t *problem, double *out, kt_error *err);
/* The same against an argument-name array (1..TS_MAX_ARGS names). */
int training_set_args_from(const json_t *arg_names, const json_t *problem, double *out,
                           kt_error *err);
/* Trials of problem p, fastest first: count, and row i's value indices (num_params of them) and
 * time (time_ms may be NULL). */
int training_set_num_trials(const training_set *ts, int p);
const int *training_set_trial(const training_set *ts, int p, int i, double *time_ms);
/* Time of the value-index row idx for problem p when it was measured (1, *time_ms set), else 0. */
int training_set_find_trial(const training_set *ts, int p, const int *idx, double *time_ms);
/* The value index of a JSON value in parameter p's list, -1 when absent (numbers compare
 * numerically, strings and booleans only with their own kind). */
int training_set_value_index(const training_set *ts, int p, const json_t *value);
/* {"param": value} of a value-index row, new reference (NULL: out of memory or an index out of
 * range). */
json_t *training_set_config_json(const training_set *ts, const int *idx);
/* Splits the problems: they are ordered by a seeded FNV-1a hash of their canonical key and the
 * first round(n * test_fraction) go to *test (at least 1 and at most n - 1 when n >= 2 and
 * test_fraction > 0), the others to *train (new sets with the same parameters; caller frees both).
 * Deterministic for (problems, seed) whatever the order they were added in. test_fraction in
 * [0, 1). Errors: KT_ERR_OUT_OF_RANGE, KT_ERR_NO_MEMORY. */
int training_set_split(const training_set *ts, double test_fraction, uint64_t seed,
                       training_set **train, training_set **test, kt_error *err);
/* A new set of the same parameters holding a copy of problem p of src and its trials (p is
 * appended to dst, which must have the same parameters and arguments: made by training_set_split
 * or from the same params). Returns dst's index, -1 with err. */
int training_set_copy_problem(training_set *dst, const training_set *src, int p, kt_error *err);

#endif
