/* Unit tests of space_prefix_feasible: every prefix of every length of small restricted spaces
 * (several interleaved groups, a problem-dependent restriction reading constants, an explicit
 * space) against brute force over the raw grid with C predicates, independent of space/expr; and
 * the edge cases (length 0, empty space, indices out of range). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "space/space.h"

static json_t *jparse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

static space *build_ok(const char *params, const char *restrictions, const char *constants)
{
    kt_error err;
    json_t *jp = jparse(params);
    json_t *jr = restrictions ? jparse(restrictions) : NULL;
    json_t *jc = constants ? jparse(constants) : NULL;
    kt_error_clear(&err);
    space *sp = space_new(jp, jr, jc, NULL, &err);
    json_decref(jp);
    json_decref(jr);
    json_decref(jc);
    if (!sp)
        fail_msg("space_new failed: %s (%s)", err.message, err.hint);
    return sp;
}

typedef int (*valid_fn)(const void *ctx, const int *idx);

/* Compares space_prefix_feasible with brute force for every prefix of every length: a prefix is
 * feasible iff some raw configuration starting with it is valid. Returns how many feasible
 * prefixes (all lengths) there are, so callers can check the test saw both answers. */
static long check_all_prefixes(const space *sp, valid_fn valid, const void *ctx)
{
    int n = space_num_params(sp);
    int nv[16];
    long raw = 1;
    assert_true(n <= 16);
    for (int p = 0; p < n; p++) {
        nv[p] = space_param_num_values(sp, p);
        raw *= nv[p];
    }
    /* feasible[len] marks prefixes by their mixed-radix index over parameters 0..len-1. */
    unsigned char *feas[17];
    long size[17];
    size[0] = 1;
    for (int len = 0; len <= n; len++) {
        if (len > 0)
            size[len] = size[len - 1] * nv[len - 1];
        feas[len] = calloc((size_t)size[len], 1);
        assert_non_null(feas[len]);
    }
    int idx[16];
    uint64_t n_valid = 0;
    for (long r = 0; r < raw; r++) {
        long rem = r;
        for (int p = n - 1; p >= 0; p--) {
            idx[p] = (int)(rem % nv[p]);
            rem /= nv[p];
        }
        if (!valid(ctx, idx))
            continue;
        n_valid++;
        long key = 0;
        feas[0][0] = 1;
        for (int len = 1; len <= n; len++) {
            key = key * nv[len - 1] + idx[len - 1];
            feas[len][key] = 1;
        }
    }
    assert_int_equal(n_valid, space_count(sp)); /* the predicate is the space's */
    long n_feasible = 0;
    for (int len = 0; len <= n; len++) {
        for (long key = 0; key < size[len]; key++) {
            long rem = key;
            for (int p = len - 1; p >= 0; p--) {
                idx[p] = (int)(rem % nv[p]);
                rem /= nv[p];
            }
            int got = space_prefix_feasible(sp, idx, len);
            if (got != feas[len][key])
                fail_msg("prefix of length %d (key %ld): feasible %d, brute force %d", len, key,
                         got, feas[len][key]);
            n_feasible += got;
        }
        free(feas[len]);
    }
    return n_feasible;
}

/* a, b, c, d, e, f, g with groups {a, c}, {b, e}, {d, f}, {g} (interleaved, not contiguous). */
static const int G_A[] = {0, 1, 2, 3}, G_B[] = {1, 2, 4}, G_C[] = {1, 2, 3, 4},
                 G_D[] = {0, 1, 2, 3}, G_E[] = {1, 2, 4}, G_F[] = {0, 1, 2};

static int groups_valid(const void *ctx, const int *v)
{
    (void)ctx;
    int a = G_A[v[0]], b = G_B[v[1]], c = G_C[v[2]], d = G_D[v[3]], e = G_E[v[4]], f = G_F[v[5]];
    return a + c <= 5 && b * e != 4 && (d % 2 == 0 || f > 1) && !(d == 3 && f == 2);
}

static void interleaved_groups_match_brute_force(void **state)
{
    (void)state;
    space *sp =
        build_ok("[{\"name\":\"a\",\"values\":[0,1,2,3]},{\"name\":\"b\",\"values\":[1,2,4]},"
                 "{\"name\":\"c\",\"values\":[1,2,3,4]},{\"name\":\"d\",\"values\":[0,1,2,3]},"
                 "{\"name\":\"e\",\"values\":[1,2,4]},{\"name\":\"f\",\"values\":[0,1,2]},"
                 "{\"name\":\"g\",\"values\":[0,1]}]",
                 "[\"a + c <= 5\", \"b * e != 4\", \"d % 2 == 0 or f > 1\","
                 " \"not (d == 3 and f == 2)\"]",
                 NULL);
    assert_int_equal(space_num_groups(sp), 4);
    long n = check_all_prefixes(sp, groups_valid, NULL);
    /* Both answers occur: e.g. a=3 forbids c=3, 4 but a=3 alone is feasible. */
    assert_true(n > 0);
    int idx[7] = {3, 0, 0, 0, 0, 0, 0};
    assert_int_equal(space_prefix_feasible(sp, idx, 1), 1);
    assert_int_equal(space_prefix_feasible(sp, idx, 3), 1); /* a = 3, c = 1 */
    idx[2] = 2;                                             /* c = 3: 3 + 3 > 5 */
    assert_int_equal(space_prefix_feasible(sp, idx, 2), 1);
    assert_int_equal(space_prefix_feasible(sp, idx, 3), 0);
    space_free(sp);
}

