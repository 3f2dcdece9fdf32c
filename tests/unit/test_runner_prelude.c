/* The precompiled prelude of CPU kernels (runner/cpu_prelude.c, issue 32 "compile cheaper"): what
 * cpu_prelude_text takes as a source's prelude (the catalog's kernels, and every way a leading
 * part can stop), and end to end through the built runner: noted, made, used, refused by GCC for a
 * define its headers test, and every binary byte-identical to a --no-pch runner's; the cache bound
 * counting the .gch. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "core/file.h"
#include "runner/runner.h"

#include "runner_test_util.h"

/* ---- what the prelude is ---- */

static void expect_prelude(const char *src, const char *want)
{
    char out[CPU_PRELUDE_MAX];
    size_t n = cpu_prelude_text(src, strlen(src), out, sizeof out);
    if (strcmp(out, want) != 0 || n != strlen(want))
        fail_msg("prelude of\n%s\nis\n%s\nnot\n%s", src, out, want);
}

static void catalog_kernels_preludes(void **state)
{
    (void)state;
    const char *gemm = "#include <stdlib.h>\n#include <string.h>\n"
                       "#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))\n"
                       "#include <immintrin.h>\n#endif\n";
    struct {
        const char *path, *want;
    } k[] = {{"kernels/gemm/cpu.c", gemm},
             {"kernels/conv2d/cpu.c", "#include <stdlib.h>\n"},
             {"kernels/gemm_tiled/cpu.c", "#include <stdlib.h>\n#include <string.h>\n"},
             {"tests/kernels/scale/cpu.c", ""}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        char path[512];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", KT_SOURCE_DIR, k[i].path);
        char *src = kt_file_read_all(path, 1 << 20, &len, NULL);
        assert_non_null(src);
        expect_prelude(src, k[i].want);
        free(src);
    }
}

static void where_the_prelude_stops(void **state)
{
    (void)state;
    /* comments and blanks left out; a trailing comment stays on its line */
    expect_prelude(
        "/* a\n * kernel */\n\n// x\n#  include   <a.h>  // why\n#include<b.h>\nint x;\n",
        "#  include   <a.h>  // why\n#include<b.h>\n");
    /* the source's own files, computed includes */
    expect_prelude("#include <a.h>\n#include \"b.h\"\n#include <c.h>\n", "#include <a.h>\n");
    expect_prelude("#include <a.h>\n#include HEADER\n", "#include <a.h>\n");
    /* a condition on a configuration's define, or on a macro that changes with the place: cut
     * before it (the unit must decide it where the source does) */
    expect_prelude("#include <a.h>\n#if MR > 4\n#include <b.h>\n#endif\n", "#include <a.h>\n");
    expect_prelude("#ifdef PACK\n#include <b.h>\n#endif\n", "");
    expect_prelude("#if __INCLUDE_LEVEL__ == 0\n#include <a.h>\n#endif\n", "");
    expect_prelude("#if __has_include(<a.h>)\n#include <a.h>\n#endif\n", "");
    /* predefined macros, #elif and #else, nested */
    const char *nested =
        "#ifdef __AVX2__\n#include <a.h>\n#elif defined __SSE2__ && __GNUC__ >= 4\n"
        "#if !defined(__FMA__)\n#include <b.h>\n#endif\n#else\n#include <c.h>\n"
        "#endif\n";
    char src[512];
    snprintf(src, sizeof src, "%s#define X 1\n", nested);
    expect_prelude(src, nested);
    /* cut where the conditionals last balanced */
    expect_prelude("#include <a.h>\n#ifdef __AVX2__\n#include <b.h>\nint x;\n", "#include <a.h>\n");
    expect_prelude("#include <a.h>\n#endif\n", "#include <a.h>\n");
    /* what stops it: code, other directives, continued lines, code after a comment */
    expect_prelude("#include <a.h>\n#pragma once\n#include <b.h>\n", "#include <a.h>\n");
    expect_prelude("#include <a.h>\n#if defined(__AVX2__) \\\n && 1\n#include <b.h>\n#endif\n",
                   "#include <a.h>\n");
    expect_prelude("#include <a.h>\n/* c */ int y;\n#include <b.h>\n", "#include <a.h>\n");
    expect_prelude("#include <a.h>\n/* open\n still */ int y;\n", "#include <a.h>\n");
    expect_prelude("#include <a.h> int x;\n", "");
    char nul[] = "#include <a.h>\n#include <b\0.h>\n";
    char out0[64];
    assert_int_equal(cpu_prelude_text(nul, sizeof nul - 1, out0, sizeof out0), 15);
    assert_string_equal(out0, "#include <a.h>\n");
    /* conditionals alone are no prelude; CRLF lines are lines */
    expect_prelude("#ifdef __AVX2__\n#endif\n", "");
    expect_prelude("#include <a.h>\r\n#include <b.h>\r\n", "#include <a.h>\r\n#include <b.h>\r\n");
    /* a prelude longer than the cap: cut at the last balanced line that fits */
    char out[24];
    const char *longer = "#include <aaaa.h>\n#include <bbbb.h>\n";
    assert_int_equal(cpu_prelude_text(longer, strlen(longer), out, sizeof out), 18);
    assert_string_equal(out, "#include <aaaa.h>\n");
}

