/* Unit tests of core/strbuf: appends, formatting past the stack buffer, the cap and the sticky
 * failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

static void appends_and_formats(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 1024);
    assert_string_equal(strbuf_str(&b), "");
    assert_int_equal(strbuf_puts(&b, "a"), 0);
    assert_int_equal(strbuf_append(&b, "bcd", 2), 0);
    assert_int_equal(strbuf_appendf(&b, "-%d-%s", 42, "x"), 0);
    assert_string_equal(strbuf_str(&b), "abc-42-x");
    assert_int_equal(b.len, 8);
    assert_int_equal(b.failed, STRBUF_OK);
    char *t = strbuf_take(&b);
    assert_non_null(t);
    assert_string_equal(t, "abc-42-x");
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(t);
}

static void long_format_goes_past_the_stack_buffer(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    strbuf b;
    strbuf_init(&b, 1 << 20);
    assert_int_equal(strbuf_puts(&b, "<"), 0);
    assert_int_equal(strbuf_appendf(&b, "%s>", big), 0);
    assert_int_equal(b.len, 1 + 2999 + 1);
    assert_int_equal(b.data[0], '<');
    assert_int_equal(b.data[2999], 'q');
    assert_int_equal(b.data[3000], '>');
    assert_int_equal(b.data[3001], '\0');
    strbuf_release(&b);
}

static void growth_keeps_the_text(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 1 << 20);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(strbuf_appendf(&b, "%04d", i % 10000), 0);
    assert_int_equal(b.len, 40000);
    assert_true(b.cap > b.len);
    assert_memory_equal(b.data, "0000000100020003", 16);
    assert_memory_equal(b.data + 39996, "9999", 4);
    strbuf_release(&b);
}

static void cap_reached_fails_and_sticks(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 8);
    assert_int_equal(strbuf_puts(&b, "12345678"), 0); /* exactly max is allowed */
    assert_int_equal(strbuf_puts(&b, "9"), -1);
    assert_int_equal(b.failed, STRBUF_TOO_LONG);
    assert_string_equal(strbuf_str(&b), "12345678"); /* what fitted stays readable */
    assert_int_equal(strbuf_puts(&b, ""), -1);       /* sticky, even for nothing */
    assert_int_equal(strbuf_appendf(&b, "%d", 1), -1);
    assert_null(strbuf_take(&b)); /* incomplete text is never handed out */
    assert_null(b.data);
    assert_int_equal(b.failed, STRBUF_OK); /* take resets */

    strbuf_init(&b, 4);
    assert_int_equal(strbuf_appendf(&b, "%s", "12345"), -1);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.failed, STRBUF_TOO_LONG);
    strbuf_release(&b);
}

static void empty_take_is_an_empty_string(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 16);
    char *t = strbuf_take(&b);
    assert_non_null(t);
    assert_string_equal(t, "");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_and_formats),
        cmocka_unit_test(long_format_goes_past_the_stack_buffer),
        cmocka_unit_test(growth_keeps_the_text),
        cmocka_unit_test(cap_reached_fails_and_sticks),
        cmocka_unit_test(empty_take_is_an_empty_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
