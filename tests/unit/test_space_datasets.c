/* Every shared Kernel Tuner dataset (the .json.gz files of gpu-spaces): the valid set built by
 * space_new (groups, pruning) must equal (a) a naive evaluation of every restriction on every
 * raw-grid point and (b) the cache's keys, which the dataset README says are exactly the valid
 * configurations. Files are read through `gzip -dc` because kt_space does not link zlib. The
 * repository's datasets/ has three of them (always checked); the others are read from the shared
 * data folder when this machine has it, else their case is skipped with KT_SKIP, naming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/expr.h"
#include "space/space.h"
#include "skip_test_util.h"

#define REPO_DIR KT_SOURCE_DIR "/datasets/"
#define DATA_DIR KT_SHARED_DATA_DIR "/gpu-spaces/"

/* The dataset from the repository's datasets/, else from the shared data folder; NULL when neither
 * has it. */
static json_t *load_gz(const char *name)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, REPO_DIR "%s.json.gz", name);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        snprintf(path, sizeof path, DATA_DIR "%s.json.gz", name);
        probe = fopen(path, "rb");
    }
    if (!probe)
        return NULL;
    fclose(probe);
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    json_error_t e;
    json_t *doc = json_loadf(f, 0, &e);
    assert_int_equal(pclose(f), 0);
    if (!doc)
        fail_msg("%s: %s", path, e.text);
    return doc;
}

static json_t *params_of(const json_t *doc)
{
    json_t *params = json_array();
    size_t i;
    const json_t *key;
    json_array_foreach(json_object_get(doc, "tune_params_keys"), i, key)
    {
        json_t *vals = json_object_get(json_object_get(doc, "tune_params"), json_string_value(key));
        json_array_append_new(params, json_pack("{s:O, s:O}", "name", key, "values", vals));
    }
    return params;
}

static expr_value value_of(const json_t *jv)
{
    expr_value v = {0};
    if (json_is_integer(jv)) {
        v.type = EXPR_INT;
        v.u.i = json_integer_value(jv);
    } else if (json_is_real(jv)) {
        v.type = EXPR_FLOAT;
        v.u.f = json_real_value(jv);
    } else if (json_is_boolean(jv)) {
        v.type = EXPR_BOOL;
        v.u.i = json_is_true(jv);
    } else {
        v.type = EXPR_STR;
        v.u.s = json_string_value(jv);
        v.len = (uint32_t)json_string_length(jv);
    }
    return v;
}

/* Raw-grid indices (mixed radix in parameter order) of the configurations satisfying every
 * restriction, found by evaluating each restriction on each raw point: no groups, no pruning. */
