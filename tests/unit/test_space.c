/* Unit tests of space/space: group decomposition and counts (the G-BFS tiling spaces), id round
 * trips, JSON and cache-key codecs, neighbours against brute force, sampling uniformity, explicit
 * spaces, validation errors and limits. Brute-force checks use C predicates, independent of
 * space/expr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space.h"

static json_t *jparse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

/* Builds a space from JSON texts (restrictions and constants may be NULL). */
static space *build(const char *params, const char *restrictions, const char *constants,
                    const space_limits *lim, kt_error *err)
{
    json_t *jp = jparse(params);
    json_t *jr = restrictions ? jparse(restrictions) : NULL;
    json_t *jc = constants ? jparse(constants) : NULL;
    kt_error_clear(err);
    space *sp = space_new(jp, jr, jc, lim, err);
    json_decref(jp);
    json_decref(jr);
    json_decref(jc);
    return sp;
}

static space *build_ok(const char *params, const char *restrictions, const char *constants)
{
    kt_error err;
    space *sp = build(params, restrictions, constants, NULL, &err);
    if (!sp)
        fail_msg("space_new failed: %s (%s)", err.message, err.hint);
    return sp;
}

/* The G-BFS GEMM tiling space: m0..m3, k0..k1, n0..n3 over 1, 2, 4, ..., 2^max_exp with
 * m0*m1*m2*m3 == k0*k1 == n0*n1*n2*n3 == size. */
static space *tiling_space(int max_exp, long size, const space_limits *lim, kt_error *err)
{
    static const char *const names[] = {"m0", "m1", "m2", "m3", "k0", "k1", "n0", "n1", "n2", "n3"};
    json_t *params = json_array();
    for (int p = 0; p < 10; p++) {
        json_t *vals = json_array();
        for (int e = 0; e <= max_exp; e++)
            json_array_append_new(vals, json_integer(1LL << e));
        json_array_append_new(params, json_pack("{s:s, s:o}", "name", names[p], "values", vals));
    }
    char r[3][64];
    snprintf(r[0], sizeof r[0], "m0*m1*m2*m3 == %ld", size);
    snprintf(r[1], sizeof r[1], "k0*k1 == %ld", size);
    snprintf(r[2], sizeof r[2], "n0*n1*n2*n3 == %ld", size);
    json_t *restr = json_pack("[s,s,s]", r[0], r[1], r[2]);
    kt_error_clear(err);
    space *sp = space_new(params, restr, NULL, lim, err);
    json_decref(params);
    json_decref(restr);
    return sp;
}

static void tiling_spaces_have_the_paper_counts(void **state)
{
    (void)state;
    kt_error err;
    space *sp = tiling_space(10, 1024, NULL, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 899756); /* 286 x 11 x 286 */
    assert_int_equal(space_num_groups(sp), 3);
    assert_true(space_raw_size(sp) == pow(11, 10));
    space_free(sp);
    sp = tiling_space(11, 2048, NULL, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 1589952);
    space_free(sp);
    sp = tiling_space(9, 512, NULL, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 484000);
    space_free(sp);
}

static long value_of(const space *sp, int p, int v)
{
    return (long)space_param_value_number(sp, p, v);
}

static void tiling_ids_round_trip(void **state)
{
    (void)state;
    kt_error err;
    space *sp = tiling_space(10, 1024, NULL, &err);
    assert_non_null(sp);
    kt_rng rng;
    kt_rng_seed(&rng, 11);
    int idx[10];
    for (int i = 0; i < 20000; i++) {
        config_id id = i < 2 ? (i ? space_count(sp) - 1 : 0) : kt_rng_below(&rng, space_count(sp));
        assert_int_equal(space_decode(sp, id, idx), 0);
        long m = 1, k = 1, n = 1;
        for (int p = 0; p < 4; p++)
            m *= value_of(sp, p, idx[p]);
        for (int p = 4; p < 6; p++)
            k *= value_of(sp, p, idx[p]);
        for (int p = 6; p < 10; p++)
            n *= value_of(sp, p, idx[p]);
        assert_int_equal(m, 1024);
        assert_int_equal(k, 1024);
        assert_int_equal(n, 1024);
        config_id back;
        assert_int_equal(space_encode(sp, idx, &back), 0);
        assert_int_equal(back, id);
    }
    assert_int_equal(space_decode(sp, space_count(sp), idx), -1);
    idx[0] = (idx[0] + 1) % 11; /* breaks m0*m1*m2*m3 == 1024 */
    config_id dummy;
    assert_int_equal(space_encode(sp, idx, &dummy), -1);
    idx[0] = 11; /* out of the list */
    assert_int_equal(space_encode(sp, idx, &dummy), -1);
    space_free(sp);
}

