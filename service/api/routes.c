#include "api/api.h"
#include "api/api_internal.h"
#include "api/handlers.h"

/* Scopes (api_authorize): every GET needs read when any token exists; the token routes and the
 * removal of imports and of models need admin; ask and tell (external jobs' harnesses) need tune.
 * The other writes check their scope in their handler (POST /v1/tune, DELETE /v1/jobs/{id} and POST
 * /v1/imports: tune, more for an import that replaces measurements; POST /v1/kernels and DELETE
 * /v1/kernels/{name}/versions/{version}: kernels; POST /v1/models: admin; GET
 * /v1/best?tune_on_miss: tune). Open to all: /healthz (probes), /v1/openapi.json (the API's
 * description) and the dashboard's static files. */
#define GUARDED(fn, scope)                                                                         \
    static void fn##_guarded(void *app, const http_request *req, http_response *res)               \
    {                                                                                              \
        if (api_authorize(app, req, res, scope) == 0)                                              \
            fn(app, req, res);                                                                     \
    }

GUARDED(api_jobs_list, API_SCOPE_READ)
GUARDED(api_job_get, API_SCOPE_READ)
GUARDED(api_job_trials, API_SCOPE_READ)
GUARDED(api_job_events, API_SCOPE_READ)
GUARDED(api_job_export, API_SCOPE_READ)
GUARDED(api_best_get, API_SCOPE_READ)
GUARDED(api_best_list, API_SCOPE_READ)
GUARDED(api_models_list, API_SCOPE_READ)
GUARDED(api_model_get, API_SCOPE_READ)
GUARDED(api_kernels, API_SCOPE_READ)
GUARDED(api_kernel_get, API_SCOPE_READ)
GUARDED(api_networks, API_SCOPE_READ)
GUARDED(api_devices, API_SCOPE_READ)
GUARDED(api_strategies, API_SCOPE_READ)
GUARDED(api_workers, API_SCOPE_READ)
GUARDED(api_metrics, API_SCOPE_READ)
GUARDED(api_tokens_create, API_SCOPE_ADMIN)
GUARDED(api_tokens_list, API_SCOPE_ADMIN)
GUARDED(api_token_delete, API_SCOPE_ADMIN)
GUARDED(api_import_delete, API_SCOPE_ADMIN)
GUARDED(api_model_delete, API_SCOPE_ADMIN)
GUARDED(api_job_ask, API_SCOPE_TUNE)
GUARDED(api_job_tell, API_SCOPE_TUNE)

static const http_route routes[] = {
    {"POST", "/v1/tune", api_tune},
    {"GET", "/v1/jobs", api_jobs_list_guarded},
    {"GET", "/v1/jobs/{id}", api_job_get_guarded},
    {"DELETE", "/v1/jobs/{id}", api_job_cancel},
    {"GET", "/v1/jobs/{id}/trials", api_job_trials_guarded},
    {"GET", "/v1/jobs/{id}/events", api_job_events_guarded},
    {"GET", "/v1/jobs/{id}/export", api_job_export_guarded},
    {"POST", "/v1/jobs/{id}/ask", api_job_ask_guarded},
    {"POST", "/v1/jobs/{id}/tell", api_job_tell_guarded},
    {"POST", "/v1/imports", api_import},
    {"DELETE", "/v1/imports/{id}", api_import_delete_guarded},
    {"GET", "/v1/best", api_best_get_guarded},
    {"GET", "/v1/best/entries", api_best_list_guarded},
    {"POST", "/v1/models", api_models_create},
    {"GET", "/v1/models", api_models_list_guarded},
    {"GET", "/v1/models/{id}", api_model_get_guarded},
    {"DELETE", "/v1/models/{id}", api_model_delete_guarded},
    {"GET", "/v1/kernels", api_kernels_guarded},
    {"POST", "/v1/kernels", api_kernels_create},
    {"GET", "/v1/kernels/{name}", api_kernel_get_guarded},
    {"DELETE", "/v1/kernels/{name}/versions/{version}", api_kernel_retire},
    {"GET", "/v1/networks", api_networks_guarded},
    {"GET", "/v1/devices", api_devices_guarded},
    {"GET", "/v1/strategies", api_strategies_guarded},
    {"GET", "/v1/workers", api_workers_guarded},
    {"POST", "/v1/tokens", api_tokens_create_guarded},
    {"GET", "/v1/tokens", api_tokens_list_guarded},
    {"DELETE", "/v1/tokens/{id}", api_token_delete_guarded},
    {"GET", "/v1/openapi.json", api_openapi},
    {"GET", "/healthz", api_healthz},
    {"GET", "/metrics", api_metrics_guarded},
    {NULL, NULL, NULL},
};

/* A worker process (--role worker) serves only what probes and scrapers ask. */
static const http_route probe_routes[] = {
    {"GET", "/healthz", api_healthz},
    {"GET", "/metrics", api_metrics},
    {NULL, NULL, NULL},
};

const http_route *api_routes(void)
{
    return routes;
}

const http_route *api_probe_routes(void)
{
    return probe_routes;
}

static const char *const heavy[] = {"/v1/jobs/{id}/trials", "/v1/jobs/{id}/export", "/v1/imports",
                                    "/v1/best/entries", NULL};

const char *const *api_heavy_routes(void)
{
    return heavy;
}

/* An ask waits up to its wait_s for the job's driver to propose: on a thread of its own; so does a
 * tell that also asks (a tell alone answers on the HTTP worker), and a job's events stream while
 * nothing changed (api/job_events.c). */
static const char *const blocking[] = {"/v1/jobs/{id}/ask", "/v1/jobs/{id}/tell",
                                       "/v1/jobs/{id}/events", NULL};

const char *const *api_blocking_routes(void)
{
    return blocking;
}
