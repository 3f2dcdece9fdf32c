/* kt_pg_template DIR — puts a test database into the data directory DIR (created if missing): a
 * copy of the template cluster, created, migrated to the newest schema, empty and stopped (what
 * ktuned's first start makes, less the rows a running ktuned writes), so that tests copy it instead
 * of running initdb and the migrations for every ktuned or store test they start (tests/README.md,
 * "Test databases"). The template lives beside this program (<its folder>/pg-template/data) and is
 * made under a lock (tests run side by side) when it is missing or older than this program, which
 * holds the migrations. The one implementation: the Python, C and browser fixtures all run this.
 * Exit 0 when DIR holds the copy, 1 with the reason on stderr, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "store/db.h"
#include "store/migrate.h"
#include "store/pg_cluster.h"

/* out = a followed by b; -1 (said on stderr) when that does not fit PATH_MAX. */
static int join(char out[PATH_MAX], const char *a, const char *b)
{
    int n = snprintf(out, PATH_MAX, "%s%s", a, b);
    if (n < 0 || n >= PATH_MAX) {
        fprintf(stderr, "kt_pg_template: path too long: %s%s\n", a, b);
        return -1;
    }
    return 0;
}

/* Runs argv (a program found on PATH) and waits: 0 when it exited 0. */
static int run(char *const argv[])
{
    pid_t pid = fork();
    int st = 0;
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* A new cluster in data, migrated and stopped, without the log and socket folder of its start. */
static int make_cluster(const char *data)
{
    kt_error err;
    pg_cluster *cluster = NULL;
    db_pool *pool = NULL;
    PGconn *c = NULL;
    int count = 0, rc = -1;
    char path[PATH_MAX];

    kt_error_clear(&err);
    const migration *migs = migrate_builtin(&count);
    if (!(cluster = pg_cluster_start(data, &err)) ||
        !(pool = db_pool_new(pg_cluster_conninfo(cluster), 1, &err)) ||
        !(c = db_acquire(pool, 10000, &err)) || migrate_apply(c, migs, count, &err) < 0) {
        fprintf(stderr, "kt_pg_template: %s (hint: %s)\n", err.message, err.hint);
        goto out;
    }
    rc = 0;
out:
    if (c)
        db_release(pool, c);
    db_pool_free(pool);
    pg_cluster_stop(cluster);
    if (rc == 0 && join(path, data, "/pg.log") == 0)
        unlink(path);
    if (rc == 0 && join(path, data, "/pg-socket") == 0)
        rmdir(path);
    return rc;
}

/* Makes <dir>/pg-template/data when missing or older than self; called under the lock. */
static int ensure_template(const char *dir, const char *self)
{
    char path[PATH_MAX], tmp[PATH_MAX], data[PATH_MAX];
    struct stat st_self, st_path;
    if (join(path, dir, "/pg-template") < 0 || join(tmp, dir, "/pg-template.tmp") < 0 ||
        join(data, tmp, "/data") < 0)
        return -1;
    if (stat(self, &st_self) != 0) {
        fprintf(stderr, "kt_pg_template: %s: %s\n", self, strerror(errno));
        return -1;
    }
    if (stat(path, &st_path) == 0 && st_path.st_mtime >= st_self.st_mtime)
        return 0;
    char *rm[] = {"rm", "-rf", path, tmp, NULL};
    if (run(rm) != 0 || mkdir(tmp, 0755) != 0 || chmod(tmp, 0755) != 0) {
        fprintf(stderr, "kt_pg_template: cannot make %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    if (make_cluster(data) != 0)
        return -1;
    if (rename(tmp, path) != 0) {
        fprintf(stderr, "kt_pg_template: rename %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char self[PATH_MAX], dir[PATH_MAX], lock_path[PATH_MAX], from[PATH_MAX];
    int rc = 1, lock = -1;

    if (argc != 2 || !argv[1][0]) {
        fprintf(stderr, "usage: kt_pg_template DATA_DIR\n");
        return 2;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "kt_pg_template: cannot find itself: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    snprintf(dir, sizeof dir, "%s", self);
    *strrchr(dir, '/') = '\0';
    if (join(lock_path, dir, "/pg-template.lock") < 0 || join(from, dir, "/pg-template/data/.") < 0)
        return 1;
    lock = open(lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        fprintf(stderr, "kt_pg_template: lock %s: %s\n", lock_path, strerror(errno));
        goto out;
    }
    if (ensure_template(dir, self) != 0)
        goto out;
    char *mk[] = {"mkdir", "-p", argv[1], NULL};
    char *cp[] = {"cp", "-a", from, argv[1], NULL};
    if (run(mk) != 0 || run(cp) != 0) {
        fprintf(stderr, "kt_pg_template: cannot copy %s into %s\n", from, argv[1]);
        goto out;
    }
    rc = 0;
out:
    if (lock >= 0)
        close(lock);
    return rc;
}
