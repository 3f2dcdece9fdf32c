/* catalog/catalog_impl — internal to catalog/: the catalog's and a replay dataset's fields, shared
 * by the registry (catalog.c), its lookups (catalog_lookup.c), resolution (catalog_resolve.c), the
 * JSON views (catalog_json.c) and the dataset loader (dataset.c). Everything here is owned by the
 * catalog (or by the dataset) and read-only after catalog_new_real returns. */
#ifndef KT_CATALOG_CATALOG_IMPL_H
#define KT_CATALOG_CATALOG_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "catalog/catalog_neural.h"

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

/* A device known from the fleet (catalog_fleet.h). dev is immutable once added (available, no
 * lock: this process does not measure on it); hosts, live and present change under the fleet lock.
 */
typedef struct catalog_fleet_entry {
    catalog_device dev;
    json_t *hosts; /* array of host names serving it (live ones), owned; read under the lock */
    int live;      /* a live row serves it (heartbeat within the lease) */
    int present;   /* in the table at the last refresh (live or not) */
} catalog_fleet_entry;

typedef struct catalog_fleet {
    pthread_rwlock_t lock;   /* guards n, e's contents' hosts / live / present */
    catalog_fleet_entry **e; /* append-only: entries live until catalog_free */
    int n;
    size_t cap;
    pthread_mutex_t refresh; /* one fetch at a time; guards the times below */
    catalog_fleet_fetch fetch;
    void *ctx;
    double period_s;
    uint64_t last_ns, last_try_ns; /* last successful fetch, last attempt (0: never) */
} catalog_fleet;

/* An accel device of the devices file (catalog_accel.c): the parameters and the key strings its
 * targets borrow. */
typedef struct catalog_accel_dev {
    accel_device dev;
    char name[48];  /* "accel:<name>" */
    char klass[72]; /* "accel:<name>:<16 hex digits>" */
} catalog_accel_dev;

/* The characters of a kernel folder's load error kept (with the kernel's name, it fits a
 * kt_error message). */
#define CATALOG_INVALID_ERROR 400

/* One version of a kernel (catalog_versions.c): a kernel folder's (loaded at start, or again
 * after its files changed) or a stored kernel's (the kernels table, sql/017). k is immutable and
 * lives until catalog_free (targets and backends borrow k); counts is set once (atomically: the
 * first listing after a folder version is loaded counts, catalog_folders_counts), then immutable;
 * status, log, retired, rank, seq and gone change under the registry's lock. */
typedef struct catalog_kver {
    kernel_spec *k; /* NULL: a stored version whose spec does not load here (log says why) */
    char name[KSPEC_MAX_NAME + 1];
    char version[KFILES_VERSION_LEN + 1];
    int stored;        /* 1: the kernels table; 0: a kernel folder */
    int status;        /* catalog_kernel_status */
    char *log;         /* validation's log (stored), NULL when none */
    int retired;       /* stored: retired_at set */
    int rank;          /* stored: position in the name's last fetch, 0 = newest; -1 gone */
    unsigned long seq; /* order of addition: a folder's newest version has the largest */
    int owned;         /* 1: k is freed with the registry (0: the catalog's specs own it) */
    int gone;          /* folder: its folder was removed or no longer loads; not offered to new
                          requests (still found by version) */
    _Atomic(long long *) counts; /* folder: [device of the catalog]: configurations of the default
                                    problem, -1 none (GET /v1/kernels); NULL until counted */
} catalog_kver;

/* Kernel folders a process holds (loaded or not, removed ones included) and versions of every
 * kernel (folder and stored) it keeps: past these, a new folder or version is refused (logged). */
#define CATALOG_MAX_FOLDERS  1024
#define CATALOG_MAX_VERSIONS 8192

/* A kernel folder, rescanned for changed files (kernel_files_dir_stamp): one listed at start, or
 * one found later under a --kernels folder (catalog_folders.c). The listings (GET /v1/kernels,
 * GET /v1/devices, hints) show each folder as it is now: its kernel's newest version, or the
 * error its files give. Changed by the rescan only (the refresh lock held) and then under the
 * registry's write lock too, so that request threads read the array and these fields under the
 * read lock. */
