/* Admission: ktune's own listening socket, the thread that accepts, and the record of every open
 * connection (http_conn) from accept to MHD's close. Each new connection is counted (total and
 * per client address): over the per-address limit it is closed at once; at the total it displaces
 * a connection not being answered of the address with the most open, when its own address has at
 * least two fewer (so that many slow connections from a few addresses cannot lock the others
 * out), else it is closed. It is then held until its first request head has arrived whole
 * (peeked, not read: MHD reads it again) and checked by http_head_scan (a bad head gets the JSON
 * error and the connection is closed; a head not whole within the header deadline is closed; a
 * chunked body's first size lines are checked too), then handed to the worker (one MHD daemon,
 * one thread) with the fewest connections (heavy handlers run on the heavy pool's threads, never
 * on a worker, so connections are the whole of a worker's load). The access handler tells
 * the record each request's phase and body bytes; the gate's tick answers a body past its
 * deadline, or below the minimum rate, with 408 and shuts the socket down (MHD cannot queue a
 * reply while it reads a body; it sees the end of the stream and closes the connection). */
#include "http/http_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

#define GATE_IP_BUCKETS 1024
#define GATE_FD_BUCKETS 4096
#define GATE_PEEK_MAX   (HTTP_MAX_URL + HTTP_MAX_HEADER_BYTES + HTTP_MAX_HEADERS * 4 + 256)
#define GATE_TICK_MS    100
/* A chunked head without Expect: 100-continue is held until its first chunk-size line arrives
 * (so that "ffffffffffffffff" is refused at once), at most this long. */
#define GATE_CHUNK_WAIT_NS (1000ull * 1000 * 1000)

typedef struct ip_count {
    struct ip_count *next;
    unsigned char key[17]; /* family byte + up to 16 address bytes */
    int count;             /* its open connections, cut ones not counted */
} ip_count;

struct http_conn {
    http_conn *prev, *next; /* g->first .. g->last, oldest first */
    http_conn *fd_next;     /* g->by_fd[fd % GATE_FD_BUCKETS] */
    int fd;
    struct sockaddr_storage ss;
    socklen_t len;
    ip_count *ip;        /* its address's count; NULL once cut */
    uint64_t t0_ns;      /* accepted */
    uint64_t head_ns;    /* held: when its chunked head was whole (waiting for a size line) */
    int phase;           /* HTTP_CONN_*, under g->lock */
    uint64_t body_t0_ns; /* HTTP_CONN_BODY: when the request's headers were in */
    atomic_ullong body_bytes;
    atomic_int cut; /* answered or displaced by the gate; MHD is closing it */
};

struct http_gate {
    int listen_fd, epoll_fd, wake_fd;
    pthread_t thread;
    int running;
    pthread_mutex_t lock; /* the records, their counts and phases: the fields below */
    http_conn *first, *last;
    http_conn *by_fd[GATE_FD_BUCKETS];
    int live;    /* open connections, held or handed over, not cut */
    int closing; /* cut, not yet closed by MHD */
    ip_count *ips[GATE_IP_BUCKETS];
    unsigned next_worker; /* the gate thread's only */
    char *peek;           /* GATE_PEEK_MAX + 1 bytes, the gate thread's only */
};

static int tag_listen, tag_wake; /* epoll data for the two non-connection fds */

/* ---- per address counts (under g->lock) ---- */

static void ip_key(const struct sockaddr *sa, unsigned char key[17])
{
    memset(key, 0, 17);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static unsigned ip_hash(const unsigned char key[17])
{
    unsigned h = 2166136261u;
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % GATE_IP_BUCKETS;
}

/* The address's entry, made with count 0 when it has none (NULL: out of memory). */
static ip_count *ip_find(http_gate *g, const struct sockaddr *sa)
{
    unsigned char key[17];
    ip_key(sa, key);
    unsigned b = ip_hash(key);
    ip_count *e = g->ips[b];
    while (e && memcmp(e->key, key, sizeof key) != 0)
        e = e->next;
    if (!e && (e = calloc(1, sizeof *e)) != NULL) {
        memcpy(e->key, key, sizeof key);
        e->next = g->ips[b];
        g->ips[b] = e;
    }
    return e;
}

/* Frees the entry once nothing counts on it. */
static void ip_forget_unused(http_gate *g, ip_count *e)
{
    if (e->count > 0)
        return;
    for (ip_count **pp = &g->ips[ip_hash(e->key)]; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            free(e);
            return;
        }
    }
}

