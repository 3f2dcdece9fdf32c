/* runner/privileges — see privileges.h. */
#include "runner/privileges.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static int set_limit(int resource, rlim_t value)
{
    struct rlimit cur;
    if (getrlimit(resource, &cur) != 0)
        return -1;
    /* Never above the hard limit we were given (raising it needs privileges). */
    if (cur.rlim_max != RLIM_INFINITY && value > cur.rlim_max)
        value = cur.rlim_max;
    struct rlimit lim = {value, value};
    return setrlimit(resource, &lim);
}

/* The cache folder and what earlier (root) runners left in it belong to the runner's user, so that
 * it can add and replace compiled kernels. One level: the runner keeps no subfolders. */
static int hand_over_cache(const char *dir, uid_t uid, gid_t gid, char *msg, size_t size)
{
    int rc = -1;
    DIR *d = NULL;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fchown(fd, uid, gid) != 0 || fchmod(fd, 0755) != 0) {
        snprintf(msg, size, "cannot hand the cache folder %s to uid %u: %s", dir, (unsigned)uid,
                 strerror(errno));
        goto out;
    }
    if (!(d = fdopendir(fd))) {
        snprintf(msg, size, "cannot list %s: %s", dir, strerror(errno));
        goto out;
    }
    fd = -1; /* owned by d now */
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        /* AT_SYMLINK_NOFOLLOW: a link planted in the folder never hands over what it points to. */
        if (fchownat(dirfd(d), e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
            snprintf(msg, size, "cannot hand %s/%s to uid %u: %s", dir, e->d_name, (unsigned)uid,
                     strerror(errno));
            goto out;
        }
    }
    rc = 0;
out:
    if (d)
        closedir(d);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The address space this process already holds (VmSize), in bytes; 0 when unknown. Under
 * AddressSanitizer it is terabytes of shadow memory reserved before main. */
static long long address_space_now(void)
{
    char line[256];
    long long kib = 0;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmSize: %lld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib * 1024;
}

