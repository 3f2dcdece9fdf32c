/* store/db — see db.h. The pool hands out whole connections: a thread that holds one owns it until
 * db_release, so libpq (not thread-safe per connection) is never shared between threads. */
#include "store/db.h"

#include <errno.h>
#include <libpq-events.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/log.h"
#include "core/clock.h"
#include "store/db_internal.h"

/* While the database is down, one reconnection attempt per this many ms (by whichever thread asks
 * first); the other acquires fail at once with the last error. */
#define DB_RETRY_MS 250
/* libpq's connect_timeout (seconds, its minimum is 2): a server that does not answer fails an
 * acquire within about this, never hangs it. A conninfo that sets its own wins. */
#define DB_CONNECT_TIMEOUT "2"

#define DB_OUTAGE_HINT                                                                             \
    "the database is down or restarting; ktuned reconnects by itself: retry in a few seconds "     \
    "(GET /healthz says when it is back)"
#define DB_STORAGE_HINT                                                                            \
    "free space on the database's disk or make it writable again; ktuned resumes by itself"
#define DB_HUNG_HINT                                                                               \
    "the database does not answer (stopped, or its disk hangs); ktuned drops the connection and "  \
    "reconnects by itself: retry in a few seconds (GET /healthz says when it is back)"

/* Copies a libpq message into err as one line: the first line, without trailing blanks. */
static void set_db_error(kt_error *err, const char *prefix, const char *msg)
{
    char line[KT_ERROR_MESSAGE_MAX];
    size_t n = strcspn(msg ? msg : "", "\r\n");
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, msg ? msg : "", n);
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    line[n] = '\0';
    kt_error_set(err, KT_ERR_DATABASE, "%s%s", prefix, n ? line : "unknown database error");
}

/* Server notices ("relation already exists, skipping") go to the debug log, not to stderr. */
static void log_notice(void *arg, const char *message)
{
    (void)arg;
    log_debug("postgresql: %.*s", (int)strcspn(message, "\n"), message);
}

/* libpq calls this on a connection's events; it exists so that a pooled connection can carry its
 * db_slot as instance data (PQsetInstanceData needs a registered procedure), and it forgets the
 * statements prepared on a connection that was reset. */
static int slot_event(PGEventId id, void *info, void *pass)
{
    (void)pass;
    if (id == PGEVT_CONNRESET) {
        /* A new session: none of the old one's prepared statements is there any more. */
        db_slot *slot = PQinstanceData(((PGEventConnReset *)info)->conn, slot_event);
        if (slot)
            slot->prepared = 0;
    }
    return 1;
}

/* The slot of a pooled connection, NULL for another (the listen connection). */
static db_slot *slot_of(const PGconn *conn)
{
    return conn ? PQinstanceData(conn, slot_event) : NULL;
}

