/* catalog/catalog_fleet — devices known from the fleet (catalog_fleet.h): parsing the records
 * workers register, merging them into an append-only list behind a read-write lock, picking one
 * for a resolution, and the records and JSON this process gives out. */
#include "catalog/catalog_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/clock.h"
#include "core/log.h"

#define FLEET_MAX_TEXT 512 /* class, toolchain */

catalog_fleet *catalog_fleet_new(void)
{
    catalog_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    pthread_rwlock_init(&f->lock, NULL);
    pthread_mutex_init(&f->refresh, NULL);
    return f;
}

void catalog_fleet_free(catalog_fleet *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        free(f->e[i]->dev.klass);
        free(f->e[i]->dev.toolchain);
        free(f->e[i]->dev.description_text);
        json_decref(f->e[i]->hosts);
        free(f->e[i]);
    }
    free(f->e);
    pthread_rwlock_destroy(&f->lock);
    pthread_mutex_destroy(&f->refresh);
    free(f);
}

void catalog_fleet_set_source(catalog *c, catalog_fleet_fetch fetch, void *ctx, double period_s)
{
    if (!c || !c->fleet)
        return;
    c->fleet->fetch = fetch;
    c->fleet->ctx = ctx;
    c->fleet->period_s = period_s > 0 ? period_s : 2.0;
}

static const char *text_field(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s && strlen(s) < FLEET_MAX_TEXT ? s : NULL;
}

/* Parses one record into d (strings malloc'd); 0, or -1 with why. */
static int parse_record(const json_t *rec, catalog_device *d, const char **why)
{
    memset(d, 0, sizeof *d);
    const char *name = json_string_value(json_object_get(rec, "name"));
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    const char *klass = text_field(rec, "class"), *tool = text_field(rec, "toolchain");
    const json_t *ord = json_object_get(rec, "ordinal"), *lim = json_object_get(rec, "limits");
    if (!name || !*name || strlen(name) >= sizeof d->name)
        return (*why = "name missing or longer than 31 characters", -1);
    kt_device_kind k;
    kt_device named;
    if (kt_device_kind_from_name(kind, &k) < 0 || (k != KT_DEVICE_CPU && k != KT_DEVICE_CUDA))
        return (*why = "kind is not cpu or cuda", -1);
    if (!klass || !*klass || !tool || !*tool)
        return (*why = "class or toolchain missing or too long", -1);
    if (!json_is_integer(ord) || json_integer_value(ord) < 0 || json_integer_value(ord) > 4095)
        return (*why = "ordinal is not an integer in 0..4095", -1);
    d->kind = k == KT_DEVICE_CUDA ? KSPEC_CUDA : KSPEC_CPU;
    if (kt_device_parse(name, &named, NULL) < 0 || named.kind != k)
        return (*why = "a cpu record must be named cpu and a cuda record cuda:N", -1);
    int n = 0;
    const char *const *names = kernel_spec_limit_names(d->kind, &n);
    for (int i = 0; i < n; i++) {
        const json_t *v = json_object_get(lim, names[i]);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return (*why = "a limit of its kind is missing or not an integer >= 0", -1);
        d->limits.v[i] = (long long)json_integer_value(v);
    }
    snprintf(d->name, sizeof d->name, "%s", name);
    d->ordinal = (int)json_integer_value(ord);
    d->available = 1;
    const json_t *desc = json_object_get(rec, "description");
    d->klass = strdup(klass);
    d->toolchain = strdup(tool);
    d->description_text = json_dumps(json_is_object(desc) ? desc : json_object(), JSON_COMPACT);
    if (!d->klass || !d->toolchain || !d->description_text) {
        free(d->klass);
        free(d->toolchain);
        free(d->description_text);
        return (*why = "out of memory", -1);
    }
    return 0;
}

static int same_device(const catalog_device *a, const catalog_device *b)
{
    return strcmp(a->name, b->name) == 0 && a->kind == b->kind && a->ordinal == b->ordinal &&
           strcmp(a->klass, b->klass) == 0 && strcmp(a->toolchain, b->toolchain) == 0 &&
           memcmp(&a->limits, &b->limits, sizeof a->limits) == 0;
}

/* Copies the host names (strings, at most CATALOG_FLEET_HOSTS) so that no json_t is shared. */
static json_t *copy_hosts(const json_t *hosts)
{
    json_t *out = json_array();
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        if (out && i < CATALOG_FLEET_HOSTS && json_is_string(h))
            json_array_append_new(out, json_string(json_string_value(h)));
    }
    return out;
}

/* Frees the strings of a parsed record that did not become an entry. */
static void record_free(catalog_device *d)
{
    free(d->klass);
    free(d->toolchain);
    free(d->description_text);
    memset(d, 0, sizeof *d);
}