static int become(const char *name, const char *cache_dir, char *msg, size_t size)
{
    struct passwd pw, *found = NULL;
    char buf[16384];
    if (getpwnam_r(name, &pw, buf, sizeof buf, &found) != 0 || !found) {
        snprintf(msg, size,
                 "running as root, but there is no user '%s' to run kernels as (set "
                 "--runner-user / KTUNE_RUNNER_USER to an unprivileged user)",
                 name);
        return -1;
    }
    if (pw.pw_uid == 0) {
        snprintf(msg, size, "the runner user '%s' is root; kernels never run as root", name);
        return -1;
    }
    if (hand_over_cache(cache_dir, pw.pw_uid, pw.pw_gid, msg, size) != 0)
        return -1;
    gid_t gid = pw.pw_gid;
    if (setgroups(1, &gid) != 0 || setgid(pw.pw_gid) != 0 || setuid(pw.pw_uid) != 0) {
        snprintf(msg, size, "cannot switch to user '%s': %s", name, strerror(errno));
        return -1;
    }
    /* Irreversible: a way back to root would mean the switch did not happen. */
    if (setuid(0) == 0 || geteuid() == 0 || getegid() == 0) {
        snprintf(msg, size, "switching to user '%s' left root privileges", name);
        return -1;
    }
    if (access(cache_dir, W_OK | X_OK) != 0) {
        snprintf(msg, size,
                 "user '%s' cannot write the cache folder %s (%s): a parent folder is not "
                 "searchable by it; choose a --cache-dir / --data-dir outside root's home",
                 name, cache_dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* A network namespace of the runner's own (root only: it needs CAP_SYS_ADMIN): a kernel then sees a
 * loopback that is down and nothing else, so it cannot reach ktuned's API, its database or another
 * host. Where it is refused (a container without CAP_SYS_ADMIN) the runner goes on with the host's
 * network, and its probe reply shows the interfaces it sees. */
static void leave_network(void)
{
    if (unshare(CLONE_NEWNET) != 0)
        fprintf(stderr,
                "ktune-runner: no network namespace of its own (%s): kernels share the "
                "host's network\n",
                strerror(errno));
}

int runner_harden(const char *user, const char *cache_dir, int cuda, char *msg, size_t size)
{
    msg[0] = '\0';
    if (geteuid() == 0) {
        leave_network();
        if (become(user && user[0] ? user : RUNNER_DEFAULT_USER, cache_dir, msg, size) != 0)
            return -1;
        /* Processes of the runner's user, all runners of the host together: a bound on a fork
         * bomb. Only for the user we chose: a user of one's own may already run more. */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        rlim_t nproc = cpus > RUNNER_NPROC_MIN / 64 ? (rlim_t)cpus * 64 : RUNNER_NPROC_MIN;
        if (set_limit(RLIMIT_NPROC, nproc) != 0) {
            snprintf(msg, size, "cannot set the runner's process limit: %s", strerror(errno));
            return -1;
        }
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(msg, size, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
    /* Not dumpable (issue 27): a kernel in another runner of the same user cannot ptrace this one
     * or read its memory and descriptors (/proc/<pid>/mem, fd), where the source texts of this
     * runner's requests are. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        snprintf(msg, size, "PR_SET_DUMPABLE: %s", strerror(errno));
        return -1;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    long long ram = pages > 0 && page > 0 ? (long long)pages * page : 0;
    int bad = set_limit(RLIMIT_CORE, 0) != 0 || set_limit(RLIMIT_NOFILE, RUNNER_NOFILE) != 0 ||
              set_limit(RLIMIT_FSIZE, (rlim_t)RUNNER_FSIZE_BYTES) != 0;
    /* What the process holds already (libraries, a sanitizer's shadow) plus the machine's RAM. */
    long long as = address_space_now() + (ram > RUNNER_AS_MIN_BYTES ? ram : RUNNER_AS_MIN_BYTES);
    if (!bad && !cuda)
        bad = set_limit(RLIMIT_AS, (rlim_t)as) != 0;
    if (bad) {
        snprintf(msg, size, "cannot set the runner's resource limits: %s", strerror(errno));
        return -1;
    }
    runner_cpu_budget(RUNNER_CPU_DEFAULT_S);
    return 0;
}

void runner_cpu_budget(double seconds)
{
    struct rusage ru;
    struct rlimit lim;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || getrlimit(RLIMIT_CPU, &lim) != 0)
        return;
    double used = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    rlim_t soft = (rlim_t)(used + (seconds > 1 ? seconds : 1) + 1);
    if (lim.rlim_max != RLIM_INFINITY && soft > lim.rlim_max)
        soft = lim.rlim_max;
    lim.rlim_cur = soft;
    setrlimit(RLIMIT_CPU, &lim);
}

static json_t *limit_json(int resource)
{
    struct rlimit lim;
    if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return json_integer(-1);
    return json_integer((json_int_t)lim.rlim_cur);
}

/* The names of the network interfaces the process sees: only "lo" inside the runner's own
 * network namespace. */
static json_t *interfaces_json(void)
{
    json_t *names = json_array();
    struct if_nameindex *ifs = if_nameindex();
    for (struct if_nameindex *i = ifs; names && i && i->if_index != 0; i++)
        json_array_append_new(names, json_string(i->if_name));
    if (ifs)
        if_freenameindex(ifs);
    return names ? names : json_array();
}

json_t *runner_process_json(void)
{
    gid_t groups[64];
    int n = getgroups(64, groups);
    json_t *g = json_array();
    for (int i = 0; g && i < n; i++)
        json_array_append_new(g, json_integer(groups[i]));
    return json_pack(
        "{s:I,s:I,s:I,s:o,s:b,s:b,s:o,s:{s:o,s:o,s:o,s:o,s:o,s:o}}", "uid", (json_int_t)getuid(),
        "gid", (json_int_t)getgid(), "euid", (json_int_t)geteuid(), "groups", g ? g : json_array(),
        "no_new_privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "dumpable",
        prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "network_interfaces", interfaces_json(), "rlimits",
        "cpu", limit_json(RLIMIT_CPU), "as", limit_json(RLIMIT_AS), "nofile",
        limit_json(RLIMIT_NOFILE), "fsize", limit_json(RLIMIT_FSIZE), "core",
        limit_json(RLIMIT_CORE), "nproc", limit_json(RLIMIT_NPROC));
}
