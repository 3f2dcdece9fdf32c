/* measure/core_reserve — see core_reserve.h. */
#include "measure/core_reserve.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

/* Passes over this process's threads until one changes none (threads started during a pass). */
#define CORE_RESERVE_PASSES 4
/* The processes of one tree moved at most: its root and 4096 below it (a postmaster's backends,
 * writers, autovacuum: max_connections + a few; a runner's compiler driver, cc1, as, ld). */
#define CORE_RESERVE_TREE_MAX (4096 + 1)
/* Guests registered at once (one compile apart per measuring thread). */
#define CORE_RESERVE_GUESTS_MAX 64

struct core_reserve {
    pthread_mutex_t mu;
    int core;
    cpu_set_t wide;   /* the process's affinity at start: the service's between measurements */
    cpu_set_t narrow; /* wide without core */
    char pid_file[PATH_MAX]; /* <pgdata>/postmaster.pid, "" for none */
    int holders;
    int warned;
    pid_t guests[CORE_RESERVE_GUESTS_MAX];
    int n_guests;
};

/* 1 when tid's mask was changed, 0 when it already was mask, -1 when it could not be (gone, or
 * not ours to move). */
static int set_one(pid_t tid, const cpu_set_t *mask)
{
    cpu_set_t now;
    if (sched_getaffinity(tid, sizeof now, &now) == 0 && CPU_EQUAL(&now, mask))
        return 0;
    return sched_setaffinity(tid, sizeof *mask, mask) == 0 ? 1 : -1;
}

/* One pass over the threads of this process: *changed counts the moved ones. Returns the failures
 * (a thread that ended meanwhile is not one). */
static int pass_threads(const cpu_set_t *mask, int *changed)
{
    int failed = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end || tid <= 0)
            continue;
        int rc = set_one((pid_t)tid, mask);
        if (rc > 0)
            (*changed)++;
        else if (rc < 0 && errno != ESRCH)
            failed++;
    }
    closedir(d);
    return failed;
}

/* The parent of process pid from /proc/<pid>/stat (its fourth field, after the command in
 * parentheses, which may itself hold spaces and parentheses), or -1. */
