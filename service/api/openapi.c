/* GET /v1/openapi.json — the API's own description, cacheable: an ETag that changes with the
 * document (answered with 304 when the client has it) and Cache-Control. */
#include <string.h>

#include "api/api_internal.h"
#include "api/handlers.h"
#include "api/openapi.h"

void api_openapi(void *app, const http_request *req, http_response *res)
{
    static const char *const allowed[] = {NULL};
    (void)app;
    kt_error err;
    kt_error_clear(&err);
    if (api_check_query(req, allowed, &err) < 0)
        return api_fail(res, &err);
    const char *etag = api_openapi_etag();
    const char *if_none_match = http_header(req, "If-None-Match");
    http_response_add_header(res, "ETag", etag);
    /* The document changes only with the binary: an hour, then revalidate with the ETag. */
    http_response_add_header(res, "Cache-Control", "public, max-age=3600");
    if (http_etag_matches(if_none_match, etag)) {
        http_reply_text(res, 304, "application/json", "");
        return;
    }
    http_reply_text(res, 200, "application/json", api_openapi_document(NULL));
}
