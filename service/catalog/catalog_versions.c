/* catalog/catalog_versions — every version of every kernel (catalog.h, "kernel versions"): the
 * kernel folders' (rescanned for changed files) and the stored kernels' (fetched from the kernels
 * table through the owner's callback), in an append-only registry behind a read-write lock, so
 * that a target may borrow its version's spec until catalog_free. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/clock.h"
#include "core/log.h"
#include "catalog/catalog_impl.h"

catalog_versions *catalog_versions_new(void)
{
    catalog_versions *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (pthread_rwlock_init(&r->lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    if (pthread_mutex_init(&r->refresh, NULL) != 0) {
        pthread_rwlock_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void catalog_versions_free(catalog_versions *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        /* Folder versions loaded at start belong to the catalog's specs (freed there). */
        if (r->v[i]->owned)
            kernel_spec_free(r->v[i]->k);
        free(r->v[i]->log);
        free(r->v[i]);
    }
    free(r->v);
    for (int i = 0; i < r->n_folders; i++)
        free(r->folders[i].dir);
    free(r->folders);
    for (int i = 0; i < r->n_kdirs; i++)
        free(r->kdirs[i]);
    free(r->kdirs);
    free(r->names);
    free(r->sources_dir);
    pthread_mutex_destroy(&r->refresh);
    pthread_rwlock_destroy(&r->lock);
    free(r);
}

const char *catalog_kernel_status_name(catalog_kernel_status s)
{
    return s == CATALOG_KERNEL_READY        ? "ready"
           : s == CATALOG_KERNEL_VALIDATING ? "validating"
                                            : "invalid";
}

static int status_of(const char *s)
{
    return s && strcmp(s, "ready") == 0        ? CATALOG_KERNEL_READY
           : s && strcmp(s, "validating") == 0 ? CATALOG_KERNEL_VALIDATING
                                               : CATALOG_KERNEL_INVALID;
}

/* Appends an entry (the write lock held by the caller). */
static catalog_kver *append(catalog_versions *r, kernel_spec *k, const char *name,
                            const char *version, int stored)
{
    if (r->n >= CATALOG_MAX_VERSIONS) {
        log_warn("kernel %s version %s: this process holds %d kernel versions already; not "
                 "loaded (restart ktuned)",
                 name, version, CATALOG_MAX_VERSIONS);
        return NULL;
    }
    catalog_kver *e = calloc(1, sizeof *e);
    if (!e || KT_ARRAY_GROW(r->v, r->cap, (size_t)r->n + 1, INT_MAX) < 0) {
        free(e);
        return NULL;
    }
    e->k = k;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->version, sizeof e->version, "%s", version);
    e->stored = stored;
    e->seq = ++r->seq;
    e->rank = stored ? 0 : -1;
    e->owned = 1;
    r->v[r->n++] = e;
    return e;
}

int catalog_versions_set_dirs(catalog_versions *r, const char *const *dirs, int n)
{
    if (n <= 0)
        return 0;
    if (!(r->kdirs = calloc((size_t)n, sizeof *r->kdirs)))
        return -1;
    for (; r->n_kdirs < n; r->n_kdirs++)
        if (!(r->kdirs[r->n_kdirs] = strdup(dirs[r->n_kdirs])))
            return -1;
    return 0;
}

int catalog_versions_add_folder(catalog *c, kernel_spec *k, const char *dir)
{
    catalog_versions *r = c->versions;
    if (r->n_folders >= CATALOG_MAX_FOLDERS) {
        log_warn("kernel %s: this process holds %d kernel folders already; not rescanned", dir,
                 CATALOG_MAX_FOLDERS);
        return 0;
    }
    catalog_kfolder *f = realloc(r->folders, (size_t)(r->n_folders + 1) * sizeof *f);
    if (!f)
        return -1;
    r->folders = f;
    f = &r->folders[r->n_folders];
    if (!(f->dir = strdup(dir)))
        return -1;
    snprintf(f->name, sizeof f->name, "%s", k->name);
    f->stamp = kernel_files_dir_stamp(dir);
    f->loaded = 1;
    f->gone = 0;
    catalog_kver *e = append(r, k, k->name, k->version, 0);
    if (!e) {
        free(f->dir);
        return -1;
    }
    e->owned = 0; /* the catalog's specs own it */
    r->n_folders++;
    return 0;
}

