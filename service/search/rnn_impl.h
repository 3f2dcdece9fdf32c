/* search/rnn_impl — internal to search/ and its unit tests: what the `rnn` strategy counts while
 * it proposes, read from the state its vtable's create returned (searcher_rnn_vtable in
 * searcher_impl.h's list; a test drives create / ask / tell / destroy directly, as the searcher
 * object keeps its state private). The counters only grow; reading them changes nothing. */
#ifndef KT_SEARCH_RNN_IMPL_H
#define KT_SEARCH_RNN_IMPL_H

#include "search/searcher_impl.h"

extern const searcher_vtable searcher_rnn_vtable;

typedef struct searcher_rnn_stats {
    long samples;   /* configurations the controller sampled (masked decoding) */
    long repeats;   /* of them, already proposed: resampled at a raised temperature */
    long fallbacks; /* proposals that were a random unvisited configuration after `resample`
                       repeats in a row */
    long invalid;   /* sampled tuples the space rejects: 0 unless the masking is broken */
} searcher_rnn_stats;

/* The counters of an `rnn` state (as returned by searcher_rnn_vtable.create) into *out. */
void searcher_rnn_stats_get(const void *state, searcher_rnn_stats *out);

#endif
