/* lookup/best_cache — see best_cache.h. Two chained hash tables under one writer-preferring
 * read-write lock: entries by normalized request, and groups (kernel, device class, kernel hash,
 * toolchain) holding their entries in a list, so that an invalidation touches only its key. Entries
 * also sit in a list by age for eviction. Generations (one per stripe of groups, one for flushes)
 * let a fill that raced an invalidation drop its answer. */
#include "lookup/best_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"

#define BC_STRIPES      256
#define BC_MAX_BUCKETS  (1u << 22)
#define BC_MIN_BUCKETS  64u
#define BC_ENTRY_EXTRA  160 /* bytes an entry costs beyond its key, problem key and body */
#define BC_GROUP_KEY_MX 2048

typedef struct bc_group bc_group;

typedef struct bc_entry {
    struct bc_entry *next;          /* hash chain by request */
    struct bc_entry *gprev, *gnext; /* entries of the group */
    struct bc_entry *older, *newer; /* age list */
    bc_group *group;
    uint64_t qhash;
    unsigned flags;
    int status;
    size_t qlen, body_len, cost;
    char *qkey, *problem_key, *body; /* one allocation with the entry */
    void *attach;                    /* one reference, or NULL */
    char etag[32];
} bc_entry;

struct bc_group {
    bc_group *next; /* hash chain */
    uint64_t hash;
    size_t klen;
    bc_entry *first;
    char key[]; /* kernel \0 device_class \0 kernel_hash \0 toolchain \0 */
};

struct best_cache {
    pthread_rwlock_t lock;
    bc_entry **entries;
    size_t n_entry_buckets;
    bc_group **groups;
    size_t n_group_buckets;
    bc_entry *oldest, *newest;
    size_t count, bytes, max_entries, max_bytes;
    _Atomic uint64_t flush_gen;
    _Atomic uint64_t stripe_gen[BC_STRIPES];
    _Atomic uint64_t hits, misses, fills, fills_dropped, invalidated, flushes, evicted;
    _Atomic int synced;
    void (*retain)(void *);
    void (*release)(void *);
};

static size_t pow2_at_least(size_t n)
{
    size_t b = BC_MIN_BUCKETS;
    while (b < n && b < BC_MAX_BUCKETS)
        b <<= 1;
    return b;
}

static uint64_t hash_request(const char *qkey, size_t qlen)
{
    return kt_fnv1a(KT_FNV1A_OFFSET, qkey, qlen);
}

/* The group key of (kernel, class, hash, toolchain) into buf; its length, or 0 when too long. */
static size_t group_key(char *buf, const char *kernel, const char *device_class,
                        const char *kernel_hash, const char *toolchain, uint64_t *hash)
{
    const char *parts[] = {kernel, device_class, kernel_hash, toolchain};
    size_t len = 0;
    uint64_t h = KT_FNV1A_OFFSET;
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(parts[i] ? parts[i] : "");
        if (len + n + 1 > BC_GROUP_KEY_MX)
            return 0;
        memcpy(buf + len, parts[i] ? parts[i] : "", n);
        buf[len + n] = '\0';
        h = kt_fnv1a_field(h, buf + len, n);
        len += n + 1;
    }
    *hash = h;
    return len;
}