PGconn *db_connect(const char *conninfo, kt_error *err)
{
    /* application_name comes first so that one given in conninfo (expanded from dbname) wins. */
    /* Over TCP, a server host that vanished without a reset is noticed within ~10 s (keepalives,
     * tcp_user_timeout) instead of the kernel's minutes; unix sockets ignore these. */
    const char *const keys[] = {
        "application_name", "connect_timeout",  "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "dbname",          NULL};
    const char *const vals[] = {"ktuned", DB_CONNECT_TIMEOUT, "5", "2", "2",
                                "10000",  conninfo,           NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (!conn) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory creating a database connection");
        return NULL;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        set_db_error(err, "cannot connect to the database: ", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, log_notice, NULL);
    /* Sending never blocks on a server that stopped reading: db_exec waits for it under its limit.
     * (PQexec ignores this and blocks as before: the migrations' scripts.) */
    if (PQsetnonblocking(conn, 1) != 0) {
        set_db_error(err, "cannot make a database connection non-blocking: ", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

db_pool *db_pool_new(const char *conninfo, int size, kt_error *err)
{
    int ok = 0;
    db_pool *p = NULL;
    if (size < 1)
        size = 1;
    p = calloc(1, sizeof *p);
    if (!p || !(p->conns = calloc((size_t)size, sizeof *p->conns)) ||
        !(p->busy = calloc((size_t)size, 1)) ||
        !(p->slots = calloc((size_t)size, sizeof *p->slots))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    p->size = size;
    kt_clock_cond_init(&p->freed); /* db_acquire's deadlines are monotonic */
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->probe_mu, NULL);
    for (int i = 0; i < size; i++) {
        p->slots[i] = (db_slot){.pool = p, .limit_ms = DB_LIMIT_MS};
        if (!(p->conns[i] = db_connect(conninfo, err)))
            goto out;
        /* Kept across PQreset: the slot stays the connection's for its life. */
        if (!PQregisterEventProc(p->conns[i], slot_event, "ktune db slot", NULL) ||
            !PQsetInstanceData(p->conns[i], slot_event, &p->slots[i])) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "cannot attach a pool slot to a connection");
            goto out;
        }
    }
    ok = 1;
out:
    if (!ok && p) {
        if (p->size)
            db_pool_free(p);
        else {
            free(p->conns);
            free(p->busy);
            free(p->slots);
            free(p);
        }
        p = NULL;
    }
    return p;
}

void db_pool_free(db_pool *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->size; i++) {
        if (p->busy[i])
            log_warn("db pool freed while connection %d is still acquired", i);
        PQfinish(p->conns[i]);
    }
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->probe_mu);
    free(p->conns);
    free(p->busy);
    free(p->slots);
    free(p);
}

/* An idle connection whose server went away has unread input (the termination notice, then EOF):
 * consuming it marks the connection bad without a failed query. A few rounds: each read may stop
 * before the EOF. */
static void notice_dead_connection(PGconn *conn)
{
    for (int i = 0; i < 4 && PQstatus(conn) == CONNECTION_OK; i++) {
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
        if (pfd.fd < 0 || poll(&pfd, 1, 0) <= 0 || !PQconsumeInput(conn))
            break;
    }
}

/* Records under mu that the server failed (a reconnection, or a statement it did not answer):
 * returns whether an outage begins with it (then the caller logs it, once). */
static int outage_note_locked(db_pool *p, uint64_t now, const char *why)
{
    int began = !p->down;
    if (began) {
        p->down_since_ns = now;
        p->down_gen++;
    }
    p->down = 1;
    snprintf(p->down_msg, sizeof p->down_msg, "%s", why);
    return began;
}

/* Resets the broken connection of slot (held by the caller). While the database is down, attempts
 * are spaced DB_RETRY_MS apart across the pool and the others fail at once, and the log gets one
 * line when an outage starts and one when it ends, never one per attempt. */
static int reconnect(db_pool *p, int slot, kt_error *err)
{
    PGconn *conn = p->conns[slot];
    uint64_t now = kt_clock_ns();
    pthread_mutex_lock(&p->mu);
    int wait = p->down && now - p->last_try_ns < (uint64_t)DB_RETRY_MS * 1000000u;
    if (wait)
        kt_error_set(err, KT_ERR_DATABASE, "%s", p->down_msg);
    else
        p->last_try_ns = now;
    pthread_mutex_unlock(&p->mu);
    if (wait) {
        kt_error_hint(err, DB_OUTAGE_HINT);
        return -1;
    }
    PQreset(conn);
    int ok = PQstatus(conn) == CONNECTION_OK && PQsetnonblocking(conn, 1) == 0;
    kt_error why;
    kt_error_clear(&why);
    if (!ok)
        set_db_error(&why, "database unreachable: ", PQerrorMessage(conn));
    pthread_mutex_lock(&p->mu);
    int was_down = p->down, began = 0;
    double down_s = (double)kt_clock_since_ns(p->down_since_ns) / 1e9;
    if (!ok) {
        began = outage_note_locked(p, now, why.message);
    } else {
        p->down_gen += p->down;
        p->down = 0;
    }
    pthread_mutex_unlock(&p->mu);
    if (!ok) {
        if (began)
            log_warn("%s; answering 503 until it is back, reconnecting every %d ms", why.message,
                     DB_RETRY_MS);
        kt_error_set(err, KT_ERR_DATABASE, "%s", why.message);
        kt_error_hint(err, DB_OUTAGE_HINT);
        return -1;
    }
    if (was_down)
        log_warn("database connection recovered after %.1f s", down_s);
    else
        log_debug("database connection %d was broken; reconnected", slot);
    return 0;
}

int db_pool_down(db_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int down = p->down;
    pthread_mutex_unlock(&p->mu);
    return down;
}

PGconn *db_acquire(db_pool *p, int timeout_ms, kt_error *err)
{
    PGconn *conn = NULL;
    int slot = -1;
    if (timeout_ms < 0)
        timeout_ms = 0;
    struct timespec deadline = kt_clock_deadline(timeout_ms);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        for (int i = 0; i < p->size && slot < 0; i++) {
            if (!p->busy[i])
                slot = i;
        }
        if (slot >= 0)
            break;
        int rc = pthread_cond_timedwait(&p->freed, &p->mu, &deadline);
        if (rc == ETIMEDOUT)
            break;
    }
    if (slot >= 0) {
        p->busy[slot] = 1;
        p->slots[slot].limit_ms = DB_LIMIT_MS;
    }
    pthread_mutex_unlock(&p->mu);
    if (slot < 0) {
        kt_error_set(err, KT_ERR_DATABASE, "no database connection free within %d ms", timeout_ms);
        kt_error_hint(err, "the service is overloaded or a database call hangs");
        goto out;
    }
    conn = p->conns[slot];
    if (PQstatus(conn) == CONNECTION_OK)
        notice_dead_connection(conn);
    /* A statement still in flight (given up on, not dropped) is as unusable as a broken socket. */
    if ((PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) == PQTRANS_ACTIVE) &&
        reconnect(p, slot, err) < 0) {
        db_release(p, conn);
        conn = NULL;
    }
