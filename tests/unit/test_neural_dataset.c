/* Unit tests of neural/nn_dataset: the shipped small copy loads (counts, shape, labels equal to the
 * raw file's bytes, pixels normalised by the documented mean and deviation, the capped read), the
 * package when installed agrees with it, and malformed files (bad magic, wrong dimensions,
 * truncation, trailing bytes, out-of-range labels, disagreeing counts, absent files, unknown
 * names) are refused with the right error code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "neural/nn_dataset.h"
#include "skip_test_util.h"

#define SMALL_DIR KT_SOURCE_DIR "/networks/data/fashion-mnist-small"
#define PKG_DIR   "/usr/share/datasets/fashion-mnist"

/* The uncompressed bytes [0, len) of a gz file, read independently of nn_dataset. */
static unsigned char *raw_gz(const char *path, size_t len)
{
    gzFile gz = gzopen(path, "rb");
    assert_non_null(gz);
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(gzread(gz, buf, (unsigned)len), (int)len);
    gzclose(gz);
    return buf;
}

static void small_copy_loads(void **state)
{
    (void)state;
    nn_dataset_paths paths = {NULL, SMALL_DIR};
    nn_dataset train, test;
    kt_error err;
    assert_true(nn_dataset_known("fashion-mnist"));
    assert_true(nn_dataset_known("fashion-mnist-small"));
    assert_false(nn_dataset_known("mnist"));
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 0, &paths, &train, &err), 0);
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "test", 0, &paths, &test, &err), 0);
    assert_int_equal(train.n, 1000);
    assert_int_equal(test.n, 500);
    assert_int_equal(train.channels, 1);
    assert_int_equal(train.height, 28);
    assert_int_equal(train.width, 28);
    assert_int_equal(train.classes, 10);

    unsigned char *labels = raw_gz(SMALL_DIR "/train-labels-idx1-ubyte.gz", 8 + 1000);
    assert_int_equal(labels[3], 0x01); /* magic 0x00000801 */
    assert_memory_equal(train.labels, labels + 8, 1000);
    assert_int_equal(train.labels[0], 9); /* Fashion-MNIST's first training image: an ankle boot */
    free(labels);
    labels = raw_gz(SMALL_DIR "/t10k-labels-idx1-ubyte.gz", 8 + 500);
    assert_memory_equal(test.labels, labels + 8, 500);
    free(labels);

    size_t px = 1000u * 784u;
    unsigned char *pixels = raw_gz(SMALL_DIR "/train-images-idx3-ubyte.gz", 16 + px);
    double sum = 0, sq = 0;
    int classes[10] = {0};
    for (size_t i = 0; i < px; i++) {
        float want = ((float)pixels[16 + i] / 255.0f - 0.2860f) / 0.3530f;
        assert_float_equal(train.images[i], want, 1e-6);
        sum += train.images[i];
        sq += (double)train.images[i] * train.images[i];
    }
    for (int i = 0; i < 1000; i++)
        classes[train.labels[i]]++;
    for (int c = 0; c < 10; c++)
        assert_true(classes[c] > 50); /* every class present in the first 1000 */
    double mean = sum / (double)px, sd = sqrt(sq / (double)px - mean * mean);
    assert_true(fabs(mean) < 0.1); /* normalised by the full set's statistics */
    assert_true(fabs(sd - 1.0) < 0.1);
    free(pixels);

    nn_dataset part;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 7, &paths, &part, &err), 0);
    assert_int_equal(part.n, 7);
    assert_memory_equal(part.labels, train.labels, 7);
    assert_memory_equal(part.images, train.images, 7 * 784 * sizeof(float));
    nn_dataset_release(&part);
    assert_null(part.images);
    nn_dataset_release(&part); /* twice is harmless */
    nn_dataset_release(&train);
    nn_dataset_release(&test);
}

/* When Debian's package is installed, its first records are the small copy's. */
static void package_matches_small(void **state)
{
    (void)state;
    if (access(PKG_DIR "/train-labels-idx1-ubyte.gz", R_OK) != 0)
        KT_SKIP("Debian's fashion-mnist package is not installed (%s)", PKG_DIR);
    nn_dataset_paths paths = {PKG_DIR, SMALL_DIR};
    nn_dataset full, small;
    kt_error err;
    assert_int_equal(nn_dataset_load("fashion-mnist", "test", 500, &paths, &full, &err), 0);
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "test", 0, &paths, &small, &err), 0);
    assert_int_equal(full.n, 500);
    assert_memory_equal(full.labels, small.labels, 500);
    assert_memory_equal(full.images, small.images, 500 * 784 * sizeof(float));
    nn_dataset_release(&full);
    nn_dataset_release(&small);
}

static void put32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void write_gz(const char *dir, const char *name, const unsigned char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    if (len)
        assert_int_equal(gzwrite(gz, data, (unsigned)len), (int)len);
    gzclose(gz);
}

/* A test split of n images (rows x cols) and labels, with the given magics and label values;
 * extra trailing bytes and a missing tail as asked. */
