/* store/pg_cluster — see pg_cluster.h: the data and socket folders, the server's lifecycle. The
 * children it runs (pg_cluster_proc.c) and who may log in (pg_cluster_auth.c) are beside it. */
#include "store/pg_cluster.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "store/pg_auth.h"
#include "store/pg_cluster_impl.h"
#include "store/pg_cluster_internal.h"

/* ---- small helpers ---- */

int pgc_path_join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s%s", a, b);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int pgc_is_file(const char *path)
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

void pgc_set_tail_error(const pg_cluster *c, kt_error *err, const char *what, int status)
{
    char tail[400];
    file_tail(c->log_path, PG_LOG_TAIL, tail, sizeof tail);
    kt_error_set(err, KT_ERR_DATABASE, "%s (exit status %d); %s ends: %s", what, status,
                 c->log_path, tail[0] ? tail : "(empty)");
    kt_error_hint(err, "read %s for the full output of the embedded postgresql", c->log_path);
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
void pgc_conninfo_add(char *out, size_t size, const char *key, const char *value)
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
void pgc_build_conninfo(pg_cluster *c, char *out, size_t size, const char *dbname, const char *user,
                        const char *password)
{
    out[0] = '\0';
    pgc_conninfo_add(out, size, "host", c->socket_dir);
    pgc_conninfo_add(out, size, "port", PG_PORT);
    if (dbname)
        pgc_conninfo_add(out, size, "dbname", dbname);
    if (user)
        pgc_conninfo_add(out, size, "user", user);
    if (password && password[0])
        pgc_conninfo_add(out, size, "password", password);
}

/* Waits until the server at socket_dir accepts connections (it may still be starting up). */
static int wait_ready(pg_cluster *c)
{
    char info[sizeof c->conninfo];
    for (int i = 0; i < PG_READY_SECONDS * 10; i++) {
        if (read_pid_file_socket_dir(c, c->socket_dir, sizeof c->socket_dir) == 0) {
            pgc_build_conninfo(c, info, sizeof info, "postgres", PG_AUTH_ADMIN_ROLE, NULL);
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
    if (pgc_path_join(dir, sizeof dir, c->data_dir, "/pg-socket") == 0 &&
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
    return pgc_chown_to_postgres(c, c->socket_dir, err);
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

/* KTUNE_PG_FSYNC=off: a throw-away cluster (tests, benchmarks) that never waits for the disk; a
 * crash of the machine may then corrupt it. Anything else keeps fsync on, whatever
 * postgresql.conf says. */
static int fsync_off(void)
{
    const char *v = getenv("KTUNE_PG_FSYNC");
    return v && strcmp(v, "off") == 0;
}

static int start_server(pg_cluster *c, kt_error *err)
{
    char opts[PATH_MAX + 200];
    if (choose_socket_dir(c, err) != 0)
        return -1;
    int no_sync = fsync_off();
    if (no_sync)
        log_warn("KTUNE_PG_FSYNC=off: the embedded postgresql does not fsync (a machine crash may "
                 "corrupt %s; for throw-away clusters only)",
                 c->pgdata);
    int n = snprintf(
        opts, sizeof opts,
        "-c listen_addresses='' -p " PG_PORT " -k %s -c max_connections=100 -c fsync=%s",
        c->socket_dir, no_sync ? "off -c synchronous_commit=off -c full_page_writes=off" : "on");
    if (n < 0 || (size_t)n >= sizeof opts)
        return kt_error_set(err, KT_ERR_CONFIG, "socket directory path too long: %s",
                            c->socket_dir);
    char *argv[] = {c->pg_ctl, "-D", c->pgdata, "-l", c->log_path, "-w",
                    "-t",      "60", "-o",      opts, "start",     NULL};
    log_info("starting the embedded postgresql in %s", c->pgdata);
    int st = pgc_run_child(c, argv, c->log_path);
    if (st != 0) {
        pgc_set_tail_error(c, err, "the embedded postgresql server did not start", st);
        return -1;
    }
    return 0;
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
        pgc_path_join(c->pgdata, sizeof c->pgdata, c->data_dir, "/pg") != 0 ||
        pgc_path_join(c->pid_file, sizeof c->pid_file, c->pgdata, "/postmaster.pid") != 0 ||
        pgc_path_join(c->log_path, sizeof c->log_path, c->data_dir, "/pg.log") != 0) {
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
        if (pgc_resolve_postgres_user(c, err) != 0)
            return -1;
        if (!pgc_postgres_can_traverse(c)) {
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
    if (pgc_chown_to_postgres(c, c->pgdata, err) != 0 ||
        pgc_chown_to_postgres(c, c->log_path, err) != 0)
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
    if (prepare_dirs(c, data_dir, err) != 0 || pgc_find_bindir(c, err) != 0 ||
        prepare_for_user(c, err) != 0 || pgc_init_cluster(c, err) != 0)
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
        pgc_set_tail_error(c, err, "the embedded postgresql does not accept connections", -1);
        goto out;
    }
    char own[PATH_MAX];
    c->socket_is_tmp = pgc_path_join(own, sizeof own, c->data_dir, "/pg-socket") != 0 ||
                       strcmp(own, c->socket_dir) != 0;
    if (pgc_make_socket_private(c, err) != 0 || pgc_setup_auth(c, err) != 0)
        goto out;
    pgc_build_conninfo(c, c->conninfo, sizeof c->conninfo, "ktune", PG_AUTH_SERVICE,
                       c->ktune_secret);
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
    if (pgc_is_file(c->pid_file)) {
        char *argv[] = {c->pg_ctl, "-D", c->pgdata, "-m", "fast", "-w", "stop", NULL};
        int st = pgc_run_child(c, argv, c->log_path);
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

/* ---- for the supervisor (pg_supervise.c, pg_cluster_internal.h) ---- */

int pg_cluster_server_alive(pg_cluster *c)
{
    return server_running(c);
}

int pg_cluster_server_start(pg_cluster *c, kt_error *err)
{
    if (start_server(c, err) != 0)
        return -1;
    if (wait_ready(c) != 0) {
        pgc_set_tail_error(c, err, "the embedded postgresql does not accept connections", -1);
        return -1;
    }
    return 0;
}

const char *pg_cluster_pgdata(const pg_cluster *c)
{
    return c->pgdata;
}
