/* api/tune_request — parsing and validation of a POST /v1/tune body, field by field, against the
 * configured limits. Pure (no database, no catalog) so that it is unit-tested on its own; the
 * fields of tune_request borrow from the body, which must outlive it. */
#ifndef KT_API_TUNE_REQUEST_H
#define KT_API_TUNE_REQUEST_H

#include <jansson.h>
#include <stdint.h>

#include "core/config.h"
#include "core/error.h"
#include "core/objective.h"
#include "core/target_key.h"

#define TUNE_DEFAULT_STRATEGY    "auto"
#define TUNE_DEFAULT_EVALUATIONS 100
#define TUNE_DEFAULT_HISTORY     "auto"
#define TUNE_MAX_PARALLEL        64
#define TUNE_MIN_SECONDS         0.001 /* smaller budget.seconds values are refused (out_of_range) */

typedef struct tune_request {
    const char *kernel, *device, *strategy;
    /* device parsed once (core/device_name.h): a kt_device_kind, or -1 when it is no device name
     * (the catalog says why when it resolves the request). */
    int device_kind;
    /* "kernel_version" (issue 27), 1-64 characters of [A-Za-z0-9._:-]: on cpu / cuda the version
     * of the kernel to tune (GET /v1/kernels/{name}; NULL: the newest ready); on external the
     * client's version of its kernel (NULL: the space's hash keys the results). */
    const char *kernel_version;
    const json_t *problem, *options; /* NULL when absent */
    /* "neural" (issue 14, catalog/catalog_neural.h): the opt-in to transformations that change
     * the network, an object checked by the catalog; NULL when absent. The target's problem is
     * problem with it as member "neural" (tune_request_problem). */
    const json_t *neural;
    long long evaluations; /* 0 = no evaluation limit */
    double seconds;        /* 0 = no time limit */
    uint64_t seed;         /* given, or fresh when absent */
    const char *history;   /* "auto" (warm start from history, the default) or "none" */
    int parallel; /* "parallel": configurations per batch measured at once, 1..64; 0 = not given */
    /* The final pick (worker/final_pick.h): "final_remeasure", configurations re-measured once the
     * budget is spent, 0..8 (0 = off); "final_rounds", how many times each, 1..16. -1 = not given:
     * api_tune_queue fills the defaults (3 and 5 on cpu and cuda devices, 0 on replay and accel
     * devices, where a measurement is a recorded time or the cost model's answer and re-measuring
     * it tells nothing: tune_device_deterministic). */
    int final_remeasure, final_rounds;
    /* The external device (issue 27, catalog_external_resolve): "device_class" (required there)
     * and the inline "space"; refused with any other device. */
    const char *device_class;
    const json_t *space;
    /* "objective" (issue 27, core/objective.h): what the job optimises, {"metric", "goal"};
     * absent: the time, minimised. Only its form is checked here; api_tune_queue checks the name
     * against the kernel's declared metrics. */
    kt_objective objective;
} tune_request;

/* Fills t from body. Errors: unknown_field, missing_field, wrong_type, out_of_range (objective's
 * fields (kt_objective_parse), parallel
 * outside 1..TUNE_MAX_PARALLEL, final_remeasure outside 0..8, final_rounds outside 1..16,
 * budget.seconds below TUNE_MIN_SECONDS, a history not "auto" or "none"), unknown_strategy,
 * budget_too_large — each message names the field and what is accepted. */
int tune_request_parse(const kt_config *cfg, const json_t *body, tune_request *t, kt_error *err);
/* A request with every default (strategy, options, seed fresh) but the kernel and device of key,
 * problem (borrowed, as key's strings) and an evaluation budget the caller validated: the job GET
 * /v1/best?tune_on_miss queues. */
void tune_request_budgeted(const target_key *key, const json_t *problem, long long evaluations,
                           tune_request *t);
/* The problem to resolve: t->problem, with t->neural as its "neural" member when given (new
 * reference; NULL for no problem and no neural, or out of memory with *oom set). */
json_t *tune_request_problem(const tune_request *t, int *oom);
/* 1 when a device of kind (a kt_device_kind, or -1 for none) gives a configuration the same result
 * every time: replay (a recorded time) and accel (the cost model). Such a job's final_remeasure
 * defaults to 0, and more is refused (out_of_range). */
int tune_device_deterministic(int kind);

#endif