/* ---- the records (under g->lock) ---- */

static void conn_link(http_gate *g, http_conn *c)
{
    c->prev = g->last;
    c->next = NULL;
    if (g->last)
        g->last->next = c;
    else
        g->first = c;
    g->last = c;
    http_conn **head = &g->by_fd[(unsigned)c->fd % GATE_FD_BUCKETS];
    c->fd_next = *head;
    *head = c;
}

static void conn_unlink(http_gate *g, http_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        g->first = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        g->last = c->prev;
    for (http_conn **pp = &g->by_fd[(unsigned)c->fd % GATE_FD_BUCKETS]; *pp; pp = &(*pp)->fd_next) {
        if (*pp == c) {
            *pp = c->fd_next;
            break;
        }
    }
}

static http_conn *conn_by_fd(http_gate *g, int fd)
{
    http_conn *c = g->by_fd[(unsigned)fd % GATE_FD_BUCKETS];
    while (c && c->fd != fd)
        c = c->fd_next;
    return c;
}

/* It stops counting as open: its address and the total (once; a cut one no longer counts). */
static void conn_uncount(http_gate *g, http_conn *c)
{
    if (!c->ip)
        return;
    c->ip->count--;
    ip_forget_unused(g, c->ip);
    c->ip = NULL;
    g->live--;
}

/* A record's end: unlinked, counted down (as open or as closing) and freed. */
static void conn_forget(http_gate *g, http_conn *c)
{
    if (atomic_load(&c->cut))
        g->closing--;
    else
        conn_uncount(g, c);
    conn_unlink(g, c);
    free(c);
}

/* A connection the gate still holds (it owns the socket) is closed. */
static void held_close(http_gate *g, http_conn *c)
{
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    conn_forget(g, c);
}

/* A connection handed to a worker is answered err (NULL: nothing) and its socket shut down: MHD,
 * reading it, sees the end and closes it (MHD owns the socket; NOTIFY_CONNECTION frees the
 * record afterwards, so the descriptor is still this connection's here). */
static void conn_cut(http_gate *g, http_conn *c, const kt_error *err)
{
    if (atomic_load(&c->cut))
        return;
    if (err)
        http_reply_raw_error(c->fd, err);
    shutdown(c->fd, SHUT_RDWR);
    conn_uncount(g, c);
    atomic_store(&c->cut, 1);
    g->closing++;
}

/* ---- MHD's side: notifications and the access handler's reports ---- */

void http_gate_conn_started(http_server *s, struct MHD_Connection *conn, void **socket_context)
{
    http_gate *g = s->gate;
    *socket_context = NULL;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!g || !ci)
        return;
    pthread_mutex_lock(&g->lock);
    http_conn *c = conn_by_fd(g, ci->connect_fd);
    if (c && c->phase != HTTP_CONN_HELD)
        *socket_context = c;
    pthread_mutex_unlock(&g->lock);
}

void http_gate_conn_closed(http_server *s, void *socket_context)
{
    http_gate *g = s->gate;
    http_conn *c = socket_context;
    if (!g || !c)
        return;
    pthread_mutex_lock(&g->lock);
    conn_forget(g, c);
    pthread_mutex_unlock(&g->lock);
}

