/* Static files from the web root. A path gets out of the root by no route: ".." segments,
 * backslashes and NULs are refused before touching the file system, and the realpath() of the file
 * must lie inside the realpath() of the root (so symlinks pointing outside are refused too). Every
 * refusal is a 404. */
#include "http/http_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

static const struct {
    const char *ext;
    const char *type;
} content_types[] = {
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"ico", "image/x-icon"},
    {"txt", "text/plain; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"wasm", "application/wasm"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
};

const char *http_static_content_type(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    if (dot) {
        for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++)
            if (strcasecmp(dot + 1, content_types[i].ext) == 0)
                return content_types[i].type;
    }
    return "application/octet-stream";
}

/* Refuses what could step outside the root or confuse the look-up, before any system call. */
static int path_is_safe(const char *path)
{
    if (path[0] != '/' || strchr(path, '\\'))
        return 0;
    for (const char *s = path; *s;) {
        while (*s == '/')
            s++;
        size_t len = strcspn(s, "/");
        if (len == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        s += len;
    }
    return 1;
}

static struct MHD_Response *not_found(http_response *res, const char *path)
{
    kt_error err;
    char printable[256];
    http_printable(printable, sizeof printable, path);
    kt_error_set(&err, KT_ERR_NOT_FOUND, "no such file: %s", printable);
    http_reply_error(res, &err);
    return NULL;
}

struct MHD_Response *http_static_serve(const char *root_real, const char *path, http_response *res)
{
    struct MHD_Response *mr = NULL;
    char want[PATH_MAX];
    char *real = NULL;
    int fd = -1;
    if (!path_is_safe(path))
        goto out;
    /* A trailing slash asks for the folder's index.html (so "/" serves the front page). */
    int n = snprintf(want, sizeof want, "%s%s%s", root_real, path,
                     path[strlen(path) - 1] == '/' ? "index.html" : "");
    if (n < 0 || (size_t)n >= sizeof want)
        goto out;
    real = realpath(want, NULL);
    if (!real)
        goto out;
    size_t rl = strlen(root_real);
    if (strncmp(real, root_real, rl) != 0 || real[rl] != '/')
        goto out;
    /* O_NONBLOCK: opening a FIFO must not hang a worker; the type is checked on the open file. */
    fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        goto out;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    if (st.st_size > HTTP_STATIC_MAX_FILE) {
        log_warn("http: %s is larger than %d bytes; not served", real, HTTP_STATIC_MAX_FILE);
        goto out;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    mr = MHD_create_response_from_fd((size_t)st.st_size, fd);
    if (!mr)
        goto out;
    fd = -1;                                           /* the response owns it now */
    const char *type = http_static_content_type(want); /* the name asked for, not a link target */
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
    if (strncmp(type, "text/html", 9) == 0) /* pages must pick up new script versions */
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
out:
    if (fd >= 0)
        close(fd);
    free(real);
    if (!mr)
        not_found(res, path);
    return mr;
}
