/* Unit tests of core/file: whole reads, the size cap, missing paths and non-regular files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_a_whole_file),
        cmocka_unit_test(over_cap_is_refused),
        cmocka_unit_test(missing_and_special_files_fail_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
