/* Unit tests of core/file: whole reads, the size cap, missing paths and non-regular files; the gzip
 * reader on plain and gzipped files, over its cap and on a missing path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/file.h"

static void write_temp(char *path, size_t cap, const char *text, size_t n)
{
    snprintf(path, cap, "/tmp/kt_core_file_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static void reads_a_whole_file(void **state)
{
    (void)state;
    char path[64];
    write_temp(path, sizeof path, "hello\0world", 11);
    kt_error err;
    kt_error_clear(&err);
    size_t len = 0;
    char *t = kt_file_read_all(path, 11, &len, &err);
    assert_non_null(t);
    assert_int_equal(len, 11);
    assert_memory_equal(t, "hello\0world", 11);
    assert_int_equal(t[11], '\0');
    free(t);
    unlink(path);
}

static void over_cap_is_refused(void **state)
{
    (void)state;
    char path[64];
    write_temp(path, sizeof path, "0123456789", 10);
    kt_error err;
    kt_error_clear(&err);
    size_t len = 99;
    assert_null(kt_file_read_all(path, 9, &len, &err));
    assert_int_equal(len, 0);
    assert_int_equal(err.code, KT_ERR_IO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "larger than 9 bytes"));
    assert_non_null(strstr(err.hint, "10 bytes"));
    unlink(path);
}

static void missing_and_special_files_fail_clearly(void **state)
{
    (void)state;
    kt_error err;
    kt_error_clear(&err);
    assert_null(kt_file_read_all("/nonexistent/kt/file", 100, NULL, &err));
    assert_int_equal(err.code, KT_ERR_IO);
    assert_non_null(strstr(err.message, "cannot open /nonexistent/kt/file"));
    kt_error_clear(&err);
    assert_null(kt_file_read_all("/tmp", 100, NULL, &err));
    assert_non_null(strstr(err.message, "not a regular file"));
    kt_error_clear(&err);
    assert_null(kt_file_read_all("/dev/zero", 100, NULL, &err)); /* endless: never read */
    assert_int_equal(err.code, KT_ERR_IO);
}

/* A gzip file at a new temporary path holding text[0..n). */
static void write_temp_gz(char *path, size_t cap, const char *text, size_t n)
{
    snprintf(path, cap, "/tmp/kt_core_file_gz_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    gzFile gz = gzdopen(fd, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, text, (unsigned)n), (int)n);
    assert_int_equal(gzclose(gz), Z_OK);
}

static void gz_reads_plain_and_gzipped_files(void **state)
{
    (void)state;
    char path[64];
    kt_error err;
    size_t len = 0;

    write_temp(path, sizeof path, "plain\0text", 10);
    kt_error_clear(&err);
    char *t = kt_file_read_gz(path, 10, &len, &err);
    assert_non_null(t);
    assert_int_equal(len, 10);
    assert_memory_equal(t, "plain\0text", 10);
    assert_int_equal(t[10], '\0');
    free(t);
    unlink(path);

    /* More than one read chunk (64 KiB), so the buffer grows on the way. */
    size_t n = 200000;
    char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 23);
    write_temp_gz(path, sizeof path, big, n);
    t = kt_file_read_gz(path, n, &len, &err);
    assert_non_null(t);
    assert_int_equal(len, n);
    assert_memory_equal(t, big, n);
    assert_int_equal(t[n], '\0');
    free(t);
    unlink(path);
    free(big);

    write_temp_gz(path, sizeof path, "", 0); /* empty: an empty string, not an error */
    t = kt_file_read_gz(path, 0, &len, &err);
    assert_non_null(t);
    assert_int_equal(len, 0);
    assert_int_equal(t[0], '\0');
    free(t);
    unlink(path);
}

static void gz_over_cap_and_missing_fail_clearly(void **state)
{
    (void)state;
    char path[64];
    kt_error err;
    size_t len = 99;

    write_temp_gz(path, sizeof path, "0123456789", 10);
    kt_error_clear(&err);
    assert_null(kt_file_read_gz(path, 9, &len, &err));
    assert_int_equal(len, 0);
    assert_int_equal(err.code, KT_ERR_IO);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "larger than 9 bytes (uncompressed)"));
    char *t = kt_file_read_gz(path, 10, &len, &err); /* exactly the cap is fine */
    assert_non_null(t);
    assert_int_equal(len, 10);
    free(t);
    unlink(path);

    kt_error_clear(&err);
    assert_null(kt_file_read_gz("/nonexistent/kt/file.gz", 100, &len, &err));
    assert_int_equal(err.code, KT_ERR_IO);
    assert_non_null(strstr(err.message, "cannot open /nonexistent/kt/file.gz"));
    assert_non_null(strstr(err.message, "No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_a_whole_file),
        cmocka_unit_test(over_cap_is_refused),
        cmocka_unit_test(missing_and_special_files_fail_clearly),
        cmocka_unit_test(gz_reads_plain_and_gzipped_files),
        cmocka_unit_test(gz_over_cap_and_missing_fail_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
