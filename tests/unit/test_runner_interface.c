/* Tests of the kernel interface of issue 27 in ktune-runner (PROTOCOL.md, kernels/README.md):
 * buffers of every dtype filled by each init and compared with their tolerances, scalar and float
 * problem arguments, the generated call of a natural C signature, the verify kinds (reference,
 * default, answer, none), OpenMP thread counts and uploaded data (asked for with need_data, then
 * held), through the runner's process interface (the built runner, KT_RUNNER_PATH) with kernels
 * written into a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/sha256.h"
#include "runner/runner.h"

#include "runner_test_util.h"

/* Sends req; a measure without "tolerance" gets an exact one: every buffer here is compared
 * exactly unless it says otherwise. */
static json_t *call_exact(client *c, json_t *req, int timeout_ms)
{
    if (!json_object_get(req, "tolerance"))
        json_object_set_new(req, "tolerance", json_pack("{s:f, s:f}", "rtol", 0.0, "atol", 0.0));
    return client_call_json(c, req, timeout_ms);
}

typedef struct fixture {
    client c;
    char dir[64]; /* kernels and data files */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    client_init(&f->c);
    snprintf(f->dir, sizeof f->dir, "/tmp/ktune-iface-XXXXXX");
    if (!mkdtemp(f->dir) || chmod(f->dir, 0755) < 0) /* the runner runs as another user */
        return -1;
    client_start(&f->c, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    client *c = &f->c;
    if (c->pid > 0 && !c->reaped) {
        kill(c->pid, SIGKILL);
        client_stop(c, 1000);
    }
    if (c->to >= 0)
        close(c->to);
    if (c->from >= 0)
        close(c->from);
    remove_tree(c->cache);
    remove_tree(f->dir);
    free(c->buf);
    free(f);
    return 0;
}

/* Writes name in the fixture's folder; path (cap 256) gets its absolute path. */
static void put_file(const fixture *f, const char *name, const void *bytes, size_t n, char *path)
{
    snprintf(path, 256, "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, n, fp), n);
    fclose(fp);
}

static const char *status_of(const json_t *reply)
{
    const char *s = json_string_value(json_object_get(reply, "status"));
    if (!s)
        fail_msg("reply without status: %s", json_dumps(reply, 0));
    return s;
}

static void expect_status(const json_t *reply, const char *want)
{
    if (strcmp(status_of(reply), want) != 0)
        fail_msg("status %s, wanted %s: %s", status_of(reply), want, json_dumps(reply, 0));
}

static const char *extra_str(const json_t *reply, const char *key)
{
    return json_string_value(json_object_get(json_object_get(reply, "extras"), key));
}

/* A kernel copying buffer i to buffer 9 + i for each of the nine dtypes (raw ABI; one memcpy per
 * pair), except that DAMAGE (a define, 0..9) changes element 3 of output DAMAGE-1 by 1 unit. */
static const char COPY_KERNEL[] =
    "#include <string.h>\n"
    "#include <stdint.h>\n"
    "static const int size[9] = {4, 2, 2, 8, 1, 2, 4, 8, 1};\n"
    "int ktune_kernel(float *const *b, const long long *p) {\n"
    "    long long n = p[0];\n"
    "    for (int i = 0; i < 9; i++) memcpy(b[9 + i], b[i], (size_t)(n * size[i]));\n"
    "#if DAMAGE == 1\n"
    "    ((float *)b[9])[3] += 1;\n"
    "#elif DAMAGE == 2\n"
    "    ((uint16_t *)b[10])[3] ^= 0x0400;\n" /* f16: the exponent's low bit */
    "#elif DAMAGE == 3\n"
    "    ((uint16_t *)b[11])[3] ^= 0x0080;\n" /* bf16: likewise */
    "#elif DAMAGE == 4\n"
    "    ((double *)b[12])[3] += 1;\n"
    "#elif DAMAGE == 5\n"
    "    ((int8_t *)b[13])[3] += 1;\n"
    "#elif DAMAGE == 6\n"
    "    ((int16_t *)b[14])[3] += 1;\n"
    "#elif DAMAGE == 7\n"
    "    ((int32_t *)b[15])[3] += 1;\n"
    "#elif DAMAGE == 8\n"
    "    ((int64_t *)b[16])[3] += 1;\n"
    "#elif DAMAGE == 9\n"
    "    ((uint8_t *)b[17])[3] += 1;\n"
    "#endif\n"
    "    return 0;\n"
    "}\n";

static const char *const DTYPES[9] = {"f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8"};

/* The copy kernel's request: n elements per buffer, inputs with init (NULL: the default). */
static json_t *copy_request(const char *source, int damage, json_t *init, json_t *verify)
{
    json_t *bufs = json_array();
    for (int i = 0; i < 18; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s_%s", i < 9 ? "in" : "out", DTYPES[i % 9]);
        json_t *b = json_pack("{s:s, s:i, s:s, s:s}", "name", name, "elements", 64, "role",
                              i < 9 ? "input" : "output", "dtype", DTYPES[i % 9]);
        if (i < 9 && init)
            json_object_set(b, "init", init);
        json_array_append_new(bufs, b);
    }
    json_decref(init);
    return json_pack("{s:i, s:s, s:s, s:s, s:{s:i}, s:[i], s:o, s:o, s:{s:f, s:f}, s:i, s:i, "
                     "s:f}",
                     "id", 1, "op", "measure", "kernel", "copy", "source", source, "defines",
                     "DAMAGE", damage, "problem", 64, "buffers", bufs, "verify", verify,
                     "tolerance", "rtol", 0.0, "atol", 0.0, "min_repeats", 1, "max_repeats", 2,
                     "min_seconds", 0.0);
}

/* Every dtype is filled, kept read-only and compared: an unchanged copy verifies against the
 * default configuration, and one unit off in any one output is wrong_result naming it. */
static void every_dtype_is_compared(void **state)
{
    fixture *f = *state;
    char src[256];
    put_file(f, "copy.c", COPY_KERNEL, strlen(COPY_KERNEL), src);
    for (int damage = 0; damage <= 9; damage++) {
        json_t *verify = json_pack("{s:s, s:{s:i}}", "kind", "default", "defines", "DAMAGE", 0);
        json_t *r = call_exact(&f->c, copy_request(src, damage, NULL, verify), 60000);
        if (damage == 0) {
            expect_status(r, "ok");
            assert_string_equal(extra_str(r, "verified"), "default");
        } else {
            char want[16];
            snprintf(want, sizeof want, "out_%s", DTYPES[damage - 1]);
            expect_status(r, "wrong_result");
            assert_string_equal(extra_str(r, "first_bad_buffer"), want);
            assert_int_equal(json_integer_value(
                                 json_object_get(json_object_get(r, "extras"), "first_bad_index")),
                             3);
        }
        json_decref(r);
    }
}

/* The reference of the copy kernel: the same copy through ktune_reference. */
static const char COPY_REFERENCE[] =
    "#include <string.h>\n"
    "static const int size[9] = {4, 2, 2, 8, 1, 2, 4, 8, 1};\n"
    "int ktune_reference(float *const *b, const long long *p) {\n"
    "    for (int i = 0; i < 9; i++) memcpy(b[9 + i], b[i], (size_t)(p[0] * size[i]));\n"
    "    return 0;\n"
    "}\n";

/* verify "reference" with a C reference over buffers of every dtype. */
static void reference_sees_every_dtype(void **state)
{
    fixture *f = *state;
    char src[256], ref[256];
    put_file(f, "copy.c", COPY_KERNEL, strlen(COPY_KERNEL), src);
    put_file(f, "ref.c", COPY_REFERENCE, strlen(COPY_REFERENCE), ref);
    for (int damage = 0; damage <= 2; damage += 2) {
        json_t *req = copy_request(src, damage, NULL, json_pack("{s:s}", "kind", "reference"));
        json_object_set_new(req, "reference", json_pack("{s:s, s:s}", "kind", "c", "source", ref));
        json_t *r = call_exact(&f->c, req, 60000);
        expect_status(r, damage ? "wrong_result" : "ok");
        assert_string_equal(extra_str(r, "verified"), "reference");
        if (damage)
            assert_string_equal(extra_str(r, "first_bad_buffer"), "out_f16");
        json_decref(r);
    }
}

/* The raw ABI's problem words: an integer argument, a float argument's double bits, then the
 * scalars (f64 as a double's bits, i32 as its value). */
static const char WORDS_KERNEL[] =
    "#include <string.h>\n"
    "int ktune_kernel(float *const *b, const long long *p) {\n"
    "    double a, s;\n"
    "    memcpy(&a, &p[1], sizeof a);\n"
    "    memcpy(&s, &p[2], sizeof s);\n"
    "    b[0][0] = 1;\n"
    "    return p[0] == 5 && a == 0.25 && s == -1.5 && p[3] == 7 ? 0 : 1;\n"
    "}\n";

static void raw_abi_carries_floats_and_scalars(void **state)
{
    fixture *f = *state;
    char src[256];
    put_file(f, "words.c", WORDS_KERNEL, strlen(WORDS_KERNEL), src);
    for (int right = 0; right < 2; right++) {
        json_t *req = json_pack(
            "{s:i, s:s, s:s, s:s, s:[i, f], s:[{s:s, s:i, s:s}], s:[{s:s, s:s, s:f}, {s:s, s:s, "
            "s:i}], s:{s:s}, s:i, s:i}",
            "id", 7, "op", "measure", "kernel", "words", "source", src, "problem", 5,
            right ? 0.25 : 0.5, "buffers", "name", "o", "elements", 1, "role", "output", "scalars",
            "name", "alpha", "type", "f64", "value", -1.5, "name", "k", "type", "i32", "value", 7,
            "verify", "kind", "none", "min_repeats", 1, "max_repeats", 1);
        json_t *r = call_exact(&f->c, req, 60000);
        expect_status(r, right ? "ok" : "invalid");
        json_decref(r);
    }
}

/* Each deterministic init gives known values: an answer file per output holds them (raw
 * little-endian bytes of its dtype), and the copy verifies against it. */
static void inits_fill_known_values(void **state)
{
    fixture *f = *state;
    char src[256], path[256];
    put_file(f, "copy.c", COPY_KERNEL, strlen(COPY_KERNEL), src);
    static const char *const kinds[] = {"iota", "constant", "zeros", "file"};
    for (int k = 0; k < 4; k++) {
        json_t *answers = json_object();
        json_t *init = NULL;
        for (int d = 0; d < 9; d++) {
            kt_dtype t = (kt_dtype)kt_dtype_parse(DTYPES[d]);
            unsigned char bytes[64 * 8];
            for (int i = 0; i < 64; i++)
                kt_dtype_set(t, bytes, i, k == 0 ? i : k == 1 ? 7.0 : k == 2 ? 0.0 : 100 - i);
            char name[32];
            snprintf(name, sizeof name, "%s_%d.bin", DTYPES[d], k);
            put_file(f, name, bytes, 64 * kt_dtype_size(t), path);
            char out[16];
            snprintf(out, sizeof out, "out_%s", DTYPES[d]);
            json_object_set_new(answers, out, json_string(path));
        }
        if (k == 3) {
            /* one file per buffer: the request names each input's own */
            json_t *verify = json_pack("{s:s, s:o}", "kind", "answer", "buffers", answers);
            json_t *req = copy_request(src, 0, NULL, verify);
            json_t *bufs = json_object_get(req, "buffers");
            for (int d = 0; d < 9; d++) {
                char name[160];
                snprintf(name, sizeof name, "%s/%s_%d.bin", f->dir, DTYPES[d], k);
                json_object_set_new(json_array_get(bufs, (size_t)d), "init",
                                    json_pack("{s:s, s:s}", "kind", "file", "file", name));
            }
            json_t *r = call_exact(&f->c, req, 60000);
            expect_status(r, "ok");
            assert_string_equal(extra_str(r, "verified"), "answer");
            json_decref(r);
            continue;
        }
        init = k == 1 ? json_pack("{s:s, s:f}", "kind", "constant", "value", 7.0)
                      : json_pack("{s:s}", "kind", kinds[k]);
        json_t *verify = json_pack("{s:s, s:o}", "kind", "answer", "buffers", answers);
        json_t *r = call_exact(&f->c, copy_request(src, 0, init, verify), 60000);
        expect_status(r, "ok");
        json_decref(r);
        /* the answer must be right: iota against the constants' answers fails */
    }
    json_t *answers = json_object();
    for (int d = 0; d < 9; d++) {
        char out[16], name[256];
        snprintf(out, sizeof out, "out_%s", DTYPES[d]);
        snprintf(name, sizeof name, "%s/%s_1.bin", f->dir, DTYPES[d]);
        json_object_set_new(answers, out, json_string(name));
    }
    json_t *r =
        call_exact(&f->c,
                   copy_request(src, 0, json_pack("{s:s}", "kind", "iota"),
                                json_pack("{s:s, s:o}", "kind", "answer", "buffers", answers)),
                   60000);
    expect_status(r, "wrong_result");
    json_decref(r);
    /* a file of the wrong size: the problem cannot be set up */
    put_file(f, "short.bin", "abc", 3, path);
    json_t *req = copy_request(src, 0, json_pack("{s:s, s:s}", "kind", "file", "file", path),
                               json_pack("{s:s}", "kind", "none"));
    r = call_exact(&f->c, req, 60000);
    expect_status(r, "invalid");
    assert_non_null(strstr(extra_str(r, "reason"), "init file"));
    json_decref(r);
}

/* A kernel checking its inputs' ranges: uniform within [min, max], normal around its mean. */
static const char RANGE_KERNEL[] =
    "#include <stdint.h>\n"
    "#include <math.h>\n"
    "int ktune_kernel(float *const *b, const long long *p) {\n"
    "    const double *u = (const double *)b[0]; const int8_t *q = (const int8_t *)b[1];\n"
    "    const float *g = b[2]; double sum = 0;\n"
    "    int lo8 = 127, hi8 = -128;\n"
    "    for (long long i = 0; i < p[0]; i++) {\n"
    "        if (u[i] < 2.0 || u[i] > 3.0) return 1;\n"
    "        if (q[i] < -3 || q[i] > 3) return 2;\n"
    "        lo8 = q[i] < lo8 ? q[i] : lo8; hi8 = q[i] > hi8 ? q[i] : hi8;\n"
    "        sum += g[i];\n"
    "    }\n"
    "    if (lo8 != -3 || hi8 != 3) return 3;\n" /* every integer of the range is drawn */
    "    if (fabs(sum / p[0] - 10.0) > 0.2) return 4;\n"
    "    b[3][0] = 1;\n"
    "    return 0;\n"
    "}\n";

static void random_inits_stay_in_range(void **state)
{
    fixture *f = *state;
    char src[256];
    put_file(f, "range.c", RANGE_KERNEL, strlen(RANGE_KERNEL), src);
    json_t *req = json_pack(
        "{s:i, s:s, s:s, s:s, s:[i], s:[{s:s, s:i, s:s, s:s, s:{s:s, s:f, s:f}}, {s:s, s:i, s:s, "
        "s:s, s:{s:s, s:f, s:f}}, {s:s, s:i, s:s, s:{s:s, s:f, s:f}}, {s:s, s:i, s:s}], "
        "s:{s:s}, s:i, s:i}",
        "id", 2, "op", "measure", "kernel", "range", "source", src, "problem", 4096, "buffers",
        "name", "u", "elements", 4096, "role", "input", "dtype", "f64", "init", "kind", "uniform",
        "min", 2.0, "max", 3.0, "name", "q", "elements", 4096, "role", "input", "dtype", "i8",
        "init", "kind", "uniform", "min", -3.5, "max", 3.5, "name", "g", "elements", 4096, "role",
        "input", "init", "kind", "normal", "mean", 10.0, "std", 1.0, "name", "o", "elements", 1,
        "role", "output", "verify", "kind", "none", "min_repeats", 1, "max_repeats", 1);
    json_t *r = call_exact(&f->c, req, 60000);
    expect_status(r, "ok");
    assert_string_equal(extra_str(r, "verified"), "none");
    assert_null(json_object_get(json_object_get(r, "extras"), "max_abs_err"));
    json_decref(r);
}

/* The user's function with its natural signature; the runner generates ktune_kernel. */
static const char NATURAL[] =
    "#include <stdint.h>\n"
    "void saxpy(double *y, const double *x, const int32_t *idx, double alpha, float beta,\n"
    "           int n, double scale, long long big) {\n"
    "    for (int i = 0; i < n; i++) y[idx[i]] = alpha * x[i] + beta + scale * (double)big;\n"
    "}\n"
    "int checked(double *y, int n) { for (int i = 0; i < n; i++) y[i] = 0; return n > 10 ? 3 : 0; "
    "}\n";

static json_t *natural_request(const char *src, const char *entry, const char *answer)
{
    json_t *args = json_pack("[{s:i}, {s:i}, {s:i}, {s:i}, {s:i}, {s:i}, {s:i}, {s:i}]", "buffer",
                             2, "buffer", 0, "buffer", 1, "scalar", 0, "scalar", 1, "problem", 0,
                             "problem", 1, "scalar", 2);
    if (strcmp(entry, "checked") == 0)
        args = (json_decref(args), json_pack("[{s:i}, {s:i}]", "buffer", 2, "problem", 0));
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:[i, f], s:[{s:s, s:i, s:s, s:s, s:{s:s}}, {s:s, s:i, s:s, s:s, "
        "s:{s:s}}, {s:s, s:i, s:s, s:s}], s:[{s:s, s:s, s:f}, {s:s, s:s, s:f}, {s:s, s:s, s:i}], "
        "s:{s:s, s:{s:s}}, s:{s:s, s:o}, s:i, s:i}",
        "id", 3, "op", "measure", "kernel", "natural", "source", src, "problem", 16, 0.5, "buffers",
        "name", "x", "elements", 16, "role", "input", "dtype", "f64", "init", "kind", "iota",
        "name", "idx", "elements", 16, "role", "input", "dtype", "i32", "init", "kind", "iota",
        "name", "y", "elements", 16, "role", "output", "dtype", "f64", "scalars", "name", "alpha",
        "type", "f64", "value", 2.5, "name", "beta", "type", "f32", "value", 0.25, "name", "big",
        "type", "i64", "value", 3, "verify", "kind", "answer", "buffers", "y", answer, "call",
        "entry", entry, "arguments", args, "min_repeats", 1, "max_repeats", 2);
}

static void generated_call_passes_typed_arguments(void **state)
{
    fixture *f = *state;
    char src[256], ans[256];
    double y[16];
    for (int i = 0; i < 16; i++)
        y[i] = 2.5 * i + 0.25 + 0.5 * 3; /* alpha*x + beta + scale*big */
    put_file(f, "natural.c", NATURAL, strlen(NATURAL), src);
    put_file(f, "y.bin", y, sizeof y, ans);
    json_t *r = call_exact(&f->c, natural_request(src, "saxpy", ans), 60000);
    expect_status(r, "ok");
    json_decref(r);
    /* an int entry's non-zero return is "this configuration cannot run this problem" */
    r = call_exact(&f->c, natural_request(src, "checked", ans), 60000);
    expect_status(r, "invalid");
    assert_non_null(strstr(extra_str(r, "reason"), "returned 3"));
    json_decref(r);
    /* an entry the source does not define is a compile error with the compiler's words */
    r = call_exact(&f->c, natural_request(src, "nosuch", ans), 60000);
    expect_status(r, "compile_error");
    assert_non_null(strstr(extra_str(r, "log"), "nosuch"));
    json_decref(r);
}

static const char OMP_KERNEL[] = "#include <omp.h>\n"
                                 "int ktune_kernel(float *const *b, const long long *p) {\n"
                                 "    int seen = 0;\n"
                                 "#pragma omp parallel\n"
                                 "    {\n"
                                 "#pragma omp atomic\n"
                                 "        seen++;\n"
                                 "    }\n"
                                 "    b[0][0] = (float)seen;\n"
                                 "    return seen == NT ? 0 : 1;\n"
                                 "}\n";

static void openmp_runs_the_threads_asked(void **state)
{
    fixture *f = *state;
    char src[256];
    put_file(f, "omp.c", OMP_KERNEL, strlen(OMP_KERNEL), src);
    for (int nt = 1; nt <= 3; nt++) {
        json_t *req = json_pack("{s:i, s:s, s:s, s:s, s:{s:i}, s:[i], s:[{s:s, s:i, s:s}], "
                                "s:{s:s}, s:b, s:i, s:i, s:i}",
                                "id", 4, "op", "measure", "kernel", "omp", "source", src, "defines",
                                "NT", nt, "problem", 1, "buffers", "name", "o", "elements", 1,
                                "role", "output", "verify", "kind", "none", "openmp", 1, "threads",
                                nt, "min_repeats", 1, "max_repeats", 1);
        json_t *r = call_exact(&f->c, req, 60000);
        expect_status(r, "ok");
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(r, "extras"), "threads")), nt);
        json_decref(r);
    }
}

