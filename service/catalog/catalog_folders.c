/* catalog/catalog_folders — the kernel folders of --kernels (issue 27): the folders listed at
 * start, and those found later (added, or invalid at start), rescanned at most every
 * CATALOG_RESCAN_MS: a changed file is a new version; a folder whose files no longer load keeps its
 * error and is not offered (its versions stay for the jobs keyed by them); a removed one is no
 * longer offered. The listings (GET /v1/kernels, GET /v1/devices, the offers hints) and
 * catalog_is_folder_kernel / catalog_kernel_invalid read the folders as they are now.
 *
 * Locks: the rescan runs under the registry's refresh lock (one at a time) and changes a folder,
 * or the folder array, under the registry's write lock as well; request threads copy what they
 * list under the read lock (catalog_folders_list) and never hold it while rescanning. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/array.h"
#include "core/log.h"
#include "catalog/catalog_impl.h"

int catalog_folders_set_dirs(catalog_versions *r, const char *const *dirs, int n)
{
    if (n <= 0)
        return 0;
    if (!(r->kdirs = calloc((size_t)n, sizeof *r->kdirs)))
        return -1;
    /* Canonical, as the folders loaded at start are named: a folder listed again by a rescan
     * through another spelling of its path (build/../kernels) would be a second folder whose name
     * is taken. A folder that does not resolve (not made yet) is kept as given. */
    for (; r->n_kdirs < n; r->n_kdirs++) {
        char canon[PATH_MAX];
        const char *d = realpath(dirs[r->n_kdirs], canon) ? canon : dirs[r->n_kdirs];
        if (!(r->kdirs[r->n_kdirs] = strdup(d)))
            return -1;
    }
    return 0;
}

/* Appends a copy of *tmpl (dir copied) under the write lock, so that readers see it whole. -1 out
 * of memory; 1 past CATALOG_MAX_FOLDERS (logged once); 0 added. */
static int folder_push(catalog_versions *r, const catalog_kfolder *tmpl)
{
    int rc = -1;
    char *dir = NULL;
    if (r->n_folders >= CATALOG_MAX_FOLDERS) {
        if (!r->folders_full)
            log_warn("kernel %s: this process holds %d kernel folders already; a new folder needs "
                     "a restart",
                     tmpl->dir, CATALOG_MAX_FOLDERS);
        r->folders_full = 1;
        return 1;
    }
    if (!(dir = strdup(tmpl->dir)))
        return -1;
    pthread_rwlock_wrlock(&r->lock);
    if (kt_array_resize((void **)&r->folders, (size_t)r->n_folders + 1, sizeof *r->folders) == 0) {
        r->folders[r->n_folders] = *tmpl;
        r->folders[r->n_folders++].dir = dir;
        dir = NULL;
        rc = 0;
    }
    pthread_rwlock_unlock(&r->lock);
    free(dir);
    return rc;
}

const long long *catalog_folders_counts(const catalog *c, catalog_kver *e)
{
    long long *have = atomic_load(&e->counts), *counts = NULL;
    if (have || !e->k || c->n_devs <= 0)
        return have;
    counts = calloc((size_t)c->n_devs, sizeof *counts);
    for (int d = 0; counts && d < c->n_devs; d++) {
        kspec_problem p;
        kt_error err;
        counts[d] = -1;
        if (!catalog_offers(&c->devs[d], e->k) || kernel_spec_problem(e->k, NULL, &p, &err) < 0)
            continue;
        space *sp = kernel_spec_space(e->k, c->devs[d].kind, &p, &c->devs[d].limits, &err);
        if (!sp) {
            log_warn("kernel %s on %s: the space of the default problem cannot be built: %s",
                     e->k->name, c->devs[d].name, err.message);
            continue;
        }
        counts[d] = (long long)space_count(sp);
        space_free(sp);
    }
    /* another thread may have counted meanwhile: the first stored stays */
    if (counts && !atomic_compare_exchange_strong(&e->counts, &have, counts)) {
        free(counts);
        counts = have;
    }
    return counts;
}