/* A folder's newest version (read lock held). */
static const catalog_kver *folder_newest(const catalog_versions *r, const char *name)
{
    const catalog_kver *best = NULL;
    for (int i = 0; i < r->n; i++)
        if (!r->v[i]->stored && strcmp(r->v[i]->name, name) == 0 &&
            (!best || r->v[i]->seq > best->seq))
            best = r->v[i];
    return best && !best->gone ? best : NULL;
}

static const catalog_kver *find_version(const catalog_versions *r, const char *name,
                                        const char *version)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i]->name, name) == 0 && strcmp(r->v[i]->version, version) == 0)
            return r->v[i];
    return NULL;
}

/* 1 when another loaded folder, still there, holds the kernel name (refresh lock held). */
static int name_taken(const catalog_versions *r, int self, const char *name)
{
    for (int i = 0; i < r->n_folders; i++)
        if (i != self && r->folders[i].loaded && !r->folders[i].gone &&
            strcmp(r->folders[i].name, name) == 0)
            return 1;
    return 0;
}

/* Adds the sub-folders of the --kernels folders that have a spec.json and are not known yet (a
 * folder added after start, or one whose spec did not load at start), stamp 0 so that the rescan
 * loads them (refresh lock held). */
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
            if (r->n_folders >= CATALOG_MAX_FOLDERS) {
                if (!r->folders_full)
                    log_warn("kernel %s: this process holds %d kernel folders already; a new "
                             "folder needs a restart",
                             sub, CATALOG_MAX_FOLDERS);
                r->folders_full = 1;
                break;
            }
            catalog_kfolder *f = realloc(r->folders, (size_t)(r->n_folders + 1) * sizeof *f);
            if (!f)
                break;
            r->folders = f;
            f = &r->folders[r->n_folders];
            memset(f, 0, sizeof *f);
            if (!(f->dir = strdup(sub)))
                break;
            snprintf(f->name, sizeof f->name, "%.*s", KSPEC_MAX_NAME, de->d_name);
            r->n_folders++;
        }
        closedir(dh);
    }
}

/* The folder's spec.json is gone: its versions are no longer offered to new requests (targets
 * keyed by them keep them). Refresh lock held. */
static void folder_removed(catalog_versions *r, catalog_kfolder *f)
{
    f->gone = 1;
    f->stamp = 0; /* back again: loaded again */
    if (!f->loaded)
        return;
    pthread_rwlock_wrlock(&r->lock);
    for (int i = 0; i < r->n; i++)
        if (!r->v[i]->stored && strcmp(r->v[i]->name, f->name) == 0)
            r->v[i]->gone = 1;
    pthread_rwlock_unlock(&r->lock);
    log_info("catalog: kernel %s: %s/spec.json was removed; no longer offered", f->name, f->dir);
}

/* Loads the folders whose files changed since their last look, and the new ones, at most every
 * CATALOG_RESCAN_MS (force: an exact version asked for and not known, a job's that another
 * process resolved: every CATALOG_KERNEL_MISS_MS); a folder that no longer loads keeps its last
 * version (logged), a removed one is no longer offered. */
static void rescan_folders(const catalog *c, int force)
{
    catalog_versions *r = c->versions;
    uint64_t now = kt_clock_ns();
    uint64_t period = (uint64_t)(force ? CATALOG_KERNEL_MISS_MS : CATALOG_RESCAN_MS) * 1000000ULL;
    if (!r->n_folders && !r->n_kdirs)
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
        f->gone = 0;
        char why[1024];
        kernel_spec *k = kernel_spec_load(f->dir, lim, why, sizeof why);
        if (!k) {
            log_warn("kernel %s: %s; %s", f->dir, why,
                     f->loaded ? "the version loaded before is kept" : "skipped");
            continue;
        }
        if (f->loaded && strcmp(k->name, f->name) != 0) {
            log_warn("kernel %s: renamed to %s; a new name needs a restart", f->dir, k->name);
            kernel_spec_free(k);
            continue;
        }
        if (!f->loaded && name_taken(r, i, k->name)) {
            log_warn("kernel %s: a kernel named %s is already loaded from another folder; skipped",
                     f->dir, k->name);
            kernel_spec_free(k);
            continue;
        }
        pthread_rwlock_wrlock(&r->lock);
        catalog_kver *old = (catalog_kver *)find_version(r, k->name, k->version);
        catalog_kver *e = old ? NULL : append(r, k, k->name, k->version, 0);
        if (old && !old->stored)
            old->seq = ++r->seq; /* back to a version loaded before: the newest again */
        if (e)
            e->seq = ++r->seq; /* newest of the folder */
        /* the folder is there again: its versions are offered again */
        for (int j = 0; j < r->n; j++)
            if (!r->v[j]->stored && strcmp(r->v[j]->name, k->name) == 0)
                r->v[j]->gone = 0;
        pthread_rwlock_unlock(&r->lock);
        if (e || (old && !old->stored)) {
            if (e)
                log_info("catalog: kernel %s from %s: %s, version %s", k->name, f->dir,
                         f->loaded ? "files changed" : "new folder", k->version);
            if (!f->loaded)
                snprintf(f->name, sizeof f->name, "%s", k->name);
            f->loaded = 1;
        }
        if (!e)
            kernel_spec_free(k);
    }