typedef struct catalog_kfolder {
    char *dir;
    char name[KSPEC_MAX_NAME + 1]; /* the kernel's name once loaded (the folder's before) */
    unsigned long long stamp;
    int loaded;  /* a version of it is in the registry */
    int gone;    /* its spec.json was not there at the last rescan */
    int invalid; /* its files do not load now (error says why); its versions are not offered */
    char error[CATALOG_INVALID_ERROR + 1];
} catalog_kfolder;

/* A name of the kernels table and when it was last fetched (rate limits). */
typedef struct catalog_kname {
    char name[KSPEC_MAX_NAME + 1];
    uint64_t fetched_ns;
} catalog_kname;

typedef struct catalog_versions {
    pthread_rwlock_t
        lock;         /* guards n, each entry's mutable fields, and (for readers) the folders */
    catalog_kver **v; /* append-only */
    int n;
    size_t cap;
    unsigned long seq;
    pthread_mutex_t refresh; /* one refresh at a time; guards what follows */
    catalog_kfolder *folders;
    int n_folders;
    uint64_t scanned_ns; /* last folder rescan */
    char **kdirs;        /* the --kernels folders, listed again by each rescan */
    int n_kdirs;
    int folders_full; /* CATALOG_MAX_FOLDERS reached (logged once) */
    catalog_kname *names;
    int n_names;
    size_t cap_names;
    catalog_kernel_fetch fetch;
    void *ctx;
    kspec_limits limits[KSPEC_N_KINDS];
    int has_limits[KSPEC_N_KINDS];
    char *sources_dir; /* <cache_dir>-sources: the content-addressed copies the runners compile */
} catalog_versions;

/* Registry (catalog_versions.c). */
catalog_versions *catalog_versions_new(void);
void catalog_versions_free(catalog_versions *r);
/* Appends a version (the write lock held); NULL past CATALOG_MAX_VERSIONS (logged) or out of
 * memory. k is owned by the registry from then on (owned 1). */
catalog_kver *catalog_versions_append(catalog_versions *r, kernel_spec *k, const char *name,
                                      const char *version, int stored);
/* Exactly (name, version), or NULL; a folder's newest version not gone, or NULL (read lock held).
 */
const catalog_kver *catalog_versions_find(const catalog_versions *r, const char *name,
                                          const char *version);
const catalog_kver *catalog_versions_folder_newest(const catalog_versions *r, const char *name);

/* Kernel folders (catalog_folders.c). A folder's version loaded at start (k owned by the caller's
 * specs: not freed here), or a folder whose spec did not load at start (its name, why); 0 or -1
 * (out of memory). */
int catalog_folders_add(catalog *c, kernel_spec *k, const char *dir);
int catalog_folders_add_invalid(catalog *c, const char *dir, const char *name, const char *why);
/* Copies the --kernels folders that rescans list for new sub-folders. 0 or -1 (out of memory). */
int catalog_folders_set_dirs(catalog_versions *r, const char *const *dirs, int n);
/* Loads the folders whose files changed and the new ones, at most every CATALOG_RESCAN_MS (force:
 * every CATALOG_KERNEL_MISS_MS). Takes the refresh lock, then the write lock: never call it with
 * the registry's lock held. */
void catalog_folders_rescan(const catalog *c, int force);
/* Configurations of e's default problem on each of c's devices ([n_devs], -1 where it is not
 * offered or cannot be counted), counted on the first call (outside any lock: an enumeration of the
 * space, milliseconds to a second) and kept with e; NULL when there are no devices or out of
 * memory. Any thread. */
const long long *catalog_folders_counts(const catalog *c, catalog_kver *e);

/* One kernel folder as the listings show it. */
typedef struct catalog_folder_item {
    char name[KSPEC_MAX_NAME + 1];
    const kernel_spec *k; /* its current version; NULL: its files do not load now */
    catalog_kver *v;      /* k's registry entry (catalog_folders_counts), NULL with k */
    char error[CATALOG_INVALID_ERROR + 1]; /* k NULL: why */
} catalog_folder_item;
/* The kernel folders present now (rescanned first, rate-limited), in folder order: a copy taken
 * under the read lock (k and v live until catalog_free), malloc'd (the caller frees it); *n
 * their count. NULL with *n 0 when there are none or out of memory. */
