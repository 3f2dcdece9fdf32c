/* Unit tests of search/auto, the default strategy: the contract every strategy keeps (valid ids,
 * no repeats over a whole restricted space, determinism, resume by replay with uneven batches,
 * option errors), proposal overhead on the 899,756-config GEMM tiling space, and search quality on
 * a smooth synthetic objective against random. Helpers follow test_search_strategies.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/searcher.h"
#include "search/searcher_impl.h"

static space *make_space(const char *params_json, const char *restr_json)
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
static space *space_small(void)
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
static space *space_10k(void)
{
    const char *v = "[0,1,2,3,4,5,6,7,8,9]";
    char params[512];
    snprintf(params, sizeof params,
             "[{\"name\":\"a\",\"values\":%s},{\"name\":\"b\",\"values\":%s},"
             "{\"name\":\"c\",\"values\":%s},{\"name\":\"d\",\"values\":%s}]",
             v, v, v, v);
    return make_space(params, NULL);
}

static space *space_gemm_tiling(void)
{
    const char *v = "[1,2,4,8,16,32,64,128,256,512,1024]";
    const char *names[] = {"m0", "m1", "m2", "m3", "k0", "k1", "n0", "n1", "n2", "n3"};
    char params[2048];
    size_t len = 0;
    len += (size_t)snprintf(params + len, sizeof params - len, "[");
    for (int i = 0; i < 10; i++)
        len += (size_t)snprintf(params + len, sizeof params - len,
                                "%s{\"name\":\"%s\",\"values\":%s}", i ? "," : "", names[i], v);
    snprintf(params + len, sizeof params - len, "]");
    space *sp = make_space(params, "[\"m0*m1*m2*m3 == 1024\", \"k0*k1 == 1024\","
                                   " \"n0*n1*n2*n3 == 1024\"]");
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

static void evaluate(const objective *o, const config_id *ids, trial_result *r, int n)
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
static int drive(searcher *s, const objective *o, config_id *ids, int want, int batch)
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

static int cmp_ids(const void *a, const void *b)
{
    config_id x = *(const config_id *)a, y = *(const config_id *)b;
    return x < y ? -1 : x > y;
}

static void assert_distinct_valid(const config_id *ids, size_t n, uint64_t count)
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

static void registered(void **state)
{
    (void)state;
    assert_true(searcher_exists("auto"));
    assert_non_null(strstr(searcher_names(), "auto"));
}

/* Ask until 0 on the small space: exactly its 120 configurations, each once, with failures mixed
 * in, in batches of 4, and once with 30 asked before any tell. */
static void covers_small_space_once(void **state)
{
    const char *name = *state;
    space *sp = space_small();
    objective o = {sp, NULL, 7};
    config_id ids[200];
    for (uint64_t seed = 1; seed <= 3; seed++) {
        searcher *s = searcher_new(name, sp, NULL, seed, NULL);
        assert_non_null(s);
        assert_string_equal(searcher_name(s), name);
        int first = searcher_ask(s, ids, 30); /* a batch before any result: never blocks */
        assert_int_equal(first, 30);
        trial_result r[30];
        evaluate(&o, ids, r, 30);
        searcher_tell(s, ids, r, 30);
        int total = 30 + drive(s, &o, ids + 30, 200 - 30, 4);
        assert_int_equal(total, 120);
        assert_distinct_valid(ids, 120, 120);
        assert_int_equal(searcher_ask(s, ids, 4), 0);
        searcher_free(s);
    }
    space_free(sp);
}

static void deterministic_and_seeded(void **state)
{
    const char *name = *state;
    space *spaces[2] = {space_small(), space_gemm_tiling()};
    for (int k = 0; k < 2; k++) {
        objective o = {spaces[k], NULL, 5};
        int want = k == 0 ? 100 : 500;
        config_id *x = calloc(500, sizeof *x), *y = calloc(500, sizeof *y),
                  *z = calloc(500, sizeof *z);
        searcher *a = searcher_new(name, spaces[k], NULL, 11, NULL);
        searcher *b = searcher_new(name, spaces[k], NULL, 11, NULL);
        searcher *c = searcher_new(name, spaces[k], NULL, 12, NULL);
        assert_int_equal(drive(a, &o, x, want, 4), want);
        assert_int_equal(drive(b, &o, y, want, 4), want);
        assert_int_equal(drive(c, &o, z, want, 4), want);
        assert_memory_equal(x, y, (size_t)want * sizeof *x);
        assert_memory_not_equal(x, z, (size_t)want * sizeof *x);
        assert_distinct_valid(x, (size_t)want, space_count(spaces[k]));
        assert_distinct_valid(z, (size_t)want, space_count(spaces[k]));
        searcher_free(a);
        searcher_free(b);
        searcher_free(c);
        free(x);
        free(y);
        free(z);
        space_free(spaces[k]);
    }
}

