/* neural/nn_dataset — Fashion-MNIST from gzip'd IDX files (see nn_dataset.h). An IDX file is a
 * big-endian header (magic 0x00000803 for images: count, rows, cols; 0x00000801 for labels: count)
 * followed by one unsigned byte per pixel or label. Only the records asked for are read (a capped
 * read: max_images bounds memory and time), and everything read is validated: magic, dimensions,
 * the two files' counts agreeing, labels below 10, no truncation, and no trailing bytes when the
 * whole file is read. */
#include "neural/nn_dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define NN_FM_SIDE     28
#define NN_FM_CLASSES  10
#define NN_FM_MEAN     0.2860f
#define NN_FM_STD      0.3530f
#define NN_IDX_IMAGES  0x00000803u
#define NN_IDX_LABELS  0x00000801u
#define NN_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define NN_PATH_MAX    4096
#define NN_GZ_CHUNK    (1 << 20)

int nn_dataset_known(const char *name)
{
    return name && (!strcmp(name, "fashion-mnist") || !strcmp(name, "fashion-mnist-small"));
}

void nn_dataset_release(nn_dataset *d)
{
    if (!d)
        return;
    free(d->images);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

static unsigned be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | (unsigned)p[3];
}

/* Reads exactly len bytes; 0, or -1 with err (truncated or unreadable). */
static int gz_exact(gzFile gz, const char *path, unsigned char *buf, size_t len, const char *what,
                    kt_error *err)
{
    size_t used = 0;
    while (used < len) {
        size_t want = len - used > NN_GZ_CHUNK ? NN_GZ_CHUNK : len - used;
        int n = gzread(gz, buf + used, (unsigned)want);
        if (n < 0) {
            int zerr = 0;
            return kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path, gzerror(gz, &zerr));
        }
        if (n == 0)
            return kt_error_set(err, KT_ERR_IO, "%s is truncated: %zu of %zu bytes of %s", path,
                                used, len, what);
        used += (size_t)n;
    }
    return 0;
}

/* Opens path; KT_ERR_UNAVAILABLE (with hint) when it does not exist. */
static gzFile open_idx(const char *path, const char *hint, kt_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) {
            kt_error_set(err, KT_ERR_UNAVAILABLE, "data file %s does not exist", path);
            kt_error_hint(err, "%s", hint);
        } else {
            kt_error_set(err, KT_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        }
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        kt_error_set(err, KT_ERR_IO, "%s is not a regular file", path);
        return NULL;
    }
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        kt_error_set(err, KT_ERR_IO, "cannot open %s: %s", path, strerror(errno ? errno : ENOMEM));
    return gz;
}

/* After reading every record: the file must end there. */
static int check_end(gzFile gz, const char *path, kt_error *err)
{
    unsigned char extra;
    int n = gzread(gz, &extra, 1);
    if (n < 0) {
        int zerr = 0;
        return kt_error_set(err, KT_ERR_IO, "cannot read %s: %s", path, gzerror(gz, &zerr));
    }
    if (n > 0)
        return kt_error_set(err, KT_ERR_IO, "%s has bytes after its declared records", path);
    return 0;
}

/* Reads the images file header and the first `want` images (want <= count, checked by caller via
 * *count). Pixels go normalised into out->images. */
static int read_images(const char *path, const char *hint, int max_images, nn_dataset *out,
                       int *declared, kt_error *err)
{
    int rc = -1;
    unsigned char *raw = NULL;
    gzFile gz = open_idx(path, hint, err);
    if (!gz)
        goto done;
    unsigned char hdr[16];
    if (gz_exact(gz, path, hdr, sizeof hdr, "the header", err))
        goto done;
    unsigned magic = be32(hdr), count = be32(hdr + 4), rows = be32(hdr + 8), cols = be32(hdr + 12);
    if (magic != NN_IDX_IMAGES) {
        kt_error_set(err, KT_ERR_IO, "%s: magic 0x%08x is not an IDX image file's (0x%08x)", path,
                     magic, NN_IDX_IMAGES);
        goto done;
    }
    if (rows != NN_FM_SIDE || cols != NN_FM_SIDE) {
        kt_error_set(err, KT_ERR_IO, "%s: images are %ux%u, expected %dx%d", path, rows, cols,
                     NN_FM_SIDE, NN_FM_SIDE);
        goto done;
    }
    if (count == 0 || count > NN_DATASET_MAX_IMAGES) {
        kt_error_set(err, KT_ERR_IO, "%s: declares %u images (1..%d accepted)", path, count,
                     NN_DATASET_MAX_IMAGES);
        goto done;
    }
    int n = max_images > 0 && (unsigned)max_images < count ? max_images : (int)count;
    size_t pixels = (size_t)n * NN_FM_SIDE * NN_FM_SIDE;
    raw = malloc(pixels);
    out->images = malloc(pixels * sizeof *out->images);
    if (!raw || !out->images) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for %d images of %s", n, path);
        goto done;
    }
    if (gz_exact(gz, path, raw, pixels, "the images", err))
        goto done;
    if ((unsigned)n == count && check_end(gz, path, err))
        goto done;
    for (size_t i = 0; i < pixels; i++)
        out->images[i] = ((float)raw[i] / 255.0f - NN_FM_MEAN) / NN_FM_STD;
    out->n = n;
    *declared = (int)count;
    rc = 0;
