/* Admission: ktune's own listening socket and the thread that accepts. Each new connection is
 * counted (total and per client address; over a limit it is closed at once), held until its
 * first request head has arrived whole (peeked, not read: MHD reads it again) and checked by
 * http_head_check (a bad head gets the JSON error and the connection is closed; a head not
 * complete within the header deadline is closed), then handed to the worker (one MHD daemon,
 * one thread) with the fewest connections and no heavy handler running. */
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
#define GATE_PEEK_MAX   (HTTP_MAX_URL + HTTP_MAX_HEADER_BYTES + HTTP_MAX_HEADERS * 4 + 256)
#define GATE_TICK_MS    100

typedef struct ip_count {
    struct ip_count *next;
    unsigned char key[17]; /* family byte + up to 16 address bytes */
    int count;
} ip_count;

typedef struct pending {
    struct pending *prev, *next;
    int fd;
    struct sockaddr_storage ss;
    socklen_t len;
    uint64_t t0_ns;
} pending;

struct http_gate {
    int listen_fd, epoll_fd, wake_fd;
    pthread_t thread;
    int running;
    pending *head; /* connections waiting for their first head; owned */
    int n_pending;
    atomic_int open; /* held here or handed to a worker */
    unsigned next_worker;
    pthread_mutex_t ip_lock;
    ip_count *ips[GATE_IP_BUCKETS];
    char *peek; /* GATE_PEEK_MAX + 1 bytes, used by the gate thread only */
};

static int tag_listen, tag_wake; /* epoll data for the two non-connection fds */

/* ---- per address counts ---- */

static size_t ip_key(const struct sockaddr *sa, unsigned char key[17])
{
    memset(key, 0, 17);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 5;
    }
    if (sa && sa->sa_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 17;
    }
    return 1;
}

static unsigned ip_hash(const unsigned char key[17])
{
    unsigned h = 2166136261u;
    for (int i = 0; i < 17; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % GATE_IP_BUCKETS;
}

/* Counts addr up unless it already has limit connections (limit 0: no limit). 0 or -1. */
static int ip_up(http_gate *g, const struct sockaddr *sa, int limit)
{
    unsigned char key[17];
    ip_key(sa, key);
    unsigned b = ip_hash(key);
    int rc = -1;
    pthread_mutex_lock(&g->ip_lock);
    ip_count *e = g->ips[b];
    while (e && memcmp(e->key, key, sizeof key) != 0)
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            memcpy(e->key, key, sizeof key);
            e->next = g->ips[b];
            g->ips[b] = e;
        }
    }
    if (e && (limit <= 0 || e->count < limit)) {
        e->count++;
        rc = 0;
    }
    pthread_mutex_unlock(&g->ip_lock);
    return rc;
}

static void ip_down(http_gate *g, const struct sockaddr *sa)
{
    unsigned char key[17];
    ip_key(sa, key);
    unsigned b = ip_hash(key);
    pthread_mutex_lock(&g->ip_lock);
    for (ip_count **pp = &g->ips[b]; *pp; pp = &(*pp)->next) {
        if (memcmp((*pp)->key, key, sizeof key) != 0)
            continue;
        ip_count *e = *pp;
        if (--e->count <= 0) {
            *pp = e->next;
            free(e);
        }
        break;
    }
    pthread_mutex_unlock(&g->ip_lock);
}

void http_gate_conn_closed(http_server *s, const struct sockaddr *addr)
{
    if (!s->gate)
        return;
    ip_down(s->gate, addr);
    atomic_fetch_sub(&s->gate->open, 1);
}

int http_gate_open_connections(http_server *s)
{
    return s->gate ? atomic_load(&s->gate->open) : 0;
}

/* ---- held connections ---- */

static void pending_drop(http_gate *g, pending *p, int close_fd)
{
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, p->fd, NULL);
    if (p->prev)
        p->prev->next = p->next;
    else
        g->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    g->n_pending--;
    if (close_fd) {
        close(p->fd);
        ip_down(g, (const struct sockaddr *)&p->ss);
        atomic_fetch_sub(&g->open, 1);
    }
    free(p);
}

/* The JSON error for a bad first head: what was sent is read away first (so that closing does not
 * reset the connection before the reply is read), then the reply, then close. */
static void refuse(http_gate *g, pending *p, const kt_error *err)
{
    http_response res;
    memset(&res, 0, sizeof res);
    http_reply_error(&res, err);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                      "%zu\r\nConnection: close\r\n\r\n",
                      res.status, kt_error_code_name(err->code), res.body_len);
    /* At most a few buffers: a client streaming bytes must not hold the accepting thread. */
    for (int i = 0; i < 4 && recv(p->fd, g->peek, GATE_PEEK_MAX, MSG_DONTWAIT) > 0; i++) {
    }
    if (hn > 0 && (size_t)hn < sizeof head && send(p->fd, head, (size_t)hn, MSG_NOSIGNAL) == hn &&
        res.body)
        send(p->fd, res.body, res.body_len, MSG_NOSIGNAL);
    shutdown(p->fd, SHUT_WR);
    char printable[128];
    http_printable(printable, sizeof printable, err->message);
    log_debug("http: connection refused before MHD: %d %s", res.status, printable);
    http_response_clear(&res);
    pending_drop(g, p, 1);
}

