/* space/tuner_export — a job's trials as the files other tuners read: a Kernel Tuner cache file
 * (https://github.com/KernelTuner/kernel_tuner, schema kernel_tuner/schema/cache/1.0.0:
 * "tune_params_keys", "tune_params", "cache" keyed by the values joined with ",", each record the
 * parameter values plus "time" (ms, or an error name such as "CompilationFailedConfig"),
 * "compile_time", "verification_time", "benchmark_time" (ms), ...) or a T4 results file (the
 * TuningSchema results schema, https://github.com/odgaard/TuningSchema). One exporter for `ktune
 * export` (cli/, from the API's replies) and GET /v1/jobs/{id}/export (api/, from the same
 * documents built in the server), so that the dashboard's download and the command's file never
 * drift (issue 31). Exports carry a top-level "ktune" object (job, kernel, device, problem) that
 * imports use to find their target.
 *
 * A trial here is one of GET /v1/jobs/{id}/trials: {"id", "config", "status", "time_ms",
 * "compile_ms", "measure_ms", "finished_at", ...}. Pure; every json_t returned is a new reference
 * the caller owns. */
#ifndef KT_TUNER_EXPORT_H
#define KT_TUNER_EXPORT_H

#include <jansson.h>

#include "core/error.h"

/* The whole export of a job: format "kerneltuner" or "t4"; job: GET /v1/jobs/{id}; trials: its
 * finished trials in finishing order; kernels: GET /v1/kernels ({"kernels": [...]}: the job's
 * kernel on its device gives the parameters in order, the restrictions and the problem arguments);
 * devices: GET /v1/devices ({"devices": [...]}: the device's limits as the restrictions'
 * constants). kernels and devices may be NULL (names and values are then gathered from the trials).
 * Another format is KT_ERR_OUT_OF_RANGE. */
json_t *tuner_export_job(const char *format, const json_t *job, const json_t *trials,
                         const json_t *kernels, const json_t *devices, kt_error *err);

/* job: GET /v1/jobs/{id}; trials: its finished trials (GET /v1/jobs/{id}/trials); params:
 * [{"name", "values"}] of the kernel on the job's device from GET /v1/kernels, or NULL (names
 * and values are then gathered from the trials); restrictions: array of strings or NULL;
 * constants: an object name -> number (the job's problem arguments and the device's limits) whose
 * names are written as their values in the restrictions (Kernel Tuner knows neither), or NULL;
 * args: the kernel's "problem_arguments" ([{"name"}], their order gives "problem_size") or NULL.
 * "problem_size" (required by Kernel Tuner's cache schema) is always written: the recorded one of
 * a replay job, else the problem's values; a problem with a non-integer value is refused. Statuses
 * Kernel Tuner has no name for keep theirs in "ktune_status" (timeout as RuntimeFailedConfig,
 * wrong_result as InvalidConfig). */
json_t *tuner_export_kerneltuner(const json_t *job, const json_t *params,
                                 const json_t *restrictions, const json_t *constants,
                                 const json_t *args, const json_t *trials, kt_error *err);
/* Every status has a T4 invalidity: ok correct, compile_error compile, runtime_error runtime,
 * timeout timeout, wrong_result correctness, invalid constraints. */
json_t *tuner_export_t4(const json_t *job, const json_t *trials, kt_error *err);

/* The kernel's parameters, restrictions and problem arguments on device, from GET /v1/kernels
 * (new references; NULL when the kernel is not offered there). */
void tuner_export_kernel_params(const json_t *kernels, const char *kernel, const char *device,
                                json_t **params, json_t **restrictions, json_t **args);
/* The names a restriction may read besides the parameters, as numbers: the device's limits (its
 * description in GET /v1/devices; a limit the probe did not know, null, is 0 as in restrictions,
 * kernels/README.md) and the job's problem arguments over them. A new reference. */
json_t *tuner_export_constants(const json_t *devices, const json_t *job, const json_t *params);
/* The ktune status a T4 invalidity reads back as ("constraints": invalid), or NULL. */
const char *tuner_export_status_of_t4(const char *invalidity);

#endif
