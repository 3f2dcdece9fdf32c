/* model/beam — beam search over a sequence of categorical choices, one per parameter, driven by a
 * scorer that gives the log-probabilities of the next parameter's values after a prefix (the
 * seq2seq decoder, or a per-parameter classifier). Three modes: greedy (width 1), free beam, and
 * the paper's constrained beam (OPCS-BS, seed 001): a partial sequence survives only while some
 * valid configuration of the space still starts with it (space_prefix_feasible), so every
 * sequence returned is a valid configuration by construction.
 *
 * Call order: beam_search (one call, no state kept). The scorer and its ctx are borrowed for the
 * call; out and score belong to the caller. Thread-safe when the scorer is. */
#ifndef KT_MODEL_BEAM_H
#define KT_MODEL_BEAM_H

#include "space/space.h"

#define BEAM_MAX_WIDTH  65536 /* width and k */
#define BEAM_MAX_PARAMS 256
#define BEAM_MAX_VALUES 65535 /* values per parameter */

/* log-probabilities (natural log) of the n_values[len] values of parameter `len` given the
 * chosen value indices prefix[0..len). Returns 0, -1 on failure. A value whose log-probability is
 * not finite (-inf: impossible; NaN) is never chosen. */
typedef int (*beam_scorer)(void *ctx, const int *prefix, int len, double *logp);

typedef enum { BEAM_GREEDY, BEAM_FREE, BEAM_CONSTRAINED } beam_mode;

/* Beam search over n_params parameters (parameter p has n_values[p] values). BEAM_GREEDY: width 1,
 * no constraint. BEAM_FREE: width `width`, no constraint. BEAM_CONSTRAINED: width `width`, and a
 * partial sequence is kept only when space_prefix_feasible(sp, prefix, len) (sp must have exactly
 * n_params parameters with those value counts). At each step the `width` best extensions (total
 * log-probability) survive; at the last step the best max(width, k), so that k > width still gives
 * k sequences when there are that many. Ties keep the earlier beam, then the lower value index
 * (deterministic). Writes up to k complete sequences into out (k rows of n_params value indices)
 * and their total log-probabilities into score (may be NULL), best first; returns how many (0 when
 * none survives), -1 on failure (out of memory, scorer failed, a size out of its bound: n_params
 * in [1, 256], values in [1, 65535], width and k in [1, 65536], sp mismatched or missing). */
int beam_search(int n_params, const int *n_values, beam_scorer scorer, void *ctx, beam_mode mode,
                int width, const space *sp, int k, int *out, double *score);

#endif
