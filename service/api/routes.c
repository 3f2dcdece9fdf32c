#include "api/api.h"
#include "api/handlers.h"

static const http_route routes[] = {
    {"POST", "/v1/tune", api_tune},
    {"GET", "/v1/jobs", api_jobs_list},
    {"GET", "/v1/jobs/{id}", api_job_get},
    {"DELETE", "/v1/jobs/{id}", api_job_cancel},
    {"GET", "/v1/jobs/{id}/trials", api_job_trials},
    {"POST", "/v1/imports", api_import},
    {"GET", "/v1/best", api_best_get},
    {"GET", "/v1/best/entries", api_best_list},
    {"POST", "/v1/models", api_models_create},
    {"GET", "/v1/models", api_models_list},
    {"GET", "/v1/models/{id}", api_model_get},
    {"GET", "/v1/kernels", api_kernels},
    {"GET", "/v1/devices", api_devices},
    {"GET", "/v1/strategies", api_strategies},
    {"GET", "/v1/workers", api_workers},
    {"GET", "/v1/openapi.json", api_openapi},
    {"GET", "/healthz", api_healthz},
    {"GET", "/metrics", api_metrics},
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

static const char *const heavy[] = {"/v1/jobs/{id}/trials", "/v1/imports", "/v1/best/entries",
                                    NULL};

const char *const *api_heavy_routes(void)
{
    return heavy;
}
