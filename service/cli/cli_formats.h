/* cli/cli_formats — the files other tuners use read into ktune's trials, for `ktune import` (the
 * exports are space/tuner_export.h's, shared with the server's GET /v1/jobs/{id}/export):
 *
 * - Kernel Tuner cache files (https://github.com/KernelTuner/kernel_tuner, schema
 *   kernel_tuner/schema/cache/1.0.0): "tune_params_keys", "tune_params", "cache" keyed by the
 *   values joined with ",", each record the parameter values plus "time" (ms, or an error name such
 *   as "CompilationFailedConfig"), "compile_time", "verification_time", "benchmark_time" (ms), ...
 * - T4 results files (the TuningSchema results schema, https://github.com/odgaard/TuningSchema,
 *   results-schema.json, as written by Kernel Tuner's store_output_file): {"schema_version",
 *   "results": [{"timestamp", "configuration", "objectives", "times", "invalidity",
 *   "correctness", "measurements": [{"name", "value", "unit"}]}]}.
 *
 * A ktune trial here is {"config", "status", "time_ms", "repeats", "compile_ms", "measure_ms",
 * "noise_cv"} (the body of POST /v1/imports). Exports also carry a top-level "ktune" object (job,
 * kernel, device, problem) that imports use to find their target. Pure; every json_t returned is a
 * new reference the caller owns. */
#ifndef KT_CLI_FORMATS_H
#define KT_CLI_FORMATS_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

typedef struct cli_import {
    const char *format; /* "kerneltuner" or "t4" (static text) */
    json_t *trials;     /* ktune trials, in the file's order */
    char kernel[257];   /* from the file's "ktune" object, or its "space" name; "" if unknown */
    char device[257];
    json_t *problem; /* from the file's "ktune" object, or NULL */
    /* Set by cli_import_external (device "external"), else "" and NULL; device_class and
     * kernel_version also from the "ktune" object of an external job's export: */
    char device_class[129];
    char kernel_version[65];
    json_t *space;        /* {"parameters", and "restrictions" or "configurations"} */
    char space_note[256]; /* what the space is made of, for the summary */
} cli_import;

/* Recognises the format (a "cache" object: Kernel Tuner; a "results" array: T4) and converts
 * every entry. Errors (KT_ERR_BAD_REQUEST) name the entry and the field (cache["16,1"].time).
 * Release with cli_import_release, also after a failure. */
int cli_import_parse(const json_t *file, cli_import *out, kt_error *err);
void cli_import_release(cli_import *im);

/* A genuine Kernel Tuner cache (no "ktune" object, no "space" name: no catalog target) as an
 * external kernel (issue 27), after cli_import_parse: kernel = kernel (or the file's kernel_name),
 * device "external", device_class = device_class (or the file's device_name through
 * cli_device_class_of), problem {"problem_size": <as recorded>} ({} without one; a problem from
 * the file's "ktune" object is kept), space
 * {"parameters"} in the order of tune_params_keys with the file's "restrictions" when ktune's
 * expression engine parses them and every recorded configuration satisfies them (an empty list:
 * the full grid), else "configurations": the recorded configurations (the full grid when that
 * list is longer than 512 KiB). Errors (KT_ERR_BAD_REQUEST) name the missing field
 * (kernel_name, device_name, tune_params_keys, tune_params["x"], problem_size) with a hint. */
int cli_import_external(const json_t *file, const char *kernel, const char *device_class,
                        cli_import *im, kt_error *err);
/* The device class made of a device name (Kernel Tuner's device_name): letters, digits, '.', '_'
 * and '-' kept, every other run one '_' between kept characters ("NVIDIA GeForce RTX 3090" →
 * "NVIDIA_GeForce_RTX_3090"), at most cap - 2 characters; "" when nothing is left. As the Python
 * client's ktune.device.class_part. */
void cli_device_class_of(const char *name, char *out, size_t cap);

/* The next trials from *pos whose compact JSON adds up to at most max_bytes (at least one), so that
 * each request stays under the server's body limit. Advances *pos; NULL when *pos is at the end. */
json_t *cli_import_chunk(const json_t *trials, size_t *pos, size_t max_bytes);

#endif