typedef struct fake {
    unsigned img_magic, lab_magic, n_img, n_lab, rows, cols;
    int cut_pixels;   /* bytes removed from the end of the images */
    int extra_labels; /* bytes appended to the labels */
    int bad_label;    /* label value of record 1 */
} fake;

static void write_fake(const char *dir, const fake *f)
{
    size_t px = (size_t)f->n_img * f->rows * f->cols;
    unsigned char *img = calloc(16 + px, 1), *lab = calloc(8 + f->n_lab + 4, 1);
    assert_non_null(img);
    assert_non_null(lab);
    put32(img, f->img_magic);
    put32(img + 4, f->n_img);
    put32(img + 8, f->rows);
    put32(img + 12, f->cols);
    for (size_t i = 0; i < px; i++)
        img[16 + i] = (unsigned char)(i * 7);
    put32(lab, f->lab_magic);
    put32(lab + 4, f->n_lab);
    for (unsigned i = 0; i < f->n_lab; i++)
        lab[8 + i] = (unsigned char)(i % 10);
    if (f->n_lab > 1)
        lab[9] = (unsigned char)f->bad_label;
    write_gz(dir, "t10k-images-idx3-ubyte.gz", img, 16 + px - (size_t)f->cut_pixels);
    write_gz(dir, "t10k-labels-idx1-ubyte.gz", lab, 8 + f->n_lab + (size_t)f->extra_labels);
    free(img);
    free(lab);
}

static int load_fake(const char *dir, const fake *f, int max, kt_error *err)
{
    write_fake(dir, f);
    nn_dataset_paths paths = {dir, NULL};
    nn_dataset d;
    int rc = nn_dataset_load("fashion-mnist", "test", max, &paths, &d, err);
    if (rc == 0) {
        assert_int_equal(d.n, max > 0 && (unsigned)max < f->n_img ? max : (int)f->n_img);
        nn_dataset_release(&d);
    } else {
        assert_null(d.images);
        assert_null(d.labels);
    }
    return rc;
}

static void malformed_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_nn_dataset_XXXXXX";
    assert_non_null(mkdtemp(dir));
    kt_error err;
    const fake good = {0x803, 0x801, 5, 5, 28, 28, 0, 0, 1};
    fake f = good;
    assert_int_equal(load_fake(dir, &f, 0, &err), 0);
    assert_int_equal(load_fake(dir, &f, 3, &err), 0);

    f = good;
    f.img_magic = 0x801;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_int_equal(err.code, KT_ERR_IO);
    assert_non_null(strstr(err.message, "magic"));
    f = good;
    f.lab_magic = 0x803;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "magic"));
    f = good;
    f.rows = 32;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "32x28"));
    f = good;
    f.cut_pixels = 10;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "truncated"));
    assert_int_equal(load_fake(dir, &f, 4, &err), 0); /* the capped read stops before the cut */
    f = good;
    f.extra_labels = 2;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "after its declared records"));
    f = good;
    f.bad_label = 10;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "label 10 of record 1"));
    f = good;
    f.n_lab = 4;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "declares 4 labels"));
    f = good;
    f.n_img = f.n_lab = 0;
    assert_int_equal(load_fake(dir, &f, 0, &err), -1);
    assert_non_null(strstr(err.message, "declares 0 images"));
    write_fake(dir, &good); /* then the images header rewritten with too large a count */
    {
        unsigned char hdr[16];
        put32(hdr, 0x803);
        put32(hdr + 4, NN_DATASET_MAX_IMAGES + 1);
        put32(hdr + 8, 28);
        put32(hdr + 12, 28);
        write_gz(dir, "t10k-images-idx3-ubyte.gz", hdr, sizeof hdr);
        nn_dataset_paths paths = {dir, NULL};
        nn_dataset d;
        assert_int_equal(nn_dataset_load("fashion-mnist", "test", 0, &paths, &d, &err), -1);
        assert_non_null(strstr(err.message, "declares 100001 images"));
    }

    /* A plain (not gzip'd) file of bytes that are no IDX header. */
    char path[512];
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("not an idx file at all", fp);
    fclose(fp);
    nn_dataset_paths paths = {dir, dir};
    nn_dataset d;
    assert_int_equal(nn_dataset_load("fashion-mnist", "test", 0, &paths, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_IO);

    /* Absent files, unknown names and splits. */
    assert_int_equal(nn_dataset_load("fashion-mnist", "train", 0, &paths, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.hint, "dataset-fashion-mnist"));
    nn_dataset_paths none = {NULL, NULL};
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 0, &none, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNAVAILABLE);
    assert_int_equal(nn_dataset_load("mnist", "train", 0, &paths, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(nn_dataset_load("fashion-mnist", "valid", 0, &paths, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(nn_dataset_load("fashion-mnist", "test", -1, &paths, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);

    const char *names[] = {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_copy_loads),
        cmocka_unit_test(package_matches_small),
        cmocka_unit_test(malformed_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
