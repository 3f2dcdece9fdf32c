/* api/model_request — parsing and validation of a POST /v1/models body, field by field: the kind,
 * the algorithm, the hyper-parameters (a predictor's keys and ranges by predictor_hyper_check, a
 * surrogate's whole plan by trainer_surrogate_plan_parse: what the training will check, checked
 * before a row is stored) and the target named by exactly one of device and device_class. Pure (no
 * database, no catalog) so that it is unit-tested and fuzzed on its own
 * (tests/fuzz/fuzz_model_request.c); api/models.c resolves the target and stores the model.
 *
 * Call order: model_request_parse, then read the fields; they borrow from the body, which must
 * outlive them. Nothing to free. */
#ifndef KT_API_MODEL_REQUEST_H
#define KT_API_MODEL_REQUEST_H

#include <jansson.h>

#include "core/error.h"

#define MODEL_REQUEST_HYPER_MAX 32 /* keys of "hyper" */

typedef struct model_request {
    const char *kernel;
    const char *device, *device_class; /* exactly one is non-NULL */
    int device_kind;  /* device parsed once: a kt_device_kind, or -1 (absent, or no device name) */
    const char *kind; /* "predictor" or "surrogate" (filled) */
    const char *algorithm; /* as given, or the kind's default (filled) */
    int surrogate;         /* kind is "surrogate" */
    const json_t *hyper;   /* an object, or NULL when absent or null */
    /* device "external" (issue 27) takes its class from device_class (then both are set) and
     * may name kernel_version; any other device takes neither. */
    int external;
    const char *kernel_version;
} model_request;

/* Fills r from body (any JSON value: one that is not an object lacks "kernel"). Errors:
 * unknown_field, missing_field, wrong_type, out_of_range (an unknown kind or algorithm; a
 * surrogate's hyper out of range), bad_option (a predictor's hyper key or range), bad_request (both
 * device and device_class) — each message names the field and the hint says what is accepted.
 * Whether a surrogate's device is an accel device is the caller's to check (a device_class is
 * resolved to a device first). */
int model_request_parse(const json_t *body, model_request *r, kt_error *err);

#endif
