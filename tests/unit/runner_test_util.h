/* The ktune-runner child of the runner unit tests (test_runner_cpu.c, test_runner_interface.c):
 * start the built runner (KT_RUNNER_PATH) on pipes, send request lines, read reply lines with a
 * deadline, stop it (closing stdin, then SIGKILL past the deadline). Call order: client_init (a
 * reply buffer and a temporary compile cache folder), client_start, client_call / client_call_json
 * ..., client_stop; the caller frees buf and removes the cache folder (remove_tree). Header-only
 * (static inline functions) because only test executables use it. Include after cmocka.h. */
#ifndef KT_TEST_RUNNER_UTIL_H
#define KT_TEST_RUNNER_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define REPLY_MAX (256 * 1024)

typedef struct client {
    pid_t pid;
    int to, from; /* the runner's stdin and stdout */
    char *buf;    /* bytes read and not yet returned */
    size_t len;
    int status; /* waitpid status once reaped */
    int reaped;
    int pin;            /* >= 0: started with --cpu-core pin */
    char cache_max[32]; /* non-empty: started with --cache-max-bytes cache_max */
    int no_pch;         /* started with --no-pch */
    char cache[256];
} client;

static inline void client_init(client *c)
{
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->pin = -1;
    c->to = c->from = -1;
    c->buf = malloc(REPLY_MAX);
    assert_non_null(c->buf);
    snprintf(c->cache, sizeof c->cache, "/tmp/ktune-runner-test-XXXXXX");
    assert_non_null(mkdtemp(c->cache));
}

/* Appends opt to the environment variable name (a sanitizer option list). */
static inline void env_append(const char *name, const char *opt)
{
    char v[1024];
    const char *old = getenv(name);
    snprintf(v, sizeof v, "%s%s%s", old ? old : "", old && *old ? ":" : "", opt);
    setenv(name, v, 1);
}

/* Starts the runner. raw_segv: a SIGSEGV in a kernel kills the runner by that signal even when it
 * is built with sanitizers (which would otherwise report it and exit). */
static inline void client_start(client *c, int raw_segv)
{
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (raw_segv) {
            env_append("ASAN_OPTIONS", "handle_segv=0");
            env_append("UBSAN_OPTIONS", "handle_segv=0");
        }
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        char core[16];
        char *argv[16] = {"ktune-runner", "--device",    "cpu",  "--cache-dir",
                          c->cache,       "--log-level", "warn", NULL};
        int n = 7;
        if (c->pin >= 0) {
            snprintf(core, sizeof core, "%d", c->pin);
            argv[n++] = "--cpu-core";
            argv[n++] = core;
        }
        if (c->cache_max[0]) {
            argv[n++] = "--cache-max-bytes";
            argv[n++] = c->cache_max;
        }
        if (c->no_pch)
            argv[n++] = "--no-pch";
        argv[n] = NULL;
        execv(KT_RUNNER_PATH, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->to = in[1];
    c->from = out[0];
    c->len = 0;
    c->reaped = 0;
}

static inline void client_send(client *c, const char *line)
{
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t w = write(c->to, line + off, n - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    assert_int_equal(write(c->to, "\n", 1), 1);
}

/* Next reply line as JSON; NULL on end of output or when timeout_ms passes first. *eof tells which.
 */
static inline json_t *client_read(client *c, int timeout_ms, int *eof)
{
    double deadline = kt_clock_ms() + timeout_ms;
    *eof = 0;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            json_error_t jerr;
            json_t *j = json_loadb(c->buf, (size_t)(nl - c->buf), 0, &jerr);
            if (!j)
                fail_msg("reply is not JSON: %s (%.*s)", jerr.text, (int)(nl - c->buf), c->buf);
            size_t used = (size_t)(nl - c->buf) + 1;
            memmove(c->buf, c->buf + used, c->len - used);
            c->len -= used;
            return j;
        }
        int left = (int)(deadline - kt_clock_ms());
        if (left <= 0)
            return NULL;
        struct pollfd p = {.fd = c->from, .events = POLLIN};
        int pr = poll(&p, 1, left);
        if (pr <= 0)
            continue;
        assert_true(c->len < REPLY_MAX);
        ssize_t n = read(c->from, c->buf + c->len, REPLY_MAX - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *eof = 1;
            return NULL;
        }
        c->len += (size_t)n;
    }
}

/* Sends a request and returns its reply (the test fails without one within timeout_ms). */
static inline json_t *client_call(client *c, const char *line, int timeout_ms)
{
    int eof;
    client_send(c, line);
    json_t *j = client_read(c, timeout_ms, &eof);
    if (!j)
        fail_msg("no reply (%s) to %.300s", eof ? "runner exited" : "timeout", line);
    return j;
}

/* Compact text of req (malloc'd); consumes req. */
static inline char *dump_request(json_t *req)
{
    char *line = json_dumps(req, JSON_COMPACT);
    assert_non_null(line);
    json_decref(req);
    return line;
}

/* Sends req (consumed) and returns its reply. */
static inline json_t *client_call_json(client *c, json_t *req, int timeout_ms)
{
    char *line = dump_request(req);
    json_t *j = client_call(c, line, timeout_ms);
    free(line);
    return j;
}

/* Closes stdin and waits for the runner (at most timeout_ms, then kills it). Returns the status. */
static inline int client_stop(client *c, int timeout_ms)
{
    if (c->to >= 0)
        close(c->to);
    c->to = -1;
    double deadline = kt_clock_ms() + timeout_ms;
    while (!c->reaped && c->pid > 0) {
        pid_t w = waitpid(c->pid, &c->status, WNOHANG);
        if (w == c->pid) {
            c->reaped = 1;
            break;
        }
        if (kt_clock_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &c->status, 0);
            c->reaped = 1;
            break;
        }
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    if (c->from >= 0)
        close(c->from);
    c->from = -1;
    return c->status;
}

static inline void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[1024];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p)
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The files of dir whose names end in suffix; *tmp_files (may be NULL) gets those whose names hold
 * ".tmp." (a compile's temporary, left behind only by a failure). */
static inline int count_files(const char *dir, const char *suffix, int *tmp_files)
{
    int n = 0, tmp = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (l > s && strcmp(e->d_name + l - s, suffix) == 0)
            n++;
        if (strstr(e->d_name, ".tmp."))
            tmp++;
    }
    closedir(d);
    if (tmp_files)
        *tmp_files = tmp;
    return n;
}

/* Writes n files of `bytes` zero bytes into dir, the i-th with mtime 1000000 + i (the oldest
 * first): the cache bound's least-recently-used order. */
static inline void write_aged_files(const char *dir, const char *const *names, int n, size_t bytes)
{
    char path[600], zeros[4096] = {0};
    assert_true(bytes <= sizeof zeros);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(zeros, 1, bytes, f), bytes);
        fclose(f);
        struct timespec ts[2] = {{.tv_sec = 1000000 + i}, {.tv_sec = 1000000 + i}};
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    }
}

#endif
