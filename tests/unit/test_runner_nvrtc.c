/* Compile checks of the CUDA variants with NVRTC alone (no driver, no GPU): for every kernel folder
 * under kernels/ and tests/kernels/ with a CUDA variant (spec.json variants.cuda, else cuda.json),
 * builds the variant's space for the test problem (else the default problem) on A100 (sm_80) and
 * H100 (sm_90) limits, checks that the launch geometry of each configuration is legal there, and
 * compiles the default and 20 random valid configurations to PTX for both (KT_NVRTC_SAMPLES, 1 to
 * 20, lowers the 20: the sanitizer build, whose time goes to NVRTC itself). Skipped with the reason
 * where NVRTC is missing (exit 77, kt_skip_all), a failure instead when KTUNE_REQUIRE_NVRTC is set
 * (make gpu-check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "runner/cuda.h"
#include "space/expr.h"
#include "space/space.h"
#include "skip_test_util.h"

#define SAMPLES   20
#define LOG_CAP   4096
#define MAX_DIRS  64
#define MAX_NAMES 96

typedef struct device_limits {
    int arch;
    long long max_threads_per_block, max_shared_memory_per_block, max_registers_per_block;
    long long warp_size, compute_capability;
} device_limits;

static const device_limits devices[] = {
    {80, 1024, 166912, 65536, 32, 80}, /* A100 */
    {90, 1024, 232448, 65536, 32, 90}, /* H100 */
};

/* 1 when NVRTC compiles a trivial kernel; 0 with why filled when NVRTC itself is missing; -1 with
 * why filled when it is there but fails (never a skip: that is a broken toolkit). No cmocka
 * asserts: main calls it before any case runs. */
static int nvrtc_available(char *why, size_t cap)
{
    static const char *const src = "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }\n";
    char path[] = "/tmp/ktune-nvrtc-probe-XXXXXX";
    char log[LOG_CAP], *ptx = NULL;
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, src, strlen(src)) != (ssize_t)strlen(src)) {
        snprintf(why, cap, "cannot write %s", path);
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        return -1;
    }
    close(fd);
    int rc = cuda_compile_ptx(path, NULL, 80, &ptx, log, sizeof log);
    unlink(path);
    free(ptx);
    if (rc != 0)
        snprintf(why, cap, "%s", log);
    return rc == 0 ? 1 : rc == -2 ? 0 : -1;
}

/* Every case needs NVRTC: without it main skips them all, unless KTUNE_REQUIRE_NVRTC is set, in
 * which case each case fails with the reason. */
static char nvrtc_missing[LOG_CAP];

static void need_nvrtc(void)
{
    if (nvrtc_missing[0])
        fail_msg("%s and KTUNE_REQUIRE_NVRTC is set", nvrtc_missing);
}

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j && access(path, F_OK) == 0)
        fail_msg("%s: %s (line %d)", path, e.text, e.line);
    return j;
}

/* The block, grid and shared_bytes expressions of a variant, parsed over (parameters, problem). */
typedef struct geometry {
    expr *x[7]; /* block x y z, grid x y z, shared_bytes */
} geometry;

static void geometry_parse(geometry *g, const json_t *variant, const space *sp,
                           const char *const *arg_names, const expr_value *arg_values, int n_args,
                           const char *where)
{
    const char *params[MAX_NAMES];
    int np = space_num_params(sp);
    assert_true(np <= MAX_NAMES);
    for (int i = 0; i < np; i++)
        params[i] = space_param_name(sp, i);
    expr_names names = {.n_params = np,
                        .params = params,
                        .n_consts = n_args,
                        .const_names = arg_names,
                        .const_values = arg_values};
    const char *texts[7];
    for (int i = 0; i < 3; i++) {
        const json_t *b = json_array_get(json_object_get(variant, "block"), (size_t)i);
        const json_t *gr = json_array_get(json_object_get(variant, "grid"), (size_t)i);
        if (!json_is_string(b) || !json_is_string(gr))
            fail_msg("%s: block and grid must be arrays of 3 expression strings", where);
        texts[i] = json_string_value(b);
        texts[3 + i] = json_string_value(gr);
    }
    const json_t *sh = json_object_get(variant, "shared_bytes");
    texts[6] = json_is_string(sh) ? json_string_value(sh) : "0";
    for (int i = 0; i < 7; i++) {
        kt_error err;
        kt_error_clear(&err);
        g->x[i] = expr_parse(texts[i], &names, 4096, &err);
        if (!g->x[i])
            fail_msg("%s: geometry expression '%s': %s", where, texts[i], err.message);
    }
}