int http_gate_conn_phase(http_server *s, http_conn *c, int phase)
{
    http_gate *g = s->gate;
    if (!g || !c)
        return 0;
    pthread_mutex_lock(&g->lock);
    int cut = atomic_load(&c->cut);
    if (!cut) {
        c->phase = phase;
        if (phase == HTTP_CONN_BODY) {
            c->body_t0_ns = kt_clock_ns();
            atomic_store(&c->body_bytes, 0);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return cut ? -1 : 0;
}

int http_gate_conn_body(http_conn *c, size_t n)
{
    if (!c)
        return 0;
    atomic_fetch_add(&c->body_bytes, (unsigned long long)n);
    return atomic_load(&c->cut) ? -1 : 0;
}

void http_gate_conn_cut(http_server *s, http_conn *c, const kt_error *err)
{
    http_gate *g = s->gate;
    if (!g || !c)
        return;
    pthread_mutex_lock(&g->lock);
    conn_cut(g, c, err);
    pthread_mutex_unlock(&g->lock);
}

int http_gate_open_connections(http_server *s)
{
    http_gate *g = s->gate;
    if (!g)
        return 0;
    pthread_mutex_lock(&g->lock);
    int n = g->live;
    pthread_mutex_unlock(&g->lock);
    return n;
}

/* ---- held connections (the gate thread, under g->lock) ---- */

/* The JSON error for a bad first head: what was sent is read away first (so that closing does not
 * reset the connection before the reply is read), then the reply, then close. */
static void refuse(http_gate *g, http_conn *c, const kt_error *err)
{
    /* At most a few buffers: a client streaming bytes must not hold the accepting thread. */
    for (int i = 0; i < 4 && recv(c->fd, g->peek, GATE_PEEK_MAX, MSG_DONTWAIT) > 0; i++) {
    }
    http_reply_raw_error(c->fd, err);
    shutdown(c->fd, SHUT_WR);
    char printable[128];
    http_printable(printable, sizeof printable, err->message);
    log_debug("http: connection refused before MHD: %d %s", kt_error_http_status(err->code),
              printable);
    held_close(g, c);
}

static http_worker *pick_worker(http_server *s)
{
    http_gate *g = s->gate;
    http_worker *best = NULL;
    long best_load = 0;
    for (int i = 0; i < s->threads; i++) {
        http_worker *w = &s->workers[(g->next_worker + (unsigned)i) % (unsigned)s->threads];
        long load = atomic_load(&w->conns);
        if (!best || load < best_load) {
            best = w;
            best_load = load;
        }
    }
    g->next_worker++;
    return best;
}

static void hand_over(http_server *s, http_conn *c)
{
    http_gate *g = s->gate;
    http_worker *w = pick_worker(s);
    if (!w) { /* no workers: never after http_server_start */
        held_close(g, c);
        return;
    }
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    c->phase = HTTP_CONN_IDLE;
    c->head_ns = 0;
    atomic_fetch_add(&w->conns, 1);
    if (MHD_add_connection(w->daemon, c->fd, (const struct sockaddr *)&c->ss, c->len) != MHD_YES) {
        /* MHD closed the socket; nothing was started, so nothing will be counted down. */
        atomic_fetch_sub(&w->conns, 1);
        conn_forget(g, c);
        log_warn("http: libmicrohttpd refused a connection: %s", strerror(errno));
    }
}

/* Looks at what the connection sent so far; hands it over, refuses it, or keeps waiting (unless
 * the client has shut down its side: hung_up, from the epoll event; or the wait for a chunked
 * body's first size line is over: waited). */
static void examine(http_server *s, http_conn *c, int hung_up, int waited)
{
    http_gate *g = s->gate;
    ssize_t n = recv(c->fd, g->peek, GATE_PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        held_close(g, c); /* closed or failed before a request */
        return;
    }
    kt_error err;
    kt_error_clear(&err);
    http_head_info info;
    int rc = http_head_scan(g->peek, (size_t)n, &info, &err);
    if (rc < 0) {
        refuse(g, c, &err);
        return;
    }
    if (rc == 0) {
        if (hung_up)
            held_close(g, c); /* a head that cannot complete any more */
        return;               /* wait for the rest (edge-triggered: each arrival wakes us) */
    }
    if (info.chunked) {
        int crc = http_chunks_check(g->peek + info.len, (size_t)n - info.len, &err);
        if (crc < 0) {
            refuse(g, c, &err);
            return;
        }
        /* A client waiting for 100 Continue sends no size line before MHD answers it. */
        if (crc == 0 && !info.expect_continue && !hung_up && !waited && (size_t)n < GATE_PEEK_MAX) {
            if (!c->head_ns)
                c->head_ns = kt_clock_ns();
            return;
        }
    }
    hand_over(s, c);
}

/* At max_connections: the oldest connection not being answered (held, idle, or sending a body)
 * of the address with the most open ones is cut, when that address has at least two more than
 * the newcomer's. 0 when one was, -1 when none may be. */
static int displace(http_gate *g, const ip_count *newcomer)
{
    http_conn *victim = NULL;
    for (http_conn *c = g->first; c; c = c->next) {
        if (!c->ip || c->phase == HTTP_CONN_BUSY)
            continue;
        if (!victim || c->ip->count > victim->ip->count)
            victim = c;
    }
    if (!victim || victim->ip->count < newcomer->count + 2)
        return -1;
    log_debug("http: at the connection limit, one of an address with %d connections is closed "
              "for an address with %d",
              victim->ip->count, newcomer->count);
    if (victim->phase == HTTP_CONN_HELD)
        held_close(g, victim);
    else
        conn_cut(g, victim, NULL);
    return 0;
}

/* One accepted socket: counted and held, or closed. */
static void admit(http_server *s, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
    http_gate *g = s->gate;
    /* A record left for this descriptor is one MHD closed without a notification (a failure
     * before it started the connection): the socket is gone, so is the record. */
    http_conn *stale = conn_by_fd(g, fd);
    if (stale) {
        log_warn("http: a connection closed by libmicrohttpd was still counted; forgotten");
        conn_forget(g, stale);
    }
    ip_count *ip = ip_find(g, (const struct sockaddr *)ss);
    const char *why = NULL;
    if (!ip)
        why = "out of memory";
    else if (ip->count >= s->max_connections_per_ip)
        why = "its address has --max-connections-per-ip connections open";
    else if (g->live + g->closing >= s->max_connections + HTTP_CLOSING_SLACK)
        why = "too many connections are still closing";
    else if (g->live >= s->max_connections && displace(g, ip) != 0)
        why = "--max-connections are open";
    http_conn *c = why ? NULL : calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
    ev.data.ptr = c;
    if (!why && (!c || epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0))
        why = "out of memory";
    if (why) {
        free(c);
        close(fd);
        if (ip)
            ip_forget_unused(g, ip);
        log_debug("http: connection refused: %s", why);
        return;
    }
    c->fd = fd;
    c->ss = *ss;
    c->len = len;
    c->ip = ip;
    c->phase = HTTP_CONN_HELD;
    c->t0_ns = kt_clock_ns();
    ip->count++;
    g->live++;
    conn_link(g, c);
    examine(s, c, 0, 0); /* the head is often there already */
}

static void accept_all(http_server *s)
{
    http_gate *g = s->gate;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(g->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                log_warn("http: accept: %s (raise the open files limit or lower "
                         "--max-connections)",
                         strerror(errno));
            return;
        }
        pthread_mutex_lock(&g->lock);
        admit(s, fd, &ss, len);
        pthread_mutex_unlock(&g->lock);
    }
}

/* The body of a request handed over: 408 once past its deadline, or once older than the grace and
 * slower on average than the minimum rate. */
static void judge_body(http_server *s, http_conn *c, uint64_t now)
{
    double age = (double)(now - c->body_t0_ns) / 1e9;
    double bytes = (double)atomic_load(&c->body_bytes);
    kt_error err;
    if (age > s->body_timeout_s) {
        kt_error_set(&err, KT_ERR_REQUEST_TIMEOUT,
                     "the request body did not arrive whole within %g s of its headers (%.0f bytes "
                     "came)",
                     s->body_timeout_s, bytes);
        kt_error_hint(&err, "send the body right after the headers (ktuned "
                            "--http-body-timeout-s sets the deadline)");
    } else if (s->body_min_rate > 0 && age > HTTP_BODY_RATE_GRACE_S &&
               bytes < s->body_min_rate * age) {
        kt_error_set(&err, KT_ERR_REQUEST_TIMEOUT,
                     "the request body arrived at %.0f bytes a second; at least %g are needed",
                     bytes / age, s->body_min_rate);
        kt_error_hint(&err, "send the body at once (ktuned --http-body-min-rate sets the minimum)");
    } else {
        return;
    }
    log_debug("http: %s", err.message);
    conn_cut(s->gate, c, &err);
}

/* The tick: held connections past the header deadline (a quarter of it, at least 1 s, while more
 * than half of max_connections are open) are closed, chunked heads that waited long enough for a
 * size line handed over, and request bodies judged. */
static void expire(http_server *s)
{
    http_gate *g = s->gate;
    double limit = s->header_timeout_s;
    if (g->live > s->max_connections / 2) {
        limit /= 4;
        if (limit < 1.0)
            limit = 1.0;
    }
    uint64_t now = kt_clock_ns();
    uint64_t limit_ns = (uint64_t)(limit * 1e9);
    for (http_conn *c = g->first, *next; c; c = next) {
        next = c->next;
        if (atomic_load(&c->cut))
            continue;
        if (c->phase == HTTP_CONN_HELD && now - c->t0_ns > limit_ns)
            held_close(g, c);
        else if (c->phase == HTTP_CONN_HELD && c->head_ns && now - c->head_ns >= GATE_CHUNK_WAIT_NS)
            examine(s, c, 0, 1);
        else if (c->phase == HTTP_CONN_BODY)
            judge_body(s, c, now);
    }
}

static void *gate_main(void *arg)
{
    http_server *s = arg;
    http_gate *g = s->gate;
    struct epoll_event evs[64];
    uint64_t last_expire = kt_clock_ns();
    for (;;) {
        int n = epoll_wait(g->epoll_fd, evs, 64, GATE_TICK_MS);
        int stop = 0;
        pthread_mutex_lock(&g->lock);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &tag_wake)
                stop = 1;
            else if (evs[i].data.ptr != &tag_listen)
                examine(s, evs[i].data.ptr,
                        (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0, 0);
        }
        if (!stop && kt_clock_ns() - last_expire >= GATE_TICK_MS * 1000000ull) {
            expire(s);
            last_expire = kt_clock_ns();
        }
        pthread_mutex_unlock(&g->lock);
        for (int i = 0; i < n && !stop; i++) {
            if (evs[i].data.ptr == &tag_listen)
                accept_all(s); /* after the events: a record closed above is not reused here */
        }
        if (stop)
            break;
    }
    return NULL;
}

