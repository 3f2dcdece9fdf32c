/* test_ktune_table — the single-header reader of the deploy table (clients/c/ktune_table.h), built
 * as C99 with -Wall -Wextra -Werror -pedantic: parsing, exact and nearest lookups, the newest
 * version, the configuration accessors, and refusals of malformed tables and problems. With a
 * folder as argv[1] it also writes a table there and loads it from the file; with a table file and
 * a lookup as argv[1..4] (kernel, device class, problem JSON) it prints the answer as one line, for
 * the integration test that compares it with the Python client. */
#define KTUNE_TABLE_IMPLEMENTATION
#include "ktune_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define HEAD                                                                                       \
    "# ktune-table 1\n"                                                                            \
    "kernel\tdevice_class\tkernel_hash\ttoolchain\torigin\ttime_ms\tproblem\tconfig\tmeasured_"    \
    "at\n"

static const char table_text[] =
    HEAD "gemm\tcpu:X:256\tnew1\tgcc 12\tmeasured\t0.5\t{\"K\":64,\"M\":64,\"N\":64}\t"
         "{\"MR\":6,\"NR\":16,\"LOOP\":true,\"scale\":0.5,\"name\":\"caf\\u00e9\\t\"}\t"
         "2026-11-22T04:21:10+00:00\n"
         "# a comment line\n"
         "gemm\tcpu:X:256\tnew1\tgcc 12\tmeasured\t4.25\t{\"K\":256,\"M\":256,\"N\":256}\t"
         "{\"MR\":8,\"NR\":32}\t2026-11-22T04:20:10+00:00\n"
         "gemm\tcpu:X:256\told0\tgcc 12\tmeasured\t9\t{\"K\":128,\"M\":128,\"N\":128}\t"
         "{\"MR\":4,\"NR\":8}\t2026-11-21T04:20:10+00:00\n"
         "conv\treplay:A4000\th\trecorded\timported\t1.29\t{\"problem_size\":[4096,4096]}\t"
         "{\"block_size_x\":16}\t2026-11-20T00:00:00+00:00\n"
         "conv\treplay:A4000\th\trecorded\tmeasured\t2.5\t{\"problem_size\":[1024,4096]}\t"
         "{\"block_size_x\":32}\t2026-11-19T00:00:00+00:00\n"
         "mode\tc\th\tt\tmeasured\t1\t{\"kind\":\"fast\",\"n\":10}\t{\"V\":1}\tx\n";

static double ld(double a, double b)
{
    return log1p(a) - log1p(b);
}

static void test_lookups(void)
{
    char err[256] = "";
    ktune_match m;
    long long v;
    double d;
    char s[16];
    ktune_table *t = ktune_table_parse(table_text, strlen(table_text), err, sizeof err);
    CHECK(t != NULL);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(ktune_table_size(t) == 6);

    /* Exact: the same problem in another member order, numbers as numbers. */
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"N\":64.0,\"M\":64,\"K\":64}", NULL, &m,
                             err, sizeof err) == 1);
    CHECK(m.exact == 1 && m.distance == 0.0 && m.time_ms == 0.5);
    CHECK(strcmp(m.kernel_hash, "new1") == 0 && strcmp(m.origin, "measured") == 0);
    CHECK(ktune_match_int(&m, "MR", &v) == 0 && v == 6);
    CHECK(ktune_match_int(&m, "LOOP", &v) == 0 && v == 1);
    CHECK(ktune_match_int(&m, "scale", &v) == -1); /* 0.5 is not integral */
    CHECK(ktune_match_double(&m, "scale", &d) == 0 && d == 0.5);
    CHECK(ktune_match_int(&m, "nope", &v) == -1);
    CHECK(ktune_match_string(&m, "name", s, sizeof s) == 0 && strcmp(s, "caf\xc3\xa9\t") == 0);
    CHECK(ktune_match_string(&m, "name", s, 3) == -1);
    CHECK(ktune_match_string(&m, "MR", s, sizeof s) == -1);

    /* Nearest within the newest version (new1): 200 is nearer 256 than 64; the older version's 128
     * is never offered. */
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"K\":200,\"M\":200,\"N\":200}", NULL, &m,
                             err, sizeof err) == 1);
    CHECK(m.exact == 0 && strcmp(m.problem, "{\"K\":256,\"M\":256,\"N\":256}") == 0);
    CHECK(fabs(m.distance - sqrt(3 * ld(200, 256) * ld(200, 256))) < 1e-12);
    CHECK(ktune_match_int(&m, "MR", &v) == 0 && v == 8);
    /* A kernel hash asks for that version. */
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"K\":200,\"M\":200,\"N\":200}", "old0", &m,
                             err, sizeof err) == 1);
    CHECK(m.exact == 0 && strcmp(m.kernel_hash, "old0") == 0);
    CHECK(ktune_match_int(&m, "MR", &v) == 0 && v == 4);

    /* Lists element by element; an import is an answer too (its origin says so). */
    CHECK(ktune_table_lookup(t, "conv", "replay:A4000", "{\"problem_size\":[4096,4096]}", NULL, &m,
                             err, sizeof err) == 1);
    CHECK(m.exact == 1 && strcmp(m.origin, "imported") == 0);
    CHECK(ktune_table_lookup(t, "conv", "replay:A4000", "{\"problem_size\":[2048,4096]}", NULL, &m,
                             err, sizeof err) == 1);
    CHECK(m.exact == 0 && fabs(m.distance - fabs(ld(2048, 1024))) < 1e-12);
    /* A list of another length, other names, other strings: nothing comparable. */
    CHECK(ktune_table_lookup(t, "conv", "replay:A4000", "{\"problem_size\":[4096]}", NULL, &m, err,
                             sizeof err) == 0);
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"M\":64,\"N\":64}", NULL, &m, err,
                             sizeof err) == 0);
    CHECK(ktune_table_lookup(t, "mode", "c", "{\"kind\":\"slow\",\"n\":10}", NULL, &m, err,
                             sizeof err) == 0);
    CHECK(ktune_table_lookup(t, "mode", "c", "{\"kind\":\"fast\",\"n\":12}", NULL, &m, err,
                             sizeof err) == 1);
    CHECK(m.exact == 0);
    /* Unknown kernel or class. */
    CHECK(ktune_table_lookup(t, "gemm", "cpu:Y:256", "{}", NULL, &m, err, sizeof err) == 0);
    CHECK(ktune_table_lookup(t, "nope", "cpu:X:256", "{}", NULL, &m, err, sizeof err) == 0);
    /* A problem that is not a JSON object. */
    err[0] = '\0';
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"M\":}", NULL, &m, err, sizeof err) == -1);
    CHECK(strstr(err, "the problem: ") != NULL);
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "[1]", NULL, &m, err, sizeof err) == -1);
    CHECK(strstr(err, "not a JSON object") != NULL);
    ktune_table_free(t);
}

