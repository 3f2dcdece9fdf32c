/* runner/sandbox — see sandbox.h. The namespaces (network, mount, pid); the filter is seccomp.c. */
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void runner_sandbox_note(runner_sandbox *sb, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ktune-runner: %s\n", line);
    size_t used = strlen(sb->notes);
    snprintf(sb->notes + used, sizeof sb->notes - used, "%s%s", used ? "; " : "", line);
}

void runner_sandbox_network(runner_sandbox *sb)
{
    if (unshare(CLONE_NEWNET) != 0) {
        runner_sandbox_note(sb,
                            "no network namespace of its own (%s): kernels share the host's "
                            "network",
                            strerror(errno));
        return;
    }
    sb->network_ns = 1;
}

/* mkdir -p of path (absolute) in the current mount table; 0 when it is a folder at the end. */
static int make_path(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    struct stat st;
    return (mkdir(buf, 0700) == 0 || errno == EEXIST) && stat(buf, &st) == 0 && S_ISDIR(st.st_mode)
               ? 0
               : -1;
}

static int mount_tmpfs(const char *where, long long bytes)
{
    char opt[64];
    snprintf(opt, sizeof opt, "mode=1777,size=%lld", bytes);
    return mount("tmpfs", where, "tmpfs", MS_NOSUID | MS_NODEV, opt);
}

/* tmpfs on /tmp, with cache_dir (when it lies under /tmp) bound back in at its path. */
static int private_tmp(runner_sandbox *sb, const char *cache_dir)
{
    char real[PATH_MAX], from[64];
    int keep = -1, rc = -1;
    if (!realpath(cache_dir, real)) {
        runner_sandbox_note(sb, "no private /tmp: cannot resolve %s: %s", cache_dir,
                            strerror(errno));
        return -1;
    }
    if (strncmp(real, "/tmp/", 5) == 0 &&
        (keep = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        runner_sandbox_note(sb, "no private /tmp: cannot open %s: %s", real, strerror(errno));
        return -1;
    }
    if (mount_tmpfs("/tmp", RUNNER_TMP_BYTES) != 0) {
        runner_sandbox_note(sb, "no private /tmp (%s): kernels share the host's /tmp",
                            strerror(errno));
        goto out;
    }
    snprintf(from, sizeof from, "/proc/self/fd/%d", keep);
    if (keep >= 0 && (make_path(real) != 0 || mount(from, real, NULL, MS_BIND, NULL) != 0)) {
        runner_sandbox_note(sb, "no private /tmp: cannot bind the cache folder %s into it (%s)",
                            real, strerror(errno));
        umount2("/tmp", MNT_DETACH);
        goto out;
    }
    rc = 0;
out:
    if (keep >= 0)
        close(keep);
    return rc;
}

void runner_sandbox_mounts(runner_sandbox *sb, int private, const char *cache_dir)
{
    if (unshare(CLONE_NEWIPC) != 0)
        runner_sandbox_note(sb, "no IPC namespace of its own (%s): SysV IPC is the host's",
                            strerror(errno));
    else
        sb->ipc_ns = 1;
    if (unshare(CLONE_NEWNS) != 0) {
        runner_sandbox_note(sb, "no mount namespace of its own (%s): no private /tmp or /proc",
                            strerror(errno));
        return;
    }
    /* Private first: a mount of ours must never propagate to the host's table. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        runner_sandbox_note(sb, "cannot make the mount table private (%s): nothing is mounted",
                            strerror(errno));
        return;
    }
    sb->mount_ns = 1;
    if (!private || private_tmp(sb, cache_dir) != 0)
        return;
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
        mount_tmpfs("/dev/shm", RUNNER_SHM_BYTES) != 0) {
        runner_sandbox_note(sb, "no private /dev/shm (%s)", strerror(errno));
        return;
    }
    sb->private_tmp = 1;
}

/* Between the fork and the end of the process: no way back to root. */
static void drop_or_die(uid_t uid, gid_t gid)
{
    if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || setuid(0) == 0) {
        fprintf(stderr, "ktune-runner: cannot switch to uid %u: %s\n", (unsigned)uid,
                strerror(errno));
        _exit(2);
    }
}

/* The protocol is the served process's alone: the init and the waiting parent hold none of it, so
 * that ktuned sees EOF as soon as the served process ends. */
static void let_go_of_protocol(void)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
}

