/* core/file — see file.h. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/array.h"

#define KT_FILE_GZ_CHUNK 65536 /* bytes asked of one gzread */

/* The bytes read (used of them in *buf, which has room for one more), NUL-terminated, handed to
 * the caller with their length: *buf is NULL after. */
static char *hand_over(char **buf, size_t used, size_t *len)
{
    char *text = *buf;
    text[used] = '\0';
    if (len)
        *len = used;
    *buf = NULL;
    return text;
}

char *kt_file_read_all(const char *path, size_t cap, size_t *len, kt_error *err)
{
    char *buf = NULL, *text = NULL;
    struct stat st;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (len)
        *len = 0;
    if (fd < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        kt_error_set(err, KT_ERR_IO, "%s is not a regular file", path);
        goto out;
    }
    if ((unsigned long long)st.st_size > (unsigned long long)cap) {
        kt_error_set(err, KT_ERR_IO, "%s is larger than %zu bytes", path, cap);
        kt_error_hint(err, "the file is %lld bytes", (long long)st.st_size);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (!buf) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading %s", path);
        goto out;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path,
                         n < 0 ? strerror(errno) : "short read");
            goto out;
        }
        got += (size_t)n;
    }
    text = hand_over(&buf, got, len);
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return text;
}

/* "N MiB" when cap is a whole number of MiB, else "N bytes", for the over-cap message. */
static void cap_text(char *buf, size_t n, size_t cap)
{
    if (cap >= ((size_t)1 << 20) && cap % ((size_t)1 << 20) == 0)
        snprintf(buf, n, "%zu MiB", cap >> 20);
    else
        snprintf(buf, n, "%zu bytes", cap);
}

char *kt_file_read_gz(const char *path, size_t cap, size_t *len, kt_error *err)
{
    char *buf = NULL, *text = NULL;
    size_t used = 0, bcap = 0;
    /* Room for cap + 1 bytes (one more than allowed shows the file is over cap) and the NUL. */
    size_t max = cap < SIZE_MAX - 2 ? cap + 2 : SIZE_MAX;
    gzFile gz = NULL;

    if (len)
        *len = 0;
    errno = 0;
    if (strcmp(path, "-") == 0) {
        int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0); /* gzclose closes the copy only */
        if (fd >= 0 && !(gz = gzdopen(fd, "rb")))
            close(fd);
    } else {
        gz = gzopen(path, "rb");
    }
    if (!gz) {
        kt_error_set(err, KT_ERR_IO, "cannot open %s: %s", path,
                     errno ? strerror(errno) : "out of memory");
        goto out;
    }
    for (;;) {
        size_t want = max - 1 - used; /* used <= cap here, so want >= 1 */
        if (want > KT_FILE_GZ_CHUNK)
            want = KT_FILE_GZ_CHUNK;
        if (KT_ARRAY_GROW(buf, bcap, used + want + 1, max) != 0) {
            kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory reading %s", path);
            goto out;
        }
        int n = gzread(gz, buf + used, (unsigned)want);
        if (n < 0) {
            int zerr;
            kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path, gzerror(gz, &zerr));
            goto out;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > cap) {
            char limit[48];
            cap_text(limit, sizeof limit, cap);
            kt_error_set(err, KT_ERR_IO, "%s is larger than %s (uncompressed)", path, limit);
            goto out;
        }
    }
    text = hand_over(&buf, used, len);
out:
    free(buf);
    if (gz)
        gzclose(gz);
    return text;
}
