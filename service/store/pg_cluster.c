/* store/pg_cluster — see pg_cluster.h. Children (initdb, pg_ctl) are run with fork/execv and argv
 * arrays, never through a shell of ours; their output goes to <data_dir>/pg.log. As root they run
 * as `postgres`. */
#include "store/pg_cluster.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "store/pg_auth.h"

#define PG_PORT          "5432"
#define PG_SOCKET_NAME   "/.s.PGSQL." PG_PORT
#define PG_SOCKET_MAX    107 /* sizeof(sockaddr_un.sun_path) - 1 on Linux */
#define PG_GROUPS_MAX    64
#define PG_READY_SECONDS 60
#define PG_LOG_TAIL      5
#define PG_BIN_ROOT      "/usr/lib/postgresql"

struct pg_cluster {
    char data_dir[PATH_MAX];   /* absolute */
    char bindir[PATH_MAX];     /* holds initdb, pg_ctl, postgres */
    char initdb[PATH_MAX];     /* <bindir>/initdb */
    char pg_ctl[PATH_MAX];     /* <bindir>/pg_ctl */
    char pgdata[PATH_MAX];     /* <data_dir>/pg */
    char pid_file[PATH_MAX];   /* <pgdata>/postmaster.pid */
    char log_path[PATH_MAX];   /* <data_dir>/pg.log */
    char socket_dir[PATH_MAX]; /* <data_dir>/pg-socket, or a mkdtemp dir under /tmp */
    int socket_is_tmp;         /* socket_dir is a private /tmp dir: removed after stop */
    char conninfo[PATH_MAX + 192];
    char admin_secret[PG_AUTH_SECRET_SIZE]; /* ktune_admin's password (pg_auth.h) */
    char ktune_secret[PG_AUTH_SECRET_SIZE]; /* the service role's password */
    int legacy; /* a cluster of an older ktuned: trust auth, superuser ktune (upgraded at start) */
    int as_postgres; /* we are root: children switch to the postgres user */
    uid_t uid;
    gid_t gid;
    gid_t groups[PG_GROUPS_MAX];
    int n_groups;
};

/* ---- small helpers ---- */

static int path_join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s%s", a, b);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* pg_ctl builds a shell command with the data and log paths inside double quotes, and passes the -o
 * options unquoted; these checks keep both safe without quoting of ours. */