/* The kernel returns 0 when it may run on exactly WANT cores. */
static const char AFFINITY_KERNEL[] = "#define _GNU_SOURCE\n"
                                      "#include <sched.h>\n"
                                      "int ktune_kernel(float *const *b, const long long *p) {\n"
                                      "    cpu_set_t s;\n"
                                      "    (void)p;\n"
                                      "    if (sched_getaffinity(0, sizeof s, &s) != 0) return 2;\n"
                                      "    b[0][0] = (float)CPU_COUNT(&s);\n"
                                      "    return CPU_COUNT(&s) == WANT ? 0 : 1;\n"
                                      "}\n";

static json_t *affinity_request(const char *src, int want, int openmp)
{
    json_t *req =
        json_pack("{s:i, s:s, s:s, s:s, s:{s:i}, s:[i], s:[{s:s, s:i, s:s}], s:{s:s}, "
                  "s:i, s:i}",
                  "id", 6, "op", "measure", "kernel", "aff", "source", src, "defines", "WANT", want,
                  "problem", 1, "buffers", "name", "o", "elements", 1, "role", "output", "verify",
                  "kind", "none", "min_repeats", 1, "max_repeats", 1);
    if (openmp)
        json_object_set_new(req, "openmp", json_true());
    return req;
}

/* A pinned runner runs an openmp request on the cores it was started with (here: the test's),
 * then pins itself again: a plain request after it sees one core. */
