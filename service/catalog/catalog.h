/* catalog/catalog — what can be tuned where: the devices ktuned knows (one `replay:<space>` device
 * per dataset file of the dataset folders; `cpu` and `cuda:N` as probed by ktune-runner when kernel
 * folders are given), the kernels each device offers, and how a request's (kernel, device, problem)
 * becomes a tuning target with its space. Built once at start-up, then read-only and shared by all
 * threads. Replay targets borrow the catalog's spaces; cpu / cuda targets own theirs.
 *
 * Accel devices ("accel:<name>", issue 13) come from a devices file (catalog_options): analytical
 * accelerator cost models evaluated in process; their targets own their spaces.
 *
 * The catalog never starts a process: with real measurement the caller probes the devices first
 * (measure/device.h: device_discover) and hands the records to catalog_new_real.
 *
 * Devices served by worker processes elsewhere (roles, issue #11) are known from the fleet
 * (catalog/catalog_fleet.h): the one part that changes after start-up, behind its own lock;
 * catalog_resolve and catalog_reopen use them for device names this process does not serve (or, on
 * reopen, serves with another class or toolchain than the stored key's).
 *
 * Lifecycle: [device_discover ->] catalog_new / catalog_new_real -> catalog_resolve / lookups /
 * *_json (any thread) -> catalog_free (after every target is released and every backend closed). */
#ifndef KT_CATALOG_CATALOG_H
#define KT_CATALOG_CATALOG_H

#include <jansson.h>
#include <stddef.h>

#include "core/device_name.h"
#include "core/error.h"
#include "core/rng.h"
#include "space/space.h"
#include "accel/accel_device.h"
#include "accel/accel_kernel.h"
#include "catalog/catalog_device.h"
#include "catalog/dataset.h"
#include "catalog/kernel_spec.h"
#include "catalog/target.h"

typedef struct catalog catalog;

typedef struct catalog_options {
    const char *const *dataset_dirs; /* folders scanned for *.json and *.json.gz */
    int n_dataset_dirs;
    double replay_speed; /* replay sleeps speed x recorded seconds per trial; 0 = no sleep */
    /* The accel devices file (accel/accel_device.h: analytical accelerators, served in process as
     * "accel:<name>"); NULL or "" = none. Config, not probed: every role loads it. A file that
     * cannot be loaded is KT_ERR_CONFIG. */
    const char *accel_devices_path;
    /* The preset networks of neural problems (catalog/catalog_neural.h: every *.json of the
     * folder; its data/fashion-mnist-small is the small data set); NULL or "" = none. A folder
     * that cannot be loaded is KT_ERR_CONFIG. */
    const char *networks_dir;
    /* Seconds one legality check of a neural problem may compute (the Fisher Potentials of the
     * original and the candidate, catalog_neural_check) before its trial ends as timeout; 0: the
     * default, CATALOG_NEURAL_CHECK_TIMEOUT_S (catalog/catalog_neural.h). */
    double neural_check_timeout_s;
} catalog_options;

/* Real measurement (devices cpu and cuda:N), for catalog_new_real; zero numbers take the defaults
 * in brackets. Kept apart from catalog_options so that replay-only callers stay as they are. */
typedef struct catalog_real_options {
    const char *const *kernel_dirs; /* folders of kernel folders (<dir>/<name>/spec.json) */
    int n_kernel_dirs;              /* 0: no real devices */
    const char *runner;             /* the ktune-runner binary */
    const char *cache_dir;          /* the runners' compile cache; created when missing */
    int cpu_core;                   /* core cpu runners are pinned to (--cpu-core); -1 for none */
    /* Borrowed: the service leaves cpu_core to each cpu measurement while it runs
     * (measure/core_reserve.h); NULL: nothing moved. */
    struct core_reserve *core_reserve;
    int min_repeats;          /* [5] timed runs at least */
    int max_repeats;          /* [100] timed runs at most */
    double min_seconds;       /* [0.2] timing at least this long */
    double max_seconds;       /* [3] timing at most this long */
    double compile_timeout_s; /* [60] */
    double run_timeout_s;     /* [60] run deadline of a target without an ok result yet */
    double slow_factor;   /* [0: off] CPU: a kernel call slower than slow_factor x the target's best
                           * time is given up on (status timeout), see runner PROTOCOL.md */
    int early_stop_after; /* [3: KT_EARLY_STOP_AFTER] repeats before a configuration clearly slower
                           * than its job's best may stop timing (core/early_stop.h); -1: never */
    long long cache_max_mb; /* [the runner's: 2048] MiB of compiled kernels in cache_dir (LRU,
                             * service/runner/README.md "Caching"); -1: unbounded */
} catalog_real_options;