out:
    return conn;
}

void db_set_limit(PGconn *conn, int limit_ms)
{
    db_slot *slot = slot_of(conn);
    if (slot)
        slot->limit_ms = limit_ms > 0 ? limit_ms : 0; /* only its holder reads or writes it */
}

void db_release(db_pool *p, PGconn *conn)
{
    if (!p || !conn)
        return;
    /* A caller that forgot to end its transaction must not hand it to the next one. */
    PGTransactionStatusType ts = PQtransactionStatus(conn);
    if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) {
        log_warn("database connection released inside a transaction; rolling back");
        db_rollback(conn);
    }
    int found = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->size; i++) {
        if (p->conns[i] == conn && p->busy[i]) {
            p->busy[i] = 0;
            found = 1;
        }
    }
    if (found)
        pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
    if (!found)
        log_warn("db_release of a connection that is not acquired from this pool");
}

/* A full or read-only disk becomes KT_ERR_STORAGE_FULL (507); a connection lost in the statement
 * gets the outage hint. sqlstate may be NULL. */
static void classify_error(PGconn *conn, const char *sqlstate, kt_error *err)
{
    if (!err)
        return;
    if (db_state_of(sqlstate, err->message) != DB_STATE_OK) {
        err->code = KT_ERR_STORAGE_FULL;
        kt_error_hint(err, DB_STORAGE_HINT);
    } else if (PQstatus(conn) != CONNECTION_OK) {
        kt_error_hint(err, DB_OUTAGE_HINT);
    }
}

static long ms_since(uint64_t t0_ns)
{
    return (long)(kt_clock_since_ns(t0_ns) / 1000000u);
}

/* Waits until PQgetResult would not block (0), flushing what is still to be sent meanwhile; -1
 * when the connection failed, 1 when limit_ms from t0 passed first (limit_ms 0: no limit). */
static int await_ready(PGconn *conn, uint64_t t0, int limit_ms)
{
    for (;;) {
        int unsent = PQflush(conn);
        if (unsent < 0)
            return -1;
        if (!unsent && !PQisBusy(conn))
            return 0;
        int timeout = -1;
        if (limit_ms > 0) {
            long left = limit_ms - ms_since(t0);
            if (left <= 0)
                return 1;
            timeout = (int)left;
        }
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN | (unsent ? POLLOUT : 0)};
        if (pfd.fd < 0)
            return -1;
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0 && !PQconsumeInput(conn))
            return -1;
    }
}