static void geometry_free(geometry *g)
{
    for (int i = 0; i < 7; i++)
        expr_free(g->x[i]);
}

/* Checks that configuration id launches legally on the device. */
static void geometry_check(const geometry *g, const space *sp, config_id id,
                           const device_limits *dev, const char *where)
{
    int idx[MAX_NAMES];
    expr_value slots[MAX_NAMES];
    long long v[7];
    int np = space_num_params(sp);
    assert_int_equal(space_decode(sp, id, idx), 0);
    for (int p = 0; p < np; p++) {
        slots[p].type = EXPR_INT;
        slots[p].len = 0;
        slots[p].u.i = (int64_t)space_param_value_number(sp, p, idx[p]);
    }
    for (int i = 0; i < 7; i++) {
        expr_value out;
        if (expr_eval(g->x[i], slots, &out) != 0)
            fail_msg("%s: a geometry expression fails for config %llu", where,
                     (unsigned long long)id);
        v[i] = out.type == EXPR_FLOAT ? (long long)out.u.f : (long long)out.u.i;
    }
    static const long long max_block[3] = {1024, 1024, 64};
    static const long long max_grid[3] = {2147483647LL, 65535, 65535};
    char key[512];
    space_config_key(sp, id, key, sizeof key);
    for (int i = 0; i < 3; i++) {
        if (v[i] < 1 || v[i] > max_block[i])
            fail_msg("%s sm_%d config %s: block[%d] = %lld", where, dev->arch, key, i, v[i]);
        if (v[3 + i] < 1 || v[3 + i] > max_grid[i])
            fail_msg("%s sm_%d config %s: grid[%d] = %lld", where, dev->arch, key, i, v[3 + i]);
    }
    if (v[0] * v[1] * v[2] > dev->max_threads_per_block)
        fail_msg("%s sm_%d config %s: %lld threads per block", where, dev->arch, key,
                 v[0] * v[1] * v[2]);
    if (v[6] < 0 || v[6] > dev->max_shared_memory_per_block)
        fail_msg("%s sm_%d config %s: %lld bytes of shared memory", where, dev->arch, key, v[6]);
}

/* Compiles one configuration and checks that the PTX defines the entry point. */
static void compile_config(const space *sp, config_id id, const char *source, const char *entry,
                           int arch, const char *where)
{
    char log[LOG_CAP], *ptx = NULL, key[512], want[256];
    json_t *cfg = space_config_json(sp, id);
    assert_non_null(cfg);
    space_config_key(sp, id, key, sizeof key);
    int rc = cuda_compile_ptx(source, cfg, arch, &ptx, log, sizeof log);
    if (rc != 0)
        fail_msg("%s: config %s does not compile for sm_%d (%d):\n%s", where, key, arch, rc, log);
    snprintf(want, sizeof want, ".entry %s(", entry);
    if (!strstr(ptx, want))
        fail_msg("%s: the PTX for config %s has no '%s' (is the entry extern \"C\"?)", where, key,
                 want);
    free(ptx);
    json_decref(cfg);
}

/* How many random configurations a large space compiles besides its default: SAMPLES, or fewer
 * with KT_NVRTC_SAMPLES. */
static int samples_wanted(void)
{
    const char *env = getenv("KT_NVRTC_SAMPLES");
    if (env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= SAMPLES)
            return (int)v;
    }
    return SAMPLES;
}

