/* measure/measure_impl — internal to measure/: one loaded replay dataset (dataset.c), the real
 * devices found by probing ktune-runner (device.c), the catalog's lookups the backends use
 * (catalog.c), and the replay and real backends' entry points (replay.c, real_backend.c) that
 * backend.c dispatches to. Datasets, devices and kernel specs are owned by the catalog and
 * read-only after catalog_new (a device's mutex is the one thing threads change). */
#ifndef KT_MEASURE_MEASURE_IMPL_H
#define KT_MEASURE_MEASURE_IMPL_H

#include <pthread.h>
#include <stddef.h>

#include "backend.h"
#include "catalog.h"
#include "kernel_spec.h"

#define REPLAY_MAX_FILE_BYTES   ((size_t)512 << 20) /* uncompressed size cap per dataset file */
#define REPLAY_MAX_NAME         128                 /* dataset (space) name length */
#define REPLAY_MAX_FAILURE_TEXT 64                  /* stored length of a failure string */
#define REPLAY_MAX_PARAMS       64                  /* tuning parameters per dataset */

/* One cache record, reduced to what a trial needs. */
typedef struct replay_record {
    config_id id;
    uint64_t seq; /* position in the file, to keep the first of duplicate configurations */
    trial_status status;
    int repeats;
    double time_ms, compile_ms, measure_ms, noise_cv;
    int time_kind;   /* REPLAY_TIME_* : how "time" was recorded */
    char *time_text; /* the failure string (capped), when time_kind == REPLAY_TIME_STRING */
} replay_record;

enum { REPLAY_TIME_ABSENT = 0, REPLAY_TIME_NUMBER, REPLAY_TIME_STRING, REPLAY_TIME_OTHER };

typedef struct replay_dataset {
    char *name;            /* "convolution_milo-A4000": the `space` key or the file name */
    char *device;          /* "replay:convolution_milo-A4000" */
    char *kernel;          /* "convolution": the name up to the first '_' */
    char *gpu;             /* device_name as recorded ("" when absent) */
    char *recorded_kernel; /* kernel_name as recorded ("" when absent) */
    char *problem_text;    /* recorded problem_size as compact JSON; NULL when the file has none */
    char *problem_display; /* the same, spaced for messages ("[4096, 4096]") */
    char *file;
    char kernel_hash[17]; /* FNV-1a 64 of the dataset definition, hex */
    space *sp;
    int explicit_space;     /* 1 when the space is the cache's key list (no `restrictions`) */
    replay_record *records; /* sorted by id, one per recorded configuration valid in sp */
    uint64_t n_records;     /* records kept */
    uint64_t n_valid;       /* records with a numeric time */
    uint64_t n_cache;       /* entries in the file's cache */
} replay_dataset;

/* Loads one Kernel Tuner cache file. fallback_name names the dataset when the file has no `space`
 * key. Returns NULL with a reason in why (for the log) when the file cannot be used. */
replay_dataset *dataset_load(const char *path, const char *fallback_name, char *why,
                             size_t why_cap);
void dataset_free(replay_dataset *ds);
/* The record of id, or NULL when the configuration was not recorded. */
const replay_record *dataset_record(const replay_dataset *ds, config_id id);

/* The replay dataset behind a device name, or NULL. */
const replay_dataset *catalog_find_replay(const catalog *c, const char *device);
double catalog_replay_speed(const catalog *c);
/* "devices: a, b, ... (N more)" into buf, capped; for KT_ERR_UNKNOWN_DEVICE hints. */
void catalog_device_hint(const catalog *c, char *buf, size_t cap);

/* A device measured for real by ktune-runner: "cpu", "cuda:N", or the entry "cuda" that says why no
 * CUDA device is available. */
typedef struct real_device {
    char name[32];
    kspec_kind kind;
    int ordinal; /* N of cuda:N; 0 for cpu */
    int available;
    char *reason;           /* why it is not available, else NULL */
    char *klass;            /* "cpu:<model>:<vector_bits>", "cuda:<name>:sm_<cc>"; results key */
    char *description_text; /* the runner's probe ("device" object), compact JSON */
    kspec_limits limits;    /* in kernel_spec_limit_names order */
    pthread_mutex_t *lock;  /* held during a measurement: one at a time on a device */
} real_device;

/* How runners are started (device.c, real_backend.c). */
typedef struct real_runner_options {
    const char *runner;    /* the ktune-runner binary */
    const char *cache_dir; /* --cache-dir of every runner */
    int cpu_core;          /* --cpu-core of cpu runners, -1 for none */
} real_runner_options;

/* Probes cpu, then cuda:0, cuda:1, ... (at most REAL_MAX_CUDA) until one is refused. Always fills
 * at least the cpu entry and one cuda entry (unavailable ones carry a reason). Returns -1 only when
 * out of memory. */
#define REAL_MAX_CUDA 16
int device_discover(const real_runner_options *opt, real_device **out, int *n, kt_error *err);
void device_free_all(real_device *devs, int n);

/* The real device behind a name (available or not), or NULL. */
const real_device *catalog_find_real(const catalog *c, const char *device);
/* The catalog kernel of that name, or NULL. */
const kernel_spec *catalog_find_kernel(const catalog *c, const char *name);
/* The catalog's measurement options (strings owned by the catalog). */
const catalog_real_options *catalog_measure_options(const catalog *c);
/* 1 when real measurement is configured (kernel folders given). */
int catalog_has_real(const catalog *c);
/* With real measurement on: why device ("cpu", "cuda", "cuda:N") cannot be measured on, or NULL
 * when it can or is not a real device name. */
const char *catalog_real_unavailable(const catalog *c, const char *device);

/* Replay backend (replay.c). */
void *replay_open(const catalog *c, const char *device, kt_error *err);
int replay_measure(void *impl, const tune_target *t, config_id id, trial_result *out,
                   kt_error *err);
void replay_close(void *impl);

/* Real backend for cpu and cuda:N (real_backend.c). */
void *real_open(const catalog *c, const char *device, kt_error *err);
int real_measure(void *impl, const tune_target *t, config_id id, trial_result *out, kt_error *err);
void real_close(void *impl);

#endif
