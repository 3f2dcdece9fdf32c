/* service — the one struct that holds ktuned's state: configuration, database, catalog, workers and
 * the HTTP server. Built by service_start in dependency order and torn down by service_stop in
 * reverse; HTTP handlers receive it as their app pointer. There is no other process-wide mutable
 * state. */
#ifndef KT_SERVICE_H
#define KT_SERVICE_H

#include <limits.h>

#include "catalog/catalog.h"
#include "api/api.h"
#include "core/config.h"
#include "core/version.h"
#include "core/error.h"
#include "http/server.h"
#include "lookup/best_cache.h"
#include "lookup/best_listen.h"
#include "store/db.h"
#include "store/pg_cluster.h"
#include "training/model_cache.h"
#include "worker/worker.h"

typedef struct service {
    kt_config cfg;
    pg_cluster *pg; /* NULL when --database-url names an external server */
    char *conninfo; /* owned */
    db_pool *db;
    catalog *cat;
    worker_system *workers;
    model_cache *models;      /* loaded models and their predictions, owned */
    best_cache *best;         /* GET /v1/best answers, owned; NULL with --best-cache-entries 0 */
    best_listen *best_listen; /* keeps best true across processes (LISTEN/NOTIFY), owned */
    api_token_cache *tokens;  /* API tokens and the listen rule (api/tokens.c), owned */
    http_server *http;
    api_context api; /* what the handlers see: the rooms above, borrowed */

    pg_supervisor *pg_supervisor; /* restarts pg when its postmaster dies; NULL without pg */
    /* --cpu-core left to each cpu measurement while it runs (measure/core_reserve.h), owned; NULL
     * without a measuring core */
    struct core_reserve *core_reserve;
} service;

/* Starts everything: database (embedded unless cfg has a URL), migrations, catalog, workers, HTTP.
 * On failure err says which part failed, and whatever was started is stopped again. */
int service_start(service *svc, const kt_config *cfg, kt_error *err);
/* Stops HTTP first (no new work), then workers (measurements under way are stored), then the
 * database. */
void service_stop(service *svc);

#endif