/* Every kernel folder under root with a CUDA variant; returns how many were checked. */
static int check_root(const char *root, int *compiled)
{
    const int samples = samples_wanted();
    struct dirent **list = NULL;
    int n = scandir(root, &list, NULL, alphasort), checked = 0;
    if (n < 0)
        return 0; /* no such folder */
    for (int d = 0; d < n; d++) {
        char dir[1024], path[1200], where[1200];
        const char *name = list[d]->d_name;
        if (name[0] == '.')
            continue;
        snprintf(dir, sizeof dir, "%s/%s", root, name);
        snprintf(path, sizeof path, "%s/spec.json", dir);
        json_t *spec = load_json(path);
        json_t *variant = json_incref(json_object_get(json_object_get(spec, "variants"), "cuda"));
        if (!variant) {
            snprintf(path, sizeof path, "%s/cuda.json", dir);
            variant = load_json(path);
        }
        if (!variant) {
            json_decref(spec);
            continue;
        }
        snprintf(where, sizeof where, "%s", path);
        if (!spec)
            fail_msg("%s: a CUDA variant without %s/spec.json (its problem arguments)", where, dir);

        /* the problem: defaults, overridden by test_problem */
        const char *arg_names[32];
        expr_value arg_values[32];
        int n_args = 0;
        const json_t *problem = json_object_get(spec, "problem"), *a;
        const json_t *test_problem = json_object_get(spec, "test_problem");
        size_t i;
        json_array_foreach(problem, i, a)
        {
            assert_true(n_args < 32);
            const char *an = json_string_value(json_object_get(a, "name"));
            const json_t *tv = json_object_get(test_problem, an ? an : "");
            assert_non_null(an);
            arg_names[n_args] = an;
            arg_values[n_args].type = EXPR_INT;
            arg_values[n_args].len = 0;
            arg_values[n_args].u.i = json_integer_value(tv ? tv : json_object_get(a, "default"));
            n_args++;
        }

        const char *src_name = json_string_value(json_object_get(variant, "source"));
        const char *entry = json_string_value(json_object_get(variant, "entry"));
        if (!src_name || !entry)
            fail_msg("%s: the CUDA variant needs 'source' and 'entry'", where);
        char source[1200];
        snprintf(source, sizeof source, "%s/%s", dir, src_name);

        for (size_t dv = 0; dv < sizeof devices / sizeof devices[0]; dv++) {
            const device_limits *dev = &devices[dv];
            json_t *consts = json_object();
            for (int k = 0; k < n_args; k++)
                json_object_set_new(consts, arg_names[k], json_integer(arg_values[k].u.i));
            json_object_set_new(consts, "max_threads_per_block",
                                json_integer(dev->max_threads_per_block));
            json_object_set_new(consts, "max_shared_memory_per_block",
                                json_integer(dev->max_shared_memory_per_block));
            json_object_set_new(consts, "max_registers_per_block",
                                json_integer(dev->max_registers_per_block));
            json_object_set_new(consts, "warp_size", json_integer(dev->warp_size));
            json_object_set_new(consts, "compute_capability",
                                json_integer(dev->compute_capability));
            kt_error err;
            kt_error_clear(&err);
            space *sp = space_new(json_object_get(variant, "parameters"),
                                  json_object_get(variant, "restrictions"), consts, NULL, &err);
            if (!sp)
                fail_msg("%s: space_new: %s (%s)", where, err.message, err.hint);
            if (space_count(sp) == 0)
                fail_msg("%s: no valid configuration on sm_%d for the test problem", where,
                         dev->arch);
            config_id def;
            if (space_config_from_json(sp, json_object_get(variant, "default"), &def, &err) != 0)
                fail_msg("%s: the default configuration is not valid on sm_%d: %s", where,
                         dev->arch, err.message);
            geometry g;
            geometry_parse(&g, variant, sp, arg_names, arg_values, n_args, where);
            kt_rng rng;
            kt_rng_seed(&rng, 20240601u + (uint64_t)dev->arch);
            /* small spaces are compiled whole, large ones as the default and SAMPLES random */
            uint64_t total = space_count(sp);
            int all = total <= (uint64_t)samples + 1;
            int count = 0;
            for (int s = 0; s <= samples && (!all || (uint64_t)s < total); s++) {
                config_id id = all ? (config_id)s : s == 0 ? def : space_sample(sp, &rng);
                geometry_check(&g, sp, id, dev, where);
                compile_config(sp, id, source, entry, dev->arch, where);
                count++;
            }
            printf("%-12s sm_%d: %d of %llu configurations compiled (%s)\n", name, dev->arch, count,
                   (unsigned long long)total, all ? "all" : "the default and random ones");
            fflush(stdout);
            compiled[dv] += count;
            geometry_free(&g);
            space_free(sp);
            json_decref(consts);
        }
        checked++;
        json_decref(variant);
        json_decref(spec);
    }
    for (int d = 0; d < n; d++)
        free(list[d]);
    free(list);
    return checked;
}

