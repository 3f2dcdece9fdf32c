/* api — the handlers of ktuned's HTTP API (/v1/..., /healthz, /metrics), one file per resource.
 * They validate every field, call the stores and the catalog, and reply through http/. api_routes()
 * is the table the server is built with; its app pointer is an api_context.
 *
 * Lifecycle: the process (service.c) starts every room, fills an api_context with them, builds the
 * server with api_routes() and the context, and sets http once the server exists; the context must
 * outlive the server. Handlers only read it. */
#ifndef KT_API_API_H
#define KT_API_API_H

#include "catalog/catalog.h"
#include "core/config.h"
#include "http/server.h"
#include "lookup/best_cache.h"
#include "store/db.h"
#include "training/model_cache.h"
#include "worker/worker.h"

/* The API tokens this process knows (api/tokens.c): the --api-token's hash and a snapshot of the
 * api_tokens table, reloaded at most every API_TOKENS_REFRESH_MS, so that authorising a request
 * costs no SQL. Thread-safe. */
typedef struct api_token_cache api_token_cache;

/* Loads the tokens and checks the listen rule: with no token at all (no --api-token, an empty
 * api_tokens table) only a loopback --listen address is served, unless --allow-insecure-listen
 * (KT_ERR_CONFIG otherwise); logs which mode the service is in. */
api_token_cache *api_token_cache_new(const kt_config *cfg, db_pool *db, kt_error *err);
void api_token_cache_free(api_token_cache *t); /* NULL is a no-op */
/* "token" when any token exists (requests need one), else "none" (loopback only, or insecure). */
const char *api_token_cache_mode(api_token_cache *t);

/* The rooms the handlers use, borrowed from the process that owns them. */
typedef struct api_context {
    const kt_config *cfg;
    db_pool *db;
    const catalog *cat;
    worker_system *workers;
    http_server *http;   /* for the server's own metrics */
    model_cache *models; /* the process's loaded models and predictions (training/model_cache.h) */
    best_cache *best;    /* GET /v1/best answers (lookup/best_cache.h); NULL: no cache */
    api_token_cache *tokens; /* API tokens (api/tokens.c); NULL: no token exists, nothing checked */
} api_context;

const http_route *api_routes(void);
/* Makes the /v1/best cache keep each answer as a reply prepared for the server (sent with no copy);
 * call once after best_cache_new, before the server starts. */
void api_best_cache_init(best_cache *c);
/* The routes of a worker process (--role worker): /healthz and /metrics only (Kubernetes probes,
 * Prometheus); workers is set, the rest of the API is served by API processes. */
const http_route *api_probe_routes(void);
/* Patterns of the heavy routes (long or large replies: trial pages, imports, the best table),
 * NULL-ended, for http_server_options.heavy: they run on the heavy threads
 * (--http-heavy-threads), never on a light one. */
const char *const *api_heavy_routes(void);
/* Patterns of the blocking routes (POST /v1/jobs/{id}/ask waits for proposals), NULL-ended, for
 * http_server_options.blocking: each runs on a thread of its own. */
const char *const *api_blocking_routes(void);

#endif
