/* catalog/catalog_versions — every version of every kernel (catalog.h, "kernel versions"): the
 * kernel folders' (rescanned for changed files) and the stored kernels' (fetched from the kernels
 * table through the owner's callback), in an append-only registry behind a read-write lock, so
 * that a target may borrow its version's spec until catalog_free. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        free(atomic_load(&r->v[i]->counts));
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
catalog_kver *catalog_versions_append(catalog_versions *r, kernel_spec *k, const char *name,
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

/* A folder's newest version (read lock held). */
const catalog_kver *catalog_versions_folder_newest(const catalog_versions *r, const char *name)
{
    const catalog_kver *best = NULL;
    for (int i = 0; i < r->n; i++)
        if (!r->v[i]->stored && strcmp(r->v[i]->name, name) == 0 &&
            (!best || r->v[i]->seq > best->seq))
            best = r->v[i];
    return best && !best->gone ? best : NULL;
}

const catalog_kver *catalog_versions_find(const catalog_versions *r, const char *name,
                                          const char *version)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i]->name, name) == 0 && strcmp(r->v[i]->version, version) == 0)
            return r->v[i];
    return NULL;
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

/* A kernel given as data (its files with spec.json, its uploaded data; no folder), loaded against
 * the limits of the devices r knows; takes files and data. */
static kernel_spec *load_given(const catalog_versions *r, kernel_files *files, kernel_data *data,
                               char *why, size_t why_cap)
{
    const kspec_limits *lim[KSPEC_N_KINDS];
    for (int kind = 0; kind < KSPEC_N_KINDS; kind++)
        lim[kind] = r->has_limits[kind] ? &r->limits[kind] : NULL;
    return kernel_spec_load_files(files, data, NULL, lim, why, why_cap);
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
    int known = catalog_versions_find(r, name, version) != NULL;
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
            k = load_given(r, files, data, why, sizeof why);
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
    catalog_kver *e = (catalog_kver *)catalog_versions_find(r, name, version);
    if (!e && (e = catalog_versions_append(r, k, name, version, 1)))
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
 * a miss, still rate-limited); with since (kt_clock_ns, 0: none) instead unless a fetch started at
 * since or later: then the view holds whatever the database held at since. Requests that wait
 * here while a fetch runs share the next one. */
static void refresh_name(const catalog *c, const char *name, int force, uint64_t since)
{
    catalog_versions *r = c->versions;
    uint64_t period =
        (uint64_t)(force ? CATALOG_KERNEL_MISS_MS : CATALOG_KERNEL_FETCH_MS) * 1000000ULL;
    json_t *rows = NULL;
    if (!name || !r->fetch || catalog_is_folder_kernel(c, name))
        return;
    pthread_mutex_lock(&r->refresh);
    uint64_t now = kt_clock_ns(); /* the fetch below starts after it */
    catalog_kname *n = kname(r, name);
    if (!n || (since ? n->fetched_ns >= since : n->fetched_ns && now - n->fetched_ns < period))
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

/* How the view of name's stored versions may be behind the database in a way that changes what
 * is picked (read lock held): LAG_VALIDATING when a version it would pick, or pass over for an
 * older one, is still validating there (the version asked for, a newer one than the pick, or with
 * nothing picked any version of the name); LAG_UNKNOWN when it knows nothing to pick; else 0. The
 * view is up to CATALOG_KERNEL_FETCH_MS old; a caller who saw a version ready (GET
 * /v1/kernels/{name}) must get it. */
enum { LAG_UNKNOWN = 1, LAG_VALIDATING = 2 };
static int view_may_lag(const catalog_versions *r, const char *name, const char *version,
                        const catalog_kver *e)
{
    int lag = e && e->stored && version && e->status == CATALOG_KERNEL_VALIDATING;
    for (int i = 0; (!e || (e->stored && !version)) && i < r->n && !lag; i++) {
        const catalog_kver *v = r->v[i];
        lag = v->stored && v->rank >= 0 && (!e || v->rank < e->rank) && !v->retired &&
              v->status == CATALOG_KERNEL_VALIDATING && strcmp(v->name, name) == 0 &&
              (!version || strcmp(v->version, version) == 0);
    }
    return lag ? LAG_VALIDATING : e ? 0 : LAG_UNKNOWN;
}

/* catalog_kernel_pick; fresh: a view that may lag (view_may_lag) is fetched again first. */
static int pick(const catalog *c, const char *name, const char *version, int fresh,
                const kernel_spec **out, kt_error *err)
{
    catalog_versions *r = c ? c->versions : NULL;
    int rc = -1;
    uint64_t asked = kt_clock_ns();
    *out = NULL;
    if (!r || !name)
        return kt_error_set(err, KT_ERR_UNKNOWN_KERNEL, "no kernel named");
    catalog_folders_rescan(c, 0);
    pthread_rwlock_rdlock(&r->lock);
    const catalog_kver *e =
        version ? catalog_versions_find(r, name, version) : catalog_versions_folder_newest(r, name);
    if (!e && !version)
        e = stored_newest(r, name);
    pthread_rwlock_unlock(&r->lock);
    if (!e && version) {
        catalog_folders_rescan(c, 1); /* a folder's version another process found first */
        pthread_rwlock_rdlock(&r->lock);
        e = catalog_versions_find(r, name, version);
        pthread_rwlock_unlock(&r->lock);
    }
    if (!e || e->stored) {
        refresh_name(c, name, 0, 0); /* a newer version, or a status changed */
        pthread_rwlock_rdlock(&r->lock);
        e = version ? catalog_versions_find(r, name, version) : stored_newest(r, name);
        pthread_rwlock_unlock(&r->lock);
    }
    pthread_rwlock_rdlock(&r->lock);
    int lag = fresh ? view_may_lag(r, name, version, e) : 0;
    pthread_rwlock_unlock(&r->lock);
    if (lag) {
        /* validating: what the database says now; nothing known: again after
         * CATALOG_KERNEL_MISS_MS (a name that does not exist must not cost a read per request) */
        refresh_name(c, name, lag == LAG_UNKNOWN, lag == LAG_VALIDATING ? asked : 0);
        pthread_rwlock_rdlock(&r->lock);
        e = version ? catalog_versions_find(r, name, version) : stored_newest(r, name);
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

int catalog_kernel_pick(const catalog *c, const char *name, const char *version,
                        const kernel_spec **out, kt_error *err)
{
    return pick(c, name, version, 1, out, err);
}

const kernel_spec *catalog_find_kernel(const catalog *c, const char *name)
{
    const kernel_spec *k = NULL;
    kt_error e;
    if (!c || !name)
        return NULL;
    return pick(c, name, NULL, 0, &k, &e) == 0 ? k : NULL;
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
            catalog_folders_rescan(c, 1); /* a folder's version another process found first */
            refresh_name(c, name, 1, 0);
        }
        pthread_rwlock_rdlock(&r->lock);
        e = catalog_versions_find(r, name, version);
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
    catalog_folders_rescan(c, 0);
    refresh_name(c, name, 0, 0);
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
    k = load_given(r, f, d, why, sizeof why);
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
