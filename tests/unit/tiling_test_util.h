/* tiling_test_util — the G-BFS GEMM tiling space (m0..m3, k0..k1, n0..n3, each product fixed to the
 * problem's size) for the unit tests of any room that needs it (space, search): one builder, so the
 * parameter names, value lists and restrictions are written once. A header of static inline
 * functions; include after cmocka.h. The caller frees the space (space_free). */
#ifndef KT_TESTS_TILING_TEST_UTIL_H
#define KT_TESTS_TILING_TEST_UTIL_H

#include <stdio.h>

#include "space/space.h"

/* values: every parameter's value list as JSON ("[1,2,4,...]"); size: M = N = K. Fails the test
 * when the space cannot be built. */
static inline space *tiling_space_new(const char *values, int size)
{
    static const char *const names[] = {"m0", "m1", "m2", "m3", "k0", "k1", "n0", "n1", "n2", "n3"};
    char params[2048], restr[256];
    size_t len = (size_t)snprintf(params, sizeof params, "[");
    kt_error err;
    for (int i = 0; i < 10; i++)
        len +=
            (size_t)snprintf(params + len, sizeof params - len, "%s{\"name\":\"%s\",\"values\":%s}",
                             i ? "," : "", names[i], values);
    snprintf(params + len, sizeof params - len, "]");
    snprintf(restr, sizeof restr, "[\"m0*m1*m2*m3 == %d\", \"k0*k1 == %d\", \"n0*n1*n2*n3 == %d\"]",
             size, size, size);
    json_t *jp = json_loads(params, 0, NULL), *jr = json_loads(restr, 0, NULL);
    assert_non_null(jp);
    assert_non_null(jr);
    kt_error_clear(&err);
    space *sp = space_new(jp, jr, NULL, NULL, &err);
    json_decref(jp);
    json_decref(jr);
    if (!sp)
        fail_msg("space_new (tiling %d): %s", size, err.message);
    return sp;
}

#endif