out:
    pthread_mutex_unlock(&r->refresh);
}

void catalog_kernels_set_source(catalog *c, catalog_kernel_fetch fetch, void *ctx)
{
    pthread_mutex_lock(&c->versions->refresh);
    c->versions->fetch = fetch;
    c->versions->ctx = ctx;
    pthread_mutex_unlock(&c->versions->refresh);
}

/* The name's fetch record, added when new (refresh lock held); NULL when out of memory. */
static catalog_kname *kname(catalog_versions *r, const char *name)
{
    for (int i = 0; i < r->n_names; i++)
        if (strcmp(r->names[i].name, name) == 0)
            return &r->names[i];
    if (r->n_names >= CATALOG_KERNEL_NAMES ||
        KT_ARRAY_GROW(r->names, r->cap_names, (size_t)r->n_names + 1, INT_MAX) < 0)
        return NULL;
    catalog_kname *n = &r->names[r->n_names++];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    return n;
}

/* One fetched row: a version not known yet is loaded and added; a known one takes the row's
 * status, log, retired and rank (write lock taken here). */
static void merge_row(const catalog *c, const char *name, const json_t *row, int rank)
{
    catalog_versions *r = c->versions;
    const char *version = json_string_value(json_object_get(row, "version"));
    const char *status = json_string_value(json_object_get(row, "status"));
    const char *log = json_string_value(json_object_get(row, "log"));
    int retired = json_is_true(json_object_get(row, "retired"));
    if (!version || strlen(version) != KFILES_VERSION_LEN)
        return;
    pthread_rwlock_rdlock(&r->lock);
    int known = find_version(r, name, version) != NULL;
    pthread_rwlock_unlock(&r->lock);
    kernel_spec *k = NULL;
    char why[1024] = "";
    if (!known) {
        const char *spec_text = json_string_value(json_object_get(row, "spec_text"));
        kt_error e;
        kernel_files *files = kernel_files_from_json(json_object_get(row, "files"), "files", &e);
        const json_t *data_json = json_object_get(row, "data");
        kernel_data *data = NULL;
        int data_ok = 1;
        if (files && json_is_object(data_json) &&
            !(data = kernel_data_from_json(data_json, "data", &e))) {
            kernel_files_free(files);
            files = NULL;
            data_ok = 0;
        }
        if (files && spec_text &&
            kernel_files_add(files, "spec.json", spec_text, strlen(spec_text), &e) == 0) {
            const kspec_limits *lim[KSPEC_N_KINDS];
            for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
                lim[kind] = r->has_limits[kind] ? &r->limits[kind] : NULL;
            k = kernel_spec_load_files(files, data, NULL, lim, why, sizeof why);
            files = NULL;
            data = NULL;
            if (k && strcmp(k->version, version) != 0) {
                snprintf(why, sizeof why, "the stored files hash to %s, not to %s", k->version,
                         version);
                kernel_spec_free(k);
                k = NULL;
            }
        } else {
            snprintf(why, sizeof why, "%s",
                     files || !data_ok ? e.message : "the stored files cannot be read");
        }
        kernel_files_free(files);
        kernel_data_free(data);
        if (!k)
            log_warn("kernel %s version %s: %s", name, version, why);
    }
    pthread_rwlock_wrlock(&r->lock);
    catalog_kver *e = (catalog_kver *)find_version(r, name, version);
    if (!e && (e = append(r, k, name, version, 1)))
        k = NULL;
    if (e) {
        e->status = e->k ? status_of(status) : CATALOG_KERNEL_INVALID;
        e->retired = retired;
        e->rank = rank;
        const char *text = e->k ? log : why;
        if (!(e->log && text && strcmp(e->log, text) == 0)) {
            free(e->log);
            e->log = text ? strdup(text) : NULL;
        }
    }
    pthread_rwlock_unlock(&r->lock);
    kernel_spec_free(k);
}

