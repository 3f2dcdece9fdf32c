/* bench/offline/bench_cv — `ktune bench`'s cross-validated table of the default strategy `auto`
 * (issue 29): leave one kernel family out. The spaces are grouped by kernel family (a space's name
 * up to its first '_', the catalog's rule: convolution, dedispersion, gemm, pnpoly, ...); for each
 * family, the candidate settings of auto's tunable constants (bench_cv_grid) are scored on the
 * other families only (mean fraction of the optimum over the checkpoints 25..400, --cv-seeds seeds
 * per space, the mean over families of their spaces' mean), and the best is run on the held-out
 * family with --seeds seeds. The CV table then says what auto's constants are worth on kernels
 * they were not chosen on. Every run is its own searcher (seed = run's seed, options = the
 * candidate's), as in the plain table.
 *
 * Call order: bench_run (bench_run.h) calls bench_cv_run after the plain runs; bench_report prints
 * the "cross_validation" member with bench_cv_print. */
#ifndef KT_BENCH_CV_H
#define KT_BENCH_CV_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "bench/offline/bench_args.h"

/* The candidates: n of them, each auto's options as JSON text. */
const char *const *bench_cv_grid(int *n);

/* The kernel family of a space's name (its characters up to the first '_'): how many. */
size_t bench_cv_family_len(const char *name);

/* Whether the offline run of opt gets a cross-validated table: --cv-seeds > 0, `auto` among the
 * strategies, in process (not --remote), no --history. The spaces must also span two families
 * (bench_cv_run answers NULL otherwise). */
int bench_cv_wanted(const bench_options *opt);

/* Runs the cross-validation over paths (the cache files, a JSON array of strings), with
 * checkpoints (an array of integers; those in 25..400 are scored) and the Kernel Tuner reference
 * kt_ref (or NULL). Returns (new reference)
 * {"strategy":"auto","cv_seeds","seeds","candidates":[{"options":{...},"score":{"<space>":s}}],
 *  "families":[{"family","spaces":[names],"chosen":{options},"chosen_index","train_score",
 *    "fraction":{"<cp>":f},"plain":{"<cp>":f} (auto's plain figures when given),
 *    "kt_best":{...} (with kt_ref)}],
 *  "all":{"chosen":{options},"chosen_index","train_score"} (chosen on every family),
 *  "mean":{"<cp>":f} (over spaces, each with its family's CV figures), "plain_mean", "kt_best"}.
 * plain: the plain result's "spaces" (auto's figures are read from it), or NULL. NULL with err
 * set on failure; NULL with err clear when fewer than two families. */
json_t *bench_cv_run(const bench_options *opt, const json_t *paths, const json_t *checkpoints,
                     const json_t *kt_ref, const json_t *plain, kt_error *err);

/* Prints the cross-validated table of a bench_run result (its "cross_validation"), if any. */
void bench_cv_print(const json_t *result, FILE *out);

#endif
