/* catalog/catalog — the registry: scans the dataset folders into replay devices and, with kernel
 * folders, takes the probed real devices and loads the kernel specs (with the space size of each
 * kernel's default problem on each device), loads the accel devices file (catalog_accel.c);
 * catalog_free. Lookups are in catalog_lookup.c,
 * resolution in catalog_resolve.c, the JSON views in catalog_json.c. */
#include "catalog/catalog_impl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/array.h"
#include "core/early_stop.h"
#include "core/log.h"

#define CATALOG_MAX_FILES   4096 /* dataset files per folder */
#define CATALOG_MAX_KERNELS 1024 /* kernel folders per kernel folder */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dataset(catalog *c, replay_dataset *ds)
{
    const replay_dataset *old = catalog_find_replay(c, ds->device);
    if (old) {
        log_warn("dataset %s: device %s is already loaded from %s; skipped", ds->file, ds->device,
                 old->file);
        dataset_free(ds);
        return 0;
    }
    if (KT_ARRAY_GROW(c->ds, c->cap, (size_t)c->n + 1, INT_MAX) < 0) {
        dataset_free(ds);
        return -1;
    }
    c->ds[c->n++] = ds;
    log_info("catalog: %s from %s (%llu configurations, %llu valid)", ds->device, ds->file,
             (unsigned long long)space_count(ds->sp), (unsigned long long)ds->n_valid);
    return 0;
}

/* Reads the names in dir that keep() accepts (NULL: every name not starting with '.'), at most max
 * (more are ignored with a warning), sorted so that every start sees them in the same order. *names
 * is malloc'd (free with free_names). what names the folder in messages ("dataset", "kernel"). */
static int list_folder(const char *dir, const char *what, int max, int (*keep)(const char *name),
                       char ***names_out, int *n_out, kt_error *err)
{
    char **names = NULL;
    int n = 0, rc = -1;
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d) {
        kt_error_set(err, KT_ERR_CONFIG, "%s folder %.300s cannot be read: %s", what, dir,
                     strerror(errno));
        goto out;
    }
    names = calloc((size_t)max, sizeof *names);
    if (!names) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || (keep && !keep(e->d_name)))
            continue;
        if (n == max) {
            log_warn("%s folder %s: more than %d entries; the rest are ignored", what, dir, max);
            break;
        }
        if (!(names[n] = strdup(e->d_name))) {
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
            goto out;
        }
        n++;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    rc = 0;
out:
    if (d)
        closedir(d);
    if (rc < 0) {
        for (int i = 0; names && i < n; i++)
            free(names[i]);
        free(names);
        names = NULL;
        n = 0;
    }
    *names_out = names;
    *n_out = n;
    return rc;
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static int is_dataset_file(const char *name)
{
    return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

/* One entry name of the folder dir, loaded into c or skipped with a warning: 0, or -1 when out of
 * memory. ctx: what the scan was given for it. */
typedef int (*folder_entry_fn)(catalog *c, const char *dir, const char *name, const void *ctx);

/* Every entry of dir that keep() accepts (list_folder), each given to load in name order so that
 * duplicates resolve the same way on every start. */
static int scan_folder(catalog *c, const char *dir, const char *what, int max,
                       int (*keep)(const char *name), folder_entry_fn load, const void *ctx,
                       kt_error *err)
{
    char **names = NULL;
    int n = 0, rc = 0;
    if (list_folder(dir, what, max, keep, &names, &n, err) < 0)
        return -1;
    for (int i = 0; i < n && rc == 0; i++)
        rc = load(c, dir, names[i], ctx);
    if (rc < 0)
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    free_names(names, n);
    return rc;
}

/* A *.json / *.json.gz of a dataset folder. */
static int load_dataset_entry(catalog *c, const char *dir, const char *name, const void *ctx)
{
    char path[PATH_MAX], base[256], why[512];
    struct stat st;
    (void)ctx;
    int w = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        log_warn("dataset %s/%s: not a readable regular file; skipped", dir, name);
        return 0;
    }
    size_t blen = strlen(name) - (ends_with(name, ".gz") ? 8 : 5);
    snprintf(base, sizeof base, "%.*s", (int)(blen < sizeof base ? blen : sizeof base - 1), name);
    why[0] = '\0';
    replay_dataset *ds = dataset_load(path, base, why, sizeof why);
    if (!ds) {
        log_warn("dataset %s: %s; skipped", path, why);
        return 0;
    }
    return add_dataset(c, ds);
}