/* Gives up on conn's statement: the socket is shut down under libpq, which reads the end of it
 * and marks the connection bad, so that no call on it blocks any more (the pool resets it on a
 * later acquire). A cancel request is not sent: libpq's PQcancel waits, without a limit, for the
 * postmaster, which may be the process that is stopped. The server ends the session once it runs
 * again (client_connection_check_interval, or at its next read). */
static void drop_connection(PGconn *conn)
{
    int fd = PQsocket(conn);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    for (int i = 0; i < 4 && PQstatus(conn) == CONNECTION_OK; i++)
        PQconsumeInput(conn);
    if (PQstatus(conn) != CONNECTION_OK) {
        for (PGresult *r; (r = PQgetResult(conn));)
            PQclear(r);
    }
}

/* A statement of a pooled connection was not answered in time: that is an outage, as a failed
 * reconnection is (one log line when it begins; /healthz's cached state is stale). */
static void note_hung(PGconn *conn, const char *why)
{
    db_slot *slot = slot_of(conn);
    if (!slot)
        return;
    db_pool *p = slot->pool;
    uint64_t now = kt_clock_ns();
    pthread_mutex_lock(&p->mu);
    int began = outage_note_locked(p, now, why);
    p->last_try_ns = now; /* reconnections wait DB_RETRY_MS, as after a failed one */
    pthread_mutex_unlock(&p->mu);
    if (began)
        log_warn("%s; answering 503 until it is back, reconnecting every %d ms", why, DB_RETRY_MS);
}

/* The result of the statement just sent on conn (sent: whether the send worked), as db_exec_state
 * answers it: every result read under the connection's limit, the first failure the one kept. */
static PGresult *collect(PGconn *conn, int sent, uint64_t t0, char sqlstate[6], kt_error *err)
{
    PGresult *res = NULL;
    int hung = 0;
    if (sqlstate)
        sqlstate[0] = '\0';
    db_slot *slot = slot_of(conn);
    int limit_ms = slot ? slot->limit_ms : DB_LIMIT_MS;
    if (!sent) {
        set_db_error(err, "", PQerrorMessage(conn));
        classify_error(conn, NULL, err);
        return NULL;
    }
    /* Every result of the statement, under the limit; the first failure is the one kept. */
    for (;;) {
        int w = await_ready(conn, t0, limit_ms);
        if (w != 0 && PQstatus(conn) == CONNECTION_OK) {
            drop_connection(conn);
            hung = 1;
            break;
        }
        PGresult *r = PQgetResult(conn); /* ready, or the connection is bad: never blocks */
        if (!r)
            break;
        ExecStatusType rs = PQresultStatus(res);
        if (res && rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
            PQclear(r);
        } else {
            PQclear(res);
            res = r;
        }
    }
    if (hung) {
        char why[KT_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why,
                 "the database did not answer within %d ms; its connection was dropped", limit_ms);
        kt_error_set(err, KT_ERR_DATABASE, "%s", why);
        kt_error_hint(err, DB_HUNG_HINT);
        note_hung(conn, why);
        goto out;
    }
    ExecStatusType st = PQresultStatus(res);
    if (res && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK))
        return res;
    if (!res) {
        set_db_error(err, "", PQerrorMessage(conn));
        classify_error(conn, NULL, err);
        goto out;
    }
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (primary)
        set_db_error(err, "", primary);
    else if (PQresultErrorMessage(res)[0])
        set_db_error(err, "", PQresultErrorMessage(res));
    else
        kt_error_set(err, KT_ERR_DATABASE, "unexpected result %s", PQresStatus(st));
    if (hint)
        kt_error_hint(err, "%s", hint);
    classify_error(conn, state, err);
    if (sqlstate && state)
        snprintf(sqlstate, 6, "%s", state);
out:
    PQclear(res);
    return NULL;
}

PGresult *db_exec_state(PGconn *conn, const char *sql, int n_params, const char *const *params,
                        char sqlstate[6], kt_error *err)
{
    uint64_t t0 = kt_clock_ns();
    int sent = PQsendQueryParams(conn, sql, n_params, NULL, params, NULL, NULL, 0);
    return collect(conn, sent, t0, sqlstate, err);
}