/* Scans the dataset folders; a dataset that cannot be read, parsed or validated is skipped with a
 * warning in the log, a missing folder is an error (KT_ERR_CONFIG). */
catalog *catalog_new(const catalog_options *opt, kt_error *err);
/* The same, with real measurement when real is not NULL and names kernel folders: the measurement
 * options are checked (defaults filled), the kernel specs of the kernel folders loaded (skipped
 * with a warning when invalid; each default configuration checked against the first available
 * device of its kind) and offered on the devices devs[0..n_devs) (as probed by device_discover;
 * unavailable ones are listed with their reason). Takes devs in every case: they are freed by
 * catalog_free, or at once when this fails or real measurement is off. */
catalog *catalog_new_real(const catalog_options *opt, const catalog_real_options *real,
                          catalog_device *devs, int n_devs, kt_error *err);
/* Checks real measurement options as catalog_new_real does (runner and cache folder named, numbers
 * consistent, kernel folders readable); 0 or -1 with KT_ERR_CONFIG. Nothing to check when real is
 * NULL or names no kernel folder. device_discover calls it before starting any runner. */
int catalog_real_check(const catalog_real_options *real, kt_error *err);
void catalog_free(catalog *c);

/* Validates kernel, device and problem (problem may be NULL: all defaults) and fills out with the
 * target: key, canonical problem and space (catalog/target.h). Errors: KT_ERR_UNKNOWN_DEVICE (hint
 * lists devices), KT_ERR_UNKNOWN_KERNEL (hint lists the kernels of that device), KT_ERR_BAD_PROBLEM
 * (names the argument and what is accepted), and for cpu / cuda whatever building the space
 * reports. On success the caller releases out with target_release. */
int catalog_resolve(const catalog *c, const char *kernel, const char *device, const json_t *problem,
                    target *out, kt_error *err);
/* catalog_resolve (with_space 1) or catalog_resolve_key (0) of a kernel version (NULL: the newest
 * ready; catalog_kernel_pick's errors). On replay and accel devices version is not used. */
int catalog_resolve_version(const catalog *c, const char *kernel, const char *version,
                            const char *device, const json_t *problem, int with_space, target *out,
                            kt_error *err);
/* catalog_resolve of exactly that version whatever its status (validating, invalid, retired): a
 * validation's target (worker/validator.c). */
int catalog_resolve_any(const catalog *c, const char *kernel, const char *version,
                        const char *device, const json_t *problem, target *out, kt_error *err);
/* The same validation and key, without the space (out->sp is NULL): for lookups by key
 * (GET /v1/best), which must not pay for enumerating a space. Same errors, except the space's. */
int catalog_resolve_key(const catalog *c, const char *kernel, const char *device,
                        const json_t *problem, target *out, kt_error *err);
/* catalog_resolve_key by device class instead of device name (GET /v1/best?device_class=: a host of
 * the fleet asks for the class it runs on): this process's available device of that class, an
 * accel or replay device of it, else the live fleet record of it served by the most hosts.
 * KT_ERR_UNKNOWN_DEVICE when no device of the class is known; otherwise catalog_resolve_key's. */
int catalog_resolve_class_key(const catalog *c, const char *kernel, const char *device_class,
                              const json_t *problem, target *out, kt_error *err);