/* Merges one row under the write lock; -1 only when out of memory. */
static int merge_row(catalog_fleet *f, const json_t *row)
{
    catalog_device d;
    const char *why = NULL;
    catalog_fleet_entry *e = NULL, *made = NULL;
    int rc = 0;
    const json_t *rec = json_object_get(row, "record");
    kt_device_kind kind;
    if (kt_device_kind_from_name(json_string_value(json_object_get(rec, "kind")), &kind) == 0 &&
        (kind == KT_DEVICE_REPLAY || kind == KT_DEVICE_ACCEL))
        return 0; /* replay and accel devices resolve from this process's own datasets and file */
    if (parse_record(rec, &d, &why) < 0) {
        log_warn("fleet: a device record is skipped: %s", why);
        return strcmp(why, "out of memory") == 0 ? -1 : 0;
    }
    for (int i = 0; i < f->n && !e; i++)
        e = same_device(&f->e[i]->dev, &d) ? f->e[i] : NULL;
    if (!e && f->n >= CATALOG_FLEET_MAX) {
        log_warn("fleet: more than %d device records; %s (%s) is ignored", CATALOG_FLEET_MAX,
                 d.name, d.klass);
        goto out;
    }
    if (!e) {
        made = calloc(1, sizeof *made);
        if (!made || KT_ARRAY_GROW(f->e, f->cap, (size_t)f->n + 1, CATALOG_FLEET_MAX) < 0) {
            rc = -1;
            goto out;
        }
        made->dev = d;
        memset(&d, 0, sizeof d); /* the entry owns the strings now */
        f->e[f->n++] = e = made;
        made = NULL;
        log_info("fleet: device %s of class %s (%s) registered by workers", e->dev.name,
                 e->dev.klass, e->dev.toolchain);
    }
    json_t *hosts = copy_hosts(json_object_get(row, "hosts"));
    if (!hosts) {
        rc = -1;
        goto out;
    }
    json_decref(e->hosts);
    e->hosts = hosts;
    e->live = json_is_true(json_object_get(row, "live")) && json_array_size(hosts) > 0;
    e->present = 1;
out:
    free(made);
    record_free(&d);
    return rc;
}

int catalog_fleet_update(const catalog *c, const json_t *rows, kt_error *err)
{
    int rc = 0;
    if (!c || !c->fleet)
        return 0;
    catalog_fleet *f = c->fleet;
    pthread_rwlock_wrlock(&f->lock);
    for (int i = 0; i < f->n; i++)
        f->e[i]->present = f->e[i]->live = 0;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (rc == 0 && merge_row(f, row) < 0)
            rc = kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading the fleet's devices");
    }
    pthread_rwlock_unlock(&f->lock);
    return rc;
}

int catalog_fleet_refresh(const catalog *c, int force, kt_error *err)
{
    if (!c || !c->fleet || !c->fleet->fetch)
        return 0;
    catalog_fleet *f = c->fleet;
    int rc = 0;
    pthread_mutex_lock(&f->refresh);
    uint64_t now = kt_clock_ns();
    int stale = !f->last_ns || now - f->last_ns >= (uint64_t)(f->period_s * 1e9);
    int may_retry = !f->last_try_ns || now - f->last_try_ns >= CATALOG_FLEET_MISS_MS * 1000000ull;
    if ((stale || force) && may_retry) {
        json_t *rows = NULL;
        f->last_try_ns = now;
        rc = f->fetch(f->ctx, &rows, err);
        if (rc == 0)
            rc = catalog_fleet_update(c, rows, err);
        if (rc == 0)
            f->last_ns = kt_clock_ns();
        else
            log_warn("fleet: reading the devices of the fleet failed: %s", err->message);
        json_decref(rows);
    }
    pthread_mutex_unlock(&f->refresh);
    return rc;
}

static const catalog_device *fleet_pick(const catalog *c, const char *name, const char *klass,
                                        const char *toolchain, int refresh)
{
    const catalog_device *best = NULL;
    if (!c || !c->fleet || !name)
        return NULL;
    catalog_fleet *f = c->fleet;
    for (int attempt = 0; attempt < (refresh ? 2 : 1) && !best; attempt++) {
        kt_error err;
        kt_error_clear(&err);
        if (refresh)
            catalog_fleet_refresh(c, attempt == 1, &err);
        size_t best_hosts = 0;
        pthread_rwlock_rdlock(&f->lock);
        for (int i = 0; i < f->n; i++) {
            const catalog_fleet_entry *e = f->e[i];
            if (strcmp(e->dev.name, name) != 0)
                continue;
            if (klass) {
                if (e->present && strcmp(e->dev.klass, klass) == 0 && toolchain &&
                    strcmp(e->dev.toolchain, toolchain) == 0)
                    best = &e->dev;
            } else if (e->live && (!best || json_array_size(e->hosts) > best_hosts)) {
                best = &e->dev;
                best_hosts = json_array_size(e->hosts);
            }
        }
        pthread_rwlock_unlock(&f->lock);
    }
    return best;
}