/* Interleaved groups {a, c} and {b, d}, domains chosen so that enumeration reorders parameters. */
static const char small_params[] =
    "[{\"name\":\"a\",\"values\":[0,1,2,3,4,5]},{\"name\":\"b\",\"values\":[1,2,3]},"
    "{\"name\":\"c\",\"values\":[5,4,3,2,1,0]},{\"name\":\"d\",\"values\":[3,2]},"
    "{\"name\":\"e\",\"values\":[\"x\",\"y\"]}]";
static const char small_restr[] = "[\"a + c <= 5\", \"b != d\", \"c % 2 == 0 or a > 1\"]";

static int small_valid(const int *v)
{
    return v[0] + v[2] <= 5 && v[1] != v[3] && (v[2] % 2 == 0 || v[0] > 1);
}

static void small_space_matches_brute_force(void **state)
{
    (void)state;
    space *sp = build_ok(small_params, small_restr, NULL);
    assert_int_equal(space_num_groups(sp), 3); /* {a, c}, {b, d}, {e} */
    static const int values[4][6] = {{0, 1, 2, 3, 4, 5}, {1, 2, 3}, {5, 4, 3, 2, 1, 0}, {3, 2}};
    uint64_t expected = 0;
    int idx[5];
    for (idx[0] = 0; idx[0] < 6; idx[0]++)
        for (idx[1] = 0; idx[1] < 3; idx[1]++)
            for (idx[2] = 0; idx[2] < 6; idx[2]++)
                for (idx[3] = 0; idx[3] < 2; idx[3]++)
                    for (idx[4] = 0; idx[4] < 2; idx[4]++) {
                        int v[4] = {values[0][idx[0]], values[1][idx[1]], values[2][idx[2]],
                                    values[3][idx[3]]};
                        config_id id;
                        int ok = space_encode(sp, idx, &id) == 0;
                        assert_int_equal(ok, small_valid(v));
                        if (ok) {
                            int back[5];
                            assert_true(id < space_count(sp));
                            assert_int_equal(space_decode(sp, id, back), 0);
                            assert_memory_equal(back, idx, sizeof idx);
                            expected++;
                        }
                    }
    assert_int_equal(space_count(sp), expected);
    space_free(sp);
}

static void contiguous_groups_give_raw_grid_id_order(void **state)
{
    (void)state;
    /* Groups {a, b} and {c}: group 0 is the most significant digit, so ids follow the raw grid. */
    space *sp =
        build_ok("[{\"name\":\"a\",\"values\":[1,2,3,4]},{\"name\":\"b\",\"values\":[4,3,2,1]},"
                 "{\"name\":\"c\",\"values\":[7,8,9]}]",
                 "[\"a < b\"]", NULL);
    assert_int_equal(space_count(sp), 6 * 3);
    long prev = -1;
    for (config_id id = 0; id < space_count(sp); id++) {
        int idx[3];
        assert_int_equal(space_decode(sp, id, idx), 0);
        long raw = (idx[0] * 4L + idx[1]) * 3 + idx[2];
        assert_true(raw > prev);
        prev = raw;
    }
    space_free(sp);
}

