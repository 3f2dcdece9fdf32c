/* catalog/kernel_files — a kernel's files as name -> bytes, its version and its on-disk copy
 * (kernel_files.h). */
#include "catalog/kernel_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/hash.h"
#include "core/sha256.h"
#include "core/strbuf.h"

typedef struct kfile {
    char *name;
    char *bytes; /* NUL-terminated */
    size_t len;
} kfile;

struct kernel_files {
    kfile files[KFILES_MAX_FILES];
    int n;
    size_t total;
};

kernel_files *kernel_files_new(void)
{
    return calloc(1, sizeof(kernel_files));
}

void kernel_files_free(kernel_files *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        free(f->files[i].name);
        free(f->files[i].bytes);
    }
    free(f);
}

int kernel_files_valid_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > KFILES_MAX_NAME || name[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

static int find(const kernel_files *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->files[i].name, name) == 0)
            return i;
    return -1;
}

int kernel_files_add(kernel_files *f, const char *name, const char *bytes, size_t len,
                     kt_error *err)
{
    if (!kernel_files_valid_name(name))
        return kt_error_set(err, KT_ERR_BAD_REQUEST,
                            "'%.80s' is not a plain file name: 1 to %d of letters, digits, '.', "
                            "'_', '-', not starting with '.'",
                            name ? name : "", KFILES_MAX_NAME);
    if (find(f, name) >= 0)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "'%s' is given twice", name);
    if (memchr(bytes, '\0', len))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "'%s' holds a NUL byte: sources are text",
                            name);
    if (f->n >= KFILES_MAX_FILES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE, "more than %d files", KFILES_MAX_FILES);
    if (len > KFILES_MAX_BYTES || f->total + len > KFILES_MAX_BYTES)
        return kt_error_set(err, KT_ERR_BODY_TOO_LARGE,
                            "'%s' takes the kernel's files past %d bytes in all", name,
                            KFILES_MAX_BYTES);
    kfile *k = &f->files[f->n];
    if (!(k->name = strdup(name)) || !(k->bytes = malloc(len + 1))) {
        free(k->name);
        k->name = NULL;
        return kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(k->bytes, bytes, len);
    k->bytes[len] = '\0';
    k->len = len;
    f->total += len;
    f->n++;
    return 0;
}

static int cmp_text(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The valid names of dir's regular files, sorted (at most KFILES_MAX_FILES + 1, so that a folder
 * with too many is noticed); -1 when it cannot be listed. */
static int list_dir(const char *dir, char names[][KFILES_MAX_NAME + 1], int cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) && n < cap;) {
        if (!kernel_files_valid_name(e->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        memcpy(names[n++], e->d_name, strlen(e->d_name) + 1); /* valid: at most KFILES_MAX_NAME */
    }
    closedir(d);
    qsort(names, (size_t)n, KFILES_MAX_NAME + 1, cmp_text);
    return n;
}

kernel_files *kernel_files_from_dir(const char *dir, kt_error *err)
{
    char names[KFILES_MAX_FILES + 1][KFILES_MAX_NAME + 1], path[PATH_MAX];
    kernel_files *f = kernel_files_new();
    int n = list_dir(dir, names, KFILES_MAX_FILES + 1), ok = 0;
    if (!f) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    if (n < 0) {
        kt_error_set(err, KT_ERR_IO, "cannot be read: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        /* A file larger than the sources' cap, or holding a NUL byte, is a data file (an init or
         * an answer: the spec loader reads those from the folder itself), not a source. */
        if (stat(path, &st) == 0 && st.st_size > KFILES_MAX_BYTES)
            continue;
        char *bytes = kt_file_read_all(path, KFILES_MAX_BYTES, &len, err);
        if (!bytes) {
            kt_error_prefix(err, "%s", names[i]);
            goto out;
        }
        int rc = memchr(bytes, '\0', len) ? 0 : kernel_files_add(f, names[i], bytes, len, err);
        free(bytes);
        if (rc < 0)
            goto out;
    }
    ok = 1;
out:
    if (!ok) {
        kernel_files_free(f);
        f = NULL;
    }
    return f;
}

unsigned long long kernel_files_dir_stamp(const char *dir)
{
    char names[KFILES_MAX_FILES + 1][KFILES_MAX_NAME + 1], path[PATH_MAX];
    int n = list_dir(dir, names, KFILES_MAX_FILES + 1);
    uint64_t h = KT_FNV1A_OFFSET;
    if (n < 0)
        return 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) != 0)
            continue;
        long long v[4] = {(long long)st.st_size, (long long)st.st_mtim.tv_sec,
                          (long long)st.st_mtim.tv_nsec, (long long)st.st_ino};
        h = kt_fnv1a_field(h, names[i], strlen(names[i]));
        h = kt_fnv1a_field(h, (const char *)v, sizeof v);
    }
    return h ? (unsigned long long)h : 1ULL;
}

