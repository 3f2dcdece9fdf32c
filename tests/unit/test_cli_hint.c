/* Unit tests of cli/cli_hint (issue 31): the API's REST hints said as ktune commands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/cli_hint.h"

static void rest_calls_become_commands(void **state)
{
    (void)state;
    char out[1024];
    int n = cli_hint_translate(
        "tune it: POST /v1/tune {\"kernel\": \"gemm\", \"device\": \"cpu\", \"problem\": "
        "{\"K\":1024,\"M\":1024,\"N\":1024}} (or add ?tune_on_miss=N); train a model of the key: "
        "POST /v1/models {\"kernel\": \"gemm\", \"device\": \"cpu\"}; or ask with "
        "?fallback=nearest",
        out, sizeof out);
    assert_int_equal(n, 4);
    assert_string_equal(out, "tune it: ktune tune --kernel gemm --device cpu --problem "
                             "K=1024,M=1024,N=1024 --wait (or add --tune-on-miss N); train a "
                             "model of the key: ktune train --kernel gemm --device cpu --wait; or "
                             "ask with --fallback nearest");
    /* a list argument, as --problem writes it */
    n = cli_hint_translate("POST /v1/tune {\"kernel\": \"pnpoly\", \"device\": "
                           "\"replay:pnpoly_kt-RTX_3090\", \"problem\": {\"problem_size\": "
                           "[20000000, 1]}}.",
                           out, sizeof out);
    assert_int_equal(n, 1);
    assert_string_equal(out, "ktune tune --kernel pnpoly --device replay:pnpoly_kt-RTX_3090 "
                             "--problem problem_size=20000000,1 --wait.");
    assert_int_equal(cli_hint_translate("add accept=weak, or GET /v1/jobs/{id}", out, sizeof out),
                     2);
    assert_string_equal(out, "add --accept weak, or ktune job ID");
}

static void what_has_no_command_stays(void **state)
{
    (void)state;
    char out[512];
    /* a field without a flag here, a body that is not JSON, a route without a command */
    const char *keep[] = {
        "POST /v1/tune {\"kernel\": \"k\", \"device\": \"external\", \"space\": {}}",
        "POST /v1/tune {not json",
        "GET /v1/kernels lists kernels and devices",
        "POST /v1/tune {\"kernel\": \"gemm\", \"device\": \"cpu\", \"problem\": {\"n\": {\"a\": "
        "1}}}",
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        assert_int_equal(cli_hint_translate(keep[i], out, sizeof out), 0);
        assert_string_equal(out, keep[i]);
    }
    assert_int_equal(cli_hint_translate(NULL, out, sizeof out), 0);
    assert_string_equal(out, "");
    /* truncated to the room given */
    cli_hint_translate("GET /v1/models shows them", out, 8);
    assert_string_equal(out, "ktune m");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rest_calls_become_commands),
        cmocka_unit_test(what_has_no_command_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
