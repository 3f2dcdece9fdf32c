/* A tiny raw-TCP HTTP/1.1 client for the http/ tests: connect, send bytes, read one response
 * (status line, headers, Content-Length body). One connection per hc_conn; hc_close frees
 * everything. Header-only (static functions) because only test executables use it. */
#ifndef KT_TEST_HTTP_CLIENT_H
#define KT_TEST_HTTP_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HC_HEADERS_MAX 16384

typedef struct hc_conn {
    int fd;
    char buf[65537]; /* bytes received but not yet consumed, +1 for a NUL */
    size_t len;
} hc_conn;

typedef struct hc_resp {
    int status;
    char headers[HC_HEADERS_MAX]; /* the raw header block, without the status line */
    char *body;                   /* NUL-terminated, malloc'd */
    size_t body_len;
} hc_resp;

static inline int hc_connect(hc_conn *c, int port)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    struct timeval tv = {10, 0}; /* a hung server fails the test instead of hanging it */
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static inline void hc_close(hc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static inline int hc_send(hc_conn *c, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static inline int hc_send_str(hc_conn *c, const char *s)
{
    return hc_send(c, s, strlen(s));
}

static inline int hc_fill(hc_conn *c)
{
    if (c->len >= sizeof c->buf - 1)
        return -1;
    ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
    if (r <= 0)
        return -1;
    c->len += (size_t)r;
    return 0;
}

static inline void hc_consume(hc_conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* Value of header name in r (copied into out), or NULL. */
static inline const char *hc_header(const hc_resp *r, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *line = r->headers; *line;) {
        const char *end = strstr(line, "\r\n");
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (ll > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(line + ll - v);
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return out;
        }
        if (!end)
            break;
        line = end + 2;
    }
    return NULL;
}

static inline void hc_resp_free(hc_resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* Reads one response; head: the request was HEAD (no body follows). Returns 0 or -1. */
static inline int hc_read(hc_conn *c, hc_resp *r, int head)
{
    memset(r, 0, sizeof *r);
    char *eoh;
    for (;;) {
        c->buf[c->len] = '\0';
        eoh = c->len ? strstr(c->buf, "\r\n\r\n") : NULL;
        if (eoh)
            break;
        if (hc_fill(c) != 0)
            return -1;
    }
    size_t head_len = (size_t)(eoh - c->buf) + 4;
    if (sscanf(c->buf, "HTTP/1.%*d %d", &r->status) != 1)
        return -1;
    const char *hs = strstr(c->buf, "\r\n") + 2;
    size_t hl = (size_t)(eoh + 2 - hs);
    if (hl >= sizeof r->headers)
        return -1;
    memcpy(r->headers, hs, hl);
    r->headers[hl] = '\0';
    hc_consume(c, head_len);
    char v[64];
    size_t want = 0;
    if (!head && r->status != 204 && r->status != 304 && r->status >= 200) {
        if (!hc_header(r, "Content-Length", v, sizeof v))
            return -1;
        want = (size_t)strtoull(v, NULL, 10);
    }
    r->body = malloc(want + 1);
    if (!r->body)
        return -1;
    size_t got = 0;
    while (got < want) {
        if (c->len == 0 && hc_fill(c) != 0)
            return -1;
        size_t n = c->len < want - got ? c->len : want - got;
        memcpy(r->body + got, c->buf, n);
        got += n;
        hc_consume(c, n);
    }
    r->body[want] = '\0';
    r->body_len = want;
    return 0;
}

/* 1 while the peer has not closed the connection (nothing pending or data pending), 0 on EOF. */
static inline int hc_is_open(hc_conn *c)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, 50) == 0)
        return 1;
    char x;
    ssize_t n = recv(c->fd, &x, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* One request on a fresh connection. */
static inline int hc_request(int port, const char *raw, hc_resp *r)
{
    hc_conn c;
    if (hc_connect(&c, port) != 0)
        return -1;
    int rc = hc_send_str(&c, raw) == 0 ? hc_read(&c, r, strncmp(raw, "HEAD ", 5) == 0) : -1;
    hc_close(&c);
    return rc;
}

#endif