static void configs_convert_to_and_from_json(void **state)
{
    (void)state;
    space *sp = build_ok(small_params, small_restr, NULL);
    for (config_id id = 0; id < space_count(sp); id++) {
        json_t *obj = space_config_json(sp, id);
        assert_non_null(obj);
        assert_int_equal(json_object_size(obj), 5);
        config_id back;
        kt_error err;
        assert_int_equal(space_config_from_json(sp, obj, &back, &err), 0);
        assert_int_equal(back, id);
        json_decref(obj);
    }
    assert_null(space_config_json(sp, space_count(sp)));
    static const struct {
        const char *json;
        const char *message;
    } bad[] = {
        {"{\"a\":0,\"b\":1,\"c\":4,\"d\":3}", "the configuration lacks parameter 'e'"},
        {"{\"a\":0,\"b\":1,\"c\":4,\"d\":3,\"e\":\"x\",\"f\":1}", "unknown parameter 'f'"},
        {"{\"a\":0,\"b\":1,\"c\":4,\"d\":3,\"e\":\"z\"}",
         "value \"z\" of parameter 'e' is not in its list"},
        {"{\"a\":0.5,\"b\":1,\"c\":4,\"d\":3,\"e\":\"x\"}",
         "value 0.5 of parameter 'a' is not in its list"},
        {"{\"a\":true,\"b\":1,\"c\":4,\"d\":3,\"e\":\"x\"}",
         "value true of parameter 'a' is not in its list"},
        {"{\"a\":3,\"b\":1,\"c\":4,\"d\":3,\"e\":\"x\"}",
         "the configuration violates restriction 0 'a + c <= 5'"},
        {"{\"a\":0,\"b\":3,\"c\":4,\"d\":3,\"e\":\"x\"}",
         "the configuration violates restriction 1 'b != d'"},
        {"{\"a\":0,\"b\":1,\"c\":5,\"d\":3,\"e\":\"x\"}",
         "the configuration violates restriction 2 'c % 2 == 0 or a > 1'"},
        {"[1,2]", "a configuration must be an object of parameter -> value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *obj = jparse(bad[i].json);
        kt_error err;
        kt_error_clear(&err);
        config_id id;
        assert_int_equal(space_config_from_json(sp, obj, &id, &err), -1);
        assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
        if (strcmp(err.message, bad[i].message) != 0)
            fail_msg("%s: expected \"%s\", got \"%s\"", bad[i].json, bad[i].message, err.message);
        json_decref(obj);
    }
    /* A real equal to an integer value is accepted (Python: 4.0 == 4). */
    json_t *obj = jparse("{\"a\":0,\"b\":1,\"c\":4.0,\"d\":3,\"e\":\"x\"}");
    config_id id;
    assert_int_equal(space_config_from_json(sp, obj, &id, NULL), 0);
    json_decref(obj);
    space_free(sp);
}

static void keys_and_values_follow_kernel_tuner(void **state)
{
    (void)state;
    space *sp = build_ok("[{\"name\":\"bs\",\"values\":[16, 128]},"
                         "{\"name\":\"eps\",\"values\":[1e-05, 0.1, 1.5, 2.0, 1e16]},"
                         "{\"name\":\"mode\",\"values\":[\"fast\", \"slow\"]},"
                         "{\"name\":\"flag\",\"values\":[true, false]}]",
                         "[\"mode == 'fast' or not flag\", \"eps < bs\"]", NULL);
    /* eps < bs drops 1e16: 2 x 4 x (fast: 2 + slow: 1) */
    assert_int_equal(space_count(sp), 2 * 4 * 3);
    int idx[4] = {0, 0, 0, 0};
    config_id id;
    char key[64];
    assert_int_equal(space_encode(sp, idx, &id), 0);
    assert_int_equal(space_config_key(sp, id, key, sizeof key), (int)strlen("16,1e-05,fast,True"));
    assert_string_equal(key, "16,1e-05,fast,True");
    int idx2[4] = {1, 3, 1, 1};
    assert_int_equal(space_encode(sp, idx2, &id), 0);
    assert_int_equal(space_config_key(sp, id, key, sizeof key), 18);
    assert_string_equal(key, "128,2.0,slow,False");
    assert_int_equal(space_config_key(sp, id, key, 18), -1); /* no room for the NUL */
    int idx3[4] = {1, 1, 1, 0};
    assert_int_equal(space_encode(sp, idx3, &id), -1); /* slow and flag */
    json_t *obj = space_config_json(sp, 0);
    assert_true(json_is_integer(json_object_get(obj, "bs")));
    assert_true(json_is_real(json_object_get(obj, "eps")));
    assert_true(json_is_string(json_object_get(obj, "mode")));
    assert_true(json_is_boolean(json_object_get(obj, "flag")));
    json_decref(obj);
    assert_int_equal(space_num_params(sp), 4);
    assert_string_equal(space_param_name(sp, 2), "mode");
    assert_int_equal(space_param_index(sp, "flag"), 3);
    assert_int_equal(space_param_index(sp, "nope"), -1);
    assert_int_equal(space_param_num_values(sp, 1), 5);
    assert_true(space_param_value_number(sp, 1, 0) == 1e-05);
    assert_true(isnan(space_param_value_number(sp, 2, 0)));
    assert_true(space_param_value_number(sp, 3, 0) == 1.0);
    json_t *v = space_param_value_json(sp, 2, 1);
    assert_string_equal(json_string_value(v), "slow");
    json_decref(v);
    assert_null(space_param_value_json(sp, 2, 2));
    assert_int_equal(space_num_restrictions(sp), 2);
    assert_string_equal(space_restriction_text(sp, 1), "eps < bs");
    assert_null(space_restriction_text(sp, 2));
    space_free(sp);
}

/* Expected neighbours by brute force: each candidate encoded from scratch, in the documented order.
 */
static int brute_neighbours(const space *sp, config_id id, space_neighbour_kind kind,
                            config_id *out)
{
    int P = space_num_params(sp), idx[16], cand[16], n = 0;
    config_id c;
    space_decode(sp, id, idx);
    for (int p = 0; p < P; p++) {
        int nv = space_param_num_values(sp, p);
        if (kind == SPACE_NEIGHBOURS_PAIR_SCALE) {
            double x = space_param_value_number(sp, p, idx[p]);
            for (int q = 0; q < P; q++) {
                if (q == p || x == 0)
                    continue;
                double y = space_param_value_number(sp, q, idx[q]);
                int vp = -1, vq = -1;
                for (int v = 0; v < nv; v++)
                    if (space_param_value_number(sp, p, v) == 2 * x)
                        vp = v;
                for (int v = 0; v < space_param_num_values(sp, q); v++)
                    if (y != 0 && space_param_value_number(sp, q, v) == y / 2)
                        vq = v;
                memcpy(cand, idx, sizeof cand);
                cand[p] = vp;
                cand[q] = vq;
                if (vp >= 0 && vq >= 0 && space_encode(sp, cand, &c) == 0)
                    out[n++] = c;
            }
            continue;
        }
        for (int v = 0; v < nv; v++) {
            if (v == idx[p] || (kind == SPACE_NEIGHBOURS_ADJACENT && abs(v - idx[p]) != 1))
                continue;
            memcpy(cand, idx, sizeof cand);
            cand[p] = v;
            if (space_encode(sp, cand, &c) == 0)
                out[n++] = c;
        }
    }
    return n;
}

static void check_neighbours(const space *sp, config_id id, space_neighbour_kind kind)
{
    config_id got[512], want[512];
    int max = space_max_neighbours(sp, kind);
    assert_true(max <= 512);
    int n = space_neighbours(sp, id, kind, got, 512);
    assert_true(n <= max);
    assert_int_equal(n, brute_neighbours(sp, id, kind, want));
    assert_memory_equal(got, want, (size_t)n * sizeof *got);
    for (int i = 0; i < n; i++) {
        assert_true(got[i] < space_count(sp));
        assert_true(got[i] != id);
        for (int j = 0; j < i; j++)
            assert_true(got[i] != got[j]);
        if (kind == SPACE_NEIGHBOURS_ADJACENT) {
            config_id back[64];
            int nb = space_neighbours(sp, got[i], kind, back, 64), found = 0;
            for (int j = 0; j < nb; j++)
                found |= back[j] == id;
            assert_true(found);
        }
    }
    if (n > 1) { /* a short buffer gets the first ones */
        assert_int_equal(space_neighbours(sp, id, kind, got, 1), 1);
        assert_true(got[0] == want[0]);
    }
}

static void neighbours_match_brute_force(void **state)
{
    (void)state;
    kt_error err;
    space *sp = build_ok(small_params, small_restr, NULL);
    int cross = 0;
    for (config_id id = 0; id < space_count(sp); id++) {
        check_neighbours(sp, id, SPACE_NEIGHBOURS_ADJACENT);
        check_neighbours(sp, id, SPACE_NEIGHBOURS_HAMMING);
        /* Here pair moves also cross groups (a doubled, b halved). */
        check_neighbours(sp, id, SPACE_NEIGHBOURS_PAIR_SCALE);
        config_id out[16];
        cross += space_neighbours(sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, out, 16) > 0;
    }
    assert_true(cross > 0);
    assert_int_equal(space_max_neighbours(sp, SPACE_NEIGHBOURS_ADJACENT), 10);
    assert_int_equal(space_max_neighbours(sp, SPACE_NEIGHBOURS_HAMMING), 5 + 2 + 5 + 1 + 1);
    assert_int_equal(space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE),
                     4 * 3); /* e is a string */
    space_free(sp);
    sp = tiling_space(10, 1024, NULL, &err);
    assert_non_null(sp);
    kt_rng rng;
    kt_rng_seed(&rng, 3);
    for (int i = 0; i < 300; i++) {
        config_id id = space_sample(sp, &rng);
        check_neighbours(sp, id, SPACE_NEIGHBOURS_ADJACENT);
        check_neighbours(sp, id, SPACE_NEIGHBOURS_HAMMING);
        check_neighbours(sp, id, SPACE_NEIGHBOURS_PAIR_SCALE);
    }
    space_free(sp);
}

