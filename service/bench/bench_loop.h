/* bench/bench_loop — the one ask/tell loop of `ktune bench`: a searcher run against an evaluator
 * (the offline mode's replayed cache, the device mode's measurement cache + backend, the accel
 * modes' cost model) until a budget of counted evaluations, the searcher's end, or the evaluator's
 * stop. Each round asks for up to batch configurations (the last ask cut to what the budget
 * leaves), checks them (inside the space, never proposed before), evaluates them in the order
 * proposed and tells them all in one searcher_tell. The loop keeps the counts and the searcher's
 * own time (ask + tell, the overhead and the modelled clock's searcher part); the evaluator's
 * hooks keep the rest (best so far, its curve, the recorded costs, the progress).
 *
 * Call order: fill a bench_loop (searcher made and configured by the caller, who frees it) ->
 * bench_loop_run -> read the counts; bench_loop_run frees what it allocated. */
#ifndef KT_BENCH_LOOP_H
#define KT_BENCH_LOOP_H

#include "core/error.h"
#include "core/trial.h"
#include "search/searcher.h"

typedef struct bench_loop bench_loop;

struct bench_loop {
    /* set by the caller */
    searcher *s;
    int budget;        /* counted evaluations at most */
    int batch;         /* configurations asked for at once, >= 1 */
    config_id space_n; /* proposals must be < space_n and distinct; 0: not checked */
    const char *what;  /* error messages' subject: "strategy gbfs on X, seed 3" */
    void *ctx;         /* the evaluator's */
    /* Evaluates id into r (initialised, released by the loop after the tell): 0 when it counts
     * in the budget, 1 when it does not (a free rejection), -1 with err (the run fails). Setting
     * l->stop ends the run here: the rest of the round is neither evaluated nor told. */
    int (*evaluate)(bench_loop *l, config_id id, trial_result *r, kt_error *err);
    /* After a round's tell (NULL: none): its ids and results, the ask's and tell's seconds, the
     * counted evaluations before the round. Setting l->stop ends the run after this round. */
    void (*after_tell)(bench_loop *l, const config_id *ids, const trial_result *res, int n,
                       double ask_s, double tell_s, int evals_before);

    /* kept by the loop, read by the hooks and the caller */
    int evals;         /* counted evaluations made */
    int proposals;     /* configurations proposed (asked for and returned) */
    int rounds;        /* asks that proposed something */
    double searcher_s; /* seconds in ask and tell so far (this round's ask included) */
    double overhead_s; /* the same, plus a last ask that proposed nothing */
    int stopped_early; /* the searcher proposed nothing */
    int stop;          /* set by a hook */
};

/* Runs the loop. 0, or -1 with err (out of memory, a proposal outside the space or proposed
 * twice, more proposals than asked for, an evaluation's error). */
int bench_loop_run(bench_loop *l, kt_error *err);

#endif