int catalog_folders_add(catalog *c, kernel_spec *k, const char *dir)
{
    catalog_versions *r = c->versions;
    catalog_kfolder f = {.dir = (char *)dir, .stamp = kernel_files_dir_stamp(dir), .loaded = 1};
    snprintf(f.name, sizeof f.name, "%s", k->name);
    int rc = folder_push(r, &f);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    pthread_rwlock_wrlock(&r->lock);
    catalog_kver *e = catalog_versions_append(r, k, k->name, k->version, 0);
    if (e)
        e->owned = 0; /* the catalog's specs own it */
    pthread_rwlock_unlock(&r->lock);
    /* counted now, at start, as before any request: the first listing answers at once */
    if (e && c->n_devs > 0 && !catalog_folders_counts(c, e))
        return -1;
    return e ? 0 : -1;
}

int catalog_folders_add_invalid(catalog *c, const char *dir, const char *name, const char *why)
{
    catalog_kfolder f = {.dir = (char *)dir, .stamp = kernel_files_dir_stamp(dir), .invalid = 1};
    snprintf(f.name, sizeof f.name, "%.*s", KSPEC_MAX_NAME, name);
    snprintf(f.error, sizeof f.error, "%.*s", CATALOG_INVALID_ERROR, why);
    return folder_push(c->versions, &f) < 0 ? -1 : 0;
}

/* 1 when another folder, still there and loaded, holds the kernel name (refresh lock held). */
static int name_taken(const catalog_versions *r, int self, const char *name, const char **dir)
{
    for (int i = 0; i < r->n_folders; i++)
        if (i != self && r->folders[i].loaded && !r->folders[i].gone && !r->folders[i].invalid &&
            strcmp(r->folders[i].name, name) == 0) {
            *dir = r->folders[i].dir;
            return 1;
        }
    return 0;
}

/* Adds the sub-folders of the --kernels folders that have a spec.json and are not known yet (a
 * folder added after start), stamp 0 so that the rescan loads them (refresh lock held). */
static void find_new_folders(catalog_versions *r)
{
    for (int d = 0; d < r->n_kdirs; d++) {
        DIR *dh = opendir(r->kdirs[d]);
        struct dirent *de;
        if (!dh)
            continue;
        while ((de = readdir(dh)) != NULL) {
            char sub[PATH_MAX], spec[PATH_MAX];
            struct stat st;
            int known = 0;
            if (de->d_name[0] == '.')
                continue;
            int w = snprintf(sub, sizeof sub, "%s/%s", r->kdirs[d], de->d_name);
            int w2 = snprintf(spec, sizeof spec, "%s/spec.json", sub);
            if (w < 0 || (size_t)w >= sizeof sub || w2 < 0 || (size_t)w2 >= sizeof spec ||
                stat(sub, &st) != 0 || !S_ISDIR(st.st_mode) || stat(spec, &st) != 0)
                continue; /* not a kernel folder */
            for (int i = 0; i < r->n_folders && !known; i++)
                known = strcmp(r->folders[i].dir, sub) == 0;
            if (known)
                continue;
            catalog_kfolder f = {.dir = sub};
            snprintf(f.name, sizeof f.name, "%.*s", KSPEC_MAX_NAME, de->d_name);
            if (folder_push(r, &f) != 0)
                break;
        }
        closedir(dh);
    }
}

/* Marks the versions of a loaded folder not offered (gone 1) or offered again (write lock held).
 */
static void versions_offered(catalog_versions *r, const char *name, int offered)
{
    for (int i = 0; i < r->n; i++)
        if (!r->v[i]->stored && strcmp(r->v[i]->name, name) == 0)
            r->v[i]->gone = !offered;
}

/* The folder's spec.json is gone: its versions are no longer offered to new requests (targets
 * keyed by them keep them). Refresh lock held. */