static void expect_refused(const char *text, const char *why)
{
    char err[256] = "";
    ktune_table *t = ktune_table_parse(text, strlen(text), err, sizeof err);
    CHECK(t == NULL);
    if (!strstr(err, why)) {
        fprintf(stderr, "expected '%s' in '%s'\n", why, err);
        failures++;
    }
    ktune_table_free(t);
}

static void test_refusals(void)
{
    static const char crlf[] = "# ktune-table 1\r\nkernel\tdevice_class\tkernel_hash\ttoolchain\t"
                               "origin\ttime_ms\tproblem\tconfig\tmeasured_at\r\n"
                               "k\tc\th\tt\to\t1\t{}\t{}\tx\r\n";
    char err[64];
    ktune_table *t;
    expect_refused("", "fewer than two lines");
    expect_refused("# ktune-table 2\n", "first line must be");
    expect_refused("# ktune-table 1\nkernel\tdevice_class\n", "line 2: the columns");
    expect_refused(HEAD "a\tb\tc\n", "line 3: not 9 tab-separated fields");
    expect_refused(HEAD "a\tb\tc\td\te\tf\tg\th\ti\tj\n", "line 3: not 9");
    expect_refused(HEAD "a\tb\tc\td\te\tslow\t{}\t{}\tx\n", "time_ms 'slow'");
    expect_refused(HEAD "a\tb\tc\td\te\t1\t{\"M\":1,}\t{}\tx\n", "of problem");
    expect_refused(HEAD "a\tb\tc\td\te\t1\t{}\t[1]\tx\n", "not a JSON object of config");
    expect_refused(HEAD "a\tb\tc\td\te\t1\t{}\t{\"s\":\"\\q\"}\tx\n", "a bad escape");
    /* An empty table loads; CRLF line ends are taken. */
    t = ktune_table_parse(HEAD, strlen(HEAD), err, sizeof err);
    CHECK(t != NULL && ktune_table_size(t) == 0);
    ktune_table_free(t);
    t = ktune_table_parse(crlf, strlen(crlf), err, sizeof err);
    CHECK(t != NULL && ktune_table_size(t) == 1);
    ktune_table_free(t);
    CHECK(ktune_table_load("/nonexistent/ktune.tsv", err, sizeof err) == NULL);
    CHECK(strstr(err, "cannot be opened") != NULL);
}

static void test_file(const char *folder)
{
    char path[1024], err[256];
    ktune_match m;
    FILE *f;
    ktune_table *t;
    snprintf(path, sizeof path, "%s/ktune-table-test.tsv", folder);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(table_text, f);
    fclose(f);
    t = ktune_table_load(path, err, sizeof err);
    CHECK(t != NULL && ktune_table_size(t) == 6);
    CHECK(ktune_table_lookup(t, "gemm", "cpu:X:256", "{\"K\":64,\"M\":64,\"N\":64}", NULL, &m, err,
                             sizeof err) == 1 &&
          m.exact);
    ktune_table_free(t);
    remove(path);
}

/* ktune_table_test FILE KERNEL CLASS PROBLEM: one line "exact|nearest <distance> <problem>
 * <config>", "none", or the error (exit 1). */
static int lookup_command(char **argv)
{
    char err[512];
    ktune_match m;
    int rc;
    ktune_table *t = ktune_table_load(argv[1], err, sizeof err);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    rc = ktune_table_lookup(t, argv[2], argv[3], argv[4], NULL, &m, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    else if (rc == 0)
        printf("none\n");
    else
        printf("%s %.17g %s %s %s\n", m.exact ? "exact" : "nearest", m.distance, m.kernel_hash,
               m.problem, m.config);
    ktune_table_free(t);
    return rc < 0;
}

int main(int argc, char **argv)
{
    if (argc == 5)
        return lookup_command(argv);
    test_lookups();
    test_refusals();
    if (argc == 2)
        test_file(argv[1]);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ktune_table: all checks passed\n");
    return 0;
}
