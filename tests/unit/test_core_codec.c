/* Unit tests of core/codec: the exact little-endian bytes written, round trips of integers of every
 * width, doubles (bit for bit) and texts, and a reader that fails at the first read past the end
 * and stays failed, refusing empty, over-long or NUL-holding texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"

static void bytes_are_little_endian(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 64);
    codec_put_uint(&b, 0x0102, 2);
    codec_put_uint(&b, 0xA1B2C3D4u, 4);
    codec_put_text(&b, "ab");
    const unsigned char want[] = {0x02, 0x01, 0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 0, 0, 'a', 'b'};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    strbuf_release(&b);
}

static void round_trips(void **state)
{
    (void)state;
    strbuf b;
    strbuf_init(&b, 256);
    const double ds[] = {0.0, -0.0, 1.5, -3.25e-300, INFINITY, NAN};
    for (int w = 1; w <= 8; w++)
        codec_put_uint(&b, UINT64_MAX >> (64 - 8 * w), w);
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        codec_put_f64(&b, ds[i]);
    codec_put_text(&b, "surrogate");
    codec_reader r = codec_reader_at(b.data, b.len, 0);
    for (int w = 1; w <= 8; w++)
        assert_true(codec_get_uint(&r, w) == UINT64_MAX >> (64 - 8 * w));
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        double d = codec_get_f64(&r);
        assert_memory_equal(&d, &ds[i], sizeof d);
    }
    char *t = codec_get_text(&r, 64);
    assert_string_equal(t, "surrogate");
    free(t);
    assert_int_equal(r.bad, 0);
    assert_int_equal(r.pos, b.len);
    strbuf_release(&b);
}

static void short_and_bad_reads_fail_and_stay_failed(void **state)
{
    (void)state;
    const unsigned char three[] = {1, 2, 3};
    codec_reader r = codec_reader_at(three, sizeof three, 0);
    assert_int_equal(codec_get_uint(&r, 2), 0x0201);
    assert_int_equal(codec_get_uint(&r, 2), 0); /* one byte left */
    assert_int_equal(r.bad, 1);
    assert_int_equal(codec_get_uint(&r, 1), 0); /* stays failed though a byte is there */
    r = codec_reader_at(three, sizeof three, 4);
    assert_int_equal(r.bad, 1);

    const unsigned char nul[] = {3, 0, 0, 0, 'a', 0, 'b'};
    r = codec_reader_at(nul, sizeof nul, 0);
    assert_null(codec_get_text(&r, 16));
    assert_int_equal(r.bad, 1);
    const unsigned char empty[] = {0, 0, 0, 0};
    r = codec_reader_at(empty, sizeof empty, 0);
    assert_null(codec_get_text(&r, 16));
    const unsigned char longer[] = {5, 0, 0, 0, 'a', 'b', 'c', 'd', 'e'};
    r = codec_reader_at(longer, sizeof longer, 0);
    assert_null(codec_get_text(&r, 4)); /* over max */
    r = codec_reader_at(longer, 8, 0);
    assert_null(codec_get_text(&r, 16)); /* cut short */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_are_little_endian),
        cmocka_unit_test(round_trips),
        cmocka_unit_test(short_and_bad_reads_fail_and_stay_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
