/* neural/nn_stop — how a long computation of this room is stopped from outside (issue 26): a Fisher
 * Potential runs in a measuring thread of the service, and its job may be cancelled, or the check
 * may take longer than the service allows one evaluation. The caller gives a stop check (its job
 * was cancelled) and a deadline; the model asks nn_stop_asked between layers and between the images
 * of each convolution, so a stop is honoured within one image's layer (milliseconds for a network
 * within neural/nn_cost.h's limits), and the computation returns NN_STOPPED or NN_TIMED_OUT with
 * nothing cached or half-kept.
 *
 * Plain data, borrowed by whoever computes (nn_model_set_stop, nn_fisher_potential); any thread. */
#ifndef KT_NEURAL_NN_STOP_H
#define KT_NEURAL_NN_STOP_H

/* Non-zero when the work is no longer wanted. Asked often (every image of every conv): quick. */
typedef int (*nn_stop_fn)(void *arg);

typedef struct nn_stop {
    nn_stop_fn fn;   /* NULL: never stopped from outside */
    void *arg;       /* fn's, borrowed */
    double deadline; /* kt_clock_s() after which the work gives up; 0: none */
} nn_stop;

/* What nn_stop_asked says, and what a stopped computation returns (positive: not an error). */
#define NN_RUN       0
#define NN_STOPPED   1 /* fn said stop */
#define NN_TIMED_OUT 2 /* the deadline passed */

/* NN_RUN, NN_STOPPED or NN_TIMED_OUT; s NULL: NN_RUN. */
int nn_stop_asked(const nn_stop *s);

#endif
