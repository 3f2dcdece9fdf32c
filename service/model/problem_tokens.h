/* model/problem_tokens — a problem descriptor as numbers for the learned predictors: a sequence of
 * tokens for the seq2seq encoder (seed 001: "the problem descriptor as a token sequence"), one per
 * argument in spec order, and a flat feature row for the per-parameter XGBoost classifiers.
 *
 * Token of argument a (value v, n_args arguments), token_dim = n_args + PROBLEM_TOKEN_FEATURES:
 *   [0, n_args)   one-hot of the argument's position a
 *   +0  log2(max(v, 1)) / 16                     the magnitude (8192 -> 0.81)
 *   +1 .. +6      v % 2^j == 0 for j = 1..6      divisibility (what tile sizes divide it)
 *   +7  (v - 2^e) / 2^e, e = floor(log2 v)       fractional position between powers of two
 *   +8  v is a power of two
 *   +9  (log2 v - mean of the arguments' log2) / 8   its size relative to the other arguments
 * Values below 1 count as 1 (log2 0); non-integers take divisibility features 0.
 *
 * Feature row (problem_features_dim(n_args) = 4 * n_args + 2): per argument log2 v, the
 * fractional position, the number of trailing zero bits of v (capped at 6) and the relative log2;
 * then the sum and the spread (max - min) of the arguments' log2.
 *
 * The predictors give the problem's arguments followed by its derived values (model/derived.h) as
 * args, n_args counting both: a derived value is one more token / feature group like an argument.
 *
 * Pure functions, no allocation, thread-safe. */
#ifndef KT_MODEL_PROBLEM_TOKENS_H
#define KT_MODEL_PROBLEM_TOKENS_H

#define PROBLEM_TOKEN_FEATURES 10

/* Features of one token for n_args arguments. */
int problem_tokens_dim(int n_args);
/* n_args tokens of problem_tokens_dim(n_args) doubles into out (row-major). */
void problem_tokens(const double *args, int n_args, double *out);
int problem_features_dim(int n_args);
/* problem_features_dim(n_args) floats into out. */
void problem_features(const double *args, int n_args, float *out);
/* With derived values: args holds n_args arguments then n_derived derived values; the row is
 * problem_features of the arguments alone (unchanged by the derived values), then per derived value
 * its log2, fractional position and trailing zero bits (capped at 6):
 * problem_features_derived_dim = 4 * n_args + 2 + 3 * n_derived floats. */
int problem_features_derived_dim(int n_args, int n_derived);
void problem_features_derived(const double *args, int n_args, int n_derived, float *out);

#endif