static long parent_of(const char *pid)
{
    char path[300], line[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    char *close = got ? strrchr(line, ')') : NULL;
    long ppid = -1;
    if (!close || sscanf(close + 1, " %*c %ld", &ppid) != 1)
        return -1;
    return ppid;
}

/* Appends to kids (at most max in all, *n so far) the pids listed in a children file. */
static void read_children(const char *path, pid_t *kids, int max, int *n)
{
    FILE *f = fopen(path, "r");
    long v;
    if (!f)
        return;
    while (*n < max && fscanf(f, "%ld", &v) == 1)
        if (v > 0)
            kids[(*n)++] = (pid_t)v;
    fclose(f);
}

/* The children of pid, into kids; their count (0 for a pid that ended), or -1 when /proc cannot
 * be read. From each of its threads' /proc/<pid>/task/<tid>/children where the kernel has them
 * (CONFIG_PROC_CHILDREN: a child belongs to the thread that forked it), else by each process's
 * parent in /proc. */
static int children_of(pid_t pid, pid_t *kids, int max)
{
    char path[96];
    int n = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    if (access(path, R_OK) == 0) {
        snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
        DIR *t = opendir(path);
        struct dirent *e;
        while (t && (e = readdir(t))) {
            if (e->d_name[0] == '.' || strlen(e->d_name) > 16)
                continue;
            snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
            read_children(path, kids, max, &n);
        }
        if (t)
            closedir(t);
        return n;
    }
    /* no children files for a process that ended: not worth a scan of all /proc */
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 0;
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *e;
    while (n < max && (e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (e->d_name[0] != '.' && !*end && v > 0 && parent_of(e->d_name) == (long)pid)
            kids[n++] = (pid_t)v;
    }
    closedir(d);
    return n;
}

int core_reserve_apply(const cpu_set_t *mask, pid_t pid)
{
    int failed = 0;
    for (int pass = 0; pass < CORE_RESERVE_PASSES; pass++) {
        int changed = 0;
        int f = pass_threads(mask, &changed);
        if (pass == CORE_RESERVE_PASSES - 1 || (!changed && !f)) {
            failed = f;
            break;
        }
    }
    /* the postmaster's tree: itself first, so that a backend forked from now on inherits */
    return pid > 0 ? failed + core_reserve_apply_tree(mask, pid) : failed;
}

/* One pass over root's process tree (root, its children, theirs, ...: breadth first, at most
 * CORE_RESERVE_TREE_MAX): *changed counts the moved ones. Returns the failures; a process that
 * ended meanwhile is not one, nor is root's own when root_gone says root ended. */
static int pass_tree(pid_t root, const cpu_set_t *mask, int *changed, int *root_gone)
{
    pid_t *tree = malloc(CORE_RESERVE_TREE_MAX * sizeof *tree);
    int n = 1, failed = 0;
    if (!tree)
        return 1;
    tree[0] = root;
    for (int i = 0; i < n; i++) {
        /* the parent first: what it forks from now on inherits the mask */
        int rc = set_one(tree[i], mask);
        if (rc > 0)
            (*changed)++;
        if (rc < 0 && errno == ESRCH) {
            *root_gone |= i == 0;
            continue; /* ended meanwhile: nothing below it to move */
        }
        if (rc < 0)
            failed++;
        int got = children_of(tree[i], tree + n, CORE_RESERVE_TREE_MAX - n);
        if (got < 0)
            failed++;
        else
            n += got;
    }
    free(tree);
    return failed;
}

int core_reserve_apply_tree(const cpu_set_t *mask, pid_t root)
{
    int failed = 0, gone = 0;
    /* again until a pass changes none: a child forked while its parent moved may carry the old
     * mask and show in the next pass's listing */
    for (int pass = 0; pass < CORE_RESERVE_PASSES; pass++) {
        int changed = 0;
        failed = pass_tree(root, mask, &changed, &gone);
        if (!changed || gone)
            break;
    }
    return gone ? 0 : failed;
}

/* The postmaster named by the cluster's postmaster.pid, 0 for none. */
static pid_t postmaster(const core_reserve *r)
{
    if (!r->pid_file[0])
        return 0;
    FILE *f = fopen(r->pid_file, "r");
    long v = 0;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v > 0 ? (pid_t)v : 0;
}

static void move_all(core_reserve *r, const cpu_set_t *mask, const char *what)
{
    int failed = core_reserve_apply(mask, postmaster(r));
    for (int i = 0; i < r->n_guests; i++)
        failed += core_reserve_apply_tree(mask, r->guests[i]);
    if (failed && !r->warned) {
        r->warned = 1;
        log_warn(
            "core %d: %d thread(s), database or compiling process(es) could not be moved %s "
            "(not this process's to move, or unreadable /proc); cpu timings may share the core",
            r->core, failed, what);
    }
}

core_reserve *core_reserve_new(int core, const char *pgdata, kt_error *err)
{
    core_reserve *r = calloc(1, sizeof *r);
    if (!r) {
        kt_error_set(err, KT_ERR_NO_MEMORY, NULL);
        return NULL;
    }
    r->core = core;
    if (core < 0 || core >= CPU_SETSIZE || sched_getaffinity(0, sizeof r->wide, &r->wide) != 0 ||
        !CPU_ISSET(core, &r->wide)) {
        kt_error_set(err, KT_ERR_CONFIG, "core %d is not a core this process may run on", core);
        free(r);
        return NULL;
    }
    r->narrow = r->wide;
    CPU_CLR(core, &r->narrow);
    if (pgdata && pgdata[0] &&
        snprintf(r->pid_file, sizeof r->pid_file, "%s/postmaster.pid", pgdata) >=
            (int)sizeof r->pid_file) {
        kt_error_set(err, KT_ERR_CONFIG, "the database folder's path is too long");
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void core_reserve_enter(core_reserve *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->holders++ == 0)
        move_all(r, &r->narrow, "off the measuring core");
    pthread_mutex_unlock(&r->mu);
}

void core_reserve_leave(core_reserve *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->holders > 0 && --r->holders == 0)
        move_all(r, &r->wide, "back onto the measuring core");
    pthread_mutex_unlock(&r->mu);
}

int core_reserve_guest_add(core_reserve *r, pid_t pid)
{
    int added = 0;
    if (!r || pid <= 0)
        return 0;
    pthread_mutex_lock(&r->mu);
    /* its tree gets what the service has now: the measuring core unless a measurement holds it;
     * set_one first, since a tree whose root ended counts no failure */
    const cpu_set_t *now = r->holders > 0 ? &r->narrow : &r->wide;
    if (r->n_guests < CORE_RESERVE_GUESTS_MAX && set_one(pid, now) >= 0 &&
        core_reserve_apply_tree(now, pid) == 0) {
        r->guests[r->n_guests++] = pid;
        added = 1;
    }
    pthread_mutex_unlock(&r->mu);
    return added;
}

void core_reserve_guest_remove(core_reserve *r, pid_t pid)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n_guests; i++) {
        if (r->guests[i] == pid) {
            r->guests[i] = r->guests[--r->n_guests];
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
}

int core_reserve_held(core_reserve *r)
{
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    int held = r->holders > 0;
    pthread_mutex_unlock(&r->mu);
    return held;
}

void core_reserve_free(core_reserve *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r);
}