/* ---- end to end ---- */

/* y = 2*x with a prelude of three system headers (one under a predefined macro), UNROLL times */
static const char PRELUDE_KERNEL[] =
    "/* test kernel with a prelude */\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#if defined(__x86_64__) || defined(__aarch64__)\n"
    "#include <stdint.h>\n"
    "#endif\n"
    "#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
    "int ktune_kernel(float *const *buffers, const long long *problem);\n"
    "int ktune_kernel(float *const *buffers, const long long *problem)\n"
    "{\n"
    "    long long n = problem[0], i = 0;\n"
    "    for (; i + UNROLL <= n; i += UNROLL)\n"
    "        for (int u = 0; u < UNROLL; u++)\n"
    "            buffers[1][i + u] = 2.0f * buffers[0][i + u];\n"
    "    for (; i < n; i++)\n"
    "        buffers[1][i] = 2.0f * buffers[0][i];\n"
    "    return 0;\n"
    "}\n";

/* A compile (or measure) of the prelude kernel, its text sent in "files". */
static json_t *prelude_call(client *c, int id, const char *op, json_t *defines)
{
    char ref[512];
    snprintf(ref, sizeof ref, "%s/tests/kernels/scale/reference.c", KT_SOURCE_DIR);
    size_t len = 0;
    char *ref_text = kt_file_read_all(ref, 1 << 20, &len, NULL);
    assert_non_null(ref_text);
    json_t *req = json_pack(
        "{s:i, s:s, s:s, s:s, s:o, s:[i], s:[{s:s, s:i, s:s}, {s:s, s:i, s:s}], s:{s:s, s:s}, "
        "s:{s:f, s:f}, s:f, s:i, s:i, s:f, s:f, s:f, s:{s:s, s:s}}",
        "id", id, "op", op, "kernel", "prelude", "source", "/test/prelude/cpu.c", "defines",
        defines, "problem", 1000, "buffers", "name", "x", "elements", 1000, "role", "input", "name",
        "y", "elements", 1000, "role", "output", "reference", "kind", "c", "source",
        "/test/prelude/reference.c", "tolerance", "rtol", 1e-6, "atol", 1e-7, "flops", 1000.0,
        "min_repeats", 3, "max_repeats", 10, "min_seconds", 0.0, "max_seconds", 0.5,
        "compile_timeout_s", 60.0, "files", "cpu.c", PRELUDE_KERNEL, "reference.c", ref_text);
    free(ref_text);
    assert_non_null(req);
    json_t *r = client_call_json(c, req, 120000);
    assert_non_null(r);
    const char *st = json_string_value(json_object_get(r, "status"));
    if (!st || strcmp(st, "ok") != 0)
        fail_msg("%s: %s", op, json_dumps(r, 0));
    return r;
}

static const char *prelude_state(json_t *r)
{
    return json_string_value(json_object_get(json_object_get(r, "extras"), "prelude"));
}

static double extra_num(json_t *r, const char *key)
{
    return json_number_value(json_object_get(json_object_get(r, "extras"), key));
}

static char *binary_of(const client *c, json_t *r, size_t *len)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", c->cache,
             json_string_value(json_object_get(json_object_get(r, "extras"), "binary")));
    return kt_file_read_all(path, 64 << 20, len, NULL);
}

