/* bench/bench_judge — what the two prediction reports (`--predict`, `--accel-predict`) share when
 * they judge one trained predictor on the held-out problems: the buffers (the decoded candidates,
 * the top-1 and best-of-top-5 ratios per problem) and seed 001's decoding grid, accumulated per
 * decoding mode and k and written as the reports' JSON.
 *
 * Call order: bench_judge_init -> per held-out problem, bench_judge_decode for each (mode, k) the
 * report wants, the ratios appended to r1 / r5 -> bench_judge_grid_json -> bench_judge_free
 * (always, after init, even a failed one). */
#ifndef KT_BENCH_BENCH_JUDGE_H
#define KT_BENCH_BENCH_JUDGE_H

#include <jansson.h>

#include "core/error.h"
#include "model/predictor.h"

#define BENCH_JUDGE_MODES 3 /* greedy, free, constrained: predict_mode's order */
#define BENCH_JUDGE_NK    3 /* k = 1, 10, 100 */

extern const int bench_judge_ks[BENCH_JUDGE_NK];
extern const char *const bench_judge_modes[BENCH_JUDGE_MODES];

typedef struct bench_judge {
    /* the grid, summed over the held-out problems: the best-matching candidate's share of
     * parameters equal to the best's; 1 when it is the best; valid candidates; candidates */
    double acc[BENCH_JUDGE_MODES][BENCH_JUDGE_NK], perfect[BENCH_JUDGE_MODES][BENCH_JUDGE_NK],
        valid[BENCH_JUDGE_MODES][BENCH_JUDGE_NK];
    long emitted[BENCH_JUDGE_MODES][BENCH_JUDGE_NK];
    int *rows;       /* PREDICTOR_MAX_K candidates of np values */
    double *score;   /* their scores */
    double *r1, *r5; /* a ratio per held-out problem (INFINITY: a miss) */
    int n1, n5, n;   /* ratios in r1, r5; held-out problems judged */
} bench_judge;

/* A candidate's validity for the grid: 1 valid, 0 not. */
typedef int (*bench_judge_valid_fn)(void *ctx, const int *row);

/* Zeroes j and allocates its buffers for np parameters and n_problems held-out problems: 0, or -1
 * with err (out of memory). */
int bench_judge_init(bench_judge *j, int np, int n_problems, kt_error *err);
/* Frees the buffers (once; j is not usable after). */
void bench_judge_free(bench_judge *j);
/* Decodes problem with p in mode m (sp: the space of the constrained beam, or NULL) at k =
 * bench_judge_ks[kj] and adds to cell (m, kj) how near the list comes to best (np values), valid
 * telling each candidate's validity: 0, or -1 with err (the decoding's). */
int bench_judge_decode(bench_judge *j, predictor *p, const json_t *problem, const space *sp, int m,
                       int kj, const int *best, bench_judge_valid_fn valid, void *ctx,
                       kt_error *err);
/* The grid into grid: per mode an object with, per k, {param_accuracy, perfect, valid (null
 * without candidates), emitted}; greedy at k = 1 only, and with skip_empty no cell without
 * candidates. 0, or -1 with err (out of memory). */
int bench_judge_grid_json(const bench_judge *j, int skip_empty, json_t *grid, kt_error *err);

#endif