/* A problem-dependent restriction: the problem's sizes M, N are constants the restrictions read
 * (how kernel specs hand problem arguments to restrictions). */
static const int P_BX[] = {8, 16, 32, 64}, P_TX[] = {1, 2, 4}, P_BY[] = {8, 16, 32}, P_U[] = {1, 2};
typedef struct problem {
    int M, N;
} problem;

static int problem_valid(const void *ctx, const int *v)
{
    const problem *pb = ctx;
    int bx = P_BX[v[0]], tx = P_TX[v[1]], by = P_BY[v[2]], u = P_U[v[3]];
    return pb->M % (bx * tx) == 0 && (pb->N % by == 0 || by <= 8) && bx * by <= 512 &&
           (u == 1 || tx * u <= 4);
}

static void problem_dependent_restrictions_match_brute_force(void **state)
{
    (void)state;
    static const problem problems[] = {{96, 40}, {64, 64}, {24, 8}, {256, 96}, {7, 7}};
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) {
        char consts[64];
        snprintf(consts, sizeof consts, "{\"M\": %d, \"N\": %d}", problems[i].M, problems[i].N);
        space *sp = build_ok(
            "[{\"name\":\"bx\",\"values\":[8,16,32,64]},{\"name\":\"tx\",\"values\":[1,2,4]},"
            "{\"name\":\"by\",\"values\":[8,16,32]},{\"name\":\"u\",\"values\":[1,2]}]",
            "[\"M % (bx * tx) == 0\", \"N % by == 0 or by <= 8\", \"bx * by <= 512\","
            " \"u == 1 or tx * u <= 4\"]",
            consts);
        long n = check_all_prefixes(sp, problem_valid, &problems[i]);
        if (problems[i].M == 7) { /* 7 is divisible by no bx * tx: nothing, not even len 0 */
            assert_int_equal(space_count(sp), 0);
            assert_int_equal(n, 0);
        } else {
            assert_true(space_count(sp) > 0);
        }
        space_free(sp);
    }
}

static int explicit_valid(const void *ctx, const int *v)
{
    (void)ctx;
    static const int rows[][3] = {{0, 1, 2}, {0, 2, 0}, {1, 1, 1}, {2, 0, 0}, {2, 0, 2}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i][0] == v[0] && rows[i][1] == v[1] && rows[i][2] == v[2])
            return 1;
    return 0;
}

static void explicit_space_matches_brute_force(void **state)
{
    (void)state;
    kt_error err;
    json_t *params =
        jparse("[{\"name\":\"x\",\"values\":[1,2,3]},{\"name\":\"y\",\"values\":[\"p\","
               "\"q\",\"r\"]},{\"name\":\"z\",\"values\":[true,false,0.5]}]");
    /* The rows of explicit_valid, given out of order, one twice. */
    json_t *configs = jparse("[[3,\"p\",0.5],[1,\"q\",0.5],[1,\"r\",true],[2,\"q\",false],"
                             "[3,\"p\",true],[1,\"q\",0.5]]");
    space *sp = space_new_explicit(params, configs, &err);
    json_decref(params);
    json_decref(configs);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 5);
    assert_int_equal(check_all_prefixes(sp, explicit_valid, NULL), 1 + 3 + 4 + 5);
    space_free(sp);
}

static void edge_cases(void **state)
{
    (void)state;
    space *sp = build_ok("[{\"name\":\"a\",\"values\":[1,2]},{\"name\":\"b\",\"values\":[1,2]}]",
                         "[\"a != b\"]", NULL);
    int idx[3] = {0, 1, 0};
    assert_int_equal(space_prefix_feasible(sp, NULL, 0), 1);
    assert_int_equal(space_prefix_feasible(sp, idx, 2), 1);
    assert_int_equal(space_prefix_feasible(sp, idx, 3), 0);  /* longer than the space */
    assert_int_equal(space_prefix_feasible(sp, idx, -1), 0); /* negative length */
    assert_int_equal(space_prefix_feasible(sp, NULL, 1), 0);
    idx[1] = 2; /* out of b's list */
    assert_int_equal(space_prefix_feasible(sp, idx, 1), 1);
    assert_int_equal(space_prefix_feasible(sp, idx, 2), 0);
    idx[0] = -1;
    assert_int_equal(space_prefix_feasible(sp, idx, 1), 0);
    assert_int_equal(space_prefix_feasible(NULL, idx, 0), 0);
    space_free(sp);

    /* A parameter-free restriction that fails: the space is empty, so nothing is feasible. */
    sp = build_ok("[{\"name\":\"a\",\"values\":[1,2]}]", "[\"1 > 2\"]", NULL);
    assert_int_equal(space_count(sp), 0);
    assert_int_equal(space_prefix_feasible(sp, NULL, 0), 0);
    idx[0] = 0;
    assert_int_equal(space_prefix_feasible(sp, idx, 1), 0);
    space_free(sp);
}