/* Ends this process as the status says: by the same signal, else with the same code. */
static void end_like(int status)
{
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (!sig && WIFEXITED(status) && WEXITSTATUS(status) > 128)
        sig = WEXITSTATUS(status) - 128; /* the init's encoding of the served process's signal */
    if (sig) {
        sigset_t one;
        struct rlimit none = {0, 0}; /* the signal ends it, as it ended the runner: no core */
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* pid 1: reaps whatever is left to it until the served process ends, then ends with its status
 * (a signal as 128 + the signal) — and the kernel kills everything else in the namespace. */
static void serve_as_init(pid_t served)
{
    let_go_of_protocol();
    for (;;) {
        int status = 0;
        pid_t got = waitpid(-1, &status, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            _exit(1);
        if (got == served)
            _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                  : WIFEXITED(status) ? WEXITSTATUS(status)
                                      : 1);
    }
}

int runner_sandbox_pid(runner_sandbox *sb, uid_t uid, gid_t gid, char *msg, size_t size)
{
    int alive[2]; /* the parent holds the write end until it dies: the init's check */
    if (pipe2(alive, O_CLOEXEC) != 0) {
        snprintf(msg, size, "cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    if (unshare(CLONE_NEWPID) != 0) {
        runner_sandbox_note(sb,
                            "no pid namespace of its own (%s): a process a kernel starts may "
                            "outlive the runner",
                            strerror(errno));
        close(alive[0]);
        close(alive[1]);
        return 0;
    }
    pid_t starter = getppid();
    fflush(stderr);
    pid_t init = fork();
    if (init < 0) {
        snprintf(msg, size, "cannot fork the init of its pid namespace: %s", strerror(errno));
        return -1;
    }
    if (init > 0) {
        /* The process ktuned started: waits, holding nothing, and ends as the runner ended. */
        close(alive[0]);
        let_go_of_protocol();
        drop_or_die(uid, gid);
        /* The switch cleared the death signal ktuned gave its child (runner_client.c): again,
         * so that a ktuned that dies takes its runners with it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != starter)
            kill(init, SIGKILL);
        int status = 0;
        while (waitpid(init, &status, 0) < 0 && errno == EINTR)
            ;
        end_like(status);
    }
    /* pid 1 of the new namespace. */
    close(alive[1]);
    sb->pid_ns = 1;
    if (sb->mount_ns && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        runner_sandbox_note(sb, "cannot mount the pid namespace's /proc (%s): /proc shows the host",
                            strerror(errno));
    drop_or_die(uid, gid);
    /* It dies (and with it the namespace) when ktuned's child dies: set after the switch, which
     * clears it; a parent that died before is seen on the pipe. */
    struct pollfd gone = {.fd = alive[0], .events = POLLIN};
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || poll(&gone, 1, 0) != 0)
        _exit(1);
    close(alive[0]);
    fflush(stderr);
    pid_t served = fork();
    if (served < 0) {
        fprintf(stderr, "ktune-runner: cannot fork in its pid namespace: %s\n", strerror(errno));
        _exit(2);
    }
    if (served > 0)
        serve_as_init(served);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the init: it never dies first but with the namespace */
    return 0;
}

json_t *runner_sandbox_json(const runner_sandbox *sb)
{
    json_t *notes = json_array();
    char buf[sizeof sb->notes];
    snprintf(buf, sizeof buf, "%s", sb->notes);
    for (char *s = buf, *end; notes && *s; s = end) {
        end = strstr(s, "; ");
        if (end) {
            *end = '\0';
            end += 2;
        } else {
            end = s + strlen(s);
        }
        json_array_append_new(notes, json_string(s));
    }
    return json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:o}", "own_uid", sb->own_uid,
                     "network_namespace", sb->network_ns, "ipc_namespace", sb->ipc_ns,
                     "mount_namespace", sb->mount_ns, "private_tmp", sb->private_tmp,
                     "pid_namespace", sb->pid_ns, "seccomp", sb->seccomp, "notes",
                     notes ? notes : json_array());
}
