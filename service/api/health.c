/* /healthz and /metrics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "core/version.h"
#include "store/job_store.h"
#include "worker/worker.h"
#include "core/strbuf.h"
#include "api/api_internal.h"
#include "api/handlers.h"

/* 200 when the database takes writes; else 503 with "database": "down" | "full" | "read_only"
 * (db_pool_probe: a write probe and the data directory's free space, cached for a second). */
void api_healthz(void *app, const http_request *req, http_response *res)
{
    (void)req;
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    db_state s = db_pool_probe(svc->db, &err);
    if (s != DB_STATE_OK) {
        http_reply_json(res, 503,
                        json_pack("{s:s,s:s,s:s,s:s}", "status", "unavailable", "database",
                                  db_state_name(s), "reason", err.message, "hint", err.hint));
        return;
    }
    /* "auth": "token" when requests need an API token, "none" (loopback only, or
     * --allow-insecure-listen) when no token exists (api/tokens.c). */
    http_reply_json(res, 200,
                    json_pack("{s:s,s:s,s:s,s:i,s:s}", "status", "ok", "database", "ok", "version",
                              KTUNE_VERSION, "devices", catalog_num_devices(svc->cat), "auth",
                              api_token_cache_mode(svc->tokens)));
}

/* The metrics page is capped so that a bug cannot grow it without bound. */
#define METRICS_MAX (4u << 20)

void api_metrics(void *app, const http_request *req, http_response *res)
{
    (void)req;
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    strbuf m;
    strbuf_init(&m, METRICS_MAX);
    char *http_lines = http_server_metrics_text(svc->http);
    if (http_lines) {
        strbuf_puts(&m, http_lines);
        free(http_lines);
    }
    worker_stats ws;
    worker_system_stats(svc->workers, &ws);
    strbuf_appendf(&m,
                   "# HELP ktune_trials_measured_total Trials measured by this process.\n"
                   "# TYPE ktune_trials_measured_total counter\nktune_trials_measured_total %lld\n",
                   ws.trials_measured);
    strbuf_appendf(
        &m,
        "# HELP ktune_measure_seconds_total Measurement seconds charged by this process's trials "
        "(recorded seconds for replay devices).\n# TYPE ktune_measure_seconds_total counter\n"
        "ktune_measure_seconds_total %.6f\n",
        ws.measure_seconds);
    strbuf_appendf(
        &m,
        "# HELP ktune_active_jobs Jobs driven by this process now.\n# TYPE ktune_active_jobs "
        "gauge\n"
        "ktune_active_jobs %d\n",
        ws.active_jobs);
    strbuf_appendf(&m,
                   "# HELP ktune_target_cache_entries Job targets this process holds resolved (in "
                   "use, or kept for the job's next trial; freed when the job ends here).\n# TYPE "
                   "ktune_target_cache_entries gauge\nktune_target_cache_entries %d\n",
                   ws.targets_cached);
    PGconn *c = db_acquire(svc->db, API_DB_ACQUIRE_MS, &err);
    if (c)
        db_set_limit(c, API_DB_LIMIT_MS); /* a hung database is ktune_up 0, not a hung scrape */
    json_t *counts = c ? job_store_status_counts(c, &err) : NULL;
    if (c)
        db_release(svc->db, c);
    strbuf_appendf(&m,
                   "# HELP ktune_up Whether the database answered this scrape.\n# TYPE ktune_up "
                   "gauge\nktune_up %d\n",
                   counts ? 1 : 0);
    if (counts) {
        strbuf_appendf(
            &m, "# HELP ktune_jobs Jobs in the database by status.\n# TYPE ktune_jobs gauge\n");
        const char *status;
        json_t *n;
        json_object_foreach(counts, status, n) strbuf_appendf(
            &m, "ktune_jobs{status=\"%s\"} %lld\n", status, (long long)json_integer_value(n));
        json_decref(counts);
    }
    http_reply_text(res, 200, "text/plain; version=0.0.4; charset=utf-8", strbuf_str(&m));
    strbuf_release(&m);
}