const catalog_device *catalog_fleet_find(const catalog *c, const char *name, const char *klass,
                                         const char *toolchain)
{
    return fleet_pick(c, name, klass, toolchain, 1);
}

const catalog_device *catalog_fleet_find_class(const catalog *c, const char *klass)
{
    const catalog_device *best = NULL;
    if (!c || !c->fleet || !klass)
        return NULL;
    catalog_fleet *f = c->fleet;
    for (int attempt = 0; attempt < 2 && !best; attempt++) {
        kt_error err;
        kt_error_clear(&err);
        catalog_fleet_refresh(c, attempt == 1, &err);
        size_t best_hosts = 0;
        pthread_rwlock_rdlock(&f->lock);
        for (int i = 0; i < f->n; i++) {
            const catalog_fleet_entry *e = f->e[i];
            if (e->live && strcmp(e->dev.klass, klass) == 0 &&
                (!best || json_array_size(e->hosts) > best_hosts)) {
                best = &e->dev;
                best_hosts = json_array_size(e->hosts);
            }
        }
        pthread_rwlock_unlock(&f->lock);
    }
    return best;
}

const catalog_device *catalog_fleet_find_known(const catalog *c, const char *name)
{
    return fleet_pick(c, name, NULL, NULL, 0);
}

int catalog_fleet_names(const catalog *c, const char **names, int max)
{
    int n = 0;
    if (!c || !c->fleet)
        return 0;
    pthread_rwlock_rdlock(&c->fleet->lock);
    for (int i = 0; i < c->fleet->n && n < max; i++) {
        const catalog_device *d = &c->fleet->e[i]->dev;
        const catalog_device *local = catalog_find_real(c, d->name);
        int dup = local && local->available;
        for (int j = 0; j < n && !dup; j++)
            dup = strcmp(names[j], d->name) == 0;
        if (c->fleet->e[i]->live && !dup)
            names[n++] = d->name;
    }
    pthread_rwlock_unlock(&c->fleet->lock);
    return n;
}

static json_t *limits_json(const catalog_device *d)
{
    int n = 0;
    const char *const *names = kernel_spec_limit_names(d->kind, &n);
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++)
        json_object_set_new(o, names[i], json_integer((json_int_t)d->limits.v[i]));
    return o;
}

json_t *catalog_fleet_records_json(const catalog *c)
{
    json_t *arr = json_array();
    for (int i = 0; arr && c && i < c->n; i++) {
        const replay_dataset *ds = c->ds[i];
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, s:s, s:{}, s:{s:s}}", "name",
                                             ds->device, "kind", "replay", "ordinal", 0, "class",
                                             ds->device, "toolchain", ds->toolchain, "limits",
                                             "description", "file", ds->file));
    }
    for (int i = 0; arr && c && i < c->n_devs; i++) {
        const catalog_device *d = &c->devs[i];
        if (!d->available)
            continue;
        json_t *desc = json_loads(d->description_text ? d->description_text : "{}", 0, NULL);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, s:s, s:o, s:o}", "name", d->name,
                                             "kind", kernel_spec_kind_name(d->kind), "ordinal",
                                             d->ordinal, "class", d->klass, "toolchain",
                                             d->toolchain, "limits", limits_json(d), "description",
                                             desc ? desc : json_object()));
    }
    catalog_accel_records_json(c, arr);
    return arr;
}

/* 1 when entry i is the one catalog_fleet_find picks for its name (live, most hosts, first). */
static int is_pick(const catalog_fleet *f, int i)
{
    const catalog_fleet_entry *e = f->e[i];
    for (int j = 0; j < f->n; j++) {
        const catalog_fleet_entry *o = f->e[j];
        if (j == i || !o->live || strcmp(o->dev.name, e->dev.name) != 0)
            continue;
        size_t no = json_array_size(o->hosts), ne = json_array_size(e->hosts);
        if (no > ne || (no == ne && j < i))
            return 0;
    }
    return 1;
}

json_t *catalog_fleet_devices_json(const catalog *c)
{
    kt_error err;
    kt_error_clear(&err);
    json_t *arr = catalog_devices_json(c);
    if (!arr || !c || !c->fleet)
        return arr;
    catalog_fleet_refresh(c, 0, &err);
    pthread_rwlock_rdlock(&c->fleet->lock);
    for (int i = 0; i < c->fleet->n; i++) {
        const catalog_fleet_entry *e = c->fleet->e[i];
        const catalog_device *local = catalog_find_real(c, e->dev.name);
        if (!e->live || (local && local->available) || !is_pick(c->fleet, i))
            continue;
        json_t *o = catalog_real_device_json(c, &e->dev);
        if (o) {
            json_object_set_new(o, "hosts", copy_hosts(e->hosts));
            json_object_set_new(o, "fleet", json_true());
            json_array_append_new(arr, o);
        }
    }
    pthread_rwlock_unlock(&c->fleet->lock);
    return arr;
}