static int safe_in_double_quotes(const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\' || *s == '$' || *s == '`' || *s == '\n' || *s == '\r')
            return 0;
    }
    return 1;
}

static int safe_unquoted(const char *s)
{
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && !strchr("/._-", *s))
            return 0;
    }
    return 1;
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Copies the last `lines` lines of the file into out, joined with " | " (for one-line error
 * messages). */
static void file_tail(const char *path, int lines, char *out, size_t size)
{
    char buf[2048];
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end > (off_t)sizeof buf - 1 ? end - (off_t)(sizeof buf - 1) : 0;
    ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - start), start) : 0;
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    char *from = buf;
    int seen = 0;
    for (char *p = buf + n; p > buf; p--) {
        if (p[-1] == '\n' && ++seen == lines) {
            from = p;
            break;
        }
    }
    size_t used = 0;
    for (char *line = from; line && *line && used + 1 < size;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        int w = snprintf(out + used, size - used, "%s%s", used ? " | " : "", line);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
        line = nl ? nl + 1 : NULL;
    }
}

static void set_tail_error(const pg_cluster *c, kt_error *err, const char *what, int status)
{
    char tail[400];
    file_tail(c->log_path, PG_LOG_TAIL, tail, sizeof tail);
    kt_error_set(err, KT_ERR_DATABASE, "%s (exit status %d); %s ends: %s", what, status,
                 c->log_path, tail[0] ? tail : "(empty)");
    kt_error_hint(err, "read %s for the full output of the embedded postgresql", c->log_path);
}

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
static int run_child(const pg_cluster *c, char *const argv[], const char *out_path)
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
static int postgres_can_traverse(const pg_cluster *c)
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

static int chown_to_postgres(const pg_cluster *c, const char *path, kt_error *err)
{
    if (!c->as_postgres || chown(path, c->uid, c->gid) == 0)
        return 0;
    return kt_error_set(err, KT_ERR_IO, "cannot hand %s to the postgres user: %s", path,
                        strerror(errno));
}

static int resolve_postgres_user(pg_cluster *c, kt_error *err)
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
        if (path_join(path, sizeof path, dir, names[i]) != 0 || access(path, X_OK) != 0)
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
        path_join(c->initdb, sizeof c->initdb, dir, "/initdb") != 0 ||
        path_join(c->pg_ctl, sizeof c->pg_ctl, dir, "/pg_ctl") != 0)
        return -1;
    return 0;
}

static int find_bindir(pg_cluster *c, kt_error *err)
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
    if (path_join(version_file, sizeof version_file, c->pgdata, "/PG_VERSION") == 0) {
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

/* ---- the server ---- */

/* The socket directory of the running server: line 5 of postmaster.pid. */
static int read_pid_file_socket_dir(const pg_cluster *c, char *out, size_t size)
{
    char line[PATH_MAX];
    int found = -1;
    FILE *f = fopen(c->pid_file, "re");
    if (!f)
        return -1;
    for (int i = 1; fgets(line, sizeof line, f); i++) {
        if (i != 5)
            continue;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '/' && snprintf(out, size, "%s", line) < (int)size)
            found = 0;
        break;
    }
    fclose(f);
    return found;
}

/* Appends key=value to a conninfo, single-quoting the value when it needs it. */
static void conninfo_add(char *out, size_t size, const char *key, const char *value)
{
    size_t n = strlen(out);
    int quote = !safe_unquoted(value);
    int w = snprintf(out + n, size - n, "%s%s=%s", n ? " " : "", key, quote ? "'" : "");
    if (w < 0 || (size_t)w >= size - n)
        return;
    n += (size_t)w;
    for (const char *v = value; *v && n + 3 < size; v++) {
        if (quote && (*v == '\'' || *v == '\\'))
            out[n++] = '\\';
        out[n++] = *v;
    }
    if (quote && n + 1 < size)
        out[n++] = '\'';
    out[n] = '\0';
}

/* user/password NULL: only the socket (for pings and pg_auth_upgrade_legacy's base). */
static void build_conninfo(pg_cluster *c, char *out, size_t size, const char *dbname,
                           const char *user, const char *password)
{
    out[0] = '\0';
    conninfo_add(out, size, "host", c->socket_dir);
    conninfo_add(out, size, "port", PG_PORT);
    if (dbname)
        conninfo_add(out, size, "dbname", dbname);
    if (user)
        conninfo_add(out, size, "user", user);
    if (password && password[0])
        conninfo_add(out, size, "password", password);
}

/* Waits until the server at socket_dir accepts connections (it may still be starting up). */
static int wait_ready(pg_cluster *c)
{
    char info[sizeof c->conninfo];
    for (int i = 0; i < PG_READY_SECONDS * 10; i++) {
        if (read_pid_file_socket_dir(c, c->socket_dir, sizeof c->socket_dir) == 0) {
            build_conninfo(c, info, sizeof info, "postgres", PG_AUTH_ADMIN_ROLE, NULL);
            if (PQping(info) == PQPING_OK)
                return 0;
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* The default socket dir, or a private /tmp dir when the socket path would be too long for a unix
 * socket address or unsafe to hand to pg_ctl's shell. */
static int choose_socket_dir(pg_cluster *c, kt_error *err)
{
    char dir[PATH_MAX];
    if (path_join(dir, sizeof dir, c->data_dir, "/pg-socket") == 0 &&
        strlen(dir) + strlen(PG_SOCKET_NAME) <= PG_SOCKET_MAX && safe_unquoted(dir)) {
        /* Private: only the cluster's user (and root) may reach the socket (issue #11). */
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return kt_error_set(err, KT_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
        if (chmod(dir, 0700) != 0)
            return kt_error_set(err, KT_ERR_IO, "cannot make %s private: %s", dir, strerror(errno));
        snprintf(c->socket_dir, sizeof c->socket_dir, "%s", dir);
        c->socket_is_tmp = 0;
    } else {
        char tmpl[] = "/tmp/ktune-pg-XXXXXX";
        if (!mkdtemp(tmpl))
            return kt_error_set(err, KT_ERR_IO, "cannot create a socket directory under /tmp: %s",
                                strerror(errno));
        snprintf(c->socket_dir, sizeof c->socket_dir, "%s", tmpl);
        c->socket_is_tmp = 1;
        log_info("postgresql socket path under %s is too long or unusual; using %s", c->data_dir,
                 c->socket_dir);
    }
    return chown_to_postgres(c, c->socket_dir, err);
}

/* The pid on the first line of a postgres lock file, or -1. */
static long lock_file_pid(const char *path)
{
    long pid = -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = -1;
    fclose(f);
    return pid;
}

/* Whether the postmaster named in postmaster.pid is alive. A pid that is gone is left to postgres,
 * which treats such a lock file as stale; a zombie (its parent never reaped it) or a pid now used
 * by another program would make postgres refuse to start, so that lock file is removed here.
 * Postgres still refuses if backends of the dead server hold its shared memory. */
static int server_running(pg_cluster *c)
{
    char path[64], line[512];
    long pid = lock_file_pid(c->pid_file);
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        return kill((pid_t)pid, 0) == 0 || errno == EPERM; /* no /proc: trust the pid */
    }
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    /* "pid (comm) state ...": comm may hold spaces and parentheses, so split at the last ')'. */
    char *open_paren = got ? strchr(line, '(') : NULL;
    char *close_paren = got ? strrchr(line, ')') : NULL;
    if (open_paren && close_paren && close_paren > open_paren && close_paren[1] == ' ') {
        *close_paren = '\0';
        if (strcmp(open_paren + 1, "postgres") == 0 && close_paren[2] != 'Z')
            return 1;
    }
    /* The socket's lock file names the same pid and would stop postgres the same way. */
    char sock_dir[PATH_MAX], sock_lock[PATH_MAX];
    if (read_pid_file_socket_dir(c, sock_dir, sizeof sock_dir) == 0 &&
        snprintf(sock_lock, sizeof sock_lock, "%s" PG_SOCKET_NAME ".lock", sock_dir) <
            (int)sizeof sock_lock &&
        lock_file_pid(sock_lock) == pid) {
        log_warn("removing stale %s: process %ld is not a running postgres", sock_lock, pid);
        unlink(sock_lock);
    }
    log_warn("removing stale %s: process %ld is not a running postgres", c->pid_file, pid);
    unlink(c->pid_file);
    return 0;
}

static int start_server(pg_cluster *c, kt_error *err)
{
    char opts[PATH_MAX + 160];
    if (choose_socket_dir(c, err) != 0)
        return -1;
    int n =
        snprintf(opts, sizeof opts,
                 "-c listen_addresses='' -p " PG_PORT " -k %s -c max_connections=100 -c fsync=on",
                 c->socket_dir);
    if (n < 0 || (size_t)n >= sizeof opts)
        return kt_error_set(err, KT_ERR_CONFIG, "socket directory path too long: %s",
                            c->socket_dir);
    char *argv[] = {c->pg_ctl, "-D", c->pgdata, "-l", c->log_path, "-w",
                    "-t",      "60", "-o",      opts, "start",     NULL};
    log_info("starting the embedded postgresql in %s", c->pgdata);
    int st = run_child(c, argv, c->log_path);
    if (st != 0) {
        set_tail_error(c, err, "the embedded postgresql server did not start", st);
        return -1;
    }
    return 0;
}

/* The secrets of pg_auth.h: generated when the cluster is created; a cluster that exists without
 * the admin secret was made by an older ktuned (trust authentication): c->legacy. */
static int load_secrets(pg_cluster *c, int exists, kt_error *err)
{
    char path[PATH_MAX];
    if (path_join(path, sizeof path, c->data_dir, PG_AUTH_ADMIN_FILE) != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    int rc = pg_auth_secret(path, !exists, c->admin_secret, sizeof c->admin_secret, err);
    if (rc < 0)
        return -1;
    c->legacy = rc == 1;
    if (path_join(path, sizeof path, c->data_dir, PG_AUTH_KTUNE_FILE) != 0 ||
        pg_auth_secret(path, 1, c->ktune_secret, sizeof c->ktune_secret, err) != 0)
        return -1;
    return 0;
}

static int init_cluster(pg_cluster *c, kt_error *err)
{
    char path[PATH_MAX], pwfile[PATH_MAX], pwopt[PATH_MAX + 16];
    int rc = -1;
    if (path_join(path, sizeof path, c->pgdata, "/PG_VERSION") != 0 ||
        path_join(pwfile, sizeof pwfile, c->data_dir, "/pg-initdb.pw") != 0 ||
        snprintf(pwopt, sizeof pwopt, "--pwfile=%s", pwfile) >= (int)sizeof pwopt)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    int exists = is_file(path);
    if (load_secrets(c, exists, err) != 0)
        return -1;
    if (exists)
        return 0;
    /* initdb (as postgres) reads the superuser's password from a file: a short-lived copy it owns.
     */
    unlink(pwfile);
    int fd = open(pwfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = strlen(c->admin_secret);
    if (fd < 0 || write(fd, c->admin_secret, len) != (ssize_t)len ||
        (c->as_postgres && fchown(fd, c->uid, c->gid) != 0)) {
        kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", pwfile, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    close(fd);
    char *argv[] = {c->initdb,
                    "-D",
                    c->pgdata,
                    "-U",
                    PG_AUTH_ADMIN_ROLE,
                    pwopt,
                    "--auth-local=scram-sha-256",
                    "--auth-host=reject",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    NULL};
    log_info("creating the embedded postgresql cluster in %s", c->pgdata);
    int st = run_child(c, argv, c->log_path);
    if (st != 0) {
        set_tail_error(c, err, "initdb failed", st);
        goto out;
    }
    rc = 0;
out:
    unlink(pwfile);
    return rc;
}

static PGconn *connect_as(pg_cluster *c, const char *dbname, const char *user, const char *password,
                          kt_error *err)
{
    char info[sizeof c->conninfo];
    build_conninfo(c, info, sizeof info, dbname, user, password);
    conninfo_add(info, sizeof info, "application_name", "ktuned-setup");
    PGconn *conn = PQconnectdb(info);
    if (PQstatus(conn) != CONNECTION_OK) {
        kt_error_set(err, KT_ERR_DATABASE, "cannot connect to the embedded postgresql as %s: %s",
                     user, PQerrorMessage(conn));
        if (err)
            err->message[strcspn(err->message, "\n")] = '\0';
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

static int set_admin_password(PGconn *conn, const char *secret, kt_error *err)
{
    char sql[256];
    char *lit = PQescapeLiteral(conn, secret, strlen(secret));
    if (!lit)
        return kt_error_set(err, KT_ERR_DATABASE, "upgrade: %s", PQerrorMessage(conn));
    snprintf(sql, sizeof sql, "ALTER ROLE " PG_AUTH_ADMIN_ROLE " PASSWORD %s", lit);
    PQfreemem(lit);
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        kt_error_set(err, KT_ERR_DATABASE, "upgrade: %s", PQresultErrorMessage(res));
    PQclear(res);
    return ok ? 0 : -1;
}

/* A cluster of an older ktuned (still on trust authentication): its superuser `ktune` becomes
 * ktune_admin with a generated password. The secret is written under a .new name first and takes
 * its place once the role has it, so an interrupted upgrade is resumed at the next start. */
static int upgrade_legacy(pg_cluster *c, kt_error *err)
{
    char path[PATH_MAX], pending[PATH_MAX], base[sizeof c->conninfo];
    int rc = -1;
    PGconn *conn = NULL;
    PGresult *res = NULL;
    if (path_join(path, sizeof path, c->data_dir, PG_AUTH_ADMIN_FILE) != 0 ||
        path_join(pending, sizeof pending, path, ".new") != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "data directory path too long: %s", c->data_dir);
    if (pg_auth_secret(pending, 1, c->admin_secret, sizeof c->admin_secret, err) != 0)
        return -1;
    build_conninfo(c, base, sizeof base, NULL, NULL, NULL);
    conn = connect_as(c, "postgres", "ktune", NULL, NULL);
    res = conn ? PQexec(conn, "SELECT oid = 10 FROM pg_roles WHERE rolname = 'ktune'") : NULL;
    int boot = res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
               strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    if (boot) {
        if (pg_auth_upgrade_legacy(conn, base, c->admin_secret, err) != 0)
            goto out;
    } else {
        /* Renamed by an upgrade that stopped before its secret was kept: set the password again. */
        PQfinish(conn);
        if (!(conn = connect_as(c, "postgres", PG_AUTH_ADMIN_ROLE, NULL, err))) {
            kt_error_hint(err,
                          "the cluster in %s has neither the superuser ktune of older versions "
                          "nor " PG_AUTH_ADMIN_ROLE,
                          c->pgdata);
            goto out;
        }
        if (set_admin_password(conn, c->admin_secret, err) != 0)
            goto out;
    }
    if (rename(pending, path) != 0) {
        kt_error_set(err, KT_ERR_IO, "cannot rename %s: %s", pending, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    PQclear(res);
    PQfinish(conn);
    return rc;
}

/* pg_hba.conf (password logins only) is rewritten at every start and the server told to reload it,
 * which also upgrades a server started by an older ktuned that is still running. Then, as
 * ktune_admin: the service role, its database, and (for upgraded clusters) its tables. */
static int setup_auth(pg_cluster *c, kt_error *err)
{
    int rc = -1;
    PGconn *admin = NULL;
    if (c->legacy && upgrade_legacy(c, err) != 0)
        return -1;
    if (pg_auth_write_hba(c->pgdata, c->as_postgres, c->uid, c->gid, err) != 0)
        return -1;
    char *argv[] = {c->pg_ctl, "-D", c->pgdata, "reload", NULL};
    if (run_child(c, argv, c->log_path) != 0)
        log_warn("pg_ctl reload failed; see %s", c->log_path);
    if (!(admin = connect_as(c, "postgres", PG_AUTH_ADMIN_ROLE, c->admin_secret, err)) ||
        pg_auth_ensure_service(admin, c->ktune_secret, err) != 0)
        goto out;
    PQfinish(admin);
    if (!(admin = connect_as(c, "ktune", PG_AUTH_ADMIN_ROLE, c->admin_secret, err)) ||
        pg_auth_own_objects(admin, err) != 0)
        goto out;
    rc = 0;
out:
    PQfinish(admin);
    return rc;
}

/* The socket directory is private to the cluster's user (root reaches it anyway); also for a server
 * started by an older ktuned, whose directory was 0755. */
static int make_socket_private(const pg_cluster *c, kt_error *err)
{
    if (chmod(c->socket_dir, 0700) != 0)
        return kt_error_set(err, KT_ERR_IO, "cannot make %s private: %s", c->socket_dir,
                            strerror(errno));
    return chown_to_postgres(c, c->socket_dir, err);
}

static int prepare_dirs(pg_cluster *c, const char *data_dir, kt_error *err)
{
    if (!data_dir || !data_dir[0])
        return kt_error_set(err, KT_ERR_CONFIG, "the data directory is empty");
    if (mkdir_p(data_dir, 0755) != 0)
        return kt_error_set(err, KT_ERR_IO, "cannot create data directory %s: %s", data_dir,
                            strerror(errno));
    char *abs = realpath(data_dir, NULL);
    if (!abs)
        return kt_error_set(err, KT_ERR_IO, "cannot resolve data directory %s: %s", data_dir,
                            strerror(errno));
    int n = snprintf(c->data_dir, sizeof c->data_dir, "%s", abs);
    free(abs);
    if (n < 0 || (size_t)n >= sizeof c->data_dir || !safe_in_double_quotes(c->data_dir) ||
        path_join(c->pgdata, sizeof c->pgdata, c->data_dir, "/pg") != 0 ||
        path_join(c->pid_file, sizeof c->pid_file, c->pgdata, "/postmaster.pid") != 0 ||
        path_join(c->log_path, sizeof c->log_path, c->data_dir, "/pg.log") != 0) {
        kt_error_set(err, KT_ERR_CONFIG, "data directory %s is too long or holds one of \" \\ $ `",
                     data_dir);
        kt_error_hint(err, "pg_ctl passes it through a shell; choose a plainer --data-dir");
        return -1;
    }
    return 0;
}

