/* skip_test_util — how a unit test says that it cannot run here, so that ctest and `make test`
 * show it (tests/README.md, "Skips").
 *
 *   KT_SKIP("no CUDA driver (libcuda.so.1): %s", why);  inside a cmocka case: prints
 *       "SKIP: <case>: <reason>" and marks the case skipped; the executable still passes or fails
 *       on its other cases, and `make test`'s summary lists the line.
 *   return kt_skip_all("no CUDA driver");  from main, when nothing in the executable can run:
 *       prints "SKIP: <reason>" and returns KT_SKIP_EXIT, which ctest counts as skipped
 *       (SKIP_RETURN_CODE in CMakeLists.txt).
 *
 * A skip always names its reason. KTUNE_REQUIRE_CUDA=1 / KTUNE_REQUIRE_NVRTC=1 turn the CUDA
 * tests' skips into failures (make gpu-check): kt_skip_required() says whether that holds. */
#ifndef KT_TESTS_SKIP_TEST_UTIL_H
#define KT_TESTS_SKIP_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_SKIP_EXIT 77

#define KT_SKIP(...)                                                                               \
    do {                                                                                           \
        printf("SKIP: %s: ", __func__);                                                            \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        skip();                                                                                    \
    } while (0)

static inline int kt_skip_all(const char *reason)
{
    printf("SKIP: %s\n", reason);
    fflush(stdout);
    return KT_SKIP_EXIT;
}

/* 1 when the environment variable name is set to a non-empty value other than "0": a skip of
 * what it names must then fail instead (make gpu-check sets KTUNE_REQUIRE_CUDA,
 * KTUNE_REQUIRE_NVRTC). */
static inline int kt_skip_required(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

#endif
