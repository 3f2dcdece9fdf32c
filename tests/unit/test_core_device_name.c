/* core/device_name: every kind parses and formats back to its text; bad ordinals, overlong names
 * and unknown prefixes are 400s (unknown_device) that say what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/device_name.h"

static void parse_ok(const char *text, kt_device_kind kind, int ordinal, const char *name)
{
    kt_device d;
    kt_error err;
    char back[KT_DEVICE_TEXT_MAX + 1];
    assert_int_equal(kt_device_parse(text, &d, &err), 0);
    assert_int_equal(d.kind, kind);
    assert_int_equal(d.ordinal, ordinal);
    assert_string_equal(d.name, name);
    assert_int_equal(kt_device_kind_of(text), (int)kind);
    assert_int_equal(kt_device_format(&d, back, sizeof back), (int)strlen(text));
    assert_string_equal(back, text);
}

static void parse_bad(const char *text, const char *message)
{
    kt_device d;
    kt_error err;
    kt_error_clear(&err);
    d.kind = KT_DEVICE_ACCEL;
    assert_int_equal(kt_device_parse(text, &d, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_int_equal(kt_error_http_status(err.code), 400);
    assert_non_null(strstr(err.message, message));
    assert_int_equal(d.kind, KT_DEVICE_CPU); /* zeroed */
    assert_int_equal(kt_device_kind_of(text), -1);
}

static void every_kind(void **state)
{
    (void)state;
    parse_ok("cpu", KT_DEVICE_CPU, 0, "");
    parse_ok("cuda:0", KT_DEVICE_CUDA, 0, "");
    parse_ok("cuda:1023", KT_DEVICE_CUDA, 1023, "");
    parse_ok("replay:convolution_milo-A4000", KT_DEVICE_REPLAY, 0, "convolution_milo-A4000");
    parse_ok("accel:mindmap", KT_DEVICE_ACCEL, 0, "mindmap");
    parse_ok("external", KT_DEVICE_EXTERNAL, 0, "");
    parse_ok("hip:3", KT_DEVICE_HIP, 3, "");
    parse_ok("opencl:12", KT_DEVICE_OPENCL, 12, "");
}

static void bad_ordinals(void **state)
{
    (void)state;
    parse_bad("cuda:", "the number after ':'");
    parse_bad("cuda:01", "without sign or leading zero");
    parse_bad("cuda:-1", "decimal 0 to 1023");
    parse_bad("cuda:+1", "decimal 0 to 1023");
    parse_bad("cuda:1024", "decimal 0 to 1023");
    parse_bad("cuda:99999999999", "decimal 0 to 1023");
    parse_bad("cuda:1x", "decimal 0 to 1023");
    parse_bad("hip: 1", "decimal 0 to 1023");
    parse_bad("cuda", "a number follows ':'");
    parse_bad("opencl", "a number follows ':'");
}

static void bad_names(void **state)
{
    (void)state;
    char text[KT_DEVICE_TEXT_MAX + 8];
    parse_bad("replay:", "1 to 200 characters");
    parse_bad("accel", "a name follows ':'");
    parse_bad("accel:a b", "not printable ASCII");
    parse_bad("replay:caf\xc3\xa9", "not printable ASCII");
    memcpy(text, "replay:", 7);
    memset(text + 7, 'x', KT_DEVICE_NAME_MAX + 1);
    text[7 + KT_DEVICE_NAME_MAX + 1] = '\0';
    parse_bad(text, "1 to 200 characters");
    text[7 + KT_DEVICE_NAME_MAX] = '\0'; /* exactly the bound */
    parse_ok(text, KT_DEVICE_REPLAY, 0, text + 7);
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    parse_bad(text, "field 'device' is longer than 256 characters");
}

static void unknown_prefixes(void **state)
{
    (void)state;
    parse_bad("gpu:0", "unknown device 'gpu:0'");
    parse_bad("CUDA:0", "unknown device 'CUDA:0'");
    parse_bad("cudax:0", "unknown device 'cudax:0'");
    parse_bad("", "unknown device ''");
    parse_bad(NULL, "unknown device ''");
    parse_bad("cpu:1", "the machine's processor is the device named cpu");
    parse_bad("external:x", "takes nothing after its name");
}

static void kind_words(void **state)
{
    (void)state;
    kt_device_kind k;
    for (int i = 0; i < KT_DEVICE_KINDS; i++) {
        assert_int_equal(kt_device_kind_from_name(kt_device_kind_name((kt_device_kind)i), &k), 0);
        assert_int_equal(k, i);
    }
    assert_int_equal(kt_device_kind_from_name("gpu", &k), -1);
    assert_int_equal(kt_device_kind_from_name(NULL, &k), -1);
    assert_string_equal(kt_device_kind_name(KT_DEVICE_REPLAY), "replay");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind), cmocka_unit_test(bad_ordinals), cmocka_unit_test(bad_names),
        cmocka_unit_test(unknown_prefixes), cmocka_unit_test(kind_words)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