/* Copies opt into out with the defaults filled and checks it; out's strings still point into opt.
 */
static int resolve_options(const catalog_real_options *opt, catalog_real_options *out,
                           kt_error *err)
{
    *out = *opt;
    out->kernel_dirs = NULL;
    if (!opt->runner || !opt->runner[0] || !opt->cache_dir || !opt->cache_dir[0])
        return kt_error_set(err, KT_ERR_CONFIG,
                            "real measurement needs the runner binary and a cache folder");
    if (!out->min_repeats)
        out->min_repeats = 5;
    if (!out->max_repeats)
        out->max_repeats = 100;
    if (out->min_seconds == 0)
        out->min_seconds = 0.2;
    if (out->max_seconds == 0)
        out->max_seconds = 3.0;
    if (out->compile_timeout_s == 0)
        out->compile_timeout_s = 60.0;
    if (out->run_timeout_s == 0)
        out->run_timeout_s = 60.0;
    if (out->early_stop_after == 0)
        out->early_stop_after = KT_EARLY_STOP_AFTER;
    if (out->min_repeats < 1 || out->max_repeats < out->min_repeats || !(out->min_seconds >= 0) ||
        !(out->max_seconds >= out->min_seconds) || !(out->compile_timeout_s > 0) ||
        !(out->run_timeout_s > 0) || !isfinite(out->max_seconds) ||
        !isfinite(out->compile_timeout_s) || !isfinite(out->run_timeout_s) || out->cpu_core < -1 ||
        !(out->slow_factor >= 0) || !isfinite(out->slow_factor) || out->cache_max_mb < -1 ||
        out->early_stop_after < -1)
        return kt_error_set(err, KT_ERR_CONFIG,
                            "measurement options are not consistent (repeats %d..%d, seconds "
                            "%g..%g, timeouts %g s / %g s, cpu core %d)",
                            out->min_repeats, out->max_repeats, out->min_seconds, out->max_seconds,
                            out->compile_timeout_s, out->run_timeout_s, out->cpu_core);
    return 0;
}

static int check_kernel_dirs(const catalog_real_options *opt, kt_error *err)
{
    for (int i = 0; i < opt->n_kernel_dirs; i++) {
        struct stat st;
        if (!opt->kernel_dirs[i] || stat(opt->kernel_dirs[i], &st) != 0 || !S_ISDIR(st.st_mode))
            return kt_error_set(err, KT_ERR_CONFIG, "kernel folder %.300s cannot be read",
                                opt->kernel_dirs[i] ? opt->kernel_dirs[i] : "(null)");
    }
    return 0;
}

int catalog_real_check(const catalog_real_options *real, kt_error *err)
{
    catalog_real_options resolved;
    if (!real || real->n_kernel_dirs <= 0)
        return 0;
    if (!real->kernel_dirs)
        return kt_error_set(err, KT_ERR_CONFIG, "no kernel folders given");
    if (resolve_options(real, &resolved, err) < 0)
        return -1;
    return check_kernel_dirs(real, err);
}

static int set_measure_options(catalog *c, const catalog_real_options *opt, kt_error *err)
{
    if (resolve_options(opt, &c->opt, err) < 0)
        return -1;
    if (!(c->runner = strdup(opt->runner)) || !(c->cache_dir = strdup(opt->cache_dir)))
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    c->opt.runner = c->runner;
    c->opt.cache_dir = c->cache_dir;
    return 0;
}

/* Every available device gets the lock a backend holds while it measures on it; each must name its
 * class and toolchain (the results key). */
static int give_locks(catalog *c, kt_error *err)
{
    for (int i = 0; i < c->n_devs; i++) {
        catalog_device *d = &c->devs[i];
        if (!d->available || d->lock)
            continue;
        if (!d->klass || !d->toolchain)
            return kt_error_set(err, KT_ERR_CONFIG, "device %s has no %s", d->name,
                                d->klass ? "toolchain" : "device class");
        d->lock = malloc(sizeof *d->lock);
        if (!d->lock || pthread_mutex_init(d->lock, NULL) != 0) {
            free(d->lock);
            d->lock = NULL;
            return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        }
    }
    return 0;
}