/* Fetches name's stored versions when the last fetch is older than CATALOG_KERNEL_FETCH_MS (force:
 * a miss, still rate-limited). */
static void refresh_name(const catalog *c, const char *name, int force)
{
    catalog_versions *r = c->versions;
    uint64_t now = kt_clock_ns();
    uint64_t period =
        (uint64_t)(force ? CATALOG_KERNEL_MISS_MS : CATALOG_KERNEL_FETCH_MS) * 1000000ULL;
    json_t *rows = NULL;
    if (!name || !r->fetch || catalog_is_folder_kernel(c, name))
        return;
    pthread_mutex_lock(&r->refresh);
    catalog_kname *n = kname(r, name);
    if (!n || (n->fetched_ns && now - n->fetched_ns < period))
        goto out;
    n->fetched_ns = now;
    kt_error e;
    kt_error_clear(&e);
    if (!(rows = r->fetch(r->ctx, name, &e))) {
        log_warn("kernel %s: the stored versions cannot be read: %s", name, e.message);
        goto out;
    }
    pthread_rwlock_wrlock(&r->lock);
    for (int i = 0; i < r->n; i++)
        if (r->v[i]->stored && strcmp(r->v[i]->name, name) == 0)
            r->v[i]->rank = -1;
    pthread_rwlock_unlock(&r->lock);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) merge_row(c, name, row, (int)i);
out:
    pthread_mutex_unlock(&r->refresh);
    json_decref(rows);
}

/* The stored newest ready, not retired version (read lock held). */
static const catalog_kver *stored_newest(const catalog_versions *r, const char *name)
{
    const catalog_kver *best = NULL;
    for (int i = 0; i < r->n; i++) {
        const catalog_kver *e = r->v[i];
        if (e->stored && e->k && e->rank >= 0 && !e->retired && e->status == CATALOG_KERNEL_READY &&
            strcmp(e->name, name) == 0 && (!best || e->rank < best->rank))
            best = e;
    }
    return best;
}

/* Any stored version of name is known (read lock held). */
static const catalog_kver *stored_any(const catalog_versions *r, const char *name)
{
    const catalog_kver *best = NULL;
    for (int i = 0; i < r->n; i++) {
        const catalog_kver *e = r->v[i];
        if (e->stored && e->rank >= 0 && strcmp(e->name, name) == 0 &&
            (!best || e->rank < best->rank))
            best = e;
    }
    return best;
}

int catalog_is_folder_kernel(const catalog *c, const char *name)
{
    int found = 0;
    if (c && name && c->versions) {
        /* folders found after start too (the registry's, under its lock) */
        rescan_folders(c, 0);
        pthread_rwlock_rdlock(&c->versions->lock);
        for (int i = 0; i < c->versions->n && !found; i++)
            found = !c->versions->v[i]->stored && strcmp(c->versions->v[i]->name, name) == 0;
        pthread_rwlock_unlock(&c->versions->lock);
    }
    if (found)
        return 1;
    for (int i = 0; c && name && i < c->n_specs; i++)
        if (strcmp(c->specs[i]->name, name) == 0)
            return 1;
    for (int i = 0; c && name && i < c->n_invalid; i++)
        if (strcmp(c->invalid[i].name, name) == 0)
            return 1;
    return 0;
}

/* The version hint: "versions: a (ready), b (invalid), ...". */
static void hint_versions(const catalog_versions *r, const char *name, kt_error *err)
{
    char buf[KT_ERROR_HINT_MAX - 64];
    size_t used = 0;
    int n = 0;
    buf[0] = '\0';
    for (int i = r->n - 1; i >= 0 && used < sizeof buf && n < 6; i--) {
        const catalog_kver *e = r->v[i];
        if (strcmp(e->name, name) != 0 || (e->stored && e->rank < 0))
            continue;
        int w = snprintf(buf + used, sizeof buf - used, "%s%s (%s)", n++ ? ", " : "", e->version,
                         catalog_kernel_status_name((catalog_kernel_status)e->status));
        used += w > 0 ? (size_t)w : 0;
    }
    if (n)
        kt_error_hint(err, "kernel %s has versions %s (GET /v1/kernels/%s)", name, buf, name);
}

