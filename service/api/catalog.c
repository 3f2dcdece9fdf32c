/* /v1/devices, /v1/networks, /v1/strategies, /v1/workers — what can be asked for, and
 * who measures. */
#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "catalog/catalog_neural.h"
#include "catalog/catalog_peak.h"
#include "search/searcher.h"
#include "store/worker_store.h"
#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/tune_request.h"

static int no_query(const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    kt_error err;
    kt_error_clear(&err);
    if (api_check_query(req, allowed, &err) == 0)
        return 0;
    api_fail(res, &err);
    return -1;
}

void api_devices(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    if (no_query(req, res) < 0)
        return;
    json_t *devices = catalog_fleet_devices_json(svc->cat), *d;
    size_t i;
    /* Each device's peak where its description knows every factor (issue 31). */
    json_array_foreach(devices, i, d) catalog_peak_set(d);
    http_reply_json(res, 200, json_pack("{s:o}", "devices", devices));
}

void api_networks(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    if (no_query(req, res) == 0)
        http_reply_json(res, 200, json_pack("{s:o}", "networks", catalog_networks_json(svc->cat)));
}

void api_strategies(void *app, const http_request *req, http_response *res)
{
    (void)app;
    if (no_query(req, res) == 0)
        http_reply_json(res, 200,
                        json_pack("{s:o,s:s}", "strategies", searcher_catalog_json(), "default",
                                  TUNE_DEFAULT_STRATEGY));
}

void api_workers(void *app, const http_request *req, http_response *res)
{
    api_context *svc = app;
    kt_error err;
    kt_error_clear(&err);
    if (no_query(req, res) < 0)
        return;
    PGconn *c = api_db_acquire(svc, res);
    if (!c)
        return;
    json_t *list = worker_store_list_json(c, &err);
    api_db_release(svc, c);
    if (!list)
        return api_fail(res, &err);
    http_reply_json(res, 200, list);
}
