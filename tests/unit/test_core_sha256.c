/* Unit tests of core/sha256: the FIPS 180-4 / NIST example vectors (empty, "abc", the two-block
 * 448-bit message, one million 'a') and lengths 55, 56, 64 around the padding boundary; the digest
 * comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"

static void hex(const unsigned char d[KT_SHA256_SIZE], char out[2 * KT_SHA256_SIZE + 1])
{
    for (int i = 0; i < KT_SHA256_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check(const char *msg, size_t n, const char *want)
{
    unsigned char d[KT_SHA256_SIZE];
    char got[2 * KT_SHA256_SIZE + 1];
    kt_sha256(msg, n, d);
    hex(d, got);
    assert_string_equal(got, want);
}

static void nist_vectors(void **state)
{
    (void)state;
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* 55, 56, 63 and 64 bytes: the length field in the first or a second padding block. */
    char a[1000001];
    memset(a, 'a', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    check(a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    check(a, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    check(a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    check(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void equal_compares_all_bytes(void **state)
{
    (void)state;
    unsigned char x[KT_SHA256_SIZE], y[KT_SHA256_SIZE];
    kt_sha256("token-1", 7, x);
    memcpy(y, x, sizeof y);
    assert_true(kt_sha256_equal(x, y));
    for (int i = 0; i < KT_SHA256_SIZE; i++) {
        y[i] ^= 1;
        assert_false(kt_sha256_equal(x, y));
        y[i] ^= 1;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nist_vectors),
        cmocka_unit_test(equal_compares_all_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
