/* neural/nn_legality — the legality check of a neural transformation (issue 14): a candidate that
 * transforms one conv layer of a network is legal when its Fisher Potential is at least threshold
 * times the original network's (the paper's rule is threshold 1: "reject the proposal if its score
 * is below that of the original"). Scores are cached per (network hash, data set, layer,
 * transformation, fisher options), so each is computed once per process; data sets are loaded on
 * first use (the first nn_fisher_opts.batch * 4 training images, at least 256).
 *
 * Thread-safe: one object per process (struct service), shared by every measurement thread. A
 * computation runs outside the lock; two threads asking the same key at once may both compute it.
 *
 * Lifecycle: nn_legality_new -> nn_legality_check (any thread) -> nn_legality_free. */
#ifndef KT_NEURAL_NN_LEGALITY_H
#define KT_NEURAL_NN_LEGALITY_H

#include "core/error.h"
#include "neural/nn_dataset.h"
#include "neural/nn_fisher.h"
#include "neural/nn_network.h"

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
/* The verdict on transforming conv conv_index of net by t (every other layer unchanged), with the
 * data set named data (nn_dataset_known). Errors: those of nn_fisher_potential and
 * nn_dataset_load; KT_ERR_CONFIG when t is the identity (nothing to judge) or not valid there. */
int nn_legality_check(nn_legality *l, const nn_network *net, int conv_index, const nn_transform *t,
                      const char *data, double threshold, nn_verdict *out, kt_error *err);

#endif
