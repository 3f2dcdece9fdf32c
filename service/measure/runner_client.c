/* measure/runner_client — spawns ktune-runner with fork/exec in a process group of its own, talks
 * one JSON line each way with poll() deadlines (sliced to ask the stop check), and kills (the whole
 * group) or reaps it. stdin is a socket (writes use MSG_NOSIGNAL, so a dead runner never raises
 * SIGPIPE in the caller), stdout a pipe, stderr inherited. An exec failure is reported through a
 * close-on-exec status pipe. */
#include "measure/runner_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/clock.h"
#include "core/array.h"

#define RUNNER_REAP_GRACE_S 2.0   /* after EOF, how long the runner may take to exit */
#define RUNNER_MAX_SKIPPED  64    /* stray stdout lines tolerated in one call */
#define RUNNER_MAX_FD_LOOP  65536 /* descriptors closed one by one without close_range */
#define RUNNER_READ_CHUNK   65536

struct runner_client {
    char *path, *device, *cache_dir;
    int cpu_core;
    long long cache_max_bytes; /* runner_spawn's */
    char version_uid[72];      /* --version-uid of the next start, "" for none */
    pid_t pid;                 /* 0 when not running */
    int in_fd, out_fd;
    long long next_id;
    char *buf; /* bytes read but not consumed */
    size_t len, cap;
    runner_stop_fn stop; /* NULL: no stop check */
    void *stop_arg;
};

const char *runner_signal_name(int sig, char *buf, size_t cap)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGTRAP, "SIGTRAP"},
                 {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"}, {SIGPIPE, "SIGPIPE"},
                 {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGXFSZ, "SIGXFSZ"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].sig == sig)
            return names[i].name;
    }
    snprintf(buf, cap, "SIG%d", sig);
    return buf;
}

runner_client *runner_client_new(const runner_spawn *opt, kt_error *err)
{
    runner_client *r = calloc(1, sizeof *r);
    if (r)
        r->in_fd = r->out_fd = -1;
    if (!r || !opt || !opt->path || !opt->device || !opt->cache_dir ||
        !(r->path = strdup(opt->path)) || !(r->device = strdup(opt->device)) ||
        !(r->cache_dir = strdup(opt->cache_dir))) {
        kt_error_set(err, opt ? KT_ERR_NO_MEMORY : KT_ERR_INTERNAL,
                     "cannot create a runner client");
        runner_client_free(r);
        return NULL;
    }
    r->cpu_core = opt->cpu_core;
    r->cache_max_bytes = opt->cache_max_bytes;
    return r;
}

void runner_client_set_version_uid(runner_client *r, const char *version)
{
    const char *v = version ? version : "";
    if (strcmp(r->version_uid, v) == 0)
        return;
    /* a runner already started as another uid serves no other version */
    runner_client_stop(r, RUNNER_REAP_GRACE_S);
    snprintf(r->version_uid, sizeof r->version_uid, "%s", v);
}

int runner_client_running(const runner_client *r)
{
    return r && r->pid > 0;
}

static void close_fds(runner_client *r)
{
    if (r->in_fd >= 0)
        close(r->in_fd);
    if (r->out_fd >= 0)
        close(r->out_fd);
    r->in_fd = r->out_fd = -1;
    r->len = 0;
}

/* Child side, between fork and exec: only async-signal-safe calls. */
static void child_exec(int in_fd, int out_fd, int status_fd, int max_fd, pid_t parent,
                       char *const *argv)
{
    sigset_t none;
    int e;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    /* Its own process group, so that a kill reaches whatever it started too (the parent sets it as
     * well: whichever runs first wins the race). */
    setpgid(0, 0);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0)
        goto fail;
    fcntl(0, F_SETFD, 0);
    fcntl(1, F_SETFD, 0);
    /* Every other descriptor of ktuned (sockets, database connections, other runners' pipes) is
     * closed, except the status pipe, which closes itself on exec. */
    int closed = 0;
#ifdef SYS_close_range
    closed = (status_fd == 3 || syscall(SYS_close_range, 3U, (unsigned)status_fd - 1U, 0U) == 0) &&
             syscall(SYS_close_range, (unsigned)status_fd + 1U, ~0U, 0U) == 0;
#endif
    if (!closed) {
        for (int fd = 3; fd < max_fd; fd++) {
            if (fd != status_fd)
                close(fd);
        }
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execv(argv[0], argv);
fail:
    e = errno;
    while (write(status_fd, &e, sizeof e) < 0 && errno == EINTR)
        ;
    _exit(127);
}

