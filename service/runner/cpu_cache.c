/* The binary cache's bound (issue 32): `<cache-dir>` holds every compiled kernel and reference of
 * every runner of the host that shares it; at the end of a request that stored a binary, when the
 * binaries together exceed --cache-max-bytes, the least recently used go (a hit touches its
 * binary's mtime: cpu_cache_touch), never one the request used, until 90% of the bound is left, so
 * the next stores do not scan again at once.
 * Runners sharing the folder may evict at the same moment: a file already gone is skipped; a
 * binary removed between another runner's lookup and its dlopen is rebuilt there (cpu_measure's
 * load_kernel). Temporary files of a compile (`*.tmp.*`) older than an hour are leftovers of a
 * killed runner and go too. CUDA images (`cuda-*`) and precompiled preludes (`pch-*.h.gch`,
 * cpu_prelude.c; their small headers stay) count and go like CPU binaries. */
#include "runner/runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#define CACHE_STALE_TMP_S 3600

typedef struct cache_entry {
    char name[64];
    long long bytes;
    struct timespec mtime;
} cache_entry;

static int older(const void *a, const void *b)
{
    const cache_entry *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

void cpu_cache_touch(const char *path)
{
    /* what LRU reads; a cache on a read-only or foreign folder simply keeps its old order */
    utimensat(AT_FDCWD, path, NULL, 0);
}

/* The binaries of dir (*entries, *n; caller frees), their bytes in *total; stale temporaries
 * removed on the way. -1 when dir cannot be read. */
static int cache_list(const char *dir, cache_entry **entries, int *n, long long *total)
{
    DIR *d = opendir(dir);
    int cap = 0, rc = -1;
    *entries = NULL;
    *n = 0;
    *total = 0;
    if (!d)
        return -1;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        int binary = ends_with(e->d_name, ".so") || strncmp(e->d_name, "cuda-", 5) == 0 ||
                     ends_with(e->d_name, ".gch");
        int tmp = strstr(e->d_name, ".tmp.") != NULL;
        if ((!binary && !tmp) || strlen(e->d_name) >= sizeof((*entries)->name) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (tmp) {
            if (now - st.st_mtime > CACHE_STALE_TMP_S)
                unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        if (*n == cap) {
            int grown = cap ? 2 * cap : 256;
            cache_entry *m = realloc(*entries, sizeof *m * (size_t)grown);
            if (!m)
                goto out;
            *entries = m;
            cap = grown;
        }
        cache_entry *c = &(*entries)[(*n)++];
        /* the length was checked above: it fits with its terminator */
        memcpy(c->name, e->d_name, strlen(e->d_name) + 1);
        c->bytes = (long long)st.st_size;
        c->mtime = st.st_mtim;
        *total += c->bytes;
    }
    rc = 0;
out:
    closedir(d);
    return rc;
}

static int kept(const char *name, const char *const *keep, int n_keep)
{
    for (int i = 0; i < n_keep; i++)
        if (keep[i] && strcmp(keep[i], name) == 0)
            return 1;
    return 0;
}

int cpu_cache_bound(const char *dir, long long max_bytes, const char *const *keep, int n_keep)
{
    cache_entry *entries = NULL;
    int n = 0, evicted = 0;
    long long total = 0;
    if (max_bytes <= 0 || cache_list(dir, &entries, &n, &total) < 0 || total <= max_bytes)
        goto out;
    qsort(entries, (size_t)n, sizeof *entries, older);
    long long goal = max_bytes / 10 * 9;
    for (int i = 0; i < n && total > goal; i++) {
        if (kept(entries[i].name, keep, n_keep))
            continue;
        char path[RUNNER_PATH_MAX + 80];
        snprintf(path, sizeof path, "%s/%s", dir, entries[i].name);
        if (unlink(path) == 0 || errno == ENOENT) {
            total -= entries[i].bytes;
            evicted++;
        }
    }
    log_info("binary cache %s: %d least recently used binaries removed (bound %lld bytes)", dir,
             evicted, max_bytes);
out:
    free(entries);
    return evicted;
}
