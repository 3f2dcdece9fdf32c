/* Unit tests of api_host_is_loopback (api/fields.c): the Host names a service without API tokens
 * answers (issue 26, break 7: a page a DNS rebinding points at 127.0.0.1 sends its own name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/api_internal.h"

static void loopback_names_with_any_port_are_accepted(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "127.0.0.1",   "127.0.0.1:8080", "127.0.0.1:", "127.1.2.3:65535", "localhost",
        "localhost:1", "LocalHost:80",   "[::1]",      "[::1]:8080",      "[0:0:0:0:0:0:0:1]:8080",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (!api_host_is_loopback(ok[i]))
            fail_msg("Host '%s' was refused", ok[i]);
    }
}

static void other_names_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "evil.example",
        "evil.example:8080",
        "localhost.evil.example",
        "127.0.0.1.evil.example:8080",
        "localhost.",
        "sub.localhost",
        "127.1:8080",     /* not a dotted quad */
        "0x7f.0.0.1",     /* not decimal */
        "128.0.0.1:8080", /* not 127/8 */
        "0.0.0.0:8080",   /* all interfaces is no name of this host */
        "[::2]:8080",     /* not ::1 */
        "[::ffff:127.0.0.1]",
        "::1",           /* IPv6 without brackets */
        "[::1",          /* unclosed */
        "[::1]x",        /* junk after the bracket */
        "localhost:80x", /* a port that is not digits */
        "localhost:123456",
        "localhost:80:80",
        "127.0.0.1 :80",
        "localhost\r\nX: y",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (api_host_is_loopback(bad[i]))
            fail_msg("Host '%s' was accepted", bad[i]);
    }
    assert_false(api_host_is_loopback(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loopback_names_with_any_port_are_accepted),
        cmocka_unit_test(other_names_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