/* ---- lifecycle ---- */

static int gate_listen(http_server *s, http_gate *g, kt_error *err)
{
    int one = 1;
    g->listen_fd =
        socket(s->addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (g->listen_fd < 0)
        return kt_error_set(err, KT_ERR_CONFIG, "cannot listen on %s: %s", s->listen,
                            strerror(errno));
    setsockopt(g->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->addr.ipv6)
        setsockopt(g->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(g->listen_fd, (const struct sockaddr *)&s->addr.ss, s->addr.len) != 0 ||
        listen(g->listen_fd, 1024) != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "cannot listen on %s: %s", s->listen,
                            strerror(errno));
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    if (getsockname(g->listen_fd, (struct sockaddr *)&bound, &blen) != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "cannot listen on %s: %s", s->listen,
                            strerror(errno));
    s->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                          : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    return 0;
}

int http_gate_start(http_server *s, kt_error *err)
{
    int rc = -1;
    http_gate *g = calloc(1, sizeof *g);
    if (!g)
        return kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
    g->listen_fd = g->epoll_fd = g->wake_fd = -1;
    pthread_mutex_init(&g->lock, NULL);
    s->gate = g;
    g->peek = malloc(GATE_PEEK_MAX + 1);
    if (!g->peek) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        goto out;
    }
    if (gate_listen(s, g, err) != 0)
        goto out;
    g->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN}, wev = {.events = EPOLLIN};
    lev.data.ptr = &tag_listen;
    wev.data.ptr = &tag_wake;
    if (g->epoll_fd < 0 || g->wake_fd < 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->listen_fd, &lev) != 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->wake_fd, &wev) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "http: epoll: %s", strerror(errno));
        goto out;
    }
    if (pthread_create(&g->thread, NULL, gate_main, s) != 0) {
        kt_error_set(err, KT_ERR_INTERNAL, "http: cannot start the accepting thread");
        goto out;
    }
    g->running = 1;
    rc = 0;