static void pair_scale_keeps_products_on_the_tiling_space(void **state)
{
    (void)state;
    kt_error err;
    space *sp = tiling_space(10, 1024, NULL, &err);
    assert_non_null(sp);
    assert_int_equal(space_max_neighbours(sp, SPACE_NEIGHBOURS_PAIR_SCALE), 90);
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    long total = 0;
    for (int i = 0; i < 2000; i++) {
        config_id id = space_sample(sp, &rng), out[90];
        int a[10], b[10];
        space_decode(sp, id, a);
        int n = space_neighbours(sp, id, SPACE_NEIGHBOURS_PAIR_SCALE, out, 90);
        total += n;
        for (int k = 0; k < n; k++) {
            space_decode(sp, out[k], b);
            int changed = 0, up = 0, down = 0;
            double prod_a = 1, prod_b = 1;
            for (int p = 0; p < 10; p++) {
                double x = space_param_value_number(sp, p, a[p]),
                       y = space_param_value_number(sp, p, b[p]);
                prod_a *= x;
                prod_b *= y;
                if (x != y) {
                    changed++;
                    up += y == 2 * x;
                    down += y == x / 2;
                }
            }
            assert_int_equal(changed, 2);
            assert_int_equal(up, 1);
            assert_int_equal(down, 1);
            assert_true(prod_a == prod_b);
        }
    }
    assert_true(total > 2000); /* most configs have several moves inside their groups */
    space_free(sp);
}