static void openmp_widens_a_pinned_runner(void **state)
{
    fixture *f = *state;
    cpu_set_t mine;
    char src[256];
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
        first = CPU_ISSET(i, &mine) ? i : -1;
    if (CPU_COUNT(&mine) < 2) {
        printf("SKIP: one core allowed here; a pinned runner cannot be widened\n");
        return;
    }
    kill(f->c.pid, SIGKILL);
    client_stop(&f->c, 1000);
    f->c.pin = first;
    client_start(&f->c, 0);
    put_file(f, "aff.c", AFFINITY_KERNEL, strlen(AFFINITY_KERNEL), src);
    json_t *r = call_exact(&f->c, affinity_request(src, 1, 0), 60000);
    expect_status(r, "ok");
    json_decref(r);
    r = call_exact(&f->c, affinity_request(src, CPU_COUNT(&mine), 1), 60000);
    expect_status(r, "ok");
    json_decref(r);
    r = call_exact(&f->c, affinity_request(src, 1, 0), 60000);
    expect_status(r, "ok");
    json_decref(r);
}

/* The hex SHA-256 of n floats from first, and their base64 (malloc'd). */
static char *floats_data(float first, int n, char sha[65])
{
    float v[64];
    unsigned char d[KT_SHA256_SIZE];
    for (int i = 0; i < n; i++)
        v[i] = first + 0.5f * (float)i;
    kt_sha256(v, (size_t)n * sizeof(float), d);
    for (int i = 0; i < KT_SHA256_SIZE; i++)
        snprintf(sha + 2 * i, 3, "%02x", d[i]);
    return kt_base64_encode(v, (size_t)n * sizeof(float), NULL);
}

