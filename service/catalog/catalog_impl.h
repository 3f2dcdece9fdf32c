/* catalog/catalog_impl — internal to catalog/: the catalog's and a replay dataset's fields, shared
 * by the registry (catalog.c), its lookups (catalog_lookup.c), resolution (catalog_resolve.c), the
 * JSON views (catalog_json.c) and the dataset loader (dataset.c). Everything here is owned by the
 * catalog (or by the dataset) and read-only after catalog_new_real returns. */
#ifndef KT_CATALOG_CATALOG_IMPL_H
#define KT_CATALOG_CATALOG_IMPL_H

#include "catalog/catalog.h"

struct replay_dataset {
    char *name;            /* "convolution_milo-A4000": the `space` key or the file name */
    char *device;          /* "replay:convolution_milo-A4000" */
    char *kernel;          /* "convolution": the name up to the first '_' */
    char *gpu;             /* device_name as recorded ("" when absent) */
    char *recorded_kernel; /* kernel_name as recorded ("" when absent) */
    char *problem_text;    /* recorded problem_size as compact JSON; NULL when the file has none */
    char *problem_display; /* the same, spaced for messages ("[4096, 4096]") */
    char *file;
    char kernel_hash[17]; /* FNV-1a 64 of the dataset definition, hex */
    char *toolchain;      /* the file's "toolchain" string, else "recorded" (results key) */
    space *sp;
    int explicit_space;     /* 1 when the space is the cache's key list (no `restrictions`) */
    replay_record *records; /* sorted by id, one per recorded configuration valid in sp */
    uint64_t n_records;     /* records kept */
    uint64_t n_valid;       /* records with a numeric time */
    uint64_t n_cache;       /* entries in the file's cache */
};

struct catalog {
    replay_dataset **ds;
    int n;
    size_t cap;
    double replay_speed;
    /* Real measurement: devices probed by the runner and the kernel specs. */
    int real;
    catalog_real_options opt; /* copy; runner and cache_dir point into this catalog */
    char *runner, *cache_dir;
    catalog_device *devs;
    int n_devs;
    kernel_spec **specs;
    int n_specs;
    size_t cap_specs;
    long long *counts; /* [spec * n_devs + dev]: configurations for the default problem; -1 none */
};

/* 1 when device d can run kernel k (available, and k has a variant of its kind). */
int catalog_offers(const catalog_device *d, const kernel_spec *k);
/* The canonical problem of a dataset (new reference): {"problem_size": recorded}, or {} when the
 * file records none; NULL when out of memory. Parsed from text so that threads never share a
 * json_t. */
json_t *catalog_canonical_problem(const replay_dataset *ds);

#endif
