/* neural/nn_legality — the legality check of a neural transformation (issue 14): a candidate that
 * transforms one conv layer of a network is legal when its Fisher Potential is at least threshold
 * times the original network's (the paper's rule is threshold 1: "reject the proposal if its score
 * is below that of the original"). Scores are cached per (network hash, data set, layer,
 * transformation, fisher options), so each is computed once per process; data sets are loaded on
 * first use (the first nn_fisher_opts.batch * 4 training images, at least 256).
 *
 * Thread-safe: one object per process (struct service), shared by every measurement thread. A
 * computation runs outside the lock; two threads asking the same key at once may both compute it.
 * A computation is bounded (issue 26): a network beyond neural/nn_cost.h's limits is refused before
 * anything is allocated (nn_legality_fits: what a request's network is checked with when it
 * arrives), and the caller's stop check and deadline (nn_stop.h) end it between images.
 *
 * Lifecycle: nn_legality_new -> nn_legality_fits / nn_legality_check (any thread) ->
 * nn_legality_free. */
#ifndef KT_NEURAL_NN_LEGALITY_H
#define KT_NEURAL_NN_LEGALITY_H

#include "core/error.h"
#include "neural/nn_dataset.h"
#include "neural/nn_fisher.h"
#include "neural/nn_network.h"
#include "neural/nn_stop.h"

#define NN_LEGALITY_MAX_ENTRIES 4096 /* cached scores; the oldest go first beyond it */

typedef struct nn_legality nn_legality;

typedef struct nn_verdict {
    int legal;              /* ratio >= threshold */
    double ratio;           /* fisher / fisher_original */
    double fisher;          /* the candidate's Fisher Potential */
    double fisher_original; /* the original network's */
    double seconds;         /* spent computing for this call (0 when both scores were cached) */
    int cached;             /* 1 when the candidate's score came from the cache */
} nn_verdict;

/* paths are copied (NULL: the defaults of nn_dataset_load); o NULL: nn_fisher_default_opts. */
nn_legality *nn_legality_new(const nn_dataset_paths *paths, const nn_fisher_opts *o, kt_error *err);
void nn_legality_free(nn_legality *l);
/* Whether a Fisher check of net with l's options (batch, initialisations) keeps within the limits
 * of neural/nn_cost.h: 0, or -1 with err (KT_ERR_BAD_REQUEST naming the limit, the figure, the
 * layer; a hint). Cheap: shapes only. */
int nn_legality_fits(const nn_legality *l, const nn_network *net, kt_error *err);
/* The verdict on transforming conv conv_index of net by t (every other layer unchanged), with the
 * data set named data (nn_dataset_known). stop (may be NULL: never) is asked while the scores are
 * computed. Returns 0; NN_STOPPED or NN_TIMED_OUT when stop said so (out->seconds says how long it
 * computed; nothing cached); -1 with err: those of nn_fisher_potential (a network beyond the limits
 * included) and nn_dataset_load; KT_ERR_CONFIG when t is the identity (nothing to judge) or not
 * valid there. */
int nn_legality_check(nn_legality *l, const nn_network *net, int conv_index, const nn_transform *t,
                      const char *data, double threshold, const nn_stop *stop, nn_verdict *out,
                      kt_error *err);

#endif
