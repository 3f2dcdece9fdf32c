/* store/db_internal — the pool's insides, shared by db.c (connections, outages) and db_probe.c
 * (the health probe). Internal to store/. */
#ifndef KT_STORE_DB_INTERNAL_H
#define KT_STORE_DB_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "store/db.h"

/* One connection of the pool. Its address is the connection's libpq instance data (db.c's event
 * procedure), so that db_exec, which gets only the PGconn, finds the time limit and the pool. */
typedef struct db_slot {
    db_pool *pool;
    int limit_ms;      /* db_set_limit; DB_LIMIT_MS from each db_acquire on */
    unsigned prepared; /* bit i: db_prepared i is prepared in this session (db_exec_prepared) */
    const char *prepared_sql[DB_PREPARED__COUNT]; /* the text each was prepared with */
} db_slot;

struct db_pool {
    pthread_mutex_t mu;
    pthread_cond_t freed; /* signalled by db_release; waits use CLOCK_MONOTONIC */
    int size;
    PGconn **conns;
    unsigned char *busy;
    db_slot *slots; /* one per connection */
    /* Outage state, under mu: set by the first reconnection that fails, cleared by one that works.
     */
    int down;
    unsigned long down_gen; /* bumped when down changes: db_pool_probe's cache is then stale */
    uint64_t down_since_ns, last_try_ns;
    char down_msg[KT_ERROR_MESSAGE_MAX];
    /* db_pool_probe's cache, under probe_mu (held while probing: one probe at a time). */
    pthread_mutex_t probe_mu;
    char watch_dir[PATH_MAX]; /* the embedded cluster's data directory, or "" */
    uint64_t probe_at_ns;     /* 0: never probed */
    unsigned long probe_gen;  /* down_gen when probed */
    db_state probe_state;
    kt_error probe_err;
};

/* What a failed statement says about the disk: DB_STATE_FULL (SQLSTATE 53100, "No space left on
 * device"), DB_STATE_READ_ONLY (25006, "Read-only file system"), else DB_STATE_OK. sqlstate and
 * message may be NULL. */
db_state db_state_of(const char *sqlstate, const char *message);

#endif