catalog_folder_item *catalog_folders_list(const catalog *c, int *n);
/* The error of a kernel folder named name whose files do not load (why): KT_ERR_KERNEL_INVALID,
 * "kernel <name> cannot be used: <why>", the hint to fix the file (no restart). */
void catalog_folder_error(const char *name, const char *why, kt_error *err);

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
    kernel_spec **specs; /* the folders' versions loaded at start (owned; the listings read the
                            registry's folders, catalog_folders_list) */
    int n_specs;
    size_t cap_specs;
    catalog_fleet *fleet; /* devices known from the fleet; mutable behind its lock */
    /* Accel devices (catalog_accel.c), from catalog_options.accel_devices_path. */
    catalog_accel_dev *accel;
    int n_accel;
    char (*accel_hash)[17]; /* [accel kernel index]: accel_kernel_hash in hex (the key's) */
    char **accel_kernels;   /* [kernel * n_accel + dev]: the /v1/kernels entry, compact JSON */
    /* Neural transformations (catalog_neural.c): the preset networks of
     * catalog_options.networks_dir (NULL: none) and the process's legality cache. */
    nn_presets *networks;
    nn_legality *legality;
    double neural_check_timeout_s; /* catalog_options', default filled */
    catalog_versions *versions;    /* every kernel version; mutable behind its lock */
};

/* 1 when device d can run kernel k (available, and k has a variant of its kind). */
int catalog_offers(const catalog_device *d, const kernel_spec *k);
/* The canonical problem of a dataset (new reference): {"problem_size": recorded}, or {} when the
 * file records none; NULL when out of memory. Parsed from text so that threads never share a
 * json_t. */
json_t *catalog_canonical_problem(const replay_dataset *ds);

catalog_fleet *catalog_fleet_new(void);
void catalog_fleet_free(catalog_fleet *f);
/* A fleet device named name: with klass NULL the live one served by the most hosts (refreshing
 * first when the copy is old, or on a miss); with klass and toolchain the one present with exactly
 * those (a stored job's). NULL when none. The record stays valid until catalog_free. */
const catalog_device *catalog_fleet_find(const catalog *c, const char *name, const char *klass,
                                         const char *toolchain);
/* The live fleet device of class klass served by the most hosts (refreshing as catalog_fleet_find
 * does), or NULL. */
const catalog_device *catalog_fleet_find_class(const catalog *c, const char *klass);
/* The live pick for name from the copy already fetched (no refresh), or NULL. */
const catalog_device *catalog_fleet_find_known(const catalog *c, const char *name);
/* Up to max names of live fleet devices this process does not serve itself (stable pointers). */
int catalog_fleet_names(const catalog *c, const char **names, int max);
/* One device's JSON for /v1/devices (kernels offered from this catalog's specs). */
json_t *catalog_real_device_json(const catalog *c, const catalog_device *d);

/* Neural problems (catalog_neural.c): loads the preset networks of dir (NULL or "": none) and
 * makes the legality cache (its small data set in <dir>/data/fashion-mnist-small). 0 or -1 with
 * KT_ERR_CONFIG. */
int catalog_networks_load(catalog *c, const char *dir, double check_timeout_s, kt_error *err);

/* Accel devices (catalog_accel.c). Loads the devices file into c (path NULL or "": none); 0 or -1
 * with KT_ERR_CONFIG. */
int catalog_accel_load(catalog *c, const char *path, kt_error *err);
void catalog_accel_free(catalog *c);
/* The accel device entry of a name, or NULL. */
const catalog_accel_dev *catalog_accel_find(const catalog *c, const char *device);
/* catalog_resolve on an accel device (with_space 0: key and problem only). */
int catalog_accel_resolve(const catalog *c, const catalog_accel_dev *a, const char *kernel,
                          const json_t *problem, int with_space, target *out, kt_error *err);
/* Appends the accel devices' /v1/devices entries, /v1/kernels entries (merged by kernel name),
 * fleet records (kind "accel") to arr. */
void catalog_accel_devices_json(const catalog *c, json_t *arr);
void catalog_accel_kernels_json(const catalog *c, json_t *arr);
void catalog_accel_records_json(const catalog *c, json_t *arr);

#endif