/* Opens a target stored earlier (a job's, resolved when the job was made): resolves the stored
 * kernel and device with the stored problem, space included (on this process's device when its
 * class and toolchain are the stored key's, else on the fleet's record of that class and
 * toolchain), and checks that the catalog still gives the same key. Errors: those of
 * catalog_resolve; KT_ERR_CONFLICT when the kernel's source (or dataset) changed since (kernel_hash
 * differs); KT_ERR_UNKNOWN_DEVICE when the device is now of another class (results would be keyed
 * under the wrong one); KT_ERR_BAD_PROBLEM when the problem no longer has the same canonical form;
 * KT_ERR_TOOLCHAIN_CHANGED when the device's toolchain (compiler, CUDA driver or NVRTC version) is
 * not the stored key's (a NULL stored toolchain included). */
int catalog_reopen(const catalog *c, const target_key *stored, const json_t *problem, target *out,
                   kt_error *err);

/* The "external" device (issue 27, catalog_external.c): a kernel measured by the caller's own
 * harness through ask/tell (api/ask_tell.c). Its space is sent inline with the request and stored
 * with the job; nothing of it is in the catalog, and no process serves the device, so its trials
 * are only leased to a harness. Key: kernel = the request's name, device "external", device_class
 * = the caller's, kernel_hash = kernel_version when given, else "space:" and 16 hex digits of the
 * canonical space, toolchain "external", problem_key = the canonical problem (numbers, and lists
 * of numbers such as Kernel Tuner's problem_size). */
#define CATALOG_EXTERNAL_DEVICE           "external"
#define CATALOG_EXTERNAL_TOOLCHAIN        "external"
#define CATALOG_EXTERNAL_MAX_CLASS        128 /* device_class: printable ASCII */
#define CATALOG_EXTERNAL_MAX_VERSION      64  /* kernel_version: [A-Za-z0-9._:-] */
#define CATALOG_EXTERNAL_MAX_PARAMS       64
#define CATALOG_EXTERNAL_MAX_VALUES       4096
#define CATALOG_EXTERNAL_MAX_RESTRICTIONS 256
#define CATALOG_EXTERNAL_MAX_EXPR         4096
#define CATALOG_EXTERNAL_MAX_ARGS         64     /* problem arguments */
#define CATALOG_EXTERNAL_MAX_DIMS         8      /* numbers of a list argument (problem_size) */
#define CATALOG_EXTERNAL_MAX_CONFIGS      100000 /* space.configurations, the explicit list */

/* 1 when device names the external device. */
int catalog_is_external(const char *device);
/* Checks kernel_version and device_class as the key will hold them: 0, or -1 with a 400 naming
 * the field. version may be NULL (not given). */
int catalog_external_check_names(const char *version, const char *device_class, kt_error *err);
/* The canonical problem of an external target (new reference): problem (NULL or JSON null = {})
 * checked, an object of at most CATALOG_EXTERNAL_MAX_ARGS numbers (or lists of 1 to
 * CATALOG_EXTERNAL_MAX_DIMS numbers, which restrictions do not read) named by identifiers; *key_out
 * (malloc'd) its compact JSON with sorted keys. NULL with KT_ERR_BAD_PROBLEM naming the member. */
json_t *catalog_external_problem(const json_t *problem, char **key_out, kt_error *err);
/* Resolves an external target from a request: space is {"parameters": [{"name","values"}],
 * "restrictions": [...], "default": {...}} (restrictions see the parameters and the problem's
 * numeric arguments), or with "configurations": [[v, ...], ...] instead of restrictions, the
 * explicit list of valid configurations (an imported Kernel Tuner cache); every error is a 400
 * whose message starts with the JSON path ("space.restrictions[1]: unexpected '&' at column 13:
 * write \"and\""). with_space 0 checks and keys without enumerating (sp NULL). On success out owns
 * everything (target_release). */
int catalog_external_resolve(const char *kernel, const char *kernel_version,
                             const char *device_class, const json_t *space, const json_t *problem,
                             int with_space, target *out, kt_error *err);
/* The key of an external target without its space (GET /v1/best): kernel_version is the key's
 * kernel_hash (required here), problem checked as above; sp and space_def NULL. */
int catalog_external_key(const char *kernel, const char *kernel_version, const char *device_class,
                         const json_t *problem, target *out, kt_error *err);
