/* worker/target_cache — the targets of the jobs this process works on, resolved once and shared by
 * the job driver and every measurement thread. A job's target is stored with the job when it is
 * made (jobs.kernel .. problem, see store/job_store.h job_target); a process reopens it from there
 * once (catalog_reopen: same key, or the job cannot go on), not once per thread: a cpu kernel's
 * space takes milliseconds to build and can hold megabytes.
 *
 * The first user to need a job's target opens it (the driver when it opens the job, or a measurer
 * for a job driven by another process); later users find it. Entries in use are never evicted;
 * unused ones stay for the next trial of the job and are evicted oldest first when a slot is
 * needed, or at once when their job was forgotten (target_cache_forget, when a driver closes it).
 *
 * Lifecycle: target_cache_new -> target_cache_find / target_cache_open -> target_cache_release,
 * from any thread -> target_cache_free (after every user released). A target returned by find or
 * open is borrowed, read-only, and stays valid until the matching release. */
#ifndef KT_WORKER_TARGET_CACHE_H
#define KT_WORKER_TARGET_CACHE_H

#include "catalog/catalog.h"
#include "core/error.h"
#include "core/target_key.h"

typedef struct target_cache target_cache;

/* capacity: entries at most; more than the users that can hold an entry at once (drivers and
 * measuring threads), so an open always finds a slot. NULL when out of memory. */
target_cache *target_cache_new(const catalog *cat, int capacity);
void target_cache_free(target_cache *tc);

/* The cached target of job_id (counted as a user), or NULL when it is not cached. */
const target *target_cache_find(target_cache *tc, long long job_id);
/* The target of job_id, reopened from its stored key and problem (and an external job's stored
 * space, else NULL: catalog_reopen_space) when not cached yet (counted as a user). Errors: those of
 * catalog_reopen (KT_ERR_CONFLICT: the kernel changed since the job was made;
 * KT_ERR_TOOLCHAIN_CHANGED: the device's compiler or driver did), KT_ERR_INTERNAL when every slot
 * is in use. */
const target *target_cache_open(target_cache *tc, long long job_id, const target_key *stored,
                                const json_t *problem, const json_t *space, kt_error *err);
/* One user less; NULL is fine. */
void target_cache_release(target_cache *tc, const target *t);
/* The job is over here: its entry is freed once its last user releases it. */
void target_cache_forget(target_cache *tc, long long job_id);
/* Entries held now (in use, kept for reuse, or forgotten and waiting for their last user): for
 * /metrics, where a count that does not go back down once jobs end is a leak. */
int target_cache_entries(target_cache *tc);

#endif