int runner_client_start(runner_client *r, kt_error *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, st[2] = {-1, -1};
    char core[16], cache_max[32];
    char *argv[13];
    int n = 0, rc = -1;
    struct rlimit rl;
    int max_fd = RUNNER_MAX_FD_LOOP;

    if (runner_client_running(r))
        return 0;
    close_fds(r);
    argv[n++] = r->path;
    argv[n++] = "--device";
    argv[n++] = r->device;
    argv[n++] = "--cache-dir";
    argv[n++] = r->cache_dir;
    if (r->cpu_core >= 0) {
        snprintf(core, sizeof core, "%d", r->cpu_core);
        argv[n++] = "--cpu-core";
        argv[n++] = core;
    }
    if (r->version_uid[0]) {
        argv[n++] = "--version-uid";
        argv[n++] = r->version_uid;
    }
    if (r->cache_max_bytes != 0) {
        snprintf(cache_max, sizeof cache_max, "%lld",
                 r->cache_max_bytes > 0 ? r->cache_max_bytes : 0);
        argv[n++] = "--cache-max-bytes";
        argv[n++] = cache_max;
    }
    argv[n] = NULL;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)RUNNER_MAX_FD_LOOP)
        max_fd = (int)rl.rlim_cur;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
        pipe2(st, O_CLOEXEC) != 0) {
        kt_error_set(err, KT_ERR_MEASURE, "cannot create pipes for the runner: %s",
                     strerror(errno));
        goto out;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        kt_error_set(err, KT_ERR_MEASURE, "cannot fork the runner: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        child_exec(in[1], out[1], st[1], max_fd, parent, argv);
    setpgid(pid, pid); /* EACCES once it has exec'd: then the child did it already */
    close(in[1]);
    close(out[1]);
    close(st[1]);
    in[1] = out[1] = st[1] = -1;
    int child_errno = 0;
    ssize_t got;
    while ((got = read(st[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR)
        ;
    if (got > 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        kt_error_set(err, KT_ERR_MEASURE, "cannot execute the runner %.300s: %s", r->path,
                     strerror(child_errno));
        kt_error_hint(err, "build ktune-runner or point --runner at it");
        goto out;
    }
    r->pid = pid;
    r->in_fd = in[0];
    r->out_fd = out[0];
    in[0] = out[0] = -1;
    log_debug("runner %s started (pid %d)", r->device, (int)pid);
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
        if (st[i] >= 0)
            close(st[i]);
    }
    return rc;
}

/* SIGKILL to the runner's process group and to the runner itself (in case the group was not made).
 */
static void kill_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Waits for the runner to end (killing it after grace_s) and records how it ended. */
static void reap(runner_client *r, double grace_s, runner_end *end)
{
    int status = 0;
    double until = kt_clock_s() + grace_s;
    pid_t got = 0;
    if (!runner_client_running(r))
        return;
    for (;;) {
        got = waitpid(r->pid, &status, WNOHANG);
        if (got != 0 && !(got < 0 && errno == EINTR))
            break;
        if (kt_clock_s() >= until) {
            kill_group(r->pid);
            while ((got = waitpid(r->pid, &status, 0)) < 0 && errno == EINTR)
                ;
            break;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (end && got == r->pid) {
        end->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        end->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    r->pid = 0;
    close_fds(r);
}

/* A runner that ended while idle (killed from outside between two calls) is reaped here, so that
 * the next call starts a fresh one instead of blaming its request for a death it did not cause. */
static void notice_idle_death(runner_client *r)
{
    int status = 0;
    if (!runner_client_running(r) || waitpid(r->pid, &status, WNOHANG) != r->pid)
        return;
    log_warn("runner %s (pid %d) ended while idle (%s %d); starting a new one", r->device,
             (int)r->pid, WIFSIGNALED(status) ? "signal" : "exit code",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    r->pid = 0;
    close_fds(r);
}

pid_t runner_client_ready(runner_client *r, kt_error *err)
{
    notice_idle_death(r);
    return runner_client_start(r, err) < 0 ? -1 : r->pid;
}

void runner_client_kill(runner_client *r)
{
    if (!runner_client_running(r))
        return;
    kill_group(r->pid);
    reap(r, 10.0, NULL);
}

void runner_client_stop(runner_client *r, double grace_s)
{
    if (!runner_client_running(r))
        return;
    shutdown(r->in_fd, SHUT_WR);
    reap(r, grace_s, NULL);
}

void runner_client_free(runner_client *r)
{
    if (!r)
        return;
    runner_client_stop(r, RUNNER_REAP_GRACE_S);
    close_fds(r);
    free(r->path);
    free(r->device);
    free(r->cache_dir);
    free(r->buf);
    free(r);
}

static int remaining_ms(double deadline)
{
    double left = deadline - kt_clock_s();
    if (left <= 0)
        return 0;
    return left > 3600.0 ? 3600 * 1000 : (int)(left * 1000.0) + 1;
}

void runner_client_set_stop(runner_client *r, runner_stop_fn fn, void *arg)
{
    r->stop = fn;
    r->stop_arg = fn ? arg : NULL;
}

static int stop_asked(runner_client *r)
{
    return r->stop && r->stop(r->stop_arg) != 0;
}

enum { WAIT_DEADLINE = 0, WAIT_READY = 1, WAIT_STOPPED = 2, WAIT_ERROR = -1 };

/* Polls fd for events until it is ready, the deadline passes or the stop check says stop; with a
 * stop check the poll is sliced into RUNNER_STOP_POLL_MS pieces. */
static int wait_fd(runner_client *r, int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int ms = remaining_ms(deadline);
        if (ms == 0)
            return WAIT_DEADLINE;
        if (r->stop && ms > RUNNER_STOP_POLL_MS)
            ms = RUNNER_STOP_POLL_MS;
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return WAIT_ERROR;
        if (pr > 0)
            return WAIT_READY;
        if (stop_asked(r))
            return WAIT_STOPPED;
    }
}

/* 1 written, 0 the deadline passed, 2 the stop check said stop, -1 the runner is gone. */
static int write_all(runner_client *r, const char *data, size_t n, double deadline)
{
    size_t done = 0;
    while (done < n) {
        int wr = wait_fd(r, r->in_fd, POLLOUT, deadline);
        if (wr != WAIT_READY)
            return wr;
        ssize_t w = send(r->in_fd, data + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (w < 0)
            return -1;
        done += (size_t)w;
    }
    return 1;
}

/* Reads until buf holds a full line. 1 line ready, 0 deadline, 2 stopped, -1 EOF or error, -2 too
 * long. */
static int read_line(runner_client *r, double deadline)
{
    for (;;) {
        if (r->len && memchr(r->buf, '\n', r->len))
            return 1;
        if (r->len >= RUNNER_MAX_LINE)
            return -2;
        /* Room for one more chunk; len < RUNNER_MAX_LINE here, so the bound always holds. */
        if (KT_ARRAY_GROW(r->buf, r->cap, r->len + RUNNER_READ_CHUNK,
                          RUNNER_MAX_LINE + RUNNER_READ_CHUNK) != 0)
            return -1;
        int wr = wait_fd(r, r->out_fd, POLLIN, deadline);
        if (wr != WAIT_READY)
            return wr;
        ssize_t got = read(r->out_fd, r->buf + r->len, r->cap - r->len);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return -1;
        r->len += (size_t)got;
    }
}

/* Removes the first line from buf and parses it; NULL when it is not a JSON object. */
static json_t *take_line(runner_client *r)
{
    char *nl = memchr(r->buf, '\n', r->len);
    size_t n = (size_t)(nl - r->buf);
    json_t *v = json_loadb(r->buf, n, JSON_REJECT_DUPLICATES, NULL);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    if (!v)
        log_warn("runner %s wrote a line that is not a protocol reply: '%.*s'", r->device,
                 (int)(n < 200 ? n : 200), r->buf);
    memmove(r->buf, nl + 1, r->len - n - 1);
    r->len -= n + 1;
    return v;
}

int runner_client_call(runner_client *r, json_t *request, double timeout_s, json_t **reply,
                       runner_end *end, kt_error *err)
{
    char *line = NULL;
    double start = kt_clock_s(), deadline = start + (timeout_s > 0 ? timeout_s : 0);
    int rc = -1, skipped = 0;
    long long id;

    *reply = NULL;
    memset(end, 0, sizeof *end);
    end->exit_code = -1;
    if (stop_asked(r)) {
        rc = RUNNER_STOPPED; /* nothing was asked of the runner: it stays */
        goto out;
    }
    if (runner_client_ready(r, err) < 0)
        goto out;
    id = ++r->next_id;
    if (json_object_set_new(request, "id", json_integer(id)) < 0 ||
        !(line = json_dumps(request, JSON_COMPACT))) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot encode a runner request");
        goto out;
    }
    size_t n = strlen(line);
    line[n] = '\n'; /* json_dumps leaves room for the NUL, which becomes the newline */
    int w = write_all(r, line, n + 1, deadline);
    if (w == WAIT_STOPPED) {
        runner_client_kill(r);
        rc = RUNNER_STOPPED;
        goto out;
    }
    if (w == 0) {
        runner_client_kill(r);
        rc = RUNNER_DEADLINE;
        goto out;
    }
    if (w < 0) {
        reap(r, RUNNER_REAP_GRACE_S, end);
        rc = RUNNER_DIED;
        goto out;
    }
    for (;;) {
        int got = read_line(r, deadline);
        if (got == WAIT_STOPPED) {
            runner_client_kill(r);
            rc = RUNNER_STOPPED;
            goto out;
        }
        if (got == 0) {
            runner_client_kill(r);
            rc = RUNNER_DEADLINE;
            goto out;
        }
        if (got == -1) {
            reap(r, RUNNER_REAP_GRACE_S, end);
            rc = RUNNER_DIED;
            goto out;
        }
        if (got == -2) {
            runner_client_kill(r);
            kt_error_set(err, KT_ERR_MEASURE, "the runner wrote a line longer than %d bytes",
                         RUNNER_MAX_LINE);
            goto out;
        }
        json_t *v = take_line(r);
        json_t *vid = v ? json_object_get(v, "id") : NULL;
        if (vid && json_is_integer(vid) && json_integer_value(vid) == id) {
            *reply = v;
            rc = RUNNER_REPLY;
            goto out;
        }
        json_decref(v);
        if (++skipped > RUNNER_MAX_SKIPPED) {
            runner_client_kill(r);
            kt_error_set(err, KT_ERR_MEASURE,
                         "the runner wrote %d lines without the reply to request %lld", skipped,
                         id);
            goto out;
        }
    }
out:
    end->waited_s = kt_clock_s() - start;
    free(line);
    return rc;
}
