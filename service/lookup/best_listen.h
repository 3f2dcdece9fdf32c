/* lookup/best_listen — the thread that keeps a best_cache true across processes: its own database
 * connection (db_connect, not the pool) LISTENs on ktune_best and ktune_models (the triggers of
 * sql/007_lookup_notify.sql, fired by every write of any process) and turns each notification into
 * best_cache_invalidate ("*" or a payload it cannot read: best_cache_flush).
 *
 * When the connection breaks the cache is marked unsynced (its answers are still served: the
 * database may be down) and the thread reconnects with a backoff (0.1 s doubling to 2 s); once it
 * LISTENs again it flushes the whole cache, since notifications sent meanwhile are lost, and marks
 * it synced.
 *
 * Lifecycle: best_listen_start (the thread runs at once; the cache and conninfo are borrowed and
 * must outlive it) -> best_listen_stop (joins, closes the connection, frees). */
#ifndef KT_LOOKUP_BEST_LISTEN_H
#define KT_LOOKUP_BEST_LISTEN_H

#include "core/error.h"
#include "lookup/best_cache.h"

#define BEST_LISTEN_CHANNEL_BEST   "ktune_best"
#define BEST_LISTEN_CHANNEL_MODELS "ktune_models"

typedef struct best_listen best_listen;

best_listen *best_listen_start(best_cache *cache, const char *conninfo, kt_error *err);
void best_listen_stop(best_listen *l); /* NULL is fine */

/* Applies one notification to cache (exposed for the unit tests): channel ktune_best with the
 * payload {"kernel","device_class","kernel_hash","problem_key","toolchain"}, or ktune_models with
 * {"kernel","device_class","kernel_hash","toolchain"}; "*" or anything unreadable flushes. Returns
 * the entries dropped, or -1 when it flushed. */
long best_listen_apply(best_cache *cache, const char *channel, const char *payload);

#endif
