/* replay_test_util — helpers shared by the replay tests of the catalog (test_catalog.c) and of
 * the replay backend (test_measure.c): a catalog over one dataset folder, resolve that fails the
 * test, JSON lookups, temporary folders with (gzipped) dataset files, and a plain Kernel Tuner
 * cache. Every helper is static inline so that each test uses what it needs. */
#ifndef KT_TESTS_REPLAY_TEST_UTIL_H
#define KT_TESTS_REPLAY_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/catalog.h"

#define DATASETS   KT_SOURCE_DIR "/datasets"
#define GPU_SPACES KT_SHARED_DATA_DIR "/gpu-spaces"
#define CONV       "replay:convolution_milo-A4000"
#define PNPOLY     "replay:pnpoly_kt-RTX_3090"

static inline catalog *open_catalog(const char *dir, double speed)
{
    const char *dirs[] = {dir};
    catalog_options opt = {.dataset_dirs = dirs, .n_dataset_dirs = 1, .replay_speed = speed};
    kt_error err;
    catalog *c = catalog_new(&opt, &err);
    if (!c)
        fail_msg("catalog_new(%s): %s", dir, err.message);
    return c;
}

static inline void resolve_ok(const catalog *c, const char *kernel, const char *device, target *t)
{
    kt_error err;
    if (catalog_resolve(c, kernel, device, NULL, t, &err) != 0)
        fail_msg("resolve %s on %s: %s", kernel, device, err.message);
}

static inline json_t *find_by(json_t *arr, const char *key, const char *value)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *v = json_string_value(json_object_get(json_array_get(arr, i), key));
        if (v && strcmp(v, value) == 0)
            return json_array_get(arr, i);
    }
    return NULL;
}

/* Temporary folder with files; removed by rm_dir. */
static inline void make_dir(char *tmpl)
{
    assert_non_null(mkdtemp(tmpl));
}

static inline void write_file(const char *dir, const char *name, const char *text, int gz)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, text, (unsigned)strlen(text)), (int)strlen(text));
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(text, 1, strlen(text), f);
        fclose(f);
    }
}

static inline void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* A plain cache: no `space`, no `restrictions`, no problem_size; one record has a value outside
 * tune_params (ignored). */
static const char plain_cache[] =
    "{\"tune_params_keys\": [\"a\", \"b\"], \"tune_params\": {\"a\": [1, 2, 3], \"b\": [\"x\", "
    "\"y\"]},"
    " \"cache\": {"
    "  \"1,x\": {\"a\": 1, \"b\": \"x\", \"time\": 2.5, \"compile_time\": 10, \"benchmark_time\": "
    "5,"
    "           \"times\": [2.0, 3.0]},"
    "  \"2,y\": {\"a\": 2, \"b\": \"y\", \"time\": \"InvalidConfig\"},"
    "  \"3,x\": {\"a\": 3, \"b\": \"x\", \"time\": 1.5},"
    "  \"4,x\": {\"a\": 4, \"b\": \"x\", \"time\": 1.0}}}";

#endif