static void sampling_is_uniform(void **state)
{
    (void)state;
    /* a*b <= 6 over 1..4 x 1..4: 4 + 3 + 2 + 1 valid configs. */
    space *sp =
        build_ok("[{\"name\":\"a\",\"values\":[1,2,3,4]},{\"name\":\"b\",\"values\":[1,2,3,4]}]",
                 "[\"a * b <= 6\"]", NULL);
    assert_int_equal(space_count(sp), 10);
    kt_rng rng;
    kt_rng_seed(&rng, 99);
    long counts[10] = {0};
    const int draws = 100000;
    for (int i = 0; i < draws; i++) {
        config_id id = space_sample(sp, &rng);
        assert_true(id < 10);
        counts[id]++;
    }
    double chi2 = 0, expect = draws / 10.0;
    for (int i = 0; i < 10; i++)
        chi2 += (counts[i] - expect) * (counts[i] - expect) / expect;
    assert_true(chi2 < 33.7); /* 9 degrees of freedom: p < 1e-4 */
    space_free(sp);
}

static void explicit_spaces_hold_their_list(void **state)
{
    (void)state;
    json_t *params =
        jparse("[{\"name\":\"a\",\"values\":[1,2,3]},{\"name\":\"b\",\"values\":[\"x\",\"y\"]}]");
    json_t *configs = jparse("[[3,\"y\"],[1,\"x\"],[1.0,\"x\"],[2,\"y\"]]");
    kt_error err;
    space *sp = space_new_explicit(params, configs, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 3);
    assert_int_equal(space_num_groups(sp), 1);
    assert_int_equal(space_num_restrictions(sp), 0);
    char key[16];
    space_config_key(sp, 0, key, sizeof key);
    assert_string_equal(key, "1,x");
    space_config_key(sp, 2, key, sizeof key);
    assert_string_equal(key, "3,y");
    int idx[2] = {2, 0};
    config_id id;
    assert_int_equal(space_encode(sp, idx, &id), -1);
    json_t *obj = jparse("{\"a\":3,\"b\":\"x\"}");
    assert_int_equal(space_config_from_json(sp, obj, &id, &err), -1);
    assert_string_equal(err.message,
                        "the configuration is not one of the space's listed configurations");
    json_decref(obj);
    config_id out[8];
    assert_int_equal(space_neighbours(sp, 0, SPACE_NEIGHBOURS_HAMMING, out, 8),
                     0); /* (1,x) alone */
    assert_int_equal(space_neighbours(sp, 1, SPACE_NEIGHBOURS_ADJACENT, out, 8),
                     1); /* (2,y)-(3,y) */
    assert_int_equal(out[0], 2);
    space_free(sp);
    json_decref(configs);
    configs = jparse("[[1,\"x\"],[4,\"y\"]]");
    assert_null(space_new_explicit(params, configs, &err));
    assert_int_equal(err.code, KT_ERR_BAD_SPACE);
    assert_string_equal(err.message, "configs[1][0] is not a value of parameter 'a'");
    json_decref(configs);
    configs = jparse("[[1]]");
    assert_null(space_new_explicit(params, configs, &err));
    assert_string_equal(err.message, "configs[0] is not an array of 2 values");
    json_decref(configs);
    configs = jparse("[]");
    sp = space_new_explicit(params, configs, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 0);
    space_free(sp);
    json_decref(configs);
    json_decref(params);
}

