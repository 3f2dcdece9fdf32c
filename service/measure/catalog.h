/* measure/catalog — what can be tuned where: the devices ktuned knows (today: one `replay:<space>`
 * device per dataset file found in the dataset folders), the kernels each device offers, and how a
 * request's (kernel, device, problem) becomes a tuning target with its space. Built once at
 * start-up, then read-only and shared by all threads. The catalog owns the spaces it hands out in
 * targets.
 *
 * Lifecycle: catalog_new -> catalog_resolve / *_json -> catalog_free (after every target is
 * released). */
#ifndef KT_MEASURE_CATALOG_H
#define KT_MEASURE_CATALOG_H

#include <jansson.h>

#include "../core/error.h"
#include "../space/space.h"

typedef struct catalog catalog;

typedef struct catalog_options {
    const char *const *dataset_dirs; /* folders scanned for *.json and *.json.gz */
    int n_dataset_dirs;
    double replay_speed; /* replay sleeps speed x recorded seconds per trial; 0 = no sleep */
} catalog_options;

/* A resolved tuning target; fields borrowed from the catalog except problem (owned). */
typedef struct tune_target {
    const char *kernel;       /* "convolution" */
    const char *device;       /* "replay:convolution_milo-A4000" */
    const char *device_class; /* the device model results are keyed by */
    const char *kernel_hash;  /* hash of the kernel's source or dataset, part of the best key */
    json_t *problem;          /* canonical problem object (all arguments, defaults filled), owned */
    char *problem_key;        /* canonical compact JSON of problem (sorted keys), owned */
    const space *sp;          /* the space to search, owned by the catalog */
} tune_target;

/* Scans the folders; a file that cannot be read or parsed is skipped with a warning in the log, a
 * missing folder is an error (KT_ERR_CONFIG). */
catalog *catalog_new(const catalog_options *opt, kt_error *err);
void catalog_free(catalog *c);

/* Validates kernel, device and problem (problem may be NULL: all defaults). Errors:
 * KT_ERR_UNKNOWN_DEVICE (hint lists devices), KT_ERR_UNKNOWN_KERNEL (hint lists the kernels of that
 * device), KT_ERR_BAD_PROBLEM (names the argument and what is accepted). On success fills out;
 * release it with tune_target_release. */
int catalog_resolve(const catalog *c, const char *kernel, const char *device, const json_t *problem,
                    tune_target *out, kt_error *err);
void tune_target_release(tune_target *t);

/* GET /v1/devices:
 * [{"name","kind","class","available","reason"?,"description":{...},"kernels":[...]}] */
json_t *catalog_devices_json(const catalog *c);
/* GET /v1/kernels:
 * [{"name","devices":[{"device","problem":{defaults},"parameters":[{"name","values"}],
 * "restrictions":[...],"configurations":N}]}] */
json_t *catalog_kernels_json(const catalog *c);
int catalog_num_devices(const catalog *c);

#endif
