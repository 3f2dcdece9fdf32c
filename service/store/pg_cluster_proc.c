/* store/pg_cluster_proc — the embedded cluster's programs: initdb and pg_ctl found under
 * /usr/lib/postgresql/<version>/bin, run with fork/execv and argv arrays (never through a shell of
 * ours), their output appended to <data_dir>/pg.log; as root they run as `postgres`. */
#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/log.h"
#include "store/pg_auth.h"
#include "store/pg_cluster_impl.h"

/* ---- running children as the cluster's user ---- */

static int wait_child(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In the child after fork: only async-signal-safe calls (the service may have threads). */
static void child_become_user(const pg_cluster *c, const char *cwd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the service may block signals for its own threads */
    signal(SIGPIPE, SIG_DFL);
    if (c->as_postgres) {
        if (setgroups((size_t)c->n_groups, c->groups) != 0 || setgid(c->gid) != 0 ||
            setuid(c->uid) != 0)
            _exit(126);
    }
    if (chdir(cwd) != 0)
        _exit(126);
}

/* Runs argv (argv[0] an absolute path), stdin from /dev/null, stdout and stderr appended to
 * out_path (or /dev/null when NULL). Returns the exit status, or -1 when it could not run or was
 * killed. */
int pgc_run_child(const pg_cluster *c, char *const argv[], const char *out_path)
{
    int status = -1;
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int out_fd = out_path ? open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640) : -1;
    if (null_fd < 0 || (out_path && out_fd < 0)) {
        log_error("cannot open %s: %s", out_path ? out_path : "/dev/null", strerror(errno));
        goto out;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_error("fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        int o = out_fd >= 0 ? out_fd : null_fd;
        if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(o, STDOUT_FILENO) < 0 ||
            dup2(o, STDERR_FILENO) < 0)
            _exit(126);
        /* dup2 onto the same fd (the service had 0-2 closed) keeps close-on-exec: clear it. */
        for (int fd = 0; fd < 3; fd++)
            fcntl(fd, F_SETFD, 0);
        /* Keep the service's sockets and files (an HTTP listener, pool connections) out of the
         * postmaster, which outlives this process. */
        close_range(3, ~0U, 0);
        child_become_user(c, c->data_dir);
        execv(argv[0], argv);
        _exit(127);
    }
    status = wait_child(pid);
out:
    if (null_fd >= 0)
        close(null_fd);
    if (out_fd >= 0)
        close(out_fd);
    return status;
}

/* Whether the postgres user can reach data_dir (e.g. not when it lies under root's 0700 home). */
int pgc_postgres_can_traverse(const pg_cluster *c)
{
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        child_become_user(c, "/");
        _exit(access(c->data_dir, X_OK) == 0 ? 0 : 1);
    }
    return wait_child(pid) == 0;
}

int pgc_chown_to_postgres(const pg_cluster *c, const char *path, kt_error *err)
{
    if (!c->as_postgres || chown(path, c->uid, c->gid) == 0)
        return 0;
    return kt_error_set(err, KT_ERR_IO, "cannot hand %s to the postgres user: %s", path,
                        strerror(errno));
}

int pgc_resolve_postgres_user(pg_cluster *c, kt_error *err)
{
    struct passwd pw, *found = NULL;
    char buf[16384];
    if (getpwnam_r("postgres", &pw, buf, sizeof buf, &found) != 0 || !found) {
        kt_error_set(
            err, KT_ERR_CONFIG,
            "running as root, but there is no user postgres to run the embedded postgresql "
            "as (initdb refuses root)");
        kt_error_hint(err,
                      "install the server (apt-get install -y postgresql creates the user), or "
                      "run ktuned as an unprivileged user");
        return -1;
    }
    c->as_postgres = 1;
    c->uid = pw.pw_uid;
    c->gid = pw.pw_gid;
    int n = PG_GROUPS_MAX;
    if (getgrouplist(pw.pw_name, pw.pw_gid, c->groups, &n) < 0) {
        /* More groups than we keep: the primary group is all the server needs. */
        c->groups[0] = pw.pw_gid;
        n = 1;
    }
    c->n_groups = n;
    return 0;
}

/* ---- locating the server binaries ---- */

static int bindir_complete(const char *dir)
{
    static const char *const names[] = {"/postgres", "/initdb", "/pg_ctl"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (pgc_path_join(path, sizeof path, dir, names[i]) != 0 || access(path, X_OK) != 0)
            return 0;
    }
    return 1;
}

/* "15" -> 150000, "9.6" -> 90600; -1 for names that are not versions. */
static long version_rank(const char *name)
{
    char *end;
    long major = strtol(name, &end, 10);
    long minor = 0;
    if (end == name || major < 0 || major > 1000)
        return -1;
    if (*end == '.') {
        const char *m = end + 1;
        minor = strtol(m, &end, 10);
        if (end == m || minor < 0 || minor > 99)
            return -1;
    }
    return *end ? -1 : major * 10000 + minor * 100;
}

static int set_bindir(pg_cluster *c, const char *dir)
{
    if (!bindir_complete(dir) ||
        snprintf(c->bindir, sizeof c->bindir, "%s", dir) >= (int)sizeof c->bindir ||
        pgc_path_join(c->initdb, sizeof c->initdb, dir, "/initdb") != 0 ||
        pgc_path_join(c->pg_ctl, sizeof c->pg_ctl, dir, "/pg_ctl") != 0)
        return -1;
    return 0;
}

int pgc_find_bindir(pg_cluster *c, kt_error *err)
{
    const char *over = getenv("KTUNE_PG_BINDIR");
    if (over && over[0]) {
        if (set_bindir(c, over) == 0)
            return 0;
        kt_error_set(err, KT_ERR_CONFIG,
                     "postgresql server binaries (postgres, initdb, pg_ctl) not found in "
                     "KTUNE_PG_BINDIR=%s",
                     over);
        kt_error_hint(err,
                      "install them: apt-get install -y postgresql (or unset KTUNE_PG_BINDIR)");
        return -1;
    }
    char dir[PATH_MAX];
    /* A cluster made by version N must run under version N: prefer it when it is installed. */
    char version_file[PATH_MAX], version[32] = "";
    if (pgc_path_join(version_file, sizeof version_file, c->pgdata, "/PG_VERSION") == 0) {
        FILE *f = fopen(version_file, "re");
        if (f) {
            if (fgets(version, sizeof version, f))
                version[strcspn(version, "\r\n")] = '\0';
            fclose(f);
        }
    }
    if (version[0] && version_rank(version) >= 0 &&
        snprintf(dir, sizeof dir, PG_BIN_ROOT "/%s/bin", version) < (int)sizeof dir &&
        set_bindir(c, dir) == 0)
        return 0;
    long best = -1;
    DIR *d = opendir(PG_BIN_ROOT);
    for (struct dirent *e; d && (e = readdir(d));) {
        long rank = version_rank(e->d_name);
        if (rank > best &&
            snprintf(dir, sizeof dir, PG_BIN_ROOT "/%s/bin", e->d_name) < (int)sizeof dir &&
            set_bindir(c, dir) == 0)
            best = rank;
    }
    if (d)
        closedir(d);
    if (best >= 0)
        return 0;
    kt_error_set(err, KT_ERR_CONFIG,
                 "postgresql server binaries not found under " PG_BIN_ROOT "/*/bin");
    kt_error_hint(err, "install them: apt-get install -y postgresql");
    return -1;
}