static void bad_definitions_are_rejected(void **state)
{
    (void)state;
    static const struct {
        const char *params, *restr, *consts;
        kt_code code;
        const char *message;
    } cases[] = {
        {"{}", NULL, NULL, KT_ERR_BAD_SPACE, "params must be a non-empty array"},
        {"[]", NULL, NULL, KT_ERR_BAD_SPACE, "params must be a non-empty array"},
        {"[{\"values\":[1]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "params[0] needs a string \"name\" and a \"values\" array"},
        {"[{\"name\":\"1a\",\"values\":[1]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "params[0]: '1a' is not a usable parameter name (an identifier of at most 128 characters, "
         "not a Python keyword)"},
        {"[{\"name\":\"lambda\",\"values\":[1]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "params[0]: 'lambda' is not a usable parameter name (an identifier of at most 128 "
         "characters, not a Python keyword)"},
        {"[{\"name\":\"a\",\"values\":[1]},{\"name\":\"a\",\"values\":[2]}]", NULL, NULL,
         KT_ERR_BAD_SPACE, "parameter 'a' is listed twice"},
        {"[{\"name\":\"a\",\"values\":[]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "parameter 'a' has 0 values (allowed: 1 to 4096)"},
        {"[{\"name\":\"a\",\"values\":[1, 2, 1.0]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "parameter 'a' lists the value 1.0 twice"},
        {"[{\"name\":\"a\",\"values\":[\"x\", \"x\"]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "parameter 'a' lists the value x twice"},
        {"[{\"name\":\"a\",\"values\":[[1]]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "parameter 'a': value 0 is not an integer, real, boolean or string of at most 256 bytes"},
        {"[{\"name\":\"a\",\"values\":[1, null]}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "parameter 'a': value 1 is not an integer, real, boolean or string of at most 256 bytes"},
        {"[{\"name\":\"a\",\"values\":[1],\"default\":1}]", NULL, NULL, KT_ERR_BAD_SPACE,
         "params[0] has an unknown field 'default'"},
        {"[{\"name\":\"a\",\"values\":[1]}]", NULL, "{\"a\":3}", KT_ERR_BAD_SPACE,
         "'a' is both a parameter and a constant"},
        {"[{\"name\":\"a\",\"values\":[1]}]", NULL, "{\"not\":3}", KT_ERR_BAD_SPACE,
         "'not' is not a usable constant name"},
        {"[{\"name\":\"a\",\"values\":[1]}]", NULL, "{\"c\":[3]}", KT_ERR_BAD_SPACE,
         "constant 'c' is not a number, boolean or short string"},
        {"[{\"name\":\"a\",\"values\":[1]}]", "[\"a > 0\", \"a <= \"]", NULL, KT_ERR_BAD_EXPRESSION,
         "restriction 1 'a <= ': unexpected end of expression at column 6"},
        {"[{\"name\":\"a\",\"values\":[1]}]", "[\"a > 0\", 3]", NULL, KT_ERR_BAD_EXPRESSION,
         "restriction 1 is not a string"},
        {"[{\"name\":\"a\",\"values\":[1]}]", "\"a > 0\"", NULL, KT_ERR_BAD_EXPRESSION,
         "restrictions must be an array of strings"},
        {"[{\"name\":\"a\",\"values\":[1]}]", "[\"a > 0\\u0000 or 1\"]", NULL,
         KT_ERR_BAD_EXPRESSION, "restriction 0 contains a NUL character"},
        {"[{\"name\":\"a\",\"values\":[1]}]", "[\"a * b > 0\"]", "{\"c\": 1}",
         KT_ERR_BAD_EXPRESSION, "restriction 0 'a * b > 0': unknown name 'b' at column 5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_error err;
        space *sp = build(cases[i].params, cases[i].restr, cases[i].consts, NULL, &err);
        if (sp)
            fail_msg("case %zu was accepted", i);
        assert_int_equal(err.code, cases[i].code);
        if (strcmp(err.message, cases[i].message) != 0)
            fail_msg("case %zu: expected \"%s\", got \"%s\"", i, cases[i].message, err.message);
    }
    kt_error err;
    assert_null(
        build("[{\"name\":\"a\",\"values\":[1]}]", "[\"a * b > 0\"]", "{\"c\": 1}", NULL, &err));
    assert_string_equal(err.hint, "parameters: a; constants: c");
}

static char *many_params(int n, int values)
{
    json_t *params = json_array();
    for (int p = 0; p < n; p++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", p);
        json_t *vals = json_array();
        for (int v = 0; v < values; v++)
            json_array_append_new(vals, json_integer(v));
        json_array_append_new(params, json_pack("{s:s, s:o}", "name", name, "values", vals));
    }
    char *text = json_dumps(params, JSON_COMPACT);
    json_decref(params);
    return text;
}

static void limits_are_enforced(void **state)
{
    (void)state;
    kt_error err;
    char *text = many_params(65, 2);
    assert_null(build(text, NULL, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_SPACE);
    assert_string_equal(err.message, "65 parameters (at most 64 allowed)");
    free(text);
    text = many_params(1, 4097);
    assert_null(build(text, NULL, NULL, NULL, &err));
    assert_string_equal(err.message, "parameter 'p0' has 4097 values (allowed: 1 to 4096)");
    free(text);
    /* 2^68 unrestricted configurations do not fit in a config_id. */
    text = many_params(17, 16);
    assert_null(build(text, NULL, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_SPACE_TOO_LARGE);
    assert_string_equal(err.message, "the space has more than 2^63 - 1 valid configurations");
    assert_non_null(strstr(err.hint, "signed 64-bit"));
    free(text);
    /* Ids are signed 64-bit where they are stored and written (issue 26: a count past 2^63 was a
     * negative space_size): 2^63 is refused, 2^62 is not. */
    text = many_params(63, 2);
    assert_null(build(text, NULL, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_SPACE_TOO_LARGE);
    free(text);
    text = many_params(62, 2);
    space *big = build(text, NULL, NULL, NULL, &err);
    assert_non_null(big);
    assert_true(space_count(big) == (uint64_t)1 << 62);
    assert_true(space_count(big) <= SPACE_MAX_COUNT);
    space_free(big);
    free(text);
    space_limits lim = {.max_group_nodes = 1000};
    assert_null(tiling_space(10, 1024, &lim, &err));
    assert_int_equal(err.code, KT_ERR_SPACE_TOO_LARGE);
    assert_string_equal(err.message,
                        "parameter group (m0, m1, m2, m3) of raw size 14641 needs more "
                        "than 1000 enumeration steps");
    lim = (space_limits){.max_group_valid = 100};
    assert_null(tiling_space(10, 1024, &lim, &err));
    assert_int_equal(err.code, KT_ERR_SPACE_TOO_LARGE);
    assert_string_equal(err.message, "parameter group (m0, m1, m2, m3) of raw size 14641 has more "
                                     "than 100 valid sub-configurations");
    lim = (space_limits){.max_restrictions = 2};
    assert_null(tiling_space(10, 1024, &lim, &err));
    assert_string_equal(err.message, "3 restrictions (at most 2 allowed)");
    lim = (space_limits){.max_expr_len = 10};
    assert_null(tiling_space(10, 1024, &lim, &err));
    assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
    assert_string_equal(err.message, "restriction 0 is longer than 10 characters");
    /* Hostile restriction text: an error naming the restriction, not a crash. */
    char deep[2100];
    memset(deep, '(', 2000);
    memcpy(deep + 2000, "p0", 3);
    json_t *params = jparse("[{\"name\":\"p0\",\"values\":[1]}]");
    json_t *restr = json_pack("[s]", deep);
    assert_null(space_new(params, restr, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_EXPRESSION);
    assert_non_null(strstr(err.message, "restriction 0 '((((("));
    assert_non_null(strstr(err.message, "...': expression nests deeper than 64 at column 65"));
    json_decref(restr);
    json_decref(params);
}

static void constants_and_failing_restrictions(void **state)
{
    (void)state;
    const char *params =
        "[{\"name\":\"a\",\"values\":[0,1,2]},{\"name\":\"b\",\"values\":[0,2,4]}]";
    space *sp = build_ok(params, "[\"b % a == 0\"]", NULL);
    assert_int_equal(space_count(sp), 6); /* a == 0 fails to evaluate: invalid */
    json_t *obj = jparse("{\"a\":0,\"b\":2}");
    config_id id;
    kt_error err;
    assert_int_equal(space_config_from_json(sp, obj, &id, &err), -1);
    assert_string_equal(err.message, "the configuration violates restriction 0 'b % a == 0' (its "
                                     "evaluation fails, e.g. a division by zero)");
    json_decref(obj);
    space_free(sp);
    sp = build_ok(params, "[\"a == 0 or b % a == 0\"]", NULL);
    assert_int_equal(space_count(sp), 9);
    space_free(sp);
    sp = build_ok(params, "[\"a * b <= limit\"]", "{\"limit\": 2}");
    assert_int_equal(space_count(sp), 3 + 2 + 1); /* a=0: all; a=1: b<=2; a=2: b=0 */
    space_free(sp);
    sp = build_ok(params, "[\"a <= b\", \"limit > 4\"]", "{\"limit\": 2}");
    assert_int_equal(space_count(sp), 0);
    obj = jparse("{\"a\":0,\"b\":2}");
    assert_int_equal(space_config_from_json(sp, obj, &id, &err), -1);
    assert_string_equal(err.message, "the configuration violates restriction 1 'limit > 4'");
    json_decref(obj);
    int idx[2] = {0, 0};
    assert_int_equal(space_encode(sp, idx, &id), -1);
    assert_int_equal(space_decode(sp, 0, idx), -1);
    assert_int_equal(space_neighbours(sp, 0, SPACE_NEIGHBOURS_HAMMING, &id, 1), 0);
    space_free(sp);
    sp = build_ok(params, "[\"a <= b\", \"limit > 1\"]", "{\"limit\": 2}");
    assert_int_equal(space_count(sp), 3 + 2 + 2);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiling_spaces_have_the_paper_counts),
        cmocka_unit_test(tiling_ids_round_trip),
        cmocka_unit_test(small_space_matches_brute_force),
        cmocka_unit_test(contiguous_groups_give_raw_grid_id_order),
        cmocka_unit_test(configs_convert_to_and_from_json),
        cmocka_unit_test(keys_and_values_follow_kernel_tuner),
        cmocka_unit_test(neighbours_match_brute_force),
        cmocka_unit_test(pair_scale_keeps_products_on_the_tiling_space),
        cmocka_unit_test(sampling_is_uniform),
        cmocka_unit_test(explicit_spaces_hold_their_list),
        cmocka_unit_test(bad_definitions_are_rejected),
        cmocka_unit_test(limits_are_enforced),
        cmocka_unit_test(constants_and_failing_restrictions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