/* catalog_reopen for a stored job whose space was stored with it (space: jobs.space, NULL for a
 * catalog device: then exactly catalog_reopen). An external key is rebuilt from the stored space
 * and problem and must give the stored problem_key; the stored kernel_hash is kept. */
int catalog_reopen_space(const catalog *c, const target_key *stored, const json_t *problem,
                         const json_t *space, target *out, kt_error *err);
/* The space's "default" of an external target (new reference), NULL when it has none. */
json_t *catalog_external_default(const target *t);

/* The default configuration of the target's kernel variant on its device ({"param": value}, new
 * reference): the spec's "default" for the device's limits (kernel_spec_default), what a searcher's
 * "start": "default" means (searcher_options_resolve_start). NULL for replay and accel targets and
 * for a device this catalog no longer knows. Any thread. */
json_t *catalog_default_config(const catalog *c, const target *t);

/* Accel devices ("accel:<name>", catalog_accel.c): a target's key is kernel, device, class
 * "accel:<name>:<16 hex digits of accel_device_hash>", kernel_hash accel_kernel_hash as 16 hex
 * digits, toolchain CATALOG_ACCEL_TOOLCHAIN and the canonical problem (presets expanded: a preset
 * and its arguments are the same problem_key); the target owns its space (accel_space_new). */
#define CATALOG_ACCEL_TOOLCHAIN ACCEL_MODEL_VERSION /* "ktune accel model 1" */
/* The most meta-statistics a problem has (accel_meta: every level and tensor, then 3). */
#define CATALOG_ACCEL_META_MAX (ACCEL_LEVELS * ACCEL_MAX_TENSORS + 3)

/* The accel device behind a name ("accel:mindmap"), or NULL (not an accel device of this catalog).
 * Owned by the catalog. */
const accel_device *catalog_find_accel(const catalog *c, const char *device);
/* The problem of an accel target (parsed from its problem_key: no json_t is shared). 0, or -1 with
 * KT_ERR_BAD_REQUEST when t is not a target of an accel device of c. Any thread. */
int catalog_accel_problem(const catalog *c, const target *t, accel_problem *out, kt_error *err);
/* A random problem of the kernel's training distribution (accel_problem_sample), canonical JSON
 * (new reference), for surrogate training. KT_ERR_NOT_IMPLEMENTED when device is not an accel
 * device (no cost model to train on), KT_ERR_UNKNOWN_KERNEL when it does not offer kernel. */
json_t *catalog_sample_problem(const catalog *c, const char *kernel, const char *device,
                               kt_rng *rng, kt_error *err);
/* Evaluates configuration id of an accel target with the cost model: 1 valid (meta[0..*n_out) the
 * meta-statistics of accel_meta and, when objective_w is not NULL, objective_w[0..*n_out) the
 * weights of accel_meta_objective), 0 invalid (the mapping breaks a limit), -1 with err (not an
 * accel target, an id outside the space, cap too small). Any thread. */
int catalog_accel_meta(const catalog *c, const target *t, config_id id, double *meta, int cap,
                       double *objective_w, int *n_out, kt_error *err);

/* This process's own devices (what it registers and measures on; the fleet's are in
 * catalog_fleet_devices_json):
 * [{"name","kind","class","available","reason"?,"description":{...},"kernels":[...]}] */
json_t *catalog_devices_json(const catalog *c);
/* GET /v1/kernels:
 * [{"name","status":"ready","devices":[{"device","problem":{defaults},"parameters":[{"name","values"}],
 * "restrictions":[...],"configurations":N}]}]; catalog kernels add "summary" and per device
 * "problem_arguments":[{"name","min","max","default"}], "problem_restrictions", "default" and
 * "hash" ("configurations" is then the count for the default problem). Kernel folders as they are
 * now (rescanned: added, edited, fixed, removed); one whose files do not load
 * (catalog_kernel_invalid) follows as {"name","status":"invalid","origin":"folder","devices":[],
 * "error":{"code","message","hint"}}. */
json_t *catalog_kernels_json(const catalog *c);
int catalog_num_devices(const catalog *c);
/* The "devices" of a /v1/kernels entry for one kernel version (a stored kernel's): each device
 * offering it ("configurations" null: not counted). New reference. */