/* y = x over 16 floats, x an uploaded data file, y compared with another (PROTOCOL.md "data"). */
static json_t *data_request(const char *src, const char *sx, const char *sy, json_t *data)
{
    json_t *r = json_pack(
        "{s:i, s:s, s:s, s:s, s:[i], s:[{s:s, s:i, s:s, s:{s:s, s:s}}, {s:s, s:i, s:s}], "
        "s:{s:s, s:{s:{s:s}}}, s:i, s:i, s:f}",
        "id", 9, "op", "measure", "kernel", "dcopy", "source", src, "problem", 16, "buffers",
        "name", "x", "elements", 16, "role", "input", "init", "kind", "data", "sha256", sx, "name",
        "y", "elements", 16, "role", "output", "verify", "kind", "answer", "buffers", "y", "sha256",
        sy, "min_repeats", 1, "max_repeats", 2, "min_seconds", 0.0);
    if (data)
        json_object_set_new(r, "data", data);
    return r;
}

/* What travels when: a request names the data by hash; a runner that lacks it answers need_data
 * at once, and holds what a request then carries (checked against its hash) for the next ones. */
static void uploaded_data_is_asked_for_then_held(void **state)
{
    fixture *f = *state;
    static const char DCOPY[] = "int ktune_kernel(float *const *b, const long long *p)\n"
                                "{ for (long long i = 0; i < p[0]; i++) b[1][i] = b[0][i];"
                                " return 0; }\n";
    char src[256], sx[65], sy[65];
    put_file(f, "dcopy.c", DCOPY, strlen(DCOPY), src);
    char *x = floats_data(3, 16, sx), *wrong = floats_data(4, 16, sy);
    json_t *r = call_exact(&f->c, data_request(src, sx, sx, NULL), 60000);
    const json_t *need = json_object_get(r, "need_data");
    if (json_array_size(need) != 1 || strcmp(json_string_value(json_array_get(need, 0)), sx) != 0)
        fail_msg("wanted need_data [%s]: %s", sx, json_dumps(r, 0));
    json_decref(r);
    /* bytes that do not hash to their name are refused */
    r = call_exact(&f->c, data_request(src, sx, sx, json_pack("{s:s}", sx, wrong)), 60000);
    assert_true(json_is_false(json_object_get(r, "ok")));
    assert_non_null(strstr(json_string_value(json_object_get(r, "error")), "the bytes hash to"));
    json_decref(r);
    /* sent once: verified against the same values (so the kernel saw them), then held */
    r = call_exact(&f->c, data_request(src, sx, sx, json_pack("{s:s}", sx, x)), 60000);
    expect_status(r, "ok");
    assert_string_equal(extra_str(r, "verified"), "answer");
    json_decref(r);
    r = call_exact(&f->c, data_request(src, sx, sx, NULL), 60000);
    expect_status(r, "ok");
    json_decref(r);
    /* another answer: asked for, then compared (and the copy differs from it) */
    r = call_exact(&f->c, data_request(src, sx, sy, NULL), 60000);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r, "need_data"), 0)), sy);
    json_decref(r);
    r = call_exact(&f->c, data_request(src, sx, sy, json_pack("{s:s}", sy, wrong)), 60000);
    expect_status(r, "wrong_result");
    json_decref(r);
    free(x);
    free(wrong);
}