static void folder_removed(catalog_versions *r, catalog_kfolder *f)
{
    pthread_rwlock_wrlock(&r->lock);
    f->gone = 1;
    f->invalid = 0;
    f->stamp = 0; /* back again: loaded again */
    if (f->loaded)
        versions_offered(r, f->name, 0);
    pthread_rwlock_unlock(&r->lock);
    log_info("catalog: kernel %s: %s/spec.json was removed; no longer offered", f->name, f->dir);
}

/* The folder's files do not load (why): the listings show why, requests naming it are answered
 * with it (catalog_kernel_invalid), and its versions are no longer offered (targets keyed by them
 * keep them) until it loads again. Refresh lock held. */
static void folder_broken(catalog_versions *r, catalog_kfolder *f, const char *why)
{
    pthread_rwlock_wrlock(&r->lock);
    f->gone = 0;
    f->invalid = 1;
    snprintf(f->error, sizeof f->error, "%.*s", CATALOG_INVALID_ERROR, why);
    if (f->loaded)
        versions_offered(r, f->name, 0);
    pthread_rwlock_unlock(&r->lock);
    log_warn("kernel %s: %s; not offered until it loads", f->dir, why);
}

/* Loads folder i, whose stamp changed (refresh lock held). */
static void folder_load(const catalog *c, int i, const kspec_limits *const lim[KSPEC_N_KINDS])
{
    catalog_versions *r = c->versions;
    catalog_kfolder *f = &r->folders[i];
    char why[1024];
    const char *other = NULL;
    int was_loaded = f->loaded, ok = 0;
    catalog_kver *e = NULL;
    kernel_spec *k = kernel_spec_load(f->dir, lim, why, sizeof why);
    if (!k)
        goto out;
    if (was_loaded && strcmp(k->name, f->name) != 0) {
        snprintf(why, sizeof why,
                 "spec.json: name: '%.*s' is not this folder's kernel (%s): a folder keeps its "
                 "kernel's name; put a new kernel in a new folder",
                 KSPEC_MAX_NAME, k->name, f->name);
        goto out;
    }
    if (!was_loaded && name_taken(r, i, k->name, &other)) {
        snprintf(why, sizeof why,
                 "spec.json: name: kernel '%.*s' is loaded from %.300s already: choose another "
                 "name",
                 KSPEC_MAX_NAME, k->name, other);
        goto out;
    }
    /* its space sizes are counted by the first listing (catalog_folders_counts), not here: a
     * rescan runs in a request's thread */
    pthread_rwlock_wrlock(&r->lock);
    catalog_kver *old = (catalog_kver *)catalog_versions_find(r, k->name, k->version);
    if (!old)
        e = catalog_versions_append(r, k, k->name, k->version, 0);
    if ((ok = e || (old && !old->stored))) {
        /* a new version, or back to one loaded before: the newest either way */
        (e ? e : old)->seq = ++r->seq;
        if (!was_loaded)
            snprintf(f->name, sizeof f->name, "%s", k->name);
        f->loaded = 1;
        f->gone = 0;
        f->invalid = 0;
        versions_offered(r, k->name, 1);
    }
    pthread_rwlock_unlock(&r->lock);
    if (e)
        log_info("catalog: kernel %s from %s: %s, version %s", k->name, f->dir,
                 was_loaded ? "files changed" : "new folder", k->version);
    else if (!ok)
        snprintf(why, sizeof why, "this process holds %d kernel versions already: restart ktuned",
                 CATALOG_MAX_VERSIONS);
out:
    if (!ok)
        folder_broken(r, f, why);
    if (!e)
        kernel_spec_free(k);
}

