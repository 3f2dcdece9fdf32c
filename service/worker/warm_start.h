/* worker/warm_start — the job driver's warm start from history (issue #10 section 4). A job with
 * history "auto" first measures what results of the same kernel elsewhere suggest, then searches:
 *
 * - sources: the (device class, problem) pairs the kernel has ok trials for (store/history_store),
 *   ranked by relation (0: the same problem on another device class; 1: another problem on the
 *   same class; 2: another problem on another class), then by problem distance (nearest first),
 *   at most WARM_MAX_SOURCES;
 * - first: the predictor's top WARM_PREDICTED for this problem when a model of the job's key is
 *   ready (training/model_cache.h; "source": -1), then the sources' fastest configurations,
 *   interleaved by rank across the ranked sources (source 0's best, source 1's best, ..., source
 *   0's second, ...), WARM_FIRST in all, each mapped into the job's space by parameter names and
 *   values (configurations that are not valid there are dropped);
 * - prior: the relation-0 sources' ok trials (up to WARM_PRIOR_PER_SOURCE each, WARM_MAX_PRIOR in
 *   all), per source, for strategies that fit a prior (auto: search/README.md).
 *
 * Determinism: what was gathered is recorded in the job row (jobs.history_used, sql/006) before the
 * searcher sees it, and the searcher is always built from the recorded JSON, on the first open as
 * on every resume: a resumed job never queries history again.
 *
 * Lifecycle: warm_start_prepare (or warm_start_from_used) -> the searcher_history in ws.h ->
 * warm_start_release. */
#ifndef KT_WORKER_WARM_START_H
#define KT_WORKER_WARM_START_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"
#include "search/searcher.h"
#include "space/space.h"
#include "catalog/target.h"
#include "store/job_store.h"
#include "training/model_cache.h"

#define WARM_MAX_SOURCES      8
#define WARM_FIRST            8    /* the bench's choice too (bench/README.md, warm starts) */
#define WARM_PREDICTED        4    /* of WARM_FIRST: the predictor's top-k, when a model is ready */
#define WARM_FIRST_PER_SOURCE 8    /* fastest configurations read per source for first */
#define WARM_PRIOR_PER_SOURCE 1000 /* ok trials read per relation-0 source for the prior */
#define WARM_MAX_PRIOR        3000 /* prior trials in all (they are recorded with the job) */

typedef struct warm_start {
    searcher_history h; /* views of the arrays below */
    config_id *first, *prior_id;
    double *prior_ms;
    int *prior_source;
} warm_start;

/* For a job row and its target t (with its space): history "none" gives an empty ws; "auto" uses
 * row->history_used when it is set, else gathers it (warm_start_gather, with the prediction of
 * models for t when models is not NULL and a model is ready; a prediction that fails is logged
 * and left out, never the job's failure), records it with job_store_set_history_used and uses it.
 * 0, or -1 with err (database errors). */
int warm_start_prepare(PGconn *c, const job_row *row, const target *t, model_cache *models,
                       warm_start *ws, kt_error *err);
/* What the store knows for the job's target, as the JSON recorded in jobs.history_used:
 * {"first":[{"config","time_ms","source"}],"prior":[{"config","time_ms","source"}],
 *  "sources":[{"device_class","problem_key","relation","distance","configurations"}],
 *  "model":{"id","algorithm","version"}|null}
 * (configurations valid in sp only). predicted: a model_cache_predict answer (its "model" and
 * "candidates" are read) or NULL. New reference, NULL with err. */
json_t *warm_start_gather(PGconn *c, const target_key *key, const json_t *problem, const space *sp,
                          const json_t *predicted, kt_error *err);
/* The searcher history of a recorded history_used (invalid entries skipped). 0, or -1 (memory). */
int warm_start_from_used(const json_t *used, const space *sp, warm_start *ws, kt_error *err);
void warm_start_release(warm_start *ws);

/* Distance between two problems (objects of arguments): the root of the summed squared
 * differences of the natural logs of matching positive numbers (arrays element by element), +4 per
 * argument or element that is missing on one side or not comparable. 0 for equal problems. */
double warm_start_problem_distance(const json_t *a, const json_t *b);

#endif
