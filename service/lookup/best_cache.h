/* lookup/best_cache — the process's cache of GET /v1/best answers: the reply bytes (status, JSON
 * body, ETag) keyed by the normalized request (kernel, device, options, problem arguments sorted by
 * name), each tagged with the result key it was made from (kernel, device class, kernel hash,
 * toolchain, problem key). A hit is a hash look-up and a copy of the body under a read lock: no
 * SQL, no catalog, no JSON.
 *
 * Correct across processes: the listener (lookup/best_listen.h) turns the NOTIFYs of migration 007
 * into best_cache_invalidate / best_cache_flush. A fill races an invalidation through tickets:
 * best_cache_ticket is taken before the database is read, and best_cache_put drops the answer when
 * an invalidation of its key (or a flush) came in between, so a stale answer is never stored.
 *
 * What an entry depends on (flags): a measured answer on its own best row; a predicted answer (or a
 * negative entry that asked for a prediction) on the models of its key as well; a nearest answer
 * (or a negative entry with fallback=nearest) on every best row of its key. best_cache_invalidate
 * drops exactly those.
 *
 * Thread-safe: any number of threads look up, fill and invalidate at once. Bounded: at most
 * max_entries entries and max_bytes bytes of keys and bodies; the oldest fill is evicted first.
 * Lifecycle: best_cache_new -> (lookups, fills, invalidations)* -> best_cache_free (no caller
 * left). */
#ifndef KT_LOOKUP_BEST_CACHE_H
#define KT_LOOKUP_BEST_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/target_key.h"

#define BEST_CACHE_KEY_MAX  4096 /* bytes of a normalized request; longer ones are not cached */
#define BEST_CACHE_BODY_MAX (64 * 1024) /* bytes of a body; larger answers are not cached */

/* What an entry depends on, beyond its own best row. */
enum {
    BEST_CACHE_MEASURED = 1,  /* a measurement: a tune_on_miss request may take it */
    BEST_CACHE_MODELS = 2,    /* may change when a model of the key becomes ready or superseded */
    BEST_CACHE_WHOLE_KEY = 4, /* may change when any problem of the key gets a best entry */
};

typedef struct best_cache best_cache;

/* A cached reply, copied out: the entry's attachment with a reference taken (the caller releases
 * it), or when it has none the body, malloc'd (the caller frees it); etag NUL-terminated. */
typedef struct best_cache_hit {
    int status; /* 200, or 404 for a negative entry */
    unsigned flags;
    void *attach;
    char *body;
    size_t body_len;
    char etag[32];
} best_cache_hit;

/* What a fill saw before it read the database (best_cache_ticket). */
typedef struct best_cache_ticket {
    uint64_t flush_gen;
    uint64_t stripe_gen;
    unsigned stripe;
} best_cache_ticket;

typedef struct best_cache_stats {
    uint64_t hits, misses, fills, fills_dropped, invalidated, flushes, evicted;
    uint64_t entries, bytes;
    int synced; /* 1 while the listener is connected and LISTENing */
} best_cache_stats;

/* max_entries >= 1, max_bytes >= 1; NULL when out of memory. */
best_cache *best_cache_new(size_t max_entries, size_t max_bytes);
void best_cache_free(best_cache *c);
/* Entries may carry an attachment (e.g. the reply prepared for the server, http/prepared.h),
 * reference-counted through these two (called under the cache's lock: keep them short). Set once,
 * before the first put. */
void best_cache_set_attach_ops(best_cache *c, void (*retain)(void *), void (*release)(void *));

/* Copies the entry of the normalized request qkey (qlen bytes) into *out: 1 hit, 0 miss, -1 out of
 * memory (counted as a miss). */
int best_cache_get(best_cache *c, const char *qkey, size_t qlen, best_cache_hit *out);

/* Taken before the database is read for a fill of key (its problem_key is not used). */
best_cache_ticket best_cache_ticket_take(best_cache *c, const target_key *key);
/* Stores a reply made from key (its kernel, device_class, kernel_hash, toolchain, problem_key are
 * copied) unless an invalidation of key or a flush came after the ticket was taken, or the cache is
 * unsynced (best_cache_set_synced; a new cache is unsynced until its listener LISTENs). Returns 1
 * stored, 0 dropped (a race lost, too large), -1 out of memory. etag: best_cache_etag of body.
 * attach (or NULL): its reference is taken over, released when the entry goes or is not stored. */
int best_cache_put(best_cache *c, const best_cache_ticket *t, const char *qkey, size_t qlen,
                   const target_key *key, unsigned flags, int status, const char *body,
                   size_t body_len, void *attach);

/* A best row of (kernel, device_class, kernel_hash, toolchain, problem_key) changed: drops its
 * entries for that problem and the BEST_CACHE_WHOLE_KEY entries of the key. With models set (a
 * model of the key changed; problem_key is then ignored, may be NULL): drops the BEST_CACHE_MODELS
 * and BEST_CACHE_WHOLE_KEY entries of the key instead. Returns the entries dropped. */
size_t best_cache_invalidate(best_cache *c, const char *kernel, const char *device_class,
                             const char *kernel_hash, const char *toolchain,
                             const char *problem_key, int models);
/* Drops everything (notifications may have been lost). */
void best_cache_flush(best_cache *c);
/* The listener's state: 0 when its connection broke (cached answers are still served: they are
 * what was true when the database was last heard; nothing new is stored), 1 once it LISTENs again
 * (after a flush). */
void best_cache_set_synced(best_cache *c, int synced);
void best_cache_stats_get(best_cache *c, best_cache_stats *out);

/* The strong ETag of a body: "\"" 16 hex digits of its FNV-1a hash, then "-" and its length in
 * hex "\"". The same bytes give the same ETag in every process. out: at least 32 bytes. */
void best_cache_etag(const char *body, size_t len, char out[32]);
/* If-None-Match is matched against it by http_etag_matches (http/server.h). */

#endif