static uint64_t *brute_force(const json_t *params, const json_t *restrictions, uint64_t *n_out)
{
    int P = (int)json_array_size(params), R = (int)json_array_size(restrictions);
    const char *names[64];
    int sizes[64], idx[64] = {0};
    expr_value slots[64];
    assert_true(P <= 64);
    uint64_t raw = 1;
    for (int p = 0; p < P; p++) {
        names[p] = json_string_value(json_object_get(json_array_get(params, p), "name"));
        sizes[p] = (int)json_array_size(json_object_get(json_array_get(params, p), "values"));
        raw *= (uint64_t)sizes[p];
    }
    expr_names nm = {P, names, 0, NULL, NULL};
    expr **ex = calloc((size_t)R + 1, sizeof *ex);
    for (int r = 0; r < R; r++) {
        ex[r] = expr_parse(json_string_value(json_array_get(restrictions, r)), &nm, 0, NULL);
        assert_non_null(ex[r]);
    }
    uint64_t *valid = malloc(raw * sizeof *valid), n = 0;
    for (uint64_t i = 0; i < raw; i++) {
        for (int p = 0; p < P; p++)
            slots[p] = value_of(
                json_array_get(json_object_get(json_array_get(params, p), "values"), idx[p]));
        int ok = 1;
        for (int r = 0; r < R && ok; r++)
            ok = expr_test(ex[r], slots) == 1;
        if (ok)
            valid[n++] = i;
        for (int p = P - 1; p >= 0; p--) { /* odometer, last parameter fastest */
            if (++idx[p] < sizes[p])
                break;
            idx[p] = 0;
        }
    }
    for (int r = 0; r < R; r++)
        expr_free(ex[r]);
    free(ex);
    *n_out = n;
    return valid;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_dataset(const char *name, uint64_t expect_valid, double expect_raw)
{
    json_t *doc = load_gz(name);
    if (!doc)
        KT_SKIP("%s.json.gz is in neither " REPO_DIR " nor " DATA_DIR
                " (the shared data folder is not on this machine)",
                name);
    json_t *params = params_of(doc);
    const json_t *restrictions = json_object_get(doc, "restrictions");
    const json_t *cache = json_object_get(doc, "cache");
    kt_error err;
    space *sp = space_new(params, restrictions, NULL, NULL, &err);
    if (!sp)
        fail_msg("%s: %s", name, err.message);
    uint64_t count = space_count(sp);
    assert_int_equal(count, expect_valid);
    assert_true(space_raw_size(sp) == expect_raw);

    /* (a) the same set as the naive evaluation of the raw grid */
    uint64_t n_brute;
    uint64_t *brute = brute_force(params, restrictions, &n_brute);
    assert_int_equal(n_brute, count);
    int P = space_num_params(sp), idx[64];
    uint64_t *mine = malloc((count ? count : 1) * sizeof *mine);
    for (config_id id = 0; id < count; id++) {
        assert_int_equal(space_decode(sp, id, idx), 0);
        uint64_t raw = 0;
        for (int p = 0; p < P; p++)
            raw = raw * (uint64_t)space_param_num_values(sp, p) + (uint64_t)idx[p];
        mine[id] = raw;
        config_id back;
        assert_int_equal(space_encode(sp, idx, &back), 0);
        assert_int_equal(back, id);
    }
    qsort(mine, count, sizeof *mine, cmp_u64);
    assert_memory_equal(mine, brute, count * sizeof *mine);

    /* (b) the same set as the cache keys, via space_config_key */
    assert_int_equal(json_object_size(cache), count);
    char **keys = malloc((count ? count : 1) * sizeof *keys);
    const char **cache_keys = malloc((count ? count : 1) * sizeof *cache_keys);
    char buf[512];
    for (config_id id = 0; id < count; id++) {
        assert_true(space_config_key(sp, id, buf, sizeof buf) > 0);
        keys[id] = strdup(buf);
    }
    size_t k = 0;
    const char *key;
    const json_t *rec;
    json_object_foreach((json_t *)cache, key, rec)
    {
        cache_keys[k++] = key;
        /* The record's own parameter values map to the id whose key is the record's key. */
        json_t *cfg = json_object();
        for (int p = 0; p < P; p++)
            json_object_set(cfg, space_param_name(sp, p),
                            json_object_get(rec, space_param_name(sp, p)));
        config_id id;
        if (space_config_from_json(sp, cfg, &id, &err) < 0)
            fail_msg("%s: cache record %s: %s", name, key, err.message);
        assert_true(space_config_key(sp, id, buf, sizeof buf) > 0);
        assert_string_equal(buf, key);
        json_decref(cfg);
    }
    qsort(keys, count, sizeof *keys, cmp_str);
    qsort(cache_keys, count, sizeof *cache_keys, cmp_str);
    for (uint64_t i = 0; i < count; i++)
        if (strcmp(keys[i], cache_keys[i]) != 0)
            fail_msg("%s: key %s (space) vs %s (cache)", name, keys[i], cache_keys[i]);
    for (uint64_t i = 0; i < count; i++)
        free(keys[i]);
    free(keys);
    free(cache_keys);
    free(mine);
    free(brute);
    space_free(sp);
    json_decref(params);
    json_decref(doc);
}

static void gemm_clblast(void **state)
{
    (void)state;
    check_dataset("gemm_clblast-RTX_2080_Ti", 17956, 82944);
}

static void convolution_kt(void **state)
{
    (void)state;
    check_dataset("convolution_kt-RTX_2080_Ti", 6768, 11 * 6 * 1 * 1 * 2 * 8 * 8 * 2);
}

static void convolution_milo_a4000(void **state)
{
    (void)state;
    check_dataset("convolution_milo-A4000", 4362, 16 * 5 * 4 * 4 * 2 * 2 * 2);
}

static void convolution_milo_mi250x(void **state)
{
    (void)state;
    check_dataset("convolution_milo-MI250X", 4362, 16 * 5 * 4 * 4 * 2 * 2 * 2);
}

static void convolution_milo_w6600(void **state)
{
    (void)state;
    check_dataset("convolution_milo-W6600", 4362, 16 * 5 * 4 * 4 * 2 * 2 * 2);
}

static void dedispersion_milo_a4000(void **state)
{
    (void)state;
    check_dataset("dedispersion_milo-A4000", 11130, 6 * 29 * 4 * 8 * 2 * 2);
}

static void dedispersion_milo_w7800(void **state)
{
    (void)state;
    check_dataset("dedispersion_milo-W7800", 11130, 6 * 29 * 4 * 8 * 2 * 2);
}

static void pnpoly_kt(void **state)
{
    (void)state;
    check_dataset("pnpoly_kt-RTX_3090", 4092, 4 * 31 * 11 * 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemm_clblast),
        cmocka_unit_test(convolution_kt),
        cmocka_unit_test(convolution_milo_a4000),
        cmocka_unit_test(convolution_milo_mi250x),
        cmocka_unit_test(convolution_milo_w6600),
        cmocka_unit_test(dedispersion_milo_a4000),
        cmocka_unit_test(dedispersion_milo_w7800),
        cmocka_unit_test(pnpoly_kt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
