/* Unit tests of catalog/kernel_files (issue 27, kernels are data): names and caps of inline files,
 * the compiled closure (quoted includes of the kernel's own files, transitively), the version (any
 * compiled byte or spec byte changes it, a file not compiled does not, includes count), the folder
 * form equal to the inline form, the folder stamp, and the content-addressed copy on disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/kernel_files.h"

static kernel_files *of(const char *const *pairs)
{
    kernel_files *f = kernel_files_new();
    kt_error e;
    for (int i = 0; pairs[i]; i += 2)
        assert_int_equal(kernel_files_add(f, pairs[i], pairs[i + 1], strlen(pairs[i + 1]), &e), 0);
    return f;
}

static void version_of(const kernel_files *f, const char *spec, char out[KFILES_VERSION_LEN + 1])
{
    const char *roots[] = {"cpu.c"};
    kt_error e;
    if (kernel_files_version(f, spec, roots, 1, out, &e) < 0)
        fail_msg("%s", e.message);
    assert_int_equal(strlen(out), KFILES_VERSION_LEN);
}

static void names_and_caps(void **state)
{
    (void)state;
    kernel_files *f = kernel_files_new();
    kt_error e;
    assert_int_equal(kernel_files_add(f, "../x.c", "a", 1, &e), -1);
    assert_non_null(strstr(e.message, "plain file name"));
    assert_int_equal(kernel_files_add(f, ".hidden", "a", 1, &e), -1);
    assert_int_equal(kernel_files_add(f, "a/b.c", "a", 1, &e), -1);
    assert_int_equal(kernel_files_add(f, "cpu.c", "a\0b", 3, &e), -1);
    assert_non_null(strstr(e.message, "NUL"));
    assert_int_equal(kernel_files_add(f, "cpu.c", "int x;", 6, &e), 0);
    assert_int_equal(kernel_files_add(f, "cpu.c", "int y;", 6, &e), -1);
    assert_non_null(strstr(e.message, "twice"));
    size_t len = 0;
    assert_string_equal(kernel_files_get(f, "cpu.c", &len), "int x;");
    assert_int_equal(len, 6);
    assert_null(kernel_files_get(f, "nope.c", NULL));
    kernel_files_free(f);

    /* Inline files: each at most KFILES_MAX_INLINE, the field named in the error. */
    char *big = malloc(KFILES_MAX_INLINE + 2);
    memset(big, 'x', KFILES_MAX_INLINE + 1);
    big[KFILES_MAX_INLINE + 1] = '\0';
    json_t *o = json_pack("{s:s, s:s}", "cpu.c", "int x;", "big.h", big);
    free(big);
    assert_null(kernel_files_from_json(o, "files", &e));
    assert_int_equal(e.code, KT_ERR_BODY_TOO_LARGE);
    assert_non_null(strstr(e.message, "files.big.h"));
    json_decref(o);
    o = json_pack("{s:i}", "cpu.c", 3);
    assert_null(kernel_files_from_json(o, "files", &e));
    assert_non_null(strstr(e.message, "files.cpu.c: must be the file's text"));
    json_decref(o);
    o = json_pack("{s:s}", "bad name.c", "x");
    assert_null(kernel_files_from_json(o, "files", &e));
    assert_non_null(strstr(e.message, "files.bad name.c"));
    json_decref(o);
}

static void closure_resolves_includes(void **state)
{
    (void)state;
    const char *pairs[] = {"cpu.c",    "#include <stdio.h>\n  # include \"tile.h\"\nint main;\n",
                           "tile.h",   "#include \"inner.h\"\n#include \"missing.h\"\n",
                           "inner.h",  "#include \"tile.h\"\n", /* a cycle: each file once */
                           "unused.h", "int unused;\n",
                           NULL};
    kernel_files *f = of(pairs);
    const char *roots[] = {"cpu.c"}, *out[KFILES_MAX_INCLUDES];
    kt_error e;
    int n = kernel_files_closure(f, roots, 1, out, &e);
    assert_int_equal(n, 3);
    assert_string_equal(out[0], "cpu.c");
    assert_string_equal(out[1], "inner.h");
    assert_string_equal(out[2], "tile.h");
    const char *bad[] = {"nope.c"};
    assert_int_equal(kernel_files_closure(f, bad, 1, out, &e), -1);
    assert_non_null(strstr(e.message, "nope.c"));
    kernel_files_free(f);
}