static http_worker *pick_worker(http_server *s)
{
    http_gate *g = s->gate;
    http_worker *best = NULL;
    long best_load = 0;
    for (int i = 0; i < s->threads; i++) {
        http_worker *w = &s->workers[(g->next_worker + (unsigned)i) % (unsigned)s->threads];
        long load = atomic_load(&w->conns) + (atomic_load(&w->heavy) > 0 ? 1000000L : 0);
        if (!best || load < best_load) {
            best = w;
            best_load = load;
        }
    }
    g->next_worker++;
    return best;
}

/* Looks at what the connection sent so far; hands it over, refuses it, or keeps waiting (unless
 * the client has shut down its side: hung_up, from the epoll event). */
static void examine(http_server *s, pending *p, int hung_up)
{
    http_gate *g = s->gate;
    ssize_t n = recv(p->fd, g->peek, GATE_PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        pending_drop(g, p, 1); /* closed or failed before a request */
        return;
    }
    kt_error err;
    kt_error_clear(&err);
    int rc = http_head_check(g->peek, (size_t)n, &err);
    if (rc < 0) {
        refuse(g, p, &err);
        return;
    }
    if (rc == 0) {
        if (hung_up)
            pending_drop(g, p, 1); /* a head that cannot complete any more */
        return;                    /* wait for the rest (edge-triggered: each arrival wakes us) */
    }
    http_worker *w = pick_worker(s);
    int fd = p->fd;
    struct sockaddr_storage ss = p->ss;
    socklen_t len = p->len;
    pending_drop(g, p, 0);
    atomic_fetch_add(&w->conns, 1);
    if (MHD_add_connection(w->daemon, fd, (const struct sockaddr *)&ss, len) != MHD_YES) {
        /* MHD closed the socket; nothing was started, so nothing will be counted down. */
        atomic_fetch_sub(&w->conns, 1);
        ip_down(g, (const struct sockaddr *)&ss);
        atomic_fetch_sub(&g->open, 1);
        log_warn("http: libmicrohttpd refused a connection: %s", strerror(errno));
    }
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
        if (atomic_load(&g->open) >= s->max_connections) {
            close(fd);
            log_debug("http: connection refused: %d connections open", s->max_connections);
            continue;
        }
        if (ip_up(g, (const struct sockaddr *)&ss, s->max_connections_per_ip) != 0) {
            close(fd);
            log_debug("http: connection refused: its address has %d connections open",
                      s->max_connections_per_ip);
            continue;
        }
        atomic_fetch_add(&g->open, 1);
        pending *p = calloc(1, sizeof *p);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
        ev.data.ptr = p;
        if (!p || epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(p);
            close(fd);
            ip_down(g, (const struct sockaddr *)&ss);
            atomic_fetch_sub(&g->open, 1);
            continue;
        }
        p->fd = fd;
        p->ss = ss;
        p->len = len;
        p->t0_ns = kt_clock_ns();
        p->next = g->head;
        if (g->head)
            g->head->prev = p;
        g->head = p;
        g->n_pending++;
        examine(s, p, 0); /* the head is often there already */
    }
}

/* Closes held connections past the header deadline: a quarter of it (at least 1 s) while more
 * than half of max_connections are open. */
static void expire(http_server *s)
{
    http_gate *g = s->gate;
    double limit = s->header_timeout_s;
    if (atomic_load(&g->open) > s->max_connections / 2) {
        limit /= 4;
        if (limit < 1.0)
            limit = 1.0;
    }
    uint64_t now = kt_clock_ns();
    uint64_t limit_ns = (uint64_t)(limit * 1e9);
    for (pending *p = g->head, *next; p; p = next) {
        next = p->next;
        if (now - p->t0_ns > limit_ns)
            pending_drop(g, p, 1);
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
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &tag_wake)
                stop = 1;
            else if (evs[i].data.ptr == &tag_listen)
                accept_all(s);
            else
                examine(s, evs[i].data.ptr,
                        (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
        }
        if (stop)
            break;
        if (kt_clock_ns() - last_expire >= GATE_TICK_MS * 1000000ull) {
            expire(s);
            last_expire = kt_clock_ns();
        }
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
    pthread_mutex_init(&g->ip_lock, NULL);
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
    while (g->head)
        pending_drop(g, g->head, 1);
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
    pthread_mutex_destroy(&g->ip_lock);
    free(g->peek);
    free(g);
    s->gate = NULL;
}