kernel_files *kernel_files_from_json(const json_t *obj, const char *where, kt_error *err)
{
    kernel_files *f = NULL;
    const char *name;
    const json_t *v;
    int ok = 0;
    if (!json_is_object(obj)) {
        kt_error_set(err, KT_ERR_WRONG_TYPE, "%s: must be an object of file name -> source text",
                     where);
        goto out;
    }
    if (!(f = kernel_files_new())) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    json_object_foreach((json_t *)obj, name, v)
    {
        if (!json_is_string(v)) {
            kt_error_set(err, KT_ERR_WRONG_TYPE, "%s.%.80s: must be the file's text (a string)",
                         where, name);
            goto out;
        }
        size_t len = json_string_length(v);
        if (len > KFILES_MAX_INLINE) {
            kt_error_set(err, KT_ERR_BODY_TOO_LARGE,
                         "%s.%.80s: %zu bytes; a file may hold at most %d: split it", where, name,
                         len, KFILES_MAX_INLINE);
            goto out;
        }
        if (kernel_files_add(f, name, json_string_value(v), len, err) < 0) {
            kt_error_prefix(err, "%s.%.80s", where, name);
            goto out;
        }
    }
    ok = 1;
out:
    if (!ok) {
        kernel_files_free(f);
        f = NULL;
    }
    return f;
}

const char *kernel_files_get(const kernel_files *f, const char *name, size_t *len)
{
    int i = f && name ? find(f, name) : -1;
    if (i < 0)
        return NULL;
    if (len)
        *len = f->files[i].len;
    return f->files[i].bytes;
}

int kernel_files_count(const kernel_files *f)
{
    return f ? f->n : 0;
}

const char *kernel_files_name(const kernel_files *f, int i)
{
    return f && i >= 0 && i < f->n ? f->files[i].name : NULL;
}

json_t *kernel_files_json(const kernel_files *f, const char *const *names, int n)
{
    json_t *o = json_object();
    int count = names ? n : f->n;
    for (int i = 0; o && i < count; i++) {
        int j = names ? find(f, names[i]) : i;
        if (j < 0)
            continue;
        if (json_object_set_new(o, f->files[j].name,
                                json_stringn(f->files[j].bytes, f->files[j].len)) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* The names of the quoted includes of text that are files of f, appended to out (n entries) when
 * not there yet. */
static int add_includes(const kernel_files *f, const char *text, const char **out, int n,
                        kt_error *err)
{
    for (const char *p = text; p && *p;) {
        const char *line_end = strchr(p, '\n');
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q == '#') {
            q++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (strncmp(q, "include", 7) == 0) {
                q += 7;
                while (*q == ' ' || *q == '\t')
                    q++;
                const char *close = *q == '"' ? strchr(q + 1, '"') : NULL;
                if (close && (!line_end || close < line_end) && close - q - 1 <= KFILES_MAX_NAME) {
                    char name[KFILES_MAX_NAME + 1];
                    snprintf(name, sizeof name, "%.*s", (int)(close - q - 1), q + 1);
                    int j = find(f, name), seen = 0;
                    for (int i = 0; j >= 0 && i < n; i++)
                        seen |= strcmp(out[i], name) == 0;
                    if (j >= 0 && !seen) {
                        if (n >= KFILES_MAX_INCLUDES)
                            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                                "more than %d files are compiled",
                                                KFILES_MAX_INCLUDES);
                        out[n++] = f->files[j].name;
                    }
                }
            }
        }
        p = line_end ? line_end + 1 : NULL;
    }
    return n;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int kernel_files_closure(const kernel_files *f, const char *const *roots, int n_roots,
                         const char **out, kt_error *err)
{
    int n = 0;
    for (int r = 0; r < n_roots; r++) {
        int j = find(f, roots[r]), seen = 0;
        if (j < 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "'%s' is not a file of the kernel",
                                roots[r]);
        for (int i = 0; i < n; i++)
            seen |= strcmp(out[i], roots[r]) == 0;
        if (seen)
            continue;
        if (n >= KFILES_MAX_INCLUDES)
            return kt_error_set(err, KT_ERR_BAD_REQUEST, "more than %d files are compiled",
                                KFILES_MAX_INCLUDES);
        out[n++] = f->files[j].name;
    }
    /* Breadth first over the list itself: each file's includes are appended once. */
    for (int i = 0; i < n; i++) {
        n = add_includes(f, kernel_files_get(f, out[i], NULL), out, n, err);
        if (n < 0)
            return -1;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_names);
    return n;
}

int kernel_files_version(const kernel_files *f, const char *spec_text, const char *const *roots,
                         int n_roots, char out[KFILES_VERSION_LEN + 1], kt_error *err)
{
    const char *names[KFILES_MAX_INCLUDES];
    unsigned char digest[KT_SHA256_SIZE];
    strbuf b;
    int n = kernel_files_closure(f, roots, n_roots, names, err), rc = -1;
    strbuf_init(&b, 4 * (size_t)KFILES_MAX_BYTES);
    if (n < 0)
        goto out;
    /* Each part length-prefixed, so that no two different sets of files hash alike. */
    strbuf_appendf(&b, "ktune kernel 1\nspec %zu\n", strlen(spec_text));
    strbuf_puts(&b, spec_text);
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        const char *bytes = kernel_files_get(f, names[i], &len);
        strbuf_appendf(&b, "\nfile %s %zu\n", names[i], len);
        strbuf_append(&b, bytes, len);
    }
    if (b.failed) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "out of memory");
        goto out;
    }
    kt_sha256(strbuf_str(&b), b.len, digest);
    for (int i = 0; i < KFILES_VERSION_LEN / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
    rc = 0;
out:
    strbuf_release(&b);
    return rc;
}

