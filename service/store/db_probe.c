/* store/db_probe — db_pool_probe (see db.h): whether the database takes writes, for /healthz and
 * for refusing new jobs on a full or read-only disk. */
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/db_internal.h"

/* The probe answers within about DB_PROBE_MS, also when the server hangs (issue 26): waiting for a
 * pooled connection (a busy pool is not an outage, so it may take most of it) and the statement
 * share it, the statement keeping at least DB_PROBE_MIN_STATEMENT_MS. A reconnection inside the
 * acquire takes at most libpq's connect_timeout (2 s). */
#define DB_PROBE_MS               2000
#define DB_PROBE_MIN_STATEMENT_MS 500

const char *db_state_name(db_state s)
{
    switch (s) {
    case DB_STATE_OK:
        return "ok";
    case DB_STATE_DOWN:
        return "down";
    case DB_STATE_FULL:
        return "full";
    case DB_STATE_READ_ONLY:
        return "read_only";
    }
    return "down";
}

db_state db_state_of(const char *sqlstate, const char *message)
{
    if (sqlstate && strcmp(sqlstate, "53100") == 0)
        return DB_STATE_FULL;
    if (sqlstate && strcmp(sqlstate, "25006") == 0)
        return DB_STATE_READ_ONLY;
    if (message && strstr(message, "No space left on device"))
        return DB_STATE_FULL;
    if (message && strstr(message, "Read-only file system"))
        return DB_STATE_READ_ONLY;
    return DB_STATE_OK;
}

void db_pool_watch_dir(db_pool *p, const char *dir)
{
    pthread_mutex_lock(&p->probe_mu);
    snprintf(p->watch_dir, sizeof p->watch_dir, "%s", dir ? dir : "");
    p->probe_at_ns = 0;
    pthread_mutex_unlock(&p->probe_mu);
}

/* The watched directory's file system: read-only, or less free than DB_MIN_FREE_BYTES. */
static db_state probe_dir(const char *dir, kt_error *err)
{
    struct statvfs sv;
    if (!dir[0] || statvfs(dir, &sv) != 0)
        return DB_STATE_OK; /* nothing to watch, or the server's own checks will tell */
    if (sv.f_flag & ST_RDONLY) {
        kt_error_set(err, KT_ERR_STORAGE_FULL, "the database's data directory %s is read-only",
                     dir);
        kt_error_hint(err, "remount it read-write; ktuned starts the database again by itself");
        return DB_STATE_READ_ONLY;
    }
    long long free_bytes = (long long)sv.f_bavail * (long long)sv.f_frsize;
    if (free_bytes < DB_MIN_FREE_BYTES) {
        kt_error_set(err, KT_ERR_STORAGE_FULL,
                     "the database's disk is full: %lld MiB free in %s, %lld MiB needed",
                     free_bytes >> 20, dir, DB_MIN_FREE_BYTES >> 20);
        kt_error_hint(err, "free space on that disk; jobs resume by themselves");
        return DB_STATE_FULL;
    }
    return DB_STATE_OK;
}

/* A committed transaction that took a transaction id: fails on a read-only server (25006) and
 * on a lost connection. */
static db_state probe_server(db_pool *p, kt_error *err)
{
    char state[6] = "";
    uint64_t t0 = kt_clock_ns();
    PGconn *c = db_acquire(p, DB_PROBE_MS - DB_PROBE_MIN_STATEMENT_MS, err);
    if (!c)
        return DB_STATE_DOWN;
    long left = DB_PROBE_MS - (long)(kt_clock_since_ns(t0) / 1000000u);
    db_set_limit(c, (int)(left > DB_PROBE_MIN_STATEMENT_MS ? left : DB_PROBE_MIN_STATEMENT_MS));
    db_state s = DB_STATE_OK;
    PGresult *r = db_exec_state(c, "SELECT pg_catalog.txid_current()", 0, NULL, state, err);
    if (r)
        PQclear(r);
    else if ((s = db_state_of(state, err->message)) == DB_STATE_OK)
        s = DB_STATE_DOWN; /* a lost connection, a server shutting down or starting up */
    db_release(p, c);
    return s;
}

db_state db_pool_probe(db_pool *p, kt_error *err)
{
    kt_error why;
    kt_error_clear(&why);
    db_state s;
    pthread_mutex_lock(&p->probe_mu);
    pthread_mutex_lock(&p->mu);
    unsigned long gen = p->down_gen; /* an outage that began or ended since: probe again */
    pthread_mutex_unlock(&p->mu);
    if (p->probe_at_ns && gen == p->probe_gen &&
        kt_clock_since_ns(p->probe_at_ns) < (uint64_t)DB_PROBE_CACHE_MS * 1000000u)
        goto out;
    s = probe_dir(p->watch_dir, &why);
    if (s == DB_STATE_OK)
        s = probe_server(p, &why);
    if (s != p->probe_state) {
        if (s == DB_STATE_OK)
            log_warn("database writable again (was %s)", db_state_name(p->probe_state));
        else
            log_warn("database %s: %s", db_state_name(s), why.message);
    }
    p->probe_state = s;
    p->probe_err = why;
    p->probe_at_ns = kt_clock_ns();
    pthread_mutex_lock(&p->mu);
    p->probe_gen = p->down_gen;
    pthread_mutex_unlock(&p->mu);
out:
    s = p->probe_state;
    if (s != DB_STATE_OK && err)
        *err = p->probe_err;
    pthread_mutex_unlock(&p->probe_mu);
    return s;
}

int db_pool_check_writable(db_pool *p, kt_error *err)
{
    return db_pool_probe(p, err) == DB_STATE_OK ? 0 : -1;
}
