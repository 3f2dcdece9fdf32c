/* runner/privileges — see privileges.h. */
#include "runner/privileges.h"

#include "core/hash.h"
#include "core/number.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
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
    /* 0700: a runner of another uid (a submitted version's) cannot read folder kernels' objects */
    if (fd < 0 || fchown(fd, uid, gid) != 0 || fchmod(fd, 0700) != 0) {
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

/* Who the runner becomes: the shared runner user, or a uid of a submitted version's own. */
typedef struct identity {
    uid_t uid;
    gid_t gid;
    char name[80]; /* for messages */
} identity;

static int shared_user(const char *name, identity *id, char *msg, size_t size)
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
    id->uid = pw.pw_uid;
    id->gid = pw.pw_gid;
    snprintf(id->name, sizeof id->name, "user '%s'", name);
    return 0;
}

/* A number from the environment, else def; def when it is not a plain decimal. */
static unsigned long long env_number(const char *name, unsigned long long def)
{
    const char *s = getenv(name);
    unsigned long long v;
    return s && kt_parse_u64(s, &v) == 0 ? v : def;
}

/* Whether id lies in a range of the user namespace's map (/proc/self/uid_map or gid_map): an
 * unmapped id cannot be switched to (EINVAL), e.g. in a container given 65,536 uids. */
static int id_mapped(const char *map, unsigned long long id)
{
    FILE *f = fopen(map, "re");
    unsigned long long inside, outside, count;
    int found = 0;
    if (!f)
        return 1; /* no user namespaces: every id is valid */
    while (!found && fscanf(f, "%llu %llu %llu", &inside, &outside, &count) == 3)
        found = id >= inside && id - inside < count;
    fclose(f);
    return found;
}

/* The version's own uid: KTUNE_RUNNER_UID_BASE + FNV-1a(version) mod KTUNE_RUNNER_UIDS (ktuned's
 * --runner-uid-base, --runner-uids). 0 when there is none (UIDS 0, or the uid is not mapped: a
 * note says so). */
static uid_t version_uid(const char *version, runner_sandbox *sb)
{
    unsigned long long base = env_number("KTUNE_RUNNER_UID_BASE", RUNNER_UID_BASE),
                       count = env_number("KTUNE_RUNNER_UIDS", RUNNER_UIDS);
    if (count == 0) {
        runner_sandbox_note(sb, "KTUNE_RUNNER_UIDS is 0: a submitted version runs as the shared "
                                "runner user");
        return 0;
    }
    unsigned long long uid = base + kt_fnv1a(KT_FNV1A_OFFSET, version, strlen(version)) % count;
    if (base == 0 || uid >= 0xFFFFFFFFull || uid < base) {
        runner_sandbox_note(sb,
                            "KTUNE_RUNNER_UID_BASE %llu with %llu uids is outside 1..2^32-2: "
                            "a submitted version runs as the shared runner user",
                            base, count);
        return 0;
    }
    if (!id_mapped("/proc/self/uid_map", uid) || !id_mapped("/proc/self/gid_map", uid)) {
        runner_sandbox_note(sb,
                            "uid %llu is not mapped in this user namespace (/proc/self/uid_map): "
                            "a submitted version runs as the shared runner user (set "
                            "--runner-uid-base / --runner-uids to a mapped range)",
                            uid);
        return 0;
    }
    return (uid_t)uid;
}

/* <cache-dir>-users/<uid>/: the parent root's, 0711 (nobody lists it), the folder the uid's,
 * 0700; cache_dir becomes it. Made by root before the switch, so a kernel of another uid can
 * neither read nor plant anything in it. */