static int prepare_for_user(pg_cluster *c, kt_error *err)
{
    if (geteuid() == 0) {
        if (resolve_postgres_user(c, err) != 0)
            return -1;
        if (!postgres_can_traverse(c)) {
            kt_error_set(err, KT_ERR_CONFIG,
                         "running as root, the embedded postgresql runs as user postgres, which "
                         "cannot reach %s (a parent directory is not searchable by it)",
                         c->data_dir);
            kt_error_hint(err, "choose a --data-dir outside root's home (e.g. /var/lib/ktune), or "
                               "make every parent searchable (chmod o+x)");
            return -1;
        }
    }
    if (mkdir(c->pgdata, 0700) != 0 && errno != EEXIST)
        return kt_error_set(err, KT_ERR_IO, "cannot create %s: %s", c->pgdata, strerror(errno));
    int fd = open(c->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return kt_error_set(err, KT_ERR_IO, "cannot open %s: %s", c->log_path, strerror(errno));
    close(fd);
    if (chown_to_postgres(c, c->pgdata, err) != 0 || chown_to_postgres(c, c->log_path, err) != 0)
        return -1;
    return 0;
}

pg_cluster *pg_cluster_start(const char *data_dir, kt_error *err)
{
    int ok = 0;
    pg_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    if (prepare_dirs(c, data_dir, err) != 0 || find_bindir(c, err) != 0 ||
        prepare_for_user(c, err) != 0 || init_cluster(c, err) != 0)
        goto out;
    /* A server left by a ktuned that died without stopping it is reused, on the socket it uses. */
    int running = server_running(c);
    if (running) {
        log_info("reusing the embedded postgresql already running in %s", c->pgdata);
    } else if (start_server(c, err) != 0) {
        /* Another ktuned may have started it at the same moment: then use that one. */
        if (!server_running(c))
            goto out;
        kt_error_clear(err);
        log_info("the embedded postgresql in %s was started by another process; using it",
                 c->pgdata);
        if (c->socket_is_tmp)
            rmdir(c->socket_dir);
    }
    if (wait_ready(c) != 0) {
        set_tail_error(c, err, "the embedded postgresql does not accept connections", -1);
        goto out;
    }
    char own[PATH_MAX];
    c->socket_is_tmp = path_join(own, sizeof own, c->data_dir, "/pg-socket") != 0 ||
                       strcmp(own, c->socket_dir) != 0;
    if (make_socket_private(c, err) != 0 || setup_auth(c, err) != 0)
        goto out;
    build_conninfo(c, c->conninfo, sizeof c->conninfo, "ktune", PG_AUTH_SERVICE, c->ktune_secret);
    ok = 1;
out:
    if (!ok) {
        /* A server we could not use is left running: the next start reuses or diagnoses it. */
        if (c->socket_is_tmp && c->socket_dir[0])
            rmdir(c->socket_dir); /* only succeeds when no server made its socket there */
        free(c);
        return NULL;
    }
    return c;
}

const char *pg_cluster_conninfo(const pg_cluster *c)
{
    return c->conninfo;
}

void pg_cluster_stop(pg_cluster *c)
{
    if (!c)
        return;
    if (is_file(c->pid_file)) {
        char *argv[] = {c->pg_ctl, "-D", c->pgdata, "-m", "fast", "-w", "stop", NULL};
        int st = run_child(c, argv, c->log_path);
        if (st != 0)
            log_warn("stopping the embedded postgresql failed (exit status %d); see %s", st,
                     c->log_path);
        else
            log_info("stopped the embedded postgresql in %s", c->pgdata);
    }
    if (c->socket_is_tmp)
        rmdir(c->socket_dir);
    free(c);
}
