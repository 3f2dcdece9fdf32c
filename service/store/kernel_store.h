/* store/kernel_store — the kernel_versions table (sql/017, issue 27): kernels submitted over HTTP,
 * one row per (name, version) with the canonical spec, the sources, who submitted it and when, and
 * the validation's status and log. Written by POST /v1/kernels (api/kernels.c) and by the worker
 * that validates a version (worker/validator.c); read by GET /v1/kernels[/{name}] and by every
 * process's catalog (catalog_kernels_set_source: kernel_store_fetch).
 *
 * Every function takes a connection of the pool and returns new references the caller frees. */
#ifndef KT_STORE_KERNEL_STORE_H
#define KT_STORE_KERNEL_STORE_H

#include <jansson.h>
#include <libpq-fe.h>

#include "core/error.h"

/* A validating version whose claim is older than this is claimed again (its worker went away). */
#define KERNEL_STORE_CLAIM_S 300

/* Inserts a version (status validating) unless (name, version) exists: *created 1 when this
 * inserted it, 0 when it was there. Returns {"name","version","status","created_at"} of the row.
 * spec_json is the spec object's text, spec_text the canonical text that was hashed, files_json
 * {"name": "text"}, data_json the uploaded data files (kernel_data_json; NULL: none, sql/021). */
json_t *kernel_store_create(PGconn *c, const char *name, const char *version, const char *spec_json,
                            const char *spec_text, const char *files_json, const char *data_json,
                            const char *submitter, int *created, kt_error *err);
/* GET /v1/kernels/{name}: [{"version","created_at","submitter","status","log","validation",
 * "retired","retired_at","spec"[,"data"]}] newest first (data: each uploaded file's dtype, bytes
 * and sha256, not its bytes); [] when the name has none. */
json_t *kernel_store_versions_json(PGconn *c, const char *name, kt_error *err);
/* The catalog's fetch (catalog_kernel_fetch): the newest `limit` versions of name,
 * [{"version","status","log","retired","spec_text","files","data"}] newest first (data null
 * without uploaded data). */
json_t *kernel_store_fetch(PGconn *c, const char *name, int limit, kt_error *err);
/* GET /v1/kernels: every stored name's newest version, [{"name","version","status",
 * "created_at","summary","versions"}] by name. */
json_t *kernel_store_names_json(PGconn *c, kt_error *err);
/* Claims the oldest validating version nobody validates (or whose claim is older than
 * KERNEL_STORE_CLAIM_S) for validator: {"name","version"}; NULL with KT_ERR_NOT_FOUND when none. */
json_t *kernel_store_claim(PGconn *c, const char *validator, kt_error *err);
/* Retires a version (retired_at set, once): no longer the newest a request without a version takes;
 * its results stay. Returns {"name","version","status","retired","retired_at"}; KT_ERR_NOT_FOUND
 * when the name has no such version. */
json_t *kernel_store_retire(PGconn *c, const char *name, const char *version, kt_error *err);
/* Records a validation: status "ready" or "invalid", the log (may be NULL), per variant outcome. */
int kernel_store_finish(PGconn *c, const char *name, const char *version, const char *status,
                        const char *log, const json_t *validation, kt_error *err);

#endif