static int own_cache(char *cache_dir, size_t cap, uid_t uid, char *msg, size_t size)
{
    char parent[PATH_MAX], dir[PATH_MAX];
    int rc = -1, pfd = -1, fd = -1;
    if (snprintf(parent, sizeof parent, "%s-users", cache_dir) >= (int)sizeof parent ||
        snprintf(dir, sizeof dir, "%s/%u", parent, (unsigned)uid) >= (int)cap) {
        snprintf(msg, size, "the cache folder %s is too long", cache_dir);
        goto out;
    }
    if ((mkdir(parent, 0711) != 0 && errno != EEXIST) ||
        (pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fchown(pfd, 0, 0) != 0 || fchmod(pfd, 0711) != 0) {
        snprintf(msg, size, "cannot make the folder %s: %s", parent, strerror(errno));
        goto out;
    }
    char name[16];
    snprintf(name, sizeof name, "%u", (unsigned)uid);
    if ((mkdirat(pfd, name, 0700) != 0 && errno != EEXIST) ||
        (fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fchown(fd, uid, uid) != 0 || fchmod(fd, 0700) != 0) {
        snprintf(msg, size, "cannot make the folder %s: %s", dir, strerror(errno));
        goto out;
    }
    snprintf(cache_dir, cap, "%s", dir);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (pfd >= 0)
        close(pfd);
    return rc;
}

static int switch_to(const identity *id, const char *cache_dir, char *msg, size_t size)
{
    gid_t gid = id->gid;
    /* Under a pid namespace's init the switch is made already (runner_sandbox_pid). */
    if (geteuid() == 0 &&
        (setgroups(1, &gid) != 0 || setgid(id->gid) != 0 || setuid(id->uid) != 0)) {
        snprintf(msg, size, "cannot switch to %s: %s", id->name, strerror(errno));
        return -1;
    }
    /* Irreversible: a way back to root would mean the switch did not happen. */
    if (setuid(0) == 0 || geteuid() == 0 || getegid() == 0) {
        snprintf(msg, size, "switching to %s left root privileges", id->name);
        return -1;
    }
    if (access(cache_dir, W_OK | X_OK) != 0) {
        snprintf(msg, size,
                 "%s cannot write the cache folder %s (%s): a parent folder is not "
                 "searchable by it; choose a --cache-dir / --data-dir outside root's home",
                 id->name, cache_dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Root only: namespaces, the user (and its cache folder), the switch, the process cap. */
static int drop_root(const char *user, const char *version, char *cache_dir, size_t cap,
                     runner_sandbox *sb, char *msg, size_t size)
{
    identity id;
    runner_sandbox_network(sb);
    uid_t own = version ? version_uid(version, sb) : 0;
    if (own) {
        id.uid = own;
        id.gid = own;
        snprintf(id.name, sizeof id.name, "uid %u (the version's own)", (unsigned)own);
        if (own_cache(cache_dir, cap, own, msg, size) != 0)
            return -1;
        sb->own_uid = 1;
    } else if (shared_user(user && user[0] ? user : RUNNER_DEFAULT_USER, &id, msg, size) != 0 ||
               hand_over_cache(cache_dir, id.uid, id.gid, msg, size) != 0) {
        return -1;
    }
    sb->uid = id.uid;
    runner_sandbox_mounts(sb, sb->own_uid, cache_dir);
    if (runner_sandbox_pid(sb, id.uid, id.gid, msg, size) != 0 ||
        switch_to(&id, cache_dir, msg, size) != 0)
        return -1;
    /* Processes of the runner's user, all its runners of the host together: a bound on a fork
     * bomb. Only for the user we chose: a user of one's own may already run more. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rlim_t nproc = cpus > RUNNER_NPROC_MIN / 64 ? (rlim_t)cpus * 64 : RUNNER_NPROC_MIN;
    if (set_limit(RLIMIT_NPROC, nproc) != 0) {
        snprintf(msg, size, "cannot set the runner's process limit: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The interface names the process sees, comma-separated: only "lo" in a network namespace of its
 * own. Read once, before the filter refuses the netlink socket that lists them. */
static void read_interfaces(runner_sandbox *sb)
{
    struct if_nameindex *ifs = if_nameindex();
    size_t used = 0;
    sb->interfaces[0] = '\0';
    for (struct if_nameindex *i = ifs; i && i->if_index != 0; i++) {
        int w = snprintf(sb->interfaces + used, sizeof sb->interfaces - used, "%s%s",
                         used ? "," : "", i->if_name);
        if (w < 0 || (size_t)w >= sizeof sb->interfaces - used)
            break;
        used += (size_t)w;
    }
    if (ifs)
        if_freenameindex(ifs);
}

int runner_harden(const char *user, const char *version, char *cache_dir, size_t cap, int cuda,
                  runner_sandbox *sb, char *msg, size_t size)
{
    msg[0] = '\0';
    memset(sb, 0, sizeof *sb);
    sb->uid = (long long)geteuid();
    if (geteuid() == 0) {
        if (drop_root(user, version, cache_dir, cap, sb, msg, size) != 0)
            return -1;
    } else {
        runner_sandbox_note(sb,
                            "not started as root: runs as uid %u, no user switch, no "
                            "namespaces",
                            (unsigned)geteuid());
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
    read_interfaces(sb);
    /* Last: a CPU runner runs the kernel's own host code; a CUDA runner's kernels run on the
     * device (the driver's needs under a filter are not known here). */
    if (!cuda)
        runner_seccomp(sb);
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

json_t *runner_process_json(const runner_sandbox *sb)
{
    gid_t groups[64];
    int n = getgroups(64, groups);
    json_t *g = json_array(), *ifs = json_array();
    for (int i = 0; g && i < n; i++)
        json_array_append_new(g, json_integer(groups[i]));
    char names[sizeof sb->interfaces];
    snprintf(names, sizeof names, "%s", sb->interfaces);
    char *save = NULL;
    for (char *t = strtok_r(names, ",", &save); ifs && t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(ifs, json_string(t));
    return json_pack("{s:I,s:I,s:I,s:o,s:b,s:b,s:o,s:{s:o,s:o,s:o,s:o,s:o,s:o},s:o}", "uid",
                     (json_int_t)getuid(), "gid", (json_int_t)getgid(), "euid",
                     (json_int_t)geteuid(), "groups", g ? g : json_array(), "no_new_privs",
                     prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "dumpable",
                     prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "network_interfaces",
                     ifs ? ifs : json_array(), "rlimits", "cpu", limit_json(RLIMIT_CPU), "as",
                     limit_json(RLIMIT_AS), "nofile", limit_json(RLIMIT_NOFILE), "fsize",
                     limit_json(RLIMIT_FSIZE), "core", limit_json(RLIMIT_CORE), "nproc",
                     limit_json(RLIMIT_NPROC), "sandbox", runner_sandbox_json(sb));
}