static void any_compiled_byte_changes_the_version(void **state)
{
    (void)state;
    const char *base[] = {
        "cpu.c", "#include \"tile.h\"\nint k;\n", "tile.h", "#define T 4\n", "notes.txt", "hello",
        NULL};
    char v0[KFILES_VERSION_LEN + 1], v[KFILES_VERSION_LEN + 1];
    kernel_files *f = of(base);
    version_of(f, "{\"name\":\"k\"}", v0);
    version_of(f, "{\"name\":\"k\"}", v);
    assert_string_equal(v0, v); /* stable */
    version_of(f, "{\"name\":\"k2\"}", v);
    assert_string_not_equal(v0, v); /* the spec */
    kernel_files_free(f);

    const char *included[] = {
        "cpu.c", "#include \"tile.h\"\nint k;\n", "tile.h", "#define T 8\n", "notes.txt", "hello",
        NULL};
    f = of(included);
    version_of(f, "{\"name\":\"k\"}", v);
    assert_string_not_equal(v0, v); /* a byte of an included file */
    kernel_files_free(f);

    const char *source[] = {
        "cpu.c", "#include \"tile.h\"\nint k; \n", "tile.h", "#define T 4\n", "notes.txt", "hello",
        NULL};
    f = of(source);
    version_of(f, "{\"name\":\"k\"}", v);
    assert_string_not_equal(v0, v); /* a byte of the source */
    kernel_files_free(f);

    const char *other[] = {
        "cpu.c", "#include \"tile.h\"\nint k;\n", "tile.h", "#define T 4\n", "notes.txt", "changed",
        NULL};
    f = of(other);
    version_of(f, "{\"name\":\"k\"}", v);
    assert_string_equal(v0, v); /* a file that is not compiled is not part of it */
    kernel_files_free(f);

    /* The boundaries between files count: moving a byte from one file to the next changes it. */
    const char *a[] = {"cpu.c", "#include \"tile.h\"\nint k;\n", "tile.h", "ab", NULL};
    const char *b[] = {"cpu.c", "#include \"tile.h\"\nint k;\na", "tile.h", "b", NULL};
    f = of(a);
    version_of(f, "{}", v0);
    kernel_files_free(f);
    f = of(b);
    version_of(f, "{}", v);
    kernel_files_free(f);
    assert_string_not_equal(v0, v);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(path, 0700);
    return remove(path);
}

static void chmod_all(const char *dir)
{
    /* read-only folders are made writable first, so that nftw can remove their files */
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void folder_and_copy(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_kfiles_XXXXXX", path[PATH_MAX], copy[PATH_MAX];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    const char *pairs[] = {"cpu.c", "#include \"t.h\"\nint k;\n", "t.h", "#define T 1\n", NULL};
    for (int i = 0; pairs[i]; i += 2) {
        char p[PATH_MAX + 80];
        snprintf(p, sizeof p, "%s/%s", path, pairs[i]);
        FILE *fp = fopen(p, "w");
        assert_non_null(fp);
        fputs(pairs[i + 1], fp);
        fclose(fp);
    }
    kt_error e;
    unsigned long long s0 = kernel_files_dir_stamp(path);
    assert_true(s0 != 0);
    assert_true(kernel_files_dir_stamp(path) == s0);
    kernel_files *from_dir = kernel_files_from_dir(path, &e);
    assert_non_null(from_dir);
    kernel_files *inline_ = of(pairs);
    char v1[KFILES_VERSION_LEN + 1], v2[KFILES_VERSION_LEN + 1];
    version_of(from_dir, "{}", v1);
    version_of(inline_, "{}", v2);
    assert_string_equal(v1, v2); /* the same bytes are the same version, folder or not */

    /* The copy: the compiled files, read-only, under <root>/<version>; a second call finds it. */
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/sources", dir);
    const char *names[] = {"cpu.c", "t.h"};
    assert_int_equal(kernel_files_materialise(from_dir, names, 2, root, v1, copy, sizeof copy, &e),
                     0);
    char expect[PATH_MAX + 64];
    snprintf(expect, sizeof expect, "%s/%s", root, v1);
    assert_string_equal(copy, expect);
    kernel_files *back = kernel_files_from_dir(copy, &e);
    assert_non_null(back);
    assert_string_equal(kernel_files_get(back, "t.h", NULL), "#define T 1\n");
    assert_int_equal(kernel_files_count(back), 2);
    kernel_files_free(back);
    struct stat st;
    assert_int_equal(stat(copy, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    /* the root is private (issue 27): runners get the texts in their requests, not from here */
    assert_int_equal(stat(root, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(kernel_files_materialise(from_dir, names, 2, root, v1, copy, sizeof copy, &e),
                     0);

    /* An edited file changes the folder's stamp. */
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s/t.h", path);
    FILE *fp = fopen(p, "w");
    fputs("#define T 22\n", fp);
    fclose(fp);
    assert_true(kernel_files_dir_stamp(path) != s0);

    kernel_files_free(from_dir);
    kernel_files_free(inline_);
    chmod_all(dir);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_caps),
        cmocka_unit_test(closure_resolves_includes),
        cmocka_unit_test(any_compiled_byte_changes_the_version),
        cmocka_unit_test(folder_and_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
