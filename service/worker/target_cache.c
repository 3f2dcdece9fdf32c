#include "worker/target_cache.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct cache_entry {
    long long job_id; /* 0: free slot */
    target t;
    int users;
    int forgotten;            /* free it when users drops to 0 */
    unsigned long long stamp; /* last use, for eviction */
} cache_entry;

struct target_cache {
    const catalog *cat;
    pthread_mutex_t lock;
    cache_entry *entries;
    int capacity;
    unsigned long long clock;
};

target_cache *target_cache_new(const catalog *cat, int capacity)
{
    target_cache *tc = calloc(1, sizeof *tc);
    if (!tc)
        return NULL;
    tc->entries = calloc((size_t)(capacity > 0 ? capacity : 1), sizeof *tc->entries);
    if (!tc->entries) {
        free(tc);
        return NULL;
    }
    tc->cat = cat;
    tc->capacity = capacity > 0 ? capacity : 1;
    pthread_mutex_init(&tc->lock, NULL);
    return tc;
}

static void entry_clear(cache_entry *e)
{
    target_release(&e->t);
    memset(e, 0, sizeof *e);
}

void target_cache_free(target_cache *tc)
{
    if (!tc)
        return;
    for (int i = 0; i < tc->capacity; i++)
        entry_clear(&tc->entries[i]);
    pthread_mutex_destroy(&tc->lock);
    free(tc->entries);
    free(tc);
}

/* Under the lock: the live entry of job_id, or NULL. */
static cache_entry *lookup(target_cache *tc, long long job_id)
{
    for (int i = 0; i < tc->capacity; i++) {
        cache_entry *e = &tc->entries[i];
        if (e->job_id == job_id && !e->forgotten)
            return e;
    }
    return NULL;
}

/* Under the lock: a free slot, evicting the least recently used unused entry; NULL when all are
 * in use. */
static cache_entry *free_slot(target_cache *tc)
{
    cache_entry *victim = NULL;
    for (int i = 0; i < tc->capacity; i++) {
        cache_entry *e = &tc->entries[i];
        if (e->job_id == 0)
            return e;
        if (e->users == 0 && (!victim || e->stamp < victim->stamp))
            victim = e;
    }
    if (victim)
        entry_clear(victim);
    return victim;
}

const target *target_cache_find(target_cache *tc, long long job_id)
{
    pthread_mutex_lock(&tc->lock);
    cache_entry *e = lookup(tc, job_id);
    if (e) {
        e->users++;
        e->stamp = ++tc->clock;
    }
    pthread_mutex_unlock(&tc->lock);
    return e ? &e->t : NULL;
}

const target *target_cache_open(target_cache *tc, long long job_id, const target_key *stored,
                                const json_t *problem, const json_t *space, kt_error *err)
{
    const target *found = target_cache_find(tc, job_id);
    if (found)
        return found;
    /* Resolved outside the lock (building a space takes a while); a thread that raced us and won
     * keeps its entry, ours is dropped. */
    target t;
    if (catalog_reopen_space(tc->cat, stored, problem, space, &t, err) < 0)
        return NULL;
    pthread_mutex_lock(&tc->lock);
    cache_entry *e = lookup(tc, job_id);
    if (!e && (e = free_slot(tc))) {
        e->job_id = job_id;
        e->t = t;
        memset(&t, 0, sizeof t);
    }
    if (e) {
        e->users++;
        e->stamp = ++tc->clock;
    }
    pthread_mutex_unlock(&tc->lock);
    target_release(&t); /* zeroed when the cache took it */
    if (!e)
        kt_error_set(err, KT_ERR_INTERNAL, "target cache full: %d targets in use", tc->capacity);
    return e ? &e->t : NULL;
}

void target_cache_release(target_cache *tc, const target *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&tc->lock);
    cache_entry *e = (cache_entry *)((const char *)t - offsetof(cache_entry, t));
    if (--e->users == 0 && e->forgotten)
        entry_clear(e);
    pthread_mutex_unlock(&tc->lock);
}

void target_cache_forget(target_cache *tc, long long job_id)
{
    pthread_mutex_lock(&tc->lock);
    cache_entry *e = lookup(tc, job_id);
    if (e) {
        e->forgotten = 1;
        if (e->users == 0)
            entry_clear(e);
    }
    pthread_mutex_unlock(&tc->lock);
}

int target_cache_entries(target_cache *tc)
{
    int n = 0;
    pthread_mutex_lock(&tc->lock);
    for (int i = 0; i < tc->capacity; i++)
        n += tc->entries[i].job_id != 0;
    pthread_mutex_unlock(&tc->lock);
    return n;
}