void catalog_devices_free(catalog_device *devs, int n)
{
    for (int i = 0; devs && i < n; i++) {
        free(devs[i].reason);
        free(devs[i].klass);
        free(devs[i].toolchain);
        free(devs[i].description_text);
        if (devs[i].lock) {
            pthread_mutex_destroy(devs[i].lock);
            free(devs[i].lock);
        }
    }
    free(devs);
}

/* A loaded folder's spec (sub: its folder, folder: the sub-folder's name); a second folder of a
 * kernel name is kept as invalid, with why. */
static int add_spec(catalog *c, kernel_spec *k, const char *sub, const char *folder)
{
    const kernel_spec *old = NULL;
    for (int i = 0; i < c->n_specs && !old; i++)
        old = strcmp(c->specs[i]->name, k->name) == 0 ? c->specs[i] : NULL;
    if (old) {
        char why[600];
        snprintf(why, sizeof why,
                 "spec.json: name: kernel '%s' is loaded from %.300s already: choose another name",
                 k->name, old->dir);
        log_warn("kernel %s: %s; skipped", sub, why);
        kernel_spec_free(k);
        return catalog_folders_add_invalid(c, sub, folder, why);
    }
    if (KT_ARRAY_GROW(c->specs, c->cap_specs, (size_t)c->n_specs + 1, INT_MAX) < 0) {
        kernel_spec_free(k);
        return -1;
    }
    c->specs[c->n_specs++] = k;
    if (catalog_folders_add(c, k, k->dir) < 0)
        return -1;
    log_info("catalog: kernel %s from %s (%s%s%s)", k->name, k->path,
             k->variants[KSPEC_CPU].present ? "cpu" : "",
             k->variants[KSPEC_CPU].present && k->variants[KSPEC_CUDA].present ? ", " : "",
             k->variants[KSPEC_CUDA].present ? "cuda" : "");
    return 0;
}

/* <dir>/<name>/spec.json of a kernel folder's sub-folder that has one; ctx: the device limits
 * (kspec_limits *const [KSPEC_N_KINDS], or NULL). */
static int load_kernel_entry(catalog *c, const char *dir, const char *name, const void *ctx)
{
    const kspec_limits *const *limits = ctx;
    char sub[PATH_MAX], spec[PATH_MAX], why[1024];
    struct stat st;
    int w = snprintf(sub, sizeof sub, "%s/%s", dir, name);
    int w2 = snprintf(spec, sizeof spec, "%s/spec.json", sub);
    if (w < 0 || (size_t)w >= sizeof sub || w2 < 0 || (size_t)w2 >= sizeof spec ||
        stat(sub, &st) != 0 || !S_ISDIR(st.st_mode) || stat(spec, &st) != 0)
        return 0; /* not a kernel folder (README.md, include folders, ...) */
    kernel_spec *k = kernel_spec_load(sub, limits, why, sizeof why);
    if (!k) {
        log_warn("kernel %s: %s; skipped", sub, why);
        return catalog_folders_add_invalid(c, sub, name, why);
    }
    return add_spec(c, k, sub, name);
}