best_cache *best_cache_new(size_t max_entries, size_t max_bytes)
{
    if (max_entries < 1 || max_bytes < 1)
        return NULL;
    best_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    c->n_entry_buckets = pow2_at_least(max_entries);
    c->n_group_buckets = pow2_at_least(max_entries / 4);
    c->entries = calloc(c->n_entry_buckets, sizeof *c->entries);
    c->groups = calloc(c->n_group_buckets, sizeof *c->groups);
    pthread_rwlockattr_t attr;
    int attr_ok = pthread_rwlockattr_init(&attr) == 0;
    /* Writers first: a steady stream of lookups must not hold an invalidation off for ever. */
    if (attr_ok)
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int lock_ok = attr_ok && pthread_rwlock_init(&c->lock, &attr) == 0;
    if (attr_ok)
        pthread_rwlockattr_destroy(&attr);
    if (!c->entries || !c->groups || !lock_ok) {
        free(c->entries);
        free(c->groups);
        if (lock_ok)
            pthread_rwlock_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return c;
}

void best_cache_free(best_cache *c)
{
    if (!c)
        return;
    best_cache_flush(c);
    pthread_rwlock_destroy(&c->lock);
    free(c->entries);
    free(c->groups);
    free(c);
}

static bc_entry **entry_slot(best_cache *c, const char *qkey, size_t qlen, uint64_t h)
{
    bc_entry **pp = &c->entries[h & (c->n_entry_buckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->qhash == h && (*pp)->qlen == qlen && memcmp((*pp)->qkey, qkey, qlen) == 0)
            break;
    return pp;
}

static bc_group **group_slot(best_cache *c, const char *gkey, size_t klen, uint64_t h)
{
    bc_group **pp = &c->groups[h & (c->n_group_buckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && (*pp)->klen == klen && memcmp((*pp)->key, gkey, klen) == 0)
            break;
    return pp;
}

/* Unlinks e from every list and frees it (and its group once empty). Write lock held. */
static void entry_remove(best_cache *c, bc_entry *e)
{
    bc_entry **pp = entry_slot(c, e->qkey, e->qlen, e->qhash);
    if (*pp == e)
        *pp = e->next;
    if (e->gprev)
        e->gprev->gnext = e->gnext;
    else
        e->group->first = e->gnext;
    if (e->gnext)
        e->gnext->gprev = e->gprev;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    bc_group *g = e->group;
    if (!g->first) {
        bc_group **gp = group_slot(c, g->key, g->klen, g->hash);
        if (*gp == g)
            *gp = g->next;
        free(g);
    }
    c->count--;
    c->bytes -= e->cost;
    if (e->attach && c->release)
        c->release(e->attach);
    free(e);
}

void best_cache_set_attach_ops(best_cache *c, void (*retain)(void *), void (*release)(void *))
{
    c->retain = retain;
    c->release = release;
}

int best_cache_get(best_cache *c, const char *qkey, size_t qlen, best_cache_hit *out)
{
    int rc = 0;
    uint64_t h = hash_request(qkey, qlen);
    memset(out, 0, sizeof *out);
    pthread_rwlock_rdlock(&c->lock);
    bc_entry *e = *entry_slot(c, qkey, qlen, h);
    if (e && e->attach && c->retain) {
        c->retain(e->attach); /* no copy: the attachment is the reply */
        out->attach = e->attach;
        out->body_len = e->body_len;
        out->status = e->status;
        out->flags = e->flags;
        memcpy(out->etag, e->etag, sizeof out->etag);
        rc = 1;
    } else if (e) {
        out->body = malloc(e->body_len + 1);
        if (out->body) {
            memcpy(out->body, e->body, e->body_len);
            out->body[e->body_len] = '\0';
            out->body_len = e->body_len;
            out->status = e->status;
            out->flags = e->flags;
            memcpy(out->etag, e->etag, sizeof out->etag);
            rc = 1;
        } else {
            rc = -1;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    atomic_fetch_add_explicit(rc == 1 ? &c->hits : &c->misses, 1, memory_order_relaxed);
    return rc;
}

best_cache_ticket best_cache_ticket_take(best_cache *c, const target_key *key)
{
    char gkey[BC_GROUP_KEY_MX];
    uint64_t gh = 0;
    best_cache_ticket t;
    /* A key too long for a group is never stored (best_cache_put checks the same). */
    group_key(gkey, key->kernel, key->device_class, key->kernel_hash, key->toolchain, &gh);
    t.stripe = (unsigned)(gh % BC_STRIPES);
    t.flush_gen = atomic_load_explicit(&c->flush_gen, memory_order_acquire);
    t.stripe_gen = atomic_load_explicit(&c->stripe_gen[t.stripe], memory_order_acquire);
    return t;
}

/* A new entry with its strings in the same allocation; NULL when out of memory. */
static bc_entry *entry_new(const char *qkey, size_t qlen, const char *problem_key, unsigned flags,
                           int status, const char *body, size_t body_len)
{
    size_t plen = strlen(problem_key);
    bc_entry *e = malloc(sizeof *e + qlen + 1 + plen + 1 + body_len + 1);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->qkey = (char *)(e + 1);
    e->problem_key = e->qkey + qlen + 1;
    e->body = e->problem_key + plen + 1;
    memcpy(e->qkey, qkey, qlen);
    e->qkey[qlen] = '\0';
    memcpy(e->problem_key, problem_key, plen + 1);
    memcpy(e->body, body, body_len);
    e->body[body_len] = '\0';
    e->qlen = qlen;
    e->body_len = body_len;
    e->qhash = hash_request(qkey, qlen);
    e->flags = flags;
    e->status = status;
    e->cost = qlen + plen + body_len + BC_ENTRY_EXTRA;
    best_cache_etag(body, body_len, e->etag);
    return e;
}

/* Links e into the tables and lists, replacing an entry of the same request. Write lock held. */
static int entry_link(best_cache *c, bc_entry *e, const char *gkey, size_t klen, uint64_t gh)
{
    bc_entry *old = *entry_slot(c, e->qkey, e->qlen, e->qhash);
    if (old)
        entry_remove(c, old);
    while (c->oldest && (c->count + 1 > c->max_entries || c->bytes + e->cost > c->max_bytes)) {
        entry_remove(c, c->oldest);
        atomic_fetch_add_explicit(&c->evicted, 1, memory_order_relaxed);
    }
    bc_group **gp = group_slot(c, gkey, klen, gh);
    bc_group *g = *gp;
    if (!g) {
        g = malloc(sizeof *g + klen);
        if (!g)
            return -1;
        g->next = NULL;
        g->hash = gh;
        g->klen = klen;
        g->first = NULL;
        memcpy(g->key, gkey, klen);
        *gp = g;
    }
    e->group = g;
    e->gnext = g->first;
    if (g->first)
        g->first->gprev = e;
    g->first = e;
    bc_entry **slot = &c->entries[e->qhash & (c->n_entry_buckets - 1)];
    e->next = *slot;
    *slot = e;
    e->older = c->newest;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    c->count++;
    c->bytes += e->cost;
    return 0;
}

int best_cache_put(best_cache *c, const best_cache_ticket *t, const char *qkey, size_t qlen,
                   const target_key *key, unsigned flags, int status, const char *body,
                   size_t body_len, void *attach)
{
    char gkey[BC_GROUP_KEY_MX];
    uint64_t gh = 0;
    int rc = 0;
    bc_entry *e = NULL;
    size_t klen =
        group_key(gkey, key->kernel, key->device_class, key->kernel_hash, key->toolchain, &gh);
    if (klen == 0 || qlen == 0 || qlen > BEST_CACHE_KEY_MAX || body_len > BEST_CACHE_BODY_MAX ||
        !key->problem_key)
        goto out; /* not cacheable: dropped */
    e = entry_new(qkey, qlen, key->problem_key, flags, status, body, body_len);
    if (!e) {
        rc = -1;
        goto out;
    }
    pthread_rwlock_wrlock(&c->lock);
    /* Unsynced (no listener yet, or its connection broke): nothing new is stored, since no change
     * could be heard to drop it; what is there was true when the database was last heard. An
     * invalidation or flush after the ticket: the answer may be older than the change. */
    if (e->cost > c->max_bytes || !atomic_load(&c->synced) ||
        atomic_load_explicit(&c->flush_gen, memory_order_relaxed) != t->flush_gen ||
        atomic_load_explicit(&c->stripe_gen[t->stripe], memory_order_relaxed) != t->stripe_gen) {
        rc = 0;
    } else if (entry_link(c, e, gkey, klen, gh) < 0) {
        rc = -1;
    } else {
        e->attach = attach; /* the entry holds the reference now */
        attach = NULL;
        e = NULL;
        rc = 1;
    }
    pthread_rwlock_unlock(&c->lock);
out:
    if (attach && c->release)
        c->release(attach);
    free(e);
    atomic_fetch_add_explicit(rc == 1 ? &c->fills : &c->fills_dropped, 1, memory_order_relaxed);
    return rc;
}

size_t best_cache_invalidate(best_cache *c, const char *kernel, const char *device_class,
                             const char *kernel_hash, const char *toolchain,
                             const char *problem_key, int models)
{
    char gkey[BC_GROUP_KEY_MX];
    uint64_t gh = 0;
    size_t dropped = 0;
    size_t klen = group_key(gkey, kernel, device_class, kernel_hash, toolchain, &gh);
    if (klen == 0)
        return 0; /* never stored */
    pthread_rwlock_wrlock(&c->lock);
    /* Under the lock: a fill that holds an older generation is dropped from now on. */
    atomic_fetch_add_explicit(&c->stripe_gen[gh % BC_STRIPES], 1, memory_order_release);
    bc_group *g = *group_slot(c, gkey, klen, gh);
    for (bc_entry *e = g ? g->first : NULL, *next; e; e = next) {
        next = e->gnext;
        int drop = (e->flags & BEST_CACHE_WHOLE_KEY) ||
                   (models ? (e->flags & BEST_CACHE_MODELS) != 0
                           : (problem_key && strcmp(e->problem_key, problem_key) == 0));
        if (drop) {
            entry_remove(c, e); /* may free g with its last entry; next is read first */
            dropped++;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    atomic_fetch_add_explicit(&c->invalidated, dropped, memory_order_relaxed);
    return dropped;
}

void best_cache_flush(best_cache *c)
{
    pthread_rwlock_wrlock(&c->lock);
    atomic_fetch_add_explicit(&c->flush_gen, 1, memory_order_release);
    while (c->oldest)
        entry_remove(c, c->oldest);
    pthread_rwlock_unlock(&c->lock);
    atomic_fetch_add_explicit(&c->flushes, 1, memory_order_relaxed);
}

void best_cache_set_synced(best_cache *c, int synced)
{
    atomic_store(&c->synced, synced ? 1 : 0);
}

void best_cache_stats_get(best_cache *c, best_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    out->hits = atomic_load(&c->hits);
    out->misses = atomic_load(&c->misses);
    out->fills = atomic_load(&c->fills);
    out->fills_dropped = atomic_load(&c->fills_dropped);
    out->invalidated = atomic_load(&c->invalidated);
    out->flushes = atomic_load(&c->flushes);
    out->evicted = atomic_load(&c->evicted);
    out->synced = atomic_load(&c->synced);
    pthread_rwlock_rdlock(&c->lock);
    out->entries = c->count;
    out->bytes = c->bytes;
    pthread_rwlock_unlock(&c->lock);
}

void best_cache_etag(const char *body, size_t len, char out[32])
{
    uint64_t h = kt_fnv1a(KT_FNV1A_OFFSET, body, len);
    snprintf(out, 32, "\"%016llx-%llx\"", (unsigned long long)h,
             (unsigned long long)(len & 0xffffffffu));
}
