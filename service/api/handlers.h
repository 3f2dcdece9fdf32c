/* api/handlers — every handler of the API, by resource file. Internal to api/; routes.c lists them.
 */
#ifndef KT_API_HANDLERS_H
#define KT_API_HANDLERS_H

#include <jansson.h>

#include "api/api.h"
#include "http/server.h"

void api_tune(void *app, const http_request *req, http_response *res);      /* tune.c */
void api_jobs_list(void *app, const http_request *req, http_response *res); /* jobs.c */
void api_job_get(void *app, const http_request *req, http_response *res);
void api_job_trials(void *app, const http_request *req, http_response *res);
/* GET /v1/jobs/{id}/events (api/job_events.c): the job's changes as Server-Sent Events. */
void api_job_events(void *app, const http_request *req, http_response *res);
/* job_export.c */
void api_job_export(void *app, const http_request *req, http_response *res);
/* External jobs' harnesses (ask_tell.c, issue 27): lease proposed configurations, report results.
 */
void api_job_ask(void *app, const http_request *req, http_response *res);
void api_job_tell(void *app, const http_request *req, http_response *res);
void api_job_cancel(void *app, const http_request *req, http_response *res);
void api_best_get(void *app, const http_request *req, http_response *res); /* best.c */
/* GET /v1/best for device=external (best_external.c): problem is the query's other arguments. */
void api_best_external(api_context *svc, const http_request *req, http_response *res,
                       const char *kernel, const char *device_class, const char *version,
                       const char *source, const char *accept, const json_t *problem);
void api_best_list(void *app, const http_request *req, http_response *res);
void api_models_create(void *app, const http_request *req, http_response *res); /* models.c */
void api_models_list(void *app, const http_request *req, http_response *res);
void api_model_get(void *app, const http_request *req, http_response *res);
void api_model_delete(void *app, const http_request *req, http_response *res);
void api_kernels(void *app, const http_request *req, http_response *res); /* kernels.c */
void api_kernels_create(void *app, const http_request *req, http_response *res);
void api_kernel_get(void *app, const http_request *req, http_response *res);
void api_kernel_retire(void *app, const http_request *req, http_response *res);
void api_networks(void *app, const http_request *req, http_response *res); /* catalog.c */
void api_devices(void *app, const http_request *req, http_response *res);
void api_strategies(void *app, const http_request *req, http_response *res);
void api_workers(void *app, const http_request *req, http_response *res);
void api_import(void *app, const http_request *req, http_response *res); /* import.c */
void api_import_delete(void *app, const http_request *req, http_response *res);
void api_tokens_create(void *app, const http_request *req, http_response *res); /* tokens.c */
void api_tokens_list(void *app, const http_request *req, http_response *res);
void api_token_delete(void *app, const http_request *req, http_response *res);
void api_openapi(void *app, const http_request *req, http_response *res); /* openapi.c */
void api_healthz(void *app, const http_request *req, http_response *res); /* health.c */
void api_metrics(void *app, const http_request *req, http_response *res);

#endif