static int write_file(int dfd, const char *name, const char *bytes, size_t len)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    size_t done = 0;
    if (fd < 0)
        return -1;
    while (done < len) {
        ssize_t w = write(fd, bytes + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    return close(fd);
}

int kernel_files_materialise(const kernel_files *f, const char *const *names, int n,
                             const char *root, const char *version, char *dir, size_t dir_cap,
                             kt_error *err)
{
    char tmp[PATH_MAX];
    struct stat st;
    int rc = -1, dfd = -1, made = 0;
    if (snprintf(dir, dir_cap, "%s/%s", root, version) >= (int)dir_cap ||
        snprintf(tmp, sizeof tmp, "%s/.tmp-%s-XXXXXX", root, version) >= (int)sizeof tmp)
        return kt_error_set(err, KT_ERR_IO, "the kernel sources folder %s is too long", root);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 0; /* content-addressed: a version's folder never changes */
    if (mkdir(root, 0700) != 0 && errno != EEXIST)
        return kt_error_set(err, KT_ERR_IO, "cannot create %s: %s", root, strerror(errno));
    if (!mkdtemp(tmp))
        return kt_error_set(err, KT_ERR_IO, "cannot create a folder in %s: %s", root,
                            strerror(errno));
    made = 1;
    if ((dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        goto io;
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        const char *bytes = kernel_files_get(f, names[i], &len);
        if (!bytes) {
            kt_error_set(err, KT_ERR_INTERNAL, "'%s' is not a file of the kernel", names[i]);
            goto out;
        }
        if (write_file(dfd, names[i], bytes, len) < 0)
            goto io;
    }
    if (fsync(dfd) != 0 || fchmod(dfd, 0755) != 0)
        goto io;
    if (rename(tmp, dir) == 0) {
        made = 0;
    } else if (!(errno == EEXIST || errno == ENOTEMPTY)) {
        goto io; /* else another writer was first: its folder holds the same bytes */
    }
    rc = 0;
    goto out;
io:
    kt_error_set(err, KT_ERR_IO, "cannot write the sources of version %s into %s: %s", version,
                 root, strerror(errno));
out:
    if (dfd >= 0)
        close(dfd);
    if (made) {
        /* The temporary folder is left behind only when it cannot be removed. */
        chmod(tmp, 0755);
        int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (int i = 0; tfd >= 0 && i < n; i++)
            unlinkat(tfd, names[i], 0);
        if (tfd >= 0)
            close(tfd);
        rmdir(tmp);
    }
    return rc;
}