static void catalog_cuda_variants_compile(void **state)
{
    (void)state;
    need_nvrtc();
    int compiled[2] = {0, 0};
    int kernels = check_root(KT_SOURCE_DIR "/kernels", compiled);
    kernels += check_root(KT_SOURCE_DIR "/tests/kernels", compiled);
    printf("%d kernels with a CUDA variant: %d configurations compiled for sm_80, %d for sm_90\n",
           kernels, compiled[0], compiled[1]);
    assert_true(kernels >= 1);
}

static void compile_error_has_the_log(void **state)
{
    (void)state;
    need_nvrtc();
    static const char *const src = "extern \"C\" __global__ void k(float *x)\n"
                                   "{\n"
                                   "#if BROKEN\n"
                                   "    x[0] = undeclared_name;\n"
                                   "#endif\n"
                                   "}\n";
    char path[] = "/tmp/ktune-nvrtc-bad-XXXXXX";
    char log[LOG_CAP], *ptx = NULL;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, src, strlen(src)), (int)strlen(src));
    close(fd);
    json_t *broken = json_pack("{s:i}", "BROKEN", 1), *fine = json_pack("{s:i}", "BROKEN", 0);
    assert_int_equal(cuda_compile_ptx(path, broken, 90, &ptx, log, sizeof log), -1);
    assert_null(ptx);
    assert_non_null(strstr(log, "undeclared_name"));
    assert_int_equal(cuda_compile_ptx(path, fine, 90, &ptx, log, sizeof log), 0);
    assert_non_null(ptx);
    assert_non_null(strstr(ptx, ".entry k("));
    free(ptx);
    ptx = NULL;
    /* a define that is not an identifier never reaches the compiler */
    json_t *bad = json_pack("{s:i}", "A B", 1);
    assert_int_equal(cuda_compile_ptx(path, bad, 90, &ptx, log, sizeof log), -1);
    assert_null(ptx);
    assert_non_null(strstr(log, "identifier"));
    /* a missing source is reported, not crashed on */
    assert_int_equal(cuda_compile_ptx("/nonexistent/k.cu", fine, 90, &ptx, log, sizeof log), -1);
    assert_non_null(strstr(log, "/nonexistent/k.cu"));
    json_decref(bad);
    json_decref(broken);
    json_decref(fine);
    unlink(path);
}

/* The compile_check op's reply (issue 27: validation where no CUDA device exists): NVRTC's
 * version, the architecture it compiled for, and on an error its log naming the line. */
static void compile_check_reply(void **state)
{
    (void)state;
    need_nvrtc();
    static const char src[] = "extern \"C\" __global__ void k(float *x)\n"
                              "{\n"
                              "#if BROKEN\n"
                              "    x[0] = undeclared_name;\n"
                              "#endif\n"
                              "}\n";
    json_t *broken = json_pack("{s:i}", "BROKEN", 1), *fine = json_pack("{s:i}", "BROKEN", 0);
    json_t *r = cuda_compile_check("k.cu", src, sizeof src - 1, broken, 30);
    assert_non_null(r);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(json_string_value(json_object_get(r, "status")), "compile_error");
    const char *log = json_string_value(json_object_get(json_object_get(r, "extras"), "log"));
    assert_non_null(log);
    assert_non_null(strstr(log, "k.cu(4)"));
    assert_non_null(strstr(log, "undeclared_name"));
    json_decref(r);
    r = cuda_compile_check("k.cu", src, sizeof src - 1, fine, 30);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "ok");
    assert_non_null(strchr(json_string_value(json_object_get(r, "nvrtc_version")), '.'));
    assert_true(json_integer_value(json_object_get(r, "arch")) >= 50);
    assert_true(json_integer_value(json_object_get(json_object_get(r, "extras"), "ptx_bytes")) > 0);
    assert_null(json_object_get(json_object_get(r, "extras"), "log"));
    json_decref(r);
    json_decref(broken);
    json_decref(fine);
}

int main(void)
{
    char why[LOG_CAP] = "";
    int have = nvrtc_available(why, sizeof why);
    if (have < 0) {
        fprintf(stderr, "NVRTC is there but does not compile a trivial kernel: %s\n", why);
        return 1;
    }
    if (have == 0) { /* why: "NVRTC not available (...)" */
        if (!kt_skip_required("KTUNE_REQUIRE_NVRTC"))
            return kt_skip_all(why);
        snprintf(nvrtc_missing, sizeof nvrtc_missing, "%s", why);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compile_error_has_the_log),
        cmocka_unit_test(compile_check_reply),
        cmocka_unit_test(catalog_cuda_variants_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
