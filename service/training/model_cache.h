/* training/model_cache — the predictions of the stored models (store/model_store.h) for this
 * process: the API's /v1/best for a problem never measured, and the job driver's warm start.
 *
 * A prediction is asked for a target (resolved with its space). The cache looks up the newest
 * ready model of the target's own key (kind "predictor", kernel, device class, kernel hash,
 * toolchain: one indexed query per call, no bytes), so a model trained on another kernel hash is
 * never used (a model of a changed kernel matches no target's key). That model is loaded once per
 * model id, from its bytes (predictor_load), and kept; its top-k for the target's problem is cached
 * per (model id, problem key, k), so a newer ready model makes the older predictions unreachable
 * at once and a request for a cached prediction runs no model.
 *
 * Bounds: at most MODEL_CACHE_MODELS loaded models (the least recently used one not predicting is
 * freed when another must be loaded) and MODEL_CACHE_PREDICTIONS predictions (when full, every
 * prediction is dropped at once: clear-when-full, cheap and never stale).
 *
 * Threads: any thread may call model_cache_predict. A mutex guards the tables; each loaded model
 * has its own mutex held around predictor_predict (not thread-safe), so predictions of different
 * models run in parallel and a cached answer never waits for a model to run.
 *
 * Lifecycle: model_cache_new -> model_cache_predict* -> model_cache_free (after every caller). The
 * catalog is borrowed (the space of a target comes from the caller; kept for later use). */
#ifndef KT_TRAINING_MODEL_CACHE_H
#define KT_TRAINING_MODEL_CACHE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "catalog/catalog.h"
#include "core/error.h"
#include "training/model_confidence.h"

#define MODEL_CACHE_MODELS      16
#define MODEL_CACHE_PREDICTIONS 4096
#define MODEL_CACHE_MAX_K       100

typedef struct model_cache model_cache; /* one per process (struct service) */

model_cache *model_cache_new(const catalog *cat);
void model_cache_free(model_cache *mc);

/* ktuned's minimum for a model to be served without ?accept=weak (--model-min-problems,
 * --model-min-accuracy; MODEL_MIN_*_DEFAULT until set). Once, before the first prediction (a model
 * loaded before keeps the facts judged by the minimum of its load); drops the cached predictions.
 */
void model_cache_set_minimum(model_cache *mc, const model_minimum *min);

/* The prediction for target t: the newest ready model of t's key loaded (once per model id, from
 * the bytes), its top-k (1..MODEL_CACHE_MAX_K) for t's problem, cached per (model id, problem key,
 * k) until a newer model is ready. Fills *out (a new reference, the caller's to change):
 *   {"model":{"id","algorithm","version"},"config":{...},"score":x,"candidates":[{"config","score"}...],
 *    "confidence": model_confidence_json's facts + "nearest_trained" (model_confidence_nearest)}
 * Returns 1 predicted, 0 no ready model (or it yields no valid candidate), -1 error (the model's
 * bytes do not load, a database error, k out of range), MODEL_CACHE_NEEDS_SPACE when t has no
 * space (a key-only target, catalog_resolve_key) and the prediction is not cached: a cached answer
 * needs no space, so a lookup asks with the key only first and resolves the space only for this.
 * Thread-safe. */
#define MODEL_CACHE_NEEDS_SPACE 2
int model_cache_predict(model_cache *mc, PGconn *c, const target *t, int k, json_t **out,
                        kt_error *err);

/* Counters for /metrics and the tests: predictions answered from the cache, predictions computed,
 * models loaded from bytes. */
typedef struct model_cache_stats {
    long long hits, misses, loads;
} model_cache_stats;
void model_cache_stats_get(model_cache *mc, model_cache_stats *out);

#endif