/* The Kernel Tuner spaces of the benchmark_hub datasets (real restrictions, several groups): every
 * valid configuration's prefixes, and random and near-miss prefixes (a valid prefix with its last
 * value changed), against the set of prefixes of the enumerated valid configurations. The spaces
 * (parameters, restrictions and the number of configurations, without the measurements) are in the
 * repository: tests/fixtures/gpu-spaces (README there). */
#define SPACES_DIR KT_SOURCE_DIR "/tests/fixtures/gpu-spaces"

static json_t *load_space(const char *name)
{
    char path[512];
    json_error_t e;
    snprintf(path, sizeof path, SPACES_DIR "/%s.space.json", name);
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc)
        fail_msg("%s: %s (line %d)", path, e.text, e.line);
    return doc;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void check_dataset_prefixes(const char *name)
{
    json_t *doc = load_space(name);
    json_int_t configurations = json_integer_value(json_object_get(doc, "configurations"));
    json_t *params = json_array();
    size_t i;
    const json_t *key;
    json_array_foreach(json_object_get(doc, "tune_params_keys"), i, key)
    {
        json_t *vals = json_object_get(json_object_get(doc, "tune_params"), json_string_value(key));
        json_array_append_new(params, json_pack("{s:O, s:O}", "name", key, "values", vals));
    }
    kt_error err;
    space *sp = space_new(params, json_object_get(doc, "restrictions"), NULL, NULL, &err);
    json_decref(params);
    json_decref(doc);
    assert_non_null(sp);
    int P = space_num_params(sp), nv[64], idx[64];
    assert_true(P <= 64);
    for (int p = 0; p < P; p++)
        nv[p] = space_param_num_values(sp, p);
    uint64_t n = space_count(sp);
    /* the fixture is the whole space: as many valid configurations as the dataset's cache has */
    assert_true(configurations > 0);
    assert_int_equal(n, (uint64_t)configurations);
    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    assert_non_null(keys);
    kt_rng rng;
    kt_rng_seed(&rng, 99);
    long checked = 0, feasible = 0;
    for (int len = 1; len <= P; len++) {
        for (uint64_t id = 0; id < n; id++) { /* mixed-radix key of the first len indices */
            assert_int_equal(space_decode(sp, id, idx), 0);
            uint64_t k = 0;
            for (int p = 0; p < len; p++)
                k = k * (uint64_t)nv[p] + (uint64_t)idx[p];
            keys[id] = k;
            if (id % 97 == 0) { /* a valid configuration's prefix is feasible */
                assert_int_equal(space_prefix_feasible(sp, idx, len), 1);
                checked++;
                feasible++;
            }
        }
        qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
        for (int trial = 0; trial < 400; trial++) {
            if (trial % 2) { /* random */
                for (int p = 0; p < len; p++)
                    idx[p] = (int)kt_rng_below(&rng, (uint64_t)nv[p]);
            } else { /* near miss */
                space_decode(sp, space_sample(sp, &rng), idx);
                idx[len - 1] = (int)kt_rng_below(&rng, (uint64_t)nv[len - 1]);
            }
            uint64_t k = 0;
            for (int p = 0; p < len; p++)
                k = k * (uint64_t)nv[p] + (uint64_t)idx[p];
            int want = bsearch(&k, keys, (size_t)n, sizeof *keys, cmp_u64) != NULL;
            int got = space_prefix_feasible(sp, idx, len);
            if (got != want)
                fail_msg("%s: prefix of length %d: feasible %d, enumeration %d", name, len, got,
                         want);
            checked++;
            feasible += got;
        }
    }
    printf("%s: %d parameters, %d groups, %llu configs: %ld prefixes checked, %ld feasible\n", name,
           P, space_num_groups(sp), (unsigned long long)n, checked, feasible);
    if ((double)n < space_raw_size(sp)) /* restricted: both answers occurred */
        assert_true(feasible < checked);
    else
        assert_int_equal(feasible, checked);
    free(keys);
    space_free(sp);
}

static void shared_spaces_match_enumeration(void **state)
{
    (void)state;
    static const char *const names[] = {
        "gemm_clblast-RTX_2080_Ti", "convolution_kt-RTX_2080_Ti", "convolution_milo-A4000",
        "dedispersion_milo-A4000",  "pnpoly_kt-RTX_3090",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_dataset_prefixes(names[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(interleaved_groups_match_brute_force),
        cmocka_unit_test(problem_dependent_restrictions_match_brute_force),
        cmocka_unit_test(explicit_space_matches_brute_force),
        cmocka_unit_test(edge_cases),
        cmocka_unit_test(shared_spaces_match_enumeration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
