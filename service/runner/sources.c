/* runner/sources — the kernel's source text as the request carries it (issue 27): ktuned sends the
 * compiled files of the kernel's version in a measure's "files" ({"cpu.c": "<text>", ...}) and
 * keeps its sources cache (<cache-dir>-sources) unreadable to the runner's user, so a kernel
 * running in any runner cannot read another kernel's sources there. A request's "source" (and
 * reference source) still names the file's place in that cache: its base name picks the text in
 * "files", and the path stays in the binary's cache key (the version's folder covers the headers
 * the source includes). The compiler reads files, so a build that is not cached writes the files
 * into a transient folder of the cache dir (0700, created on first need) that is removed once the
 * request's builds are done, before any code of the kernel runs (runner_sources_done).
 *
 * Lifecycle: runner_sources_begin (a request's files, borrowed) -> runner_sources_read /
 * runner_sources_compile_path -> runner_sources_done (removes the folder). A NULL runner_sources,
 * or one without files, reads and compiles the paths themselves (requests without "files"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/file.h"
#include "runner/runner.h"

void runner_sources_begin(runner_sources *s, const json_t *files)
{
    if (!s)
        return;
    runner_sources_done(s);
    s->files = files;
}

/* The text of path's base name in s->files, or NULL (no files, or none of that name). */
static const char *text_of(const runner_sources *s, const char *path, size_t *len)
{
    if (!s || !s->files)
        return NULL;
    const char *base = strrchr(path, '/');
    const json_t *v = json_object_get(s->files, base ? base + 1 : path);
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

char *runner_sources_read(const runner_sources *s, const char *path, size_t max, size_t *len,
                          kt_error *err)
{
    size_t n = 0;
    const char *text = text_of(s, path, &n);
    if (!s || !s->files)
        return kt_file_read_all(path, max, len, err);
    if (!text) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s is not among the request's files", path);
        return NULL;
    }
    if (n > max) {
        kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "%s is larger than %zu bytes", path, max);
        return NULL;
    }
    char *copy = malloc(n + 1);
    if (!copy) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "cannot copy %s", path);
        return NULL;
    }
    memcpy(copy, text, n + 1);
    *len = n;
    return copy;
}

/* Writes len bytes to dir/name, read-only (0400). */
static int write_file(const char *dir, const char *name, const char *text, size_t len,
                      kt_error *err)
{
    char path[RUNNER_PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
    if (fd < 0)
        return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return kt_error_set(err, KT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        }
        off += (size_t)w;
    }
    return close(fd) == 0 ? 0 : kt_error_set(err, KT_ERR_IO, "cannot write %s", path);
}

int runner_sources_compile_path(runner_sources *s, const char *cache_dir, const char *path,
                                char *out, size_t cap, kt_error *err)
{
    size_t n = 0;
    if (!s || !s->files) {
        if (snprintf(out, cap, "%s", path) >= (int)cap)
            return kt_error_set(err, KT_ERR_IO, "the path %s is too long", path);
        return 0;
    }
    if (!text_of(s, path, &n))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s is not among the request's files", path);
    if (!s->dir[0]) {
        struct timespec ts = kt_clock_wall();
        int w = snprintf(s->dir, sizeof s->dir, "%s/src.%ld.%ld", cache_dir, (long)getpid(),
                         (long)ts.tv_nsec);
        if (w < 0 || (size_t)w >= sizeof s->dir || mkdir(s->dir, 0700) != 0) {
            kt_error_set(err, KT_ERR_IO, "cannot create a folder for the sources in %s: %s",
                         cache_dir, strerror(errno));
            s->dir[0] = '\0';
            return -1;
        }
        const char *name;
        const json_t *v;
        json_object_foreach((json_t *)s->files, name, v)
        {
            if (write_file(s->dir, name, json_string_value(v), json_string_length(v), err) < 0)
                return -1; /* the folder goes with runner_sources_done */
        }
    }
    const char *base = strrchr(path, '/');
    if (snprintf(out, cap, "%s/%s", s->dir, base ? base + 1 : path) >= (int)cap)
        return kt_error_set(err, KT_ERR_IO, "the path of %s is too long", path);
    return 0;
}

void runner_sources_done(runner_sources *s)
{
    if (!s || !s->dir[0])
        return;
    const char *name;
    const json_t *v;
    char path[RUNNER_PATH_MAX + 80];
    json_object_foreach((json_t *)s->files, name, v)
    {
        snprintf(path, sizeof path, "%s/%s", s->dir, name);
        unlink(path);
    }
    if (rmdir(s->dir) != 0)
        fprintf(stderr, "ktune-runner: cannot remove %s: %s\n", s->dir, strerror(errno));
    s->dir[0] = '\0';
}

/* 1 when name is a plain file name: [A-Za-z0-9._-], not starting with '.', under 64 bytes. */
static int plain_file_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= 64 || name[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int runner_sources_parse(const json_t *req, const char *const *need, int n_need, const json_t **out,
                         kt_error *err)
{
    const json_t *f = json_object_get(req, "files");
    const char *name;
    const json_t *v;
    size_t total = 0;
    *out = NULL;
    if (!f)
        return 0;
    if (!json_is_object(f) || json_object_size(f) == 0 || json_object_size(f) > RUNNER_MAX_FILES)
        return kt_error_set(err, KT_ERR_WRONG_TYPE,
                            "field 'files' must be an object of 1 to %d files", RUNNER_MAX_FILES);
    json_object_foreach((json_t *)f, name, v)
    {
        if (!plain_file_name(name))
            return kt_error_set(err, KT_ERR_OUT_OF_RANGE, "files: '%.64s' is not a plain file name",
                                name);
        if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
            return kt_error_set(err, KT_ERR_WRONG_TYPE, "files.%s must be a string without NUL",
                                name);
        total += json_string_length(v);
    }
    if (total > RUNNER_MAX_SOURCE_BYTES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "files hold more than %d bytes",
                            RUNNER_MAX_SOURCE_BYTES);
    for (int i = 0; i < n_need; i++) {
        const char *base = strrchr(need[i], '/');
        if (need[i][0] && !json_object_get(f, base ? base + 1 : need[i]))
            return kt_error_set(err, KT_ERR_MISSING_FIELD, "files lacks %.200s (of '%.200s')",
                                base ? base + 1 : need[i], need[i]);
    }
    *out = f;
    return 0;
}