int catalog_kernel_pick(const catalog *c, const char *name, const char *version,
                        const kernel_spec **out, kt_error *err)
{
    catalog_versions *r = c ? c->versions : NULL;
    int rc = -1;
    *out = NULL;
    if (!r || !name)
        return kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "no kernel named");
    rescan_folders(c, 0);
    pthread_rwlock_rdlock(&r->lock);
    const catalog_kver *e = version ? find_version(r, name, version) : folder_newest(r, name);
    if (!e && !version)
        e = stored_newest(r, name);
    pthread_rwlock_unlock(&r->lock);
    if (!e && version) {
        rescan_folders(c, 1); /* a folder's version another process found first */
        pthread_rwlock_rdlock(&r->lock);
        e = find_version(r, name, version);
        pthread_rwlock_unlock(&r->lock);
    }
    if (!e) {
        refresh_name(c, name, 0);
        pthread_rwlock_rdlock(&r->lock);
        e = version ? find_version(r, name, version) : stored_newest(r, name);
        pthread_rwlock_unlock(&r->lock);
    } else if (e->stored) {
        refresh_name(c, name, 0); /* a newer version, or a status changed */
        pthread_rwlock_rdlock(&r->lock);
        e = version ? find_version(r, name, version) : stored_newest(r, name);
        pthread_rwlock_unlock(&r->lock);
    }
    pthread_rwlock_rdlock(&r->lock);
    if (e && e->status == CATALOG_KERNEL_READY && e->k) {
        *out = e->k;
        rc = 0;
    } else if (e) {
        kt_error_set(err,
                     e->status == CATALOG_KERNEL_VALIDATING ? KT_ERR_KERNEL_VALIDATING
                                                            : KT_ERR_KERNEL_INVALID,
                     "kernel %s version %s is %s%s%.600s", name, e->version,
                     catalog_kernel_status_name((catalog_kernel_status)e->status),
                     e->log ? ": " : "", e->log ? e->log : "");
        kt_error_hint(err,
                      e->status == CATALOG_KERNEL_VALIDATING
                          ? "retry when GET /v1/kernels/%s shows it ready"
                          : "fix the kernel and POST it again (POST /v1/kernels); GET "
                            "/v1/kernels/%s shows every version",
                      name);
    } else if (!version && (e = stored_any(r, name))) {
        kt_error_set(err,
                     e->status == CATALOG_KERNEL_VALIDATING ? KT_ERR_KERNEL_VALIDATING
                                                            : KT_ERR_KERNEL_INVALID,
                     "kernel %s has no ready version: the newest, %s, is %s%s%.600s", name,
                     e->version, catalog_kernel_status_name((catalog_kernel_status)e->status),
                     e->log ? ": " : "", e->log ? e->log : "");
        kt_error_hint(err, "GET /v1/kernels/%s shows every version", name);
    } else if (version) {
        kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "kernel %s has no version %.64s", name, version);
        hint_versions(r, name, err);
    } else {
        kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "no kernel named '%.100s'", name);
    }
    pthread_rwlock_unlock(&r->lock);
    return rc;
}

const kernel_spec *catalog_find_kernel_version(const catalog *c, const char *name,
                                               const char *version)
{
    catalog_versions *r = c ? c->versions : NULL;
    const catalog_kver *e = NULL;
    if (!r || !name || !version)
        return NULL;
    for (int pass = 0; pass < 2 && !(e && e->k); pass++) {
        if (pass) {
            rescan_folders(c, 1); /* a folder's version another process found first */
            refresh_name(c, name, 1);
        }
        pthread_rwlock_rdlock(&r->lock);
        e = find_version(r, name, version);
        pthread_rwlock_unlock(&r->lock);
    }
    return e ? e->k : NULL;
}