PGresult *db_exec_prepared(PGconn *conn, db_prepared id, const char *sql, int n_params,
                           const char *const *params, kt_error *err)
{
    db_slot *slot = slot_of(conn);
    if (!slot || id < 0 || id >= DB_PREPARED__COUNT)
        return db_exec(conn, sql, n_params, params, err);
    /* One id, one text: a statement of another text under an id already prepared runs unprepared
     * (a caller's slip costs speed, never a wrong statement). */
    if ((slot->prepared & (1u << id)) && slot->prepared_sql[id] != sql &&
        strcmp(slot->prepared_sql[id], sql) != 0)
        return db_exec(conn, sql, n_params, params, err);
    char name[24];
    snprintf(name, sizeof name, "kt_prepared_%d", (int)id);
    uint64_t t0 = kt_clock_ns();
    if (!(slot->prepared & (1u << id))) {
        /* Once per session: the server keeps it until the connection ends (a reset clears the
         * mark, slot_event). */
        PGresult *r = collect(conn, PQsendPrepare(conn, name, sql, n_params, NULL), t0, NULL, err);
        if (!r)
            return NULL;
        PQclear(r);
        slot->prepared |= 1u << id;
        slot->prepared_sql[id] = sql;
    }
    int sent = PQsendQueryPrepared(conn, name, n_params, params, NULL, NULL, 0);
    char state[6];
    PGresult *r = collect(conn, sent, t0, state, err);
    if (r || strcmp(state, "26000") != 0)
        return r;
    /* The session lost it (a DISCARD, a pooler in front of the server that changed sessions):
     * prepared again at the next run, this one unprepared. */
    slot->prepared &= ~(1u << id);
    kt_error_clear(err);
    return db_exec(conn, sql, n_params, params, err);
}

PGresult *db_exec(PGconn *conn, const char *sql, int n_params, const char *const *params,
                  kt_error *err)
{
    return db_exec_state(conn, sql, n_params, params, NULL, err);
}

int db_run(PGconn *conn, const char *sql, int n_params, const char *const *params, kt_error *err)
{
    PGresult *res = db_exec(conn, sql, n_params, params, err);
    if (!res)
        return -1;
    PQclear(res);
    return 0;
}

int db_begin(PGconn *conn, kt_error *err)
{
    return db_run(conn, "BEGIN", 0, NULL, err);
}

int db_commit(PGconn *conn, kt_error *err)
{
    PGresult *res = db_exec(conn, "COMMIT", 0, NULL, err);
    if (!res)
        return -1;
    /* COMMIT of a transaction that had failed "succeeds" by rolling back. */
    int rc = strcmp(PQcmdStatus(res), "ROLLBACK") == 0
                 ? kt_error_set(err, KT_ERR_DATABASE,
                                "transaction rolled back at commit: an earlier statement failed")
                 : 0;
    PQclear(res);
    return rc;
}

void db_rollback(PGconn *conn)
{
    kt_error ignored; /* best effort: a failed rollback leaves a broken connection, reset later */
    kt_error_clear(&ignored);
    if (conn && PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) != PQTRANS_IDLE)
        PQclear(db_exec(conn, "ROLLBACK", 0, NULL, &ignored));
}

/* Frees every queued notification; returns how many there were. */
static int drain_notifies(PGconn *conn)
{
    int n = 0;
    for (PGnotify *nt; (nt = PQnotifies(conn)); n++)
        PQfreemem(nt);
    return n;
}

int db_wait_notify(PGconn *conn, int timeout_ms)
{
    if (!conn || PQstatus(conn) != CONNECTION_OK || PQsocket(conn) < 0)
        return -1;
    uint64_t t0 = kt_clock_ns();
    /* Notifications may already sit in libpq's buffer, read along with an earlier result. */
    if (drain_notifies(conn) > 0)
        return 1;
    for (;;) {
        long left = timeout_ms - ms_since(t0);
        if (left < 0)
            left = 0;
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0) {
            if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
                return -1;
            if (drain_notifies(conn) > 0)
                return 1;
        }
        if (r == 0 && left == 0)
            return 0;
        if (ms_since(t0) >= timeout_ms)
            return 0;
    }
}
