/* core/file — see file.h. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    buf[got] = '\0';
    if (len)
        *len = got;
    text = buf;
    buf = NULL;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return text;
}