/* A fresh searcher re-fed the same asks and tells continues exactly like the original. */
static void resumes_by_replay(void **state)
{
    const char *name = *state;
    space *spaces[2] = {space_10k(), space_gemm_tiling()};
    const int sizes[] = {3, 17, 1, 4, 9, 30, 4, 4, 2, 25};
    enum { N_SIZES = 10 };
    for (int k = 0; k < 2; k++) {
        objective o = {spaces[k], NULL, 9};
        config_id run[128], replay[128];
        trial_result r[32];
        searcher *a = searcher_new(name, spaces[k], NULL, 99, NULL);
        int off = 0;
        for (int i = 0; i < N_SIZES; i++) {
            assert_int_equal(searcher_ask(a, run + off, sizes[i]), sizes[i]);
            evaluate(&o, run + off, r, sizes[i]);
            searcher_tell(a, run + off, r, sizes[i]);
            off += sizes[i];
        }
        searcher *b = searcher_new(name, spaces[k], NULL, 99, NULL);
        off = 0;
        for (int i = 0; i < N_SIZES; i++) {
            assert_int_equal(searcher_ask(b, replay + off, sizes[i]), sizes[i]);
            /* [0, CUT): replayed from the store; after that the live run goes on. */
            evaluate(&o, replay + off, r, sizes[i]);
            searcher_tell(b, replay + off, r, sizes[i]);
            off += sizes[i];
        }
        assert_memory_equal(run, replay, (size_t)off * sizeof *run);
        assert_distinct_valid(run, (size_t)off, space_count(spaces[k]));
        searcher_free(a);
        searcher_free(b);
        space_free(spaces[k]);
    }
}

static void bad_options_rejected(void **state)
{
    const char *name = *state;
    space *sp = space_small();
    kt_error err;
    const char *bad[] = {"{\"nope\": 1}",          "[1]",
                         "{\"initial\": 0}",       "{\"initial\": 2.5}",
                         "{\"exploration\": 1.5}", "{\"exploration\": \"0.1\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *o = json_loads(bad[i], 0, NULL);
        assert_non_null(o);
        kt_error_clear(&err);
        searcher *s = searcher_new(name, sp, o, 1, &err);
        assert_null(s);
        assert_int_equal(err.code, KT_ERR_BAD_OPTION);
        json_decref(o);
    }
    /* Each strategy's own options, set to valid non-defaults, are accepted. */
    const char *good = "{\"initial\": 5, \"exploration\": 0.3}";
    json_t *o = json_loads(good, 0, NULL);
    searcher *s = searcher_new(name, sp, o, 1, &err);
    assert_non_null(s);
    objective obj = {sp, NULL, 0};
    config_id ids[200];
    assert_int_equal(drive(s, &obj, ids, 200, 4), 120);
    assert_distinct_valid(ids, 120, 120);
    searcher_free(s);
    json_decref(o);
    space_free(sp);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Proposal overhead (ask + tell, plus the synthetic objective's decode) on the 899,756-config
 * tiling space: under 1 ms each. */
static void fast_on_tiling_space(void **state)
{
    const char *name = *state;
    space *sp = space_gemm_tiling();
    objective o = {sp, NULL, 13};
    enum { N = 5000 };
    config_id *ids = malloc(N * sizeof *ids);
    searcher *s = searcher_new(name, sp, NULL, 2024, NULL);
    double t0 = now_s();
    assert_int_equal(drive(s, &o, ids, N, 4), N);
    double dt = now_s() - t0;
    printf("%s: %d proposals (batches of 4) on the %llu-config tiling space: %.1f us each\n", name,
           N, (unsigned long long)space_count(sp), dt * 1e6 / N);
    assert_true(dt / N < 1e-3);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_free(s);
    free(ids);
    space_free(sp);
}

/* Mean over 5 seeds of (optimum time / best time found in 300 evaluations) on the 10k space. */
static double mean_quality(const char *name, space *sp)
{
    double sum = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int opt[4] = {(int)(seed * 3 % 10), (int)(seed * 7 % 10), (int)(seed + 4) % 10,
                      (int)(seed * 5 + 1) % 10};
        objective o = {sp, opt, 0};
        config_id ids[300];
        trial_result r[300];
        searcher *s = searcher_new(name, sp, NULL, seed, NULL);
        assert_int_equal(drive(s, &o, ids, 300, 1), 300);
        evaluate(&o, ids, r, 300);
        double best = INFINITY;
        for (int i = 0; i < 300; i++)
            best = r[i].time_ms < best ? r[i].time_ms : best;
        sum += 10.0 / best;
        searcher_free(s);
    }
    return sum / 5;
}

static void finds_optimum_neighbourhood(void **state)
{
    const char *name = *state;
    space *sp = space_10k();
    double q = mean_quality(name, sp), qr = mean_quality("random", sp);
    printf("%s: mean fraction of optimum after 300 evaluations %.3f (random %.3f)\n", name, q, qr);
    assert_true(q >= 0.9);
    assert_true(q > qr);
    space_free(sp);
}

int main(void)
{
    void *name = (void *)"auto";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered),
        cmocka_unit_test_prestate(covers_small_space_once, name),
        cmocka_unit_test_prestate(deterministic_and_seeded, name),
        cmocka_unit_test_prestate(resumes_by_replay, name),
        cmocka_unit_test_prestate(bad_options_rejected, name),
        cmocka_unit_test_prestate(fast_on_tiling_space, name),
        cmocka_unit_test_prestate(finds_optimum_neighbourhood, name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
