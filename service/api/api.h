/* api — the handlers of ktuned's HTTP API (/v1/..., /healthz, /metrics), one file per resource.
 * They validate every field, call the stores and the catalog, and reply through http/. api_routes()
 * is the table the server is built with; app is the struct service. */
#ifndef KT_API_API_H
#define KT_API_API_H

#include "http/server.h"

const http_route *api_routes(void);

#endif