static void prelude_is_made_used_and_gives_the_same_binary(void **state)
{
    (void)state;
    client a, b;
    client_init(&a);
    client_init(&b);
    b.no_pch = 1;
    client_start(&a, 0);
    client_start(&b, 0);
    /* first sight: noted, a plain compile; the second precompiles; the third includes it */
    json_t *r[4], *plain[4];
    r[0] = prelude_call(&a, 1, "compile", json_pack("{s:i}", "UNROLL", 1));
    assert_string_equal(prelude_state(r[0]), "noted");
    assert_true(extra_num(r[0], "compile_cpu_ms") > 0);
    assert_int_equal(count_files(a.cache, ".gch", NULL), 0);
    r[1] = prelude_call(&a, 2, "compile", json_pack("{s:i}", "UNROLL", 2));
    assert_string_equal(prelude_state(r[1]), "made");
    assert_true(extra_num(r[1], "prelude_cpu_ms") > 0);
    assert_true(extra_num(r[1], "compile_cpu_ms") > extra_num(r[1], "prelude_cpu_ms"));
    assert_int_equal(count_files(a.cache, ".gch", NULL), 1);
    r[2] = prelude_call(&a, 3, "measure", json_pack("{s:i}", "UNROLL", 3)); /* runs, verifies */
    assert_string_equal(prelude_state(r[2]), "used");
    /* a define the headers test (glibc's features.h: __STRICT_ANSI__): GCC refuses the .gch and
     * reads the header's text, the same unit still */
    r[3] =
        prelude_call(&a, 4, "compile", json_pack("{s:i, s:i}", "UNROLL", 4, "__STRICT_ANSI__", 1));
    assert_string_equal(prelude_state(r[3]), "refused");
    json_t *again = prelude_call(&a, 5, "compile", json_pack("{s:i}", "UNROLL", 2));
    assert_true(json_is_true(json_object_get(json_object_get(again, "extras"), "cached_binary")));
    assert_null(prelude_state(again)); /* nothing compiled */
    json_decref(again);
    /* the same objects as a runner without preludes compiles, under the same names (keys) */
    json_t *defs[4] = {json_pack("{s:i}", "UNROLL", 1), json_pack("{s:i}", "UNROLL", 2),
                       json_pack("{s:i}", "UNROLL", 3),
                       json_pack("{s:i, s:i}", "UNROLL", 4, "__STRICT_ANSI__", 1)};
    for (int i = 0; i < 4; i++) {
        plain[i] = prelude_call(&b, 10 + i, "compile", defs[i]);
        assert_string_equal(prelude_state(plain[i]), "none");
        size_t la = 0, lb = 0;
        char *x = binary_of(&a, r[i], &la), *y = binary_of(&b, plain[i], &lb);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(la, lb);
        assert_memory_equal(x, y, la);
        free(x);
        free(y);
        printf("UNROLL=%d: compile CPU %.0f ms (%s) against %.0f ms plain, %zu bytes identical\n",
               i + 1, extra_num(r[i], "compile_cpu_ms"), prelude_state(r[i]),
               extra_num(plain[i], "compile_cpu_ms"), la);
        json_decref(r[i]);
        json_decref(plain[i]);
    }
    assert_int_equal(count_files(b.cache, ".gch", NULL), 0);
    assert_int_equal(count_files(b.cache, ".h", NULL), 0);
    assert_int_equal(client_stop(&a, 5000), 0);
    assert_int_equal(client_stop(&b, 5000), 0);
    client *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        close(both[i]->to);
        close(both[i]->from);
        remove_tree(both[i]->cache);
        free(both[i]->buf);
    }
}

/* The cache bound counts a precompiled prelude (24 MiB for gemm's) like a binary, least recently
 * used first, and never the one a request names; its small header stays (the mark of a prelude
 * seen: the next compile makes the .gch again). */
static void cache_bound_counts_precompiled_preludes(void **state)
{
    (void)state;
    char dir[] = "/tmp/ktune-prelude-bound-XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    const char *names[] = {"pch-a.h.gch", "pch-a.h", "b.so", "pch-c.h.gch"};
    write_aged_files(dir, names, 4, 1000);
    /* 3000 bytes of binaries (the header does not count) within 3000 */
    assert_int_equal(cpu_cache_bound(dir, 3000, NULL, 0), 0);
    /* 3000 > 2000: down to 1800, the oldest first, pch-c kept by name */
    const char *keep[] = {"pch-c.h.gch"};
    assert_int_equal(cpu_cache_bound(dir, 2000, keep, 1), 2);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        assert_int_equal(access(path, F_OK) == 0, i == 1 || i == 3);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_kernels_preludes),
        cmocka_unit_test(where_the_prelude_stops),
        cmocka_unit_test(cache_bound_counts_precompiled_preludes),
        cmocka_unit_test(prelude_is_made_used_and_gives_the_same_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
