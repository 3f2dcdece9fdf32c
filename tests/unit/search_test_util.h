/* search_test_util — helpers shared by the searcher unit tests (a header of static functions, like
 * http_test_client.h): spaces to search (a small restricted one, a 10k one, the 899,756-config GEMM
 * tiling space), a synthetic objective with a known optimum, a driver that asks and tells in
 * batches, a seeded search with a moving optimum, the distinct-and-valid check and the overhead
 * measurement on the tiling space. Include after cmocka.h. Every helper is static inline, so that a
 * test file using only some of them compiles under -Werror (no unused-function warning). */
#ifndef KT_TESTS_SEARCH_TEST_UTIL_H
#define KT_TESTS_SEARCH_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "search/searcher.h"
#include "tiling_test_util.h"

static inline space *make_space(const char *params_json, const char *restr_json)
{
    json_error_t jerr;
    kt_error err;
    json_t *params = json_loads(params_json, 0, &jerr);
    json_t *restr = restr_json ? json_loads(restr_json, 0, &jerr) : NULL;
    assert_non_null(params);
    space *sp = space_new(params, restr, NULL, NULL, &err);
    if (!sp)
        fail_msg("space_new: %s", err.message);
    json_decref(params);
    json_decref(restr);
    return sp;
}

/* x, y, z in 0..9 with x + y + z <= 7: 120 configurations. */
static inline space *space_small(void)
{
    const char *v = "[0,1,2,3,4,5,6,7,8,9]";
    char params[512];
    snprintf(params, sizeof params,
             "[{\"name\":\"x\",\"values\":%s},{\"name\":\"y\",\"values\":%s},"
             "{\"name\":\"z\",\"values\":%s}]",
             v, v, v);
    space *sp = make_space(params, "[\"x + y + z <= 7\"]");
    assert_int_equal(space_count(sp), 120);
    return sp;
}

/* 4 parameters of 10 values: 10,000 configurations. */
static inline space *space_10k(void)
{
    const char *v = "[0,1,2,3,4,5,6,7,8,9]";
    char params[512];
    snprintf(params, sizeof params,
             "[{\"name\":\"a\",\"values\":%s},{\"name\":\"b\",\"values\":%s},"
             "{\"name\":\"c\",\"values\":%s},{\"name\":\"d\",\"values\":%s}]",
             v, v, v, v);
    return make_space(params, NULL);
}

static inline space *space_gemm_tiling(void)
{
    space *sp = tiling_space_new("[1,2,4,8,16,32,64,128,256,512,1024]", 1024);
    assert_int_equal(space_count(sp), 899756);
    return sp;
}

/* Synthetic objective: 10 + squared distance of the value indices from a hidden optimum (index 3
 * of every parameter, or opt when given); configurations whose id is divisible by fail_every fail
 * (a runtime error). */
typedef struct objective {
    const space *sp;
    const int *opt;
    uint64_t fail_every; /* 0: none fail */
} objective;

static inline void evaluate(const objective *o, const config_id *ids, trial_result *r, int n)
{
    int idx[16];
    for (int i = 0; i < n; i++) {
        trial_result_init(&r[i]);
        assert_int_equal(space_decode(o->sp, ids[i], idx), 0);
        double d = 0;
        for (int p = 0; p < space_num_params(o->sp); p++) {
            double diff = idx[p] - (o->opt ? o->opt[p] : 3);
            d += diff * diff;
        }
        r[i].status = TRIAL_OK;
        r[i].time_ms = 10.0 + d;
        if (o->fail_every && ids[i] % o->fail_every == 0) {
            r[i].status = TRIAL_RUNTIME_ERROR;
            r[i].time_ms = NAN;
        }
    }
}

/* Runs s in batches of `batch` (told right away unless tell_lag, which tells a batch only after
 * the next one was asked) until `want` proposals or exhaustion. Returns how many were made. */
static inline int drive(searcher *s, const objective *o, config_id *ids, int want, int batch)
{
    trial_result r[64];
    int total = 0, n;
    assert_true(batch <= 64);
    while (total < want) {
        int ask = want - total < batch ? want - total : batch;
        n = searcher_ask(s, ids + total, ask);
        assert_true(n >= 0 && n <= ask);
        if (n == 0)
            break;
        evaluate(o, ids + total, r, n);
        searcher_tell(s, ids + total, r, n);
        total += n;
    }
    return total;
}

/* One search by `name` for seed on sp (a 4-parameter space such as space_10k) whose hidden optimum
 * moves with the seed: n proposals asked one at a time, their results in r. */
static inline void drive_seeded(const char *name, space *sp, const json_t *options, uint64_t seed,
                                trial_result *r, int n)
{
    int opt[4] = {(int)(seed * 3 % 10), (int)(seed * 7 % 10), (int)(seed + 4) % 10,
                  (int)(seed * 5 + 1) % 10};
    objective o = {sp, opt, 0};
    config_id *ids = malloc((size_t)n * sizeof *ids);
    assert_non_null(ids);
    searcher *s = searcher_new(name, sp, options, seed, NULL);
    assert_non_null(s);
    assert_int_equal(drive(s, &o, ids, n, 1), n);
    evaluate(&o, ids, r, n);
    searcher_free(s);
    free(ids);
}

static inline int cmp_ids(const void *a, const void *b)
{
    config_id x = *(const config_id *)a, y = *(const config_id *)b;
    return x < y ? -1 : x > y;
}

static inline void assert_distinct_valid(const config_id *ids, size_t n, uint64_t count)
{
    config_id *copy = malloc(n * sizeof *copy);
    assert_non_null(copy);
    memcpy(copy, ids, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_ids);
    for (size_t i = 0; i < n; i++) {
        assert_true(copy[i] < count);
        if (i > 0)
            assert_true(copy[i] != copy[i - 1]);
    }
    free(copy);
}

/* The searcher's time per proposal on the tiling space: n proposals asked and told in batches of 4
 * (as in the contract suite), printed as "<name>: N proposals (batches of 4<note>) on the ...";
 * they must be distinct and valid. */
static inline void overhead_on_tiling(const char *name, int n, const char *note)
{
    space *sp = space_gemm_tiling();
    objective o = {sp, NULL, 13};
    config_id *ids = malloc((size_t)n * sizeof *ids);
    assert_non_null(ids);
    searcher *s = searcher_new(name, sp, NULL, 2024, NULL);
    assert_non_null(s);
    double t0 = kt_clock_s();
    assert_int_equal(drive(s, &o, ids, n, 4), n);
    double dt = kt_clock_s() - t0;
    printf("%s: %d proposals (batches of 4%s) on the %llu-config tiling space: %.1f us each\n",
           name, n, note, (unsigned long long)space_count(sp), dt * 1e6 / n);
    assert_distinct_valid(ids, (size_t)n, space_count(sp));
    searcher_free(s);
    free(ids);
    space_free(sp);
}

#endif