out:
    return rc; /* on failure http_gate_free releases what was made */
}

void http_gate_stop(http_server *s)
{
    http_gate *g = s->gate;
    if (!g)
        return;
    if (g->running) {
        uint64_t one = 1;
        if (write(g->wake_fd, &one, sizeof one) != (ssize_t)sizeof one)
            log_warn("http: could not wake the accepting thread");
        pthread_join(g->thread, NULL);
        g->running = 0;
    }
    pthread_mutex_lock(&g->lock);
    for (http_conn *c = g->first, *next; c; c = next) {
        next = c->next;
        if (c->phase == HTTP_CONN_HELD)
            held_close(g, c);
    }
    pthread_mutex_unlock(&g->lock);
    if (g->listen_fd >= 0)
        close(g->listen_fd);
    g->listen_fd = -1;
}

void http_gate_free(http_server *s)
{
    http_gate *g = s->gate;
    if (!g)
        return;
    http_gate_stop(s);
    /* The workers have stopped: a record left is one MHD never reported (its socket is closed). */
    while (g->first) {
        http_conn *c = g->first;
        g->first = c->next;
        free(c);
    }
    if (g->epoll_fd >= 0)
        close(g->epoll_fd);
    if (g->wake_fd >= 0)
        close(g->wake_fd);
    for (int b = 0; b < GATE_IP_BUCKETS; b++) {
        for (ip_count *e = g->ips[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    pthread_mutex_destroy(&g->lock);
    free(g->peek);
    free(g);
    s->gate = NULL;
}