static void expect_refused(fixture *f, json_t *req, const char *needle)
{
    json_t *r = call_exact(&f->c, req, 10000);
    if (!json_is_false(json_object_get(r, "ok")))
        fail_msg("accepted: %s", json_dumps(r, 0));
    const char *e = json_string_value(json_object_get(r, "error"));
    if (!e || !strstr(e, needle))
        fail_msg("error '%s' lacks '%s'", e ? e : "", needle);
    json_decref(r);
}

static void bad_interface_fields_are_refused(void **state)
{
    fixture *f = *state;
    const char *src = "/tmp/x.c";
#define BASE "{s:i, s:s, s:s, s:s, s:[i], "
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s, s:s}]}", "id", 5, "op", "measure", "kernel",
                             "k", "source", src, "problem", 1, "buffers", "name", "o", "elements",
                             1, "role", "output", "dtype", "f8"),
                   "buffers[0] dtype must be one of f16, bf16");
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s}], s:{s:s}, s:{s:s, s:[{s:i}]}}", "id", 5,
                             "op", "measure", "kernel", "k", "source", src, "problem", 1, "buffers",
                             "name", "o", "elements", 1, "role", "output", "verify", "kind", "none",
                             "call", "entry", "f", "arguments", "scalar", 0),
                   "call.arguments[0]");
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s}], s:{s:s}, s:i}", "id", 5, "op", "measure",
                             "kernel", "k", "source", src, "problem", 1, "buffers", "name", "o",
                             "elements", 1, "role", "output", "verify", "kind", "none", "threads",
                             2),
                   "'threads' needs \"openmp\": true");
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s}], s:{s:s}}", "id", 5, "op", "measure",
                             "kernel", "k", "source", src, "problem", 1, "buffers", "name", "o",
                             "elements", 1, "role", "output", "verify", "kind", "answer"),
                   "verify \"answer\" needs 'buffers'");
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s}], s:{s:s}, s:[{s:s, s:s, s:f}]}", "id", 5,
                             "op", "measure", "kernel", "k", "source", src, "problem", 1, "buffers",
                             "name", "o", "elements", 1, "role", "output", "verify", "kind", "none",
                             "scalars", "name", "n", "type", "i32", "value", 1.5),
                   "scalars[0] value must be an i32");
    expect_refused(f,
                   json_pack(BASE "s:[{s:s, s:i, s:s, s:{s:s, s:s}}], s:{s:s}}", "id", 5, "op",
                             "measure", "kernel", "k", "source", src, "problem", 1, "buffers",
                             "name", "o", "elements", 1, "role", "input", "init", "kind", "data",
                             "sha256", "not-a-hash", "verify", "kind", "none"),
                   "buffers[0].init sha256 must be 64 lowercase hex digits");
#undef BASE
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_dtype_is_compared, setup, teardown),
        cmocka_unit_test_setup_teardown(reference_sees_every_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(raw_abi_carries_floats_and_scalars, setup, teardown),
        cmocka_unit_test_setup_teardown(inits_fill_known_values, setup, teardown),
        cmocka_unit_test_setup_teardown(random_inits_stay_in_range, setup, teardown),
        cmocka_unit_test_setup_teardown(generated_call_passes_typed_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(openmp_runs_the_threads_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(openmp_widens_a_pinned_runner, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_interface_fields_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(uploaded_data_is_asked_for_then_held, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