/* Real measurement over the devices already in c (handed to catalog_new_real). */
static int real_init(catalog *c, const catalog_real_options *opt, kt_error *err)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {NULL, NULL};
    if (set_measure_options(c, opt, err) < 0)
        return -1;
    c->real = 1;
    if (check_kernel_dirs(opt, err) < 0 || give_locks(c, err) < 0)
        return -1;
    /* Defaults are checked against this machine's cpu and its first CUDA device. */
    for (int d = c->n_devs - 1; d >= 0; d--) {
        if (c->devs[d].available)
            limits[c->devs[d].kind] = &c->devs[d].limits;
    }
    /* Kernels loaded later (an edited folder, a stored kernel) are checked the same way. */
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++) {
        c->versions->has_limits[kind] = limits[kind] != NULL;
        if (limits[kind])
            c->versions->limits[kind] = *limits[kind];
    }
    /* Absolute: the runners take absolute source paths only (issue 27), and a relative cache
     * folder (ktune bench's default var/cache) would name the sources from this process's cwd. */
    char cwd[PATH_MAX] = "";
    if (c->cache_dir[0] != '/' && !getcwd(cwd, sizeof cwd))
        return kt_error_set(err, KT_ERR_CONFIG,
                            "the cache folder %s is relative and the working "
                            "folder cannot be read: %s",
                            c->cache_dir, strerror(errno));
    size_t len = strlen(cwd) + 1 + strlen(c->cache_dir) + sizeof "-sources";
    if (!(c->versions->sources_dir = malloc(len)))
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    snprintf(c->versions->sources_dir, len, "%s%s%s-sources", cwd, cwd[0] ? "/" : "", c->cache_dir);
    /* Unreadable to the runners' user (issue 27): runners get the texts in their requests, so a
     * kernel cannot read another kernel's sources here; a folder made by an older ktuned (0755)
     * is closed too. */
    int made = mkdir(c->versions->sources_dir, 0700) == 0 || errno == EEXIST;
    if ((made && chmod(c->versions->sources_dir, 0700) != 0) || (!made && errno != ENOENT))
        log_warn("the kernel sources folder %s cannot be made private (0700): %s",
                 c->versions->sources_dir, strerror(errno));
    if (catalog_folders_set_dirs(c->versions, opt->kernel_dirs, opt->n_kernel_dirs) < 0)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    /* from the registry's canonical spelling of each folder, as every later rescan lists them */
    for (int i = 0; i < c->versions->n_kdirs; i++) {
        if (scan_folder(c, c->versions->kdirs[i], "kernel", CATALOG_MAX_KERNELS, NULL,
                        load_kernel_entry, limits, err) < 0)
            return -1;
    }
    return 0;
}

catalog *catalog_new(const catalog_options *opt, kt_error *err)
{
    return catalog_new_real(opt, NULL, NULL, 0, err);
}

catalog *catalog_new_real(const catalog_options *opt, const catalog_real_options *real,
                          catalog_device *devs, int n_devs, kt_error *err)
{
    catalog *c = NULL;
    int ok = 0, use_real = real && real->n_kernel_dirs > 0;

    if (!opt || opt->n_dataset_dirs < 0 || (opt->n_dataset_dirs > 0 && !opt->dataset_dirs)) {
        kt_error_set(err, KT_ERR_CONFIG, "no dataset folders given");
        goto out;
    }
    if (!isfinite(opt->replay_speed) || opt->replay_speed < 0) {
        kt_error_set(err, KT_ERR_CONFIG, "replay speed must be a number >= 0");
        goto out;
    }
    if (real && real->n_kernel_dirs > 0 && !real->kernel_dirs) {
        kt_error_set(err, KT_ERR_CONFIG, "no kernel folders given");
        goto out;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    c->replay_speed = opt->replay_speed;
    c->fleet = catalog_fleet_new();
    c->versions = catalog_versions_new();
    if (!c->fleet || !c->versions) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (use_real && devs && n_devs > 0) {
        c->devs = devs;
        c->n_devs = n_devs;
        devs = NULL;
    }
    for (int i = 0; i < opt->n_dataset_dirs; i++) {
        if (!opt->dataset_dirs[i] ||
            scan_folder(c, opt->dataset_dirs[i], "dataset", CATALOG_MAX_FILES, is_dataset_file,
                        load_dataset_entry, NULL, err) < 0) {
            if (!opt->dataset_dirs[i])
                kt_error_set(err, KT_ERR_CONFIG, "dataset folder %d is not named", i);
            goto out;
        }
    }
    if (use_real && real_init(c, real, err) < 0)
        goto out;
    if (catalog_accel_load(c, opt->accel_devices_path, err) < 0 ||
        catalog_networks_load(c, opt->networks_dir, opt->neural_check_timeout_s, err) < 0)
        goto out;
    ok = 1;
out:
    catalog_devices_free(devs, devs ? n_devs : 0); /* the devices not taken */
    if (!ok) {
        catalog_free(c);
        c = NULL;
    }
    return c;
}

void catalog_free(catalog *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        dataset_free(c->ds[i]);
    free(c->ds);
    for (int i = 0; i < c->n_specs; i++)
        kernel_spec_free(c->specs[i]);
    free(c->specs);
    catalog_devices_free(c->devs, c->n_devs);
    free(c->runner);
    free(c->cache_dir);
    catalog_fleet_free(c->fleet);
    catalog_versions_free(c->versions);
    catalog_accel_free(c);
    nn_presets_free(c->networks);
    nn_legality_free(c->legality);
    free(c);
}