int catalog_kernel_versions(const catalog *c, const char *name, char (*out)[KFILES_VERSION_LEN + 1],
                            int max)
{
    catalog_versions *r = c ? c->versions : NULL;
    int n = 0;
    if (!r || !name)
        return 0;
    rescan_folders(c, 0);
    refresh_name(c, name, 0);
    pthread_rwlock_rdlock(&r->lock);
    /* folder versions: newest (largest seq) first; stored: by rank */
    const catalog_kver *order[CATALOG_KERNEL_VERSIONS];
    int m = 0;
    for (int i = 0; i < r->n && m < CATALOG_KERNEL_VERSIONS; i++) {
        const catalog_kver *e = r->v[i];
        if (strcmp(e->name, name) != 0 || (e->stored && (e->rank < 0 || !e->k)) ||
            e->status == CATALOG_KERNEL_INVALID)
            continue;
        int j = m++;
        while (j > 0 && (e->stored ? order[j - 1]->rank > e->rank : order[j - 1]->seq < e->seq)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = e;
    }
    for (int i = 0; i < m && n < max; i++)
        snprintf(out[n++], KFILES_VERSION_LEN + 1, "%s", order[i]->version);
    pthread_rwlock_unlock(&r->lock);
    return n;
}

/* The first data file no init or answer of k names, or NULL. */
static const char *unused_data(const kernel_spec *k)
{
    for (int i = 0; i < kernel_data_count(k->data); i++) {
        const char *name = kernel_data_name(k->data, i);
        int used = 0;
        for (int b = 0; b < k->n_buffers && !used; b++) {
            const kspec_buffer *buf = &k->buffers[b];
            used = (buf->init.file.sha256[0] && strcmp(buf->init.file.path, name) == 0) ||
                   (buf->answer.sha256[0] && strcmp(buf->answer.path, name) == 0);
        }
        if (!used)
            return name;
    }
    return NULL;
}

kernel_spec *catalog_kernel_parse(const catalog *c, const json_t *spec, const json_t *files,
                                  const json_t *data, kt_error *err)
{
    catalog_versions *r = c->versions;
    kernel_files *f = NULL;
    kernel_data *d = NULL;
    kernel_spec *k = NULL;
    char *text = NULL, why[1024];
    const char *compiled_not[KFILES_MAX_FILES];
    int n_extra = 0;
    if (!json_is_object(spec)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "spec: must be the object of a spec.json");
        kt_error_hint(err, "kernels/README.md describes spec.json");
        goto out;
    }
    if (!(f = kernel_files_from_json(files, "files", err)) ||
        (data && !(d = kernel_data_from_json(data, "data", err))))
        goto out;
    if (kernel_files_get(f, "spec.json", NULL)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "files.spec.json: the spec goes in \"spec\"");
        goto out;
    }
    if (!(text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS)) ||
        kernel_files_add(f, "spec.json", text, strlen(text), err) < 0) {
        if (!text)
            kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    const kspec_limits *lim[KSPEC_N_KINDS];
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
        lim[kind] = r->has_limits[kind] ? &r->limits[kind] : NULL;
    k = kernel_spec_load_files(f, d, NULL, lim, why, sizeof why);
    f = NULL;
    d = NULL;
    if (!k) {
        /* "spec.json: buffers[0].name: ..." -> "spec: buffers[0].name: ..." (the body's field) */
        const char *msg = strncmp(why, "spec.json: ", 11) == 0 ? why + 11 : why;
        kt_error_set(err, KT_ERR_KERNEL_INVALID, "%s%.900s",
                     msg == why ? "" : (strncmp(msg, "missing", 7) == 0 ? "" : "spec: "), msg);
        kt_error_hint(err, "kernels/README.md describes spec.json and the kernel ABI");
        goto out;
    }
    for (int i = 0; i < kernel_files_count(k->files); i++) {
        const char *name = kernel_files_name(k->files, i);
        int used = strcmp(name, "spec.json") == 0 || strcmp(name, "cuda.json") == 0;
        for (int j = 0; j < k->n_compiled && !used; j++)
            used = strcmp(k->compiled[j], name) == 0;
        if (!used)
            compiled_not[n_extra++] = name;
    }
    if (n_extra) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "files.%s: not compiled: no variant's source, the reference or a quoted "
                     "#include of one names it",
                     compiled_not[0]);
        kt_error_hint(err, "remove it, or name it in the spec");
        kernel_spec_free(k);
        k = NULL;
    } else if (unused_data(k)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "data.%s: not used: no buffer's init or verify answer names it",
                     unused_data(k));
        kt_error_hint(err,
                      "remove it, or name it: \"init\": {\"kind\": \"data\", \"file\": "
                      "\"%s\"} or \"verify\": {\"kind\": \"answer\", \"buffers\": "
                      "{\"<output>\": {\"file\": \"%s\"}}}",
                      unused_data(k), unused_data(k));
        kernel_spec_free(k);
        k = NULL;
    }
out:
    kernel_files_free(f);
    kernel_data_free(d);
    free(text);
    return k;
}

int catalog_kernel_sources(const catalog *c, const kernel_spec *k, char *dir, size_t cap,
                           kt_error *err)
{
    const char *root = c->versions->sources_dir;
    if (!root)
        return kt_error_set(err, KT_ERR_CONFIG, "real measurement is not configured");
    return kernel_files_materialise(k->files, k->compiled, k->n_compiled, root, k->version, dir,
                                    cap, err);
}
