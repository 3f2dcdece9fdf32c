/* Unit tests of cli_table_row, the line of `ktune best --all --format table` (cli/cli_table.h): the
 * columns in order, JSON sorted and ASCII-escaped, time_ms round-tripping, and the refusal of an
 * entry whose text would break the format. The file as a whole is checked against both readers by
 * tests/integration/test_client_python.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli/cli_table.h"

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        fail_msg("bad test JSON: %s", je.text);
    return v;
}

static void test_row(void **state)
{
    (void)state;
    json_t *e =
        load("{\"kernel\": \"gemm\", \"device\": \"cpu\", \"device_class\": \"cpu:AMD_EPYC:256\","
             " \"kernel_hash\": \"05bece86a2c7f753\", \"toolchain\": \"gcc 12.2.0\","
             " \"problem\": {\"N\": 256, \"M\": 256, \"K\": 256},"
             " \"config\": {\"NR\": 64, \"MR\": 6, \"s\": \"caf\\u00e9\\t\", \"x\": 0.1},"
             " \"time_ms\": 0.3032395, \"job_id\": 2, \"trial_id\": 103,"
             " \"measured_at\": \"2026-11-22T04:21:10.072261+00:00\","
             " \"source\": \"measured\", \"origin\": \"measured\"}");
    strbuf b;
    kt_error err;
    kt_error_clear(&err);
    strbuf_init(&b, 4096);
    assert_int_equal(cli_table_row(e, &b, &err), 0);
    /* The columns in order; JSON sorted and compact, ASCII only (no raw tab); the time as a number
     * that reads back as the same double. */
    const char *line = strbuf_str(&b);
    const char *want_head = "gemm\tcpu:AMD_EPYC:256\t05bece86a2c7f753\tgcc 12.2.0\tmeasured\t";
    assert_memory_equal(line, want_head, strlen(want_head));
    char *end = NULL;
    assert_true(strtod(line + strlen(want_head), &end) == 0.3032395);
    assert_string_equal(end,
                        "\t{\"K\":256,\"M\":256,\"N\":256}\t"
                        "{\"MR\":6,\"NR\":64,\"s\":\"caf\\u00E9\\t\",\"x\":0.10000000000000001}\t"
                        "2026-11-22T04:21:10.072261+00:00\n");
    strbuf_release(&b);

    /* A tab in a text column, or no config: refused, naming what. */
    json_object_set_new(e, "toolchain", json_string("gcc\t12"));
    strbuf_init(&b, 4096);
    assert_int_equal(cli_table_row(e, &b, &err), -1);
    assert_non_null(strstr(err.message, "toolchain"));
    json_object_set_new(e, "toolchain", json_string("gcc 12"));
    json_object_del(e, "config");
    assert_int_equal(cli_table_row(e, &b, &err), -1);
    assert_non_null(strstr(err.message, "config"));
    strbuf_release(&b);
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