json_t *catalog_kernel_devices_json(const catalog *c, const kernel_spec *k);

/* --- kernel versions (issue 27, catalog_versions.c) ---------------------------------------------
 * A kernel's version is the hash of everything compiled (kernel_spec.version). A name has many
 * versions: a kernel folder's (loaded at start; its files, and the --kernels folders for new,
 * fixed or removed sub-folders, rescanned at most every CATALOG_RESCAN_MS: a changed file is a new
 * version, a new folder a new kernel, a removed one no longer offered, without a restart) or a
 * stored kernel's (POST /v1/kernels, the kernels table, fetched through the source set below on a
 * miss and at most every CATALOG_KERNEL_FETCH_MS per name). Every version stays loaded until
 * catalog_free, so a job keeps measuring the exact version in its key. */
#define CATALOG_RESCAN_MS       500
#define CATALOG_KERNEL_FETCH_MS 500
/* An exact version a process needs and does not know (a stored job's, a validation's): fetched
 * again after this long (the version exists: it was read from the database). */
#define CATALOG_KERNEL_MISS_MS  50
#define CATALOG_KERNEL_VERSIONS 64   /* versions of a name fetched (the newest) */
#define CATALOG_KERNEL_NAMES    4096 /* names looked up in the kernels table, at most */

typedef enum {
    CATALOG_KERNEL_READY = 0,
    CATALOG_KERNEL_VALIDATING,
    CATALOG_KERNEL_INVALID
} catalog_kernel_status;

/* The stored versions of a kernel name, newest first (at most CATALOG_KERNEL_VERSIONS):
 * [{"version", "status": "validating"|"ready"|"invalid", "log": text|null, "retired": bool,
 * "spec_text": the canonical spec, "files": {"name": "text"}}] (new reference; [] when none);
 * NULL with err when the database cannot answer. */
typedef json_t *(*catalog_kernel_fetch)(void *ctx, const char *name, kt_error *err);
void catalog_kernels_set_source(catalog *c, catalog_kernel_fetch fetch, void *ctx);
/* "validating" / "ready" / "invalid". */
const char *catalog_kernel_status_name(catalog_kernel_status s);

/* The version of name to tune: version given (exactly that one) or NULL (a folder kernel's newest,
 * a stored kernel's newest ready and not retired). Errors: KT_ERR_UNKNOWN_KERNEL (no such name or
 * version; the hint lists the versions), KT_ERR_KERNEL_INVALID (the version is invalid: the log in
 * the message), KT_ERR_KERNEL_VALIDATING (still validating), catalog_kernel_invalid's folder error.
 * Where this process's copy of the stored versions says validating what it would pick or pass
 * over (the version asked for, a newer one), the database is read again first unless a read
 * started after the call did: a version a caller saw ready is picked; where it knows nothing of the
 * name, again after CATALOG_KERNEL_MISS_MS. *out borrowed until catalog_free. */
int catalog_kernel_pick(const catalog *c, const char *name, const char *version,
                        const kernel_spec **out, kt_error *err);
/* Exactly that version of name, whatever its status (a stored target's), or NULL. */
const kernel_spec *catalog_find_kernel_version(const catalog *c, const char *name,
                                               const char *version);
/* The versions of name this process knows that can hold results, newest first (folder: newest
 * loaded first; stored: the table's order, invalid ones left out), up to max; the count. */
int catalog_kernel_versions(const catalog *c, const char *name, char (*out)[KFILES_VERSION_LEN + 1],
                            int max);
/* 1 when name is a kernel folder's (loaded or invalid). */
int catalog_is_folder_kernel(const catalog *c, const char *name);
/* A kernel given as data (POST /v1/kernels: "spec" object and "files" {"name": "text"}): loaded
 * and checked against this catalog's device limits (the spec's first error as "spec: <field path>:
 * <what is wrong>", "files.<name>: ...", KT_ERR_KERNEL_INVALID or the files' own codes); every
 * file must be compiled (a variant's source, the reference, or included by one). data (NULL:
 * none): the uploaded data files (kernel_data.h, "data.<name>: ..."), each named by an init or an
 * answer. The caller frees the spec (kernel_spec_free). */