done:
    free(raw);
    if (gz)
        gzclose(gz);
    return rc;
}

static int read_labels(const char *path, const char *hint, int n, int images_declared,
                       nn_dataset *out, kt_error *err)
{
    int rc = -1;
    gzFile gz = open_idx(path, hint, err);
    if (!gz)
        goto done;
    unsigned char hdr[8];
    if (gz_exact(gz, path, hdr, sizeof hdr, "the header", err))
        goto done;
    unsigned magic = be32(hdr), count = be32(hdr + 4);
    if (magic != NN_IDX_LABELS) {
        kt_error_set(err, KT_ERR_IO, "%s: magic 0x%08x is not an IDX label file's (0x%08x)", path,
                     magic, NN_IDX_LABELS);
        goto done;
    }
    if (count != (unsigned)images_declared) {
        kt_error_set(err, KT_ERR_IO, "%s: declares %u labels but the images file %d images", path,
                     count, images_declared);
        goto done;
    }
    out->labels = malloc((size_t)n);
    if (!out->labels) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "no memory for %d labels of %s", n, path);
        goto done;
    }
    if (gz_exact(gz, path, out->labels, (size_t)n, "the labels", err))
        goto done;
    if ((unsigned)n == count && check_end(gz, path, err))
        goto done;
    for (int i = 0; i < n; i++) {
        if (out->labels[i] >= NN_FM_CLASSES) {
            kt_error_set(err, KT_ERR_IO, "%s: label %d of record %d is not in 0..%d", path,
                         out->labels[i], i, NN_FM_CLASSES - 1);
            goto done;
        }
    }
    rc = 0;
done:
    if (gz)
        gzclose(gz);
    return rc;
}

int nn_dataset_load(const char *name, const char *split, int max_images,
                    const nn_dataset_paths *paths, nn_dataset *out, kt_error *err)
{
    int rc = -1;
    memset(out, 0, sizeof *out);
    char images[NN_PATH_MAX], labels[NN_PATH_MAX], hint[256];
    const char *dir = NULL;
    if (!nn_dataset_known(name)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "unknown data set '%s'", name ? name : "(null)");
        kt_error_hint(err, "use \"fashion-mnist\" or \"fashion-mnist-small\"");
        goto done;
    }
    if (!split || (strcmp(split, "train") && strcmp(split, "test"))) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "unknown split '%s' of %s", split ? split : "(null)",
                     name);
        kt_error_hint(err, "use \"train\" or \"test\"");
        goto done;
    }
    if (max_images < 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "max_images %d is negative", max_images);
        goto done;
    }
    if (!strcmp(name, "fashion-mnist")) {
        dir = paths ? paths->package_dir : NULL;
        if (!dir)
            dir = getenv("KTUNE_FASHION_MNIST_DIR");
        if (!dir || !*dir)
            dir = NN_DEFAULT_DIR;
        snprintf(hint, sizeof hint,
                 "install Debian's dataset-fashion-mnist (deploy/install-deps.sh), set "
                 "KTUNE_FASHION_MNIST_DIR, or use \"fashion-mnist-small\"");
    } else {
        dir = paths ? paths->small_dir : NULL;
        snprintf(hint, sizeof hint,
                 "the small copy ships in networks/data/fashion-mnist-small of the source tree");
        if (!dir) {
            kt_error_set(err, KT_ERR_UNAVAILABLE, "no directory given for fashion-mnist-small");
            kt_error_hint(err, "%s", hint);
            goto done;
        }
    }
    const char *stem = !strcmp(split, "train") ? "train" : "t10k";
    int a = snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, stem);
    int b = snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, stem);
    if (a < 0 || a >= (int)sizeof images || b < 0 || b >= (int)sizeof labels) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "data directory path is too long");
        goto done;
    }
    int declared = 0;
    if (read_images(images, hint, max_images, out, &declared, err))
        goto done;
    if (read_labels(labels, hint, out->n, declared, out, err))
        goto done;
    out->channels = 1;
    out->height = NN_FM_SIDE;
    out->width = NN_FM_SIDE;
    out->classes = NN_FM_CLASSES;
    rc = 0;
done:
    if (rc)
        nn_dataset_release(out);
    return rc;
}