void catalog_folders_rescan(const catalog *c, int force)
{
    catalog_versions *r = c->versions;
    uint64_t now = kt_clock_ns();
    uint64_t period = (uint64_t)(force ? CATALOG_KERNEL_MISS_MS : CATALOG_RESCAN_MS) * 1000000ULL;
    /* n_kdirs is fixed at start; without --kernels folders to list, n_folders is too */
    if (!r || (!r->n_kdirs && !r->n_folders))
        return;
    pthread_mutex_lock(&r->refresh);
    if (r->scanned_ns && now - r->scanned_ns < period)
        goto out;
    r->scanned_ns = now;
    find_new_folders(r);
    const kspec_limits *lim[KSPEC_N_KINDS];
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
        lim[kind] = r->has_limits[kind] ? &r->limits[kind] : NULL;
    for (int i = 0; i < r->n_folders; i++) {
        catalog_kfolder *f = &r->folders[i];
        char spec[PATH_MAX];
        struct stat st;
        snprintf(spec, sizeof spec, "%s/spec.json", f->dir);
        if (stat(spec, &st) != 0) {
            if (!f->gone)
                folder_removed(r, f);
            continue;
        }
        unsigned long long stamp = kernel_files_dir_stamp(f->dir);
        if (stamp == f->stamp)
            continue;
        f->stamp = stamp;
        folder_load(c, i, lim);
    }
out:
    pthread_mutex_unlock(&r->refresh);
}

catalog_folder_item *catalog_folders_list(const catalog *c, int *n)
{
    catalog_versions *r = c ? c->versions : NULL;
    catalog_folder_item *out = NULL;
    *n = 0;
    if (!r)
        return NULL;
    catalog_folders_rescan(c, 0);
    pthread_rwlock_rdlock(&r->lock);
    if (r->n_folders > 0)
        out = calloc((size_t)r->n_folders, sizeof *out);
    for (int i = 0; out && i < r->n_folders; i++) {
        const catalog_kfolder *f = &r->folders[i];
        const catalog_kver *e = NULL;
        if (f->gone || !(f->invalid ||
                         (f->loaded && (e = catalog_versions_folder_newest(r, f->name)) != NULL)))
            continue; /* removed, or not loaded yet */
        catalog_folder_item *it = &out[(*n)++];
        snprintf(it->name, sizeof it->name, "%s", f->name);
        it->k = f->invalid ? NULL : e->k;
        it->v = f->invalid ? NULL : (catalog_kver *)e;
        if (f->invalid)
            snprintf(it->error, sizeof it->error, "%s", f->error);
    }
    pthread_rwlock_unlock(&r->lock);
    return out;
}

int catalog_is_folder_kernel(const catalog *c, const char *name)
{
    catalog_versions *r = c ? c->versions : NULL;
    int found = 0;
    if (!r || !name)
        return 0;
    catalog_folders_rescan(c, 0); /* folders found after start too */
    pthread_rwlock_rdlock(&r->lock);
    for (int i = 0; i < r->n && !found; i++)
        found = !r->v[i]->stored && strcmp(r->v[i]->name, name) == 0;
    for (int i = 0; i < r->n_folders && !found; i++)
        found =
            !r->folders[i].gone && r->folders[i].invalid && strcmp(r->folders[i].name, name) == 0;
    pthread_rwlock_unlock(&r->lock);
    return found;
}

void catalog_folder_error(const char *name, const char *why, kt_error *err)
{
    kt_error_set(err, KT_ERR_KERNEL_INVALID, "kernel %s cannot be used: %s", name, why);
    kt_error_hint(err,
                  "fix the file named in the kernel folder %s (of ktuned's --kernels; "
                  "kernels/README.md describes spec.json): it is loaded again within a second, "
                  "no restart",
                  name);
}

int catalog_kernel_invalid(const catalog *c, const char *name, kt_error *err)
{
    catalog_versions *r = c ? c->versions : NULL;
    char why[CATALOG_INVALID_ERROR + 1];
    int found = 0;
    if (!r || !name || catalog_find_kernel(c, name)) /* rescans first */
        return 0;
    pthread_rwlock_rdlock(&r->lock);
    for (int i = 0; i < r->n_folders && !found; i++) {
        const catalog_kfolder *f = &r->folders[i];
        if ((found = !f->gone && f->invalid && strcmp(f->name, name) == 0))
            snprintf(why, sizeof why, "%s", f->error);
    }
    pthread_rwlock_unlock(&r->lock);
    if (!found)
        return 0;
    catalog_folder_error(name, why, err);
    return 1;
}