kernel_spec *catalog_kernel_parse(const catalog *c, const json_t *spec, const json_t *files,
                                  const json_t *data, kt_error *err);
/* The content-addressed copy of k's compiled files (kernel_files_materialise under
 * <cache_dir>-sources), written when missing; its folder in dir. 0, or -1 with KT_ERR_IO. */
int catalog_kernel_sources(const catalog *c, const kernel_spec *k, char *dir, size_t cap,
                           kt_error *err);

/* --- lookups (backends, worker, cli); every pointer is owned by the catalog ---------------------
 */

/* The replay dataset behind a device name ("replay:<space>"), or NULL. */
const replay_dataset *catalog_find_replay(const catalog *c, const char *device);
/* catalog_options.replay_speed. */
double catalog_replay_speed(const catalog *c);
/* "devices: a, b, ... (N more)" into buf, capped; for KT_ERR_UNKNOWN_DEVICE hints. */
void catalog_device_hint(const catalog *c, char *buf, size_t cap);
/* The real device behind a name (available or not), or NULL. */
const catalog_device *catalog_find_real(const catalog *c, const char *device);
/* The current version of the kernel of that name (catalog_kernel_pick with no version: a folder
 * kernel's newest, a stored kernel's newest ready, from this process's copy: no database read
 * beyond its rate limit, for lookups on the hot path), or NULL. */
const kernel_spec *catalog_find_kernel(const catalog *c, const char *name);
/* A kernel folder of that name whose files do not load now (at start, or since an edit; rescanned
 * first) and no loaded kernel of the name: 1 with err set to KT_ERR_KERNEL_INVALID (message:
 * "kernel X cannot be used: spec.json: <field path>: <what is wrong>", hint: fix the file, no
 * restart); 0 (err untouched) otherwise. */
int catalog_kernel_invalid(const catalog *c, const char *name, kt_error *err);
/* The catalog's measurement options, defaults filled (strings owned by the catalog; kernel_dirs is
 * NULL). */
const catalog_real_options *catalog_measure_options(const catalog *c);
/* 1 when real measurement is configured (kernel folders given). */
int catalog_has_real(const catalog *c);
/* With real measurement on: why device ("cpu", "cuda:N") cannot be measured on, or NULL when it
 * can or is not a real device name. */
const char *catalog_real_unavailable(const catalog *c, const char *device);

/* What a device name is here: the one place a name is resolved (catalog_lookup.c). The name is
 * parsed (core/device_name.h) and looked up by its kind: replay -> its dataset, accel -> its
 * device, cpu / cuda -> a real device. */
typedef struct catalog_found_device {
    kt_device dev;                /* parsed; kind valid whenever parsed is 1 */
    int parsed;                   /* 1 when the name parsed (even if nothing here has it) */
    const replay_dataset *replay; /* kind replay */
    const struct catalog_accel_dev *accel; /* kind accel (catalog_impl.h; catalog_find_accel) */
    const catalog_device *real; /* cpu, cuda: this process's own or (fleet) a host's, maybe
                                 * unavailable (real->available 0, real->reason why) */
    const char *unavailable;    /* cpu, cuda with real measurement on and no record: why */
} catalog_found_device;

typedef enum {
    CATALOG_FIND_LOCAL, /* this process's own devices (a backend measures on them) */
    CATALOG_FIND_FLEET, /* and, for cpu / cuda, the fleet's (catalog_fleet.h) */
} catalog_find_scope;

/* Resolves device into *out. 0 when something here has that name: out->replay, out->accel or
 * out->real is set (a real device may be unavailable: the caller says so). -1 with err
 * KT_ERR_UNKNOWN_DEVICE and the hint of the devices there are otherwise: a name that does not
 * parse (the parser's message), "device X is not available: why" (out->unavailable), or
 * "unknown device 'X'" (hip, opencl and external are not in any catalog). want (FLEET only, may
 * be NULL): a stored key, whose class and toolchain pick the fleet record. */
int catalog_find_device(const catalog *c, const char *device, catalog_find_scope scope,
                        const target_key *want, catalog_found_device *out, kt_error *err);

#endif
