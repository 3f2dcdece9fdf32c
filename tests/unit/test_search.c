/* Unit tests of search/: the strategy registry and option checks, random (valid, no repeats,
 * seeded, resumable by replay, fast on the 899,756-config GEMM tiling space), exhaustive (id
 * order), and the "start" option of the strategies that walk neighbours (searcher_start_id,
 * searcher_options_resolve_start), and a searcher of another room's operations (searcher_new_ops).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "search/searcher.h"
#include "search/searcher_impl.h"

#include "search_test_util.h"

/* 10 x 10 x 10 = 1000 configurations, no restrictions. */
static space *space_1000(void)
{
    return make_space("[{\"name\":\"a\",\"values\":[0,1,2,3,4,5,6,7,8,9]},"
                      "{\"name\":\"b\",\"values\":[0,1,2,3,4,5,6,7,8,9]},"
                      "{\"name\":\"c\",\"values\":[0,1,2,3,4,5,6,7,8,9]}]",
                      NULL);
}

static void catalog_lists_every_strategy(void **state)
{
    (void)state;
    json_t *cat = searcher_catalog_json();
    assert_int_equal(json_array_size(cat), 13);
    char joined[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < json_array_size(cat); i++) {
        json_t *s = json_array_get(cat, i);
        const char *name = json_string_value(json_object_get(s, "name"));
        assert_non_null(name);
        assert_true(searcher_exists(name));
        assert_true(strlen(json_string_value(json_object_get(s, "summary"))) > 10);
        assert_true(json_is_object(json_object_get(s, "options")));
        len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%s", i ? ", " : "", name);
    }
    assert_string_equal(joined, searcher_names());
    assert_string_equal(
        searcher_names(),
        "random, exhaustive, anneal, greedy_ils, genetic, auto, gbfs, xgb, rnn, na2c, bo, mindmap, "
        "xgb_local");
    assert_false(searcher_exists("annealing"));
    assert_false(searcher_exists(NULL));
    json_decref(cat);
}

static void unknown_strategy_and_bad_options(void **state)
{
    (void)state;
    kt_error err;
    space *sp = space_1000();
    kt_error_clear(&err);
    assert_null(searcher_new("simulated_annealing", sp, NULL, 1, &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_STRATEGY);
    assert_non_null(strstr(err.message, "simulated_annealing"));
    /* "did you mean" (issue 31): simulated_annealing is a known alias of anneal */
    assert_string_equal(err.hint, "did you mean 'anneal'? valid strategies: random, exhaustive, "
                                  "anneal, greedy_ils, genetic, auto, gbfs, xgb, rnn, na2c, bo, "
                                  "mindmap, xgb_local");
    assert_null(searcher_new("bayes", sp, NULL, 1, &err));
    assert_non_null(strstr(err.hint, "did you mean 'bo'? valid strategies"));
    assert_null(searcher_new("randm", sp, NULL, 1, &err));
    assert_non_null(strstr(err.hint, "did you mean 'random'? valid strategies"));
    assert_null(searcher_new("zzzzzz", sp, NULL, 1, &err));
    assert_string_equal(err.hint, "valid strategies: random, exhaustive, anneal, greedy_ils, "
                                  "genetic, auto, gbfs, xgb, rnn, na2c, bo, mindmap, xgb_local");
    assert_null(searcher_new(NULL, sp, NULL, 1, &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_STRATEGY);

    json_t *opts = json_pack("{s:i}", "population", 20);
    assert_null(searcher_new("random", sp, opts, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "population"));
    assert_non_null(strstr(err.hint, "takes no options"));
    json_decref(opts);

    opts = json_pack("[i]", 1);
    assert_null(searcher_new("exhaustive", sp, opts, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(opts);

    /* An empty object and JSON null are no options. */
    opts = json_object();
    searcher *s = searcher_new("random", sp, opts, 1, &err);
    assert_non_null(s);
    assert_string_equal(searcher_name(s), "random");
    searcher_free(s);
    json_decref(opts);
    opts = json_null();
    s = searcher_new("exhaustive", sp, opts, 1, &err);
    assert_non_null(s);
    assert_string_equal(searcher_name(s), "exhaustive");
    searcher_free(s);
    space_free(sp);
}

/* The generic checker future strategies rely on, against a made-up descriptor table. */
static void option_validation_types_and_ranges(void **state)
{
    (void)state;
    static const searcher_option opts[] = {
        {"population", SEARCHER_OPT_INTEGER, "20", 2, 1000, NULL, "individuals per generation"},
        {"mutation", SEARCHER_OPT_NUMBER, "0.1", 0, 1, NULL, "mutation probability"},
        {"elitism", SEARCHER_OPT_BOOLEAN, "true", 0, 0, NULL, "keep the best"},
        {"method", SEARCHER_OPT_STRING, "\"uniform\"", 0, 0, "uniform|single_point", "crossover"},
    };
    kt_error err;
    json_t *o;
#define CHECK(json, want)                                                                          \
    do {                                                                                           \
        o = json_loads(json, 0, NULL);                                                             \
        assert_non_null(o);                                                                        \
        kt_error_clear(&err);                                                                      \
        int rc_ = searcher_validate_options("fake", opts, 4, o, &err);                             \
        assert_int_equal(err.code, want);                                                          \
        assert_int_equal(rc_, want == KT_OK ? 0 : -1);                                             \
        json_decref(o);                                                                            \
    } while (0)
    CHECK("{\"population\": 50, \"mutation\": 0.5, \"elitism\": false, \"method\": \"uniform\"}",
          KT_OK);
    CHECK("{\"population\": 50.0}", KT_OK);
    CHECK("{\"population\": 50.5}", KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "integer"));
    CHECK("{\"population\": 1}", KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "between"));
    CHECK("{\"population\": \"50\"}", KT_ERR_BAD_OPTION);
    CHECK("{\"mutation\": 1.5}", KT_ERR_BAD_OPTION);
    CHECK("{\"elitism\": 1}", KT_ERR_BAD_OPTION);
    CHECK("{\"method\": \"two_point\"}", KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "uniform|single_point"));
    CHECK("{\"popsize\": 3}", KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "popsize"));
    assert_string_equal(err.hint, "accepted options: population, mutation, elitism, method");
#undef CHECK
    o = json_pack("{s:i}", "population", 64);
    assert_true(searcher_option_number(&opts[0], o) == 64);
    assert_true(searcher_option_number(&opts[1], o) == 0.1);
    assert_true(searcher_option_bool(&opts[2], o));
    char buf[32];
    assert_string_equal(searcher_option_string(&opts[3], o, buf, sizeof buf), "uniform");
    json_decref(o);
}

static void random_covers_space_once(void **state)
{
    (void)state;
    space *sp = space_1000();
    searcher *s = searcher_new("random", sp, NULL, 42, NULL);
    config_id ids[1000], batch[64];
    int total = 0, n;
    assert_non_null(s);
    while ((n = searcher_ask(s, batch, 64)) > 0) {
        assert_true(total + n <= 1000);
        memcpy(ids + total, batch, (size_t)n * sizeof *batch);
        trial_result r[64];
        for (int i = 0; i < n; i++) {
            trial_result_init(&r[i]);
            r[i].status = TRIAL_OK;
            r[i].time_ms = 1.0 + (double)batch[i];
        }
        searcher_tell(s, batch, r, n);
        total += n;
    }
    assert_int_equal(total, 1000);
    assert_distinct_valid(ids, 1000, 1000);
    assert_int_equal(searcher_ask(s, batch, 64), 0);
    assert_int_equal(searcher_ask(s, batch, 0), 0);
    /* Not the identity order. */
    int in_place = 0;
    for (int i = 0; i < 1000; i++)
        in_place += ids[i] == (config_id)i;
    assert_true(in_place < 20);
    searcher_free(s);
    space_free(sp);
}

static void random_on_restricted_space_stays_valid(void **state)
{
    (void)state;
    space *sp = make_space("[{\"name\":\"x\",\"values\":[1,2,3,4,5,6,7,8]},"
                           "{\"name\":\"y\",\"values\":[1,2,3,4,5,6,7,8]}]",
                           "[\"x * y <= 12\"]");
    uint64_t count = space_count(sp);
    assert_true(count > 0 && count < 64);
    searcher *s = searcher_new("random", sp, NULL, 7, NULL);
    config_id ids[64];
    int n = searcher_ask(s, ids, 64);
    assert_int_equal(n, (int)count);
    assert_distinct_valid(ids, (size_t)n, count);
    assert_int_equal(searcher_ask(s, ids, 64), 0);
    searcher_free(s);
    space_free(sp);
}

static void random_is_seeded_and_resumable(void **state)
{
    (void)state;
    space *sp = space_1000();
    searcher *a = searcher_new("random", sp, NULL, 1234, NULL);
    searcher *b = searcher_new("random", sp, NULL, 1234, NULL);
    searcher *c = searcher_new("random", sp, NULL, 1235, NULL);
    config_id x[100], y[100], z[100];
    assert_int_equal(searcher_ask(a, x, 100), 100);
    assert_int_equal(searcher_ask(b, y, 100), 100);
    assert_int_equal(searcher_ask(c, z, 100), 100);
    assert_memory_equal(x, y, sizeof x);
    assert_memory_not_equal(x, z, sizeof x);
    searcher_free(a);
    searcher_free(b);
    searcher_free(c);

    /* Resume: a fresh searcher re-fed the first batches (same sizes, same tells) continues the run.
     */
    const int sizes[] = {3, 17, 1, 40, 9, 30};
    config_id run[100], replay[100];
    trial_result r[40];
    for (int i = 0; i < 40; i++) {
        trial_result_init(&r[i]);
        r[i].status = i % 3 ? TRIAL_OK : TRIAL_RUNTIME_ERROR;
        r[i].time_ms = i;
    }
    a = searcher_new("random", sp, NULL, 99, NULL);
    int off = 0;
    for (int k = 0; k < 6; k++) {
        assert_int_equal(searcher_ask(a, run + off, sizes[k]), sizes[k]);
        searcher_tell(a, run + off, r, sizes[k]);
        off += sizes[k];
    }
    b = searcher_new("random", sp, NULL, 99, NULL);
    off = 0;
    for (int k = 0; k < 6; k++) {
        assert_int_equal(searcher_ask(b, replay + off, sizes[k]), sizes[k]);
        if (k < 4)
            searcher_tell(b, replay + off, r, sizes[k]);
        off += sizes[k];
    }
    assert_memory_equal(run, replay, (size_t)off * sizeof *run);
    searcher_free(a);
    searcher_free(b);
    space_free(sp);
}

/* The first proposal over many seeds is spread evenly over a 10-config space. */
static void random_first_proposal_is_uniform(void **state)
{
    (void)state;
    space *sp = make_space("[{\"name\":\"a\",\"values\":[0,1,2,3,4,5,6,7,8,9]}]", NULL);
    int counts[10] = {0};
    for (uint64_t seed = 0; seed < 10000; seed++) {
        searcher *s = searcher_new("random", sp, NULL, seed, NULL);
        config_id id;
        assert_int_equal(searcher_ask(s, &id, 1), 1);
        assert_true(id < 10);
        counts[id]++;
        searcher_free(s);
    }
    for (int i = 0; i < 10; i++)
        assert_in_range(counts[i], 850, 1150);
    space_free(sp);
}

static void exhaustive_walks_ids_in_order(void **state)
{
    (void)state;
    space *sp = space_1000();
    searcher *s = searcher_new("exhaustive", sp, NULL, 5, NULL);
    config_id batch[300];
    uint64_t next = 0;
    int n;
    while ((n = searcher_ask(s, batch, 300)) > 0) {
        for (int i = 0; i < n; i++)
            assert_int_equal(batch[i], next++);
    }
    assert_int_equal(next, 1000);
    assert_int_equal(searcher_ask(s, batch, 300), 0);
    searcher_free(s);
    space_free(sp);
}

/* searcher_new_ops: another room's ask/tell/destroy behind searcher.h (cli's remote searcher): an
 * id counter here, told results counted; the first ids of a history come first and the counter's
 * later proposal of one is dropped; free calls destroy; a missing operation is refused. */
typedef struct ops_state {
    config_id next;
    int told, *destroyed;
} ops_state;

static int ops_ask(void *st, config_id *out, int max)
{
    ops_state *o = st;
    int n = 0;
    while (n < max && o->next < 10)
        out[n++] = o->next++;
    return n;
}

static void ops_tell(void *st, const config_id *ids, const trial_result *r, int n)
{
    (void)ids;
    (void)r;
    ((ops_state *)st)->told += n;
}

static void ops_destroy(void *st)
{
    ++*((ops_state *)st)->destroyed;
    free(st);
}

static void ops_searcher_forwards(void **state)
{
    (void)state;
    space *sp = space_1000();
    int destroyed = 0;
    kt_error err;
    ops_state *o = calloc(1, sizeof *o);
    o->destroyed = &destroyed;
    searcher_ops ops = {"counter", ops_ask, ops_tell, ops_destroy};
    searcher_ops no_tell = {"counter", ops_ask, NULL, ops_destroy};
    kt_error_clear(&err);
    assert_null(searcher_new_ops(&no_tell, o, sp, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    searcher *s = searcher_new_ops(&ops, o, sp, &err);
    assert_non_null(s);
    assert_string_equal(searcher_name(s), "counter");
    config_id first[] = {7}, ids[4];
    searcher_history h = {.first = first, .n_first = 1};
    assert_int_equal(searcher_set_history(s, &h, &err), 0);
    assert_int_equal(searcher_ask(s, ids, 4), 4);
    assert_true(ids[0] == 7 && ids[1] == 0 && ids[2] == 1 && ids[3] == 2);
    trial_result r[4];
    for (int i = 0; i < 4; i++) {
        trial_result_init(&r[i]);
        r[i].status = TRIAL_OK;
        r[i].time_ms = 1.0 + i;
    }
    searcher_tell(s, ids, r, 4);
    assert_int_equal(o->told, 4);
    assert_int_equal(searcher_ask(s, ids, 4), 4); /* 3, 4, 5, 6 */
    assert_int_equal(ids[3], 6);
    assert_int_equal(searcher_ask(s, ids, 4), 2); /* 7 dropped (a first id): 8, 9 */
    assert_true(ids[0] == 8 && ids[1] == 9);
    assert_int_equal(searcher_ask(s, ids, 4), 0);
    searcher_free(s);
    assert_int_equal(destroyed, 1);
    space_free(sp);
}

static void empty_space_proposes_nothing(void **state)
{
    (void)state;
    space *sp = make_space("[{\"name\":\"a\",\"values\":[1,2,3]}]", "[\"a > 5\"]");
    assert_int_equal(space_count(sp), 0);
    config_id id;
    searcher *r = searcher_new("random", sp, NULL, 1, NULL);
    searcher *e = searcher_new("exhaustive", sp, NULL, 1, NULL);
    assert_int_equal(searcher_ask(r, &id, 1), 0);
    assert_int_equal(searcher_ask(e, &id, 1), 0);
    searcher_free(r);
    searcher_free(e);
    space_free(sp);
}

static void random_on_big_space_is_fast_without_repeats(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    assert_int_equal(space_count(sp), 899756);
    enum { N = 10000 };
    config_id *ids = malloc(N * sizeof *ids);
    assert_non_null(ids);
    searcher *s = searcher_new("random", sp, NULL, 2024, NULL);
    double t0 = kt_clock_s();
    int total = 0;
    while (total < N) {
        int n = searcher_ask(s, ids + total, N - total < 100 ? N - total : 100);
        assert_true(n > 0);
        total += n;
    }
    double dt = kt_clock_s() - t0;
    printf("random: %d proposals on a %llu-config space in %.3f ms (%.0f ns each)\n", N,
           (unsigned long long)space_count(sp), dt * 1e3, dt * 1e9 / N);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_free(s);

    s = searcher_new("exhaustive", sp, NULL, 0, NULL);
    assert_int_equal(searcher_ask(s, ids, 10), 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(ids[i], i);
    searcher_free(s);
    free(ids);
    space_free(sp);
}

/* 16^8 = 4,294,967,296 configurations: memory must follow the proposals, not the space. */
static void random_on_huge_space_keeps_memory_small(void **state)
{
    (void)state;
    const char *v = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]";
    char params[1024];
    size_t len = (size_t)snprintf(params, sizeof params, "[");
    for (int i = 0; i < 8; i++)
        len += (size_t)snprintf(params + len, sizeof params - len,
                                "%s{\"name\":\"p%d\",\"values\":%s}", i ? "," : "", i, v);
    snprintf(params + len, sizeof params - len, "]");
    space *sp = make_space(params, NULL);
    assert_true(space_count(sp) == 4294967296ULL);
    enum { N = 100000 };
    config_id *ids = malloc(N * sizeof *ids);
    assert_non_null(ids);
    searcher *s = searcher_new("random", sp, NULL, 77, NULL);
    for (int total = 0; total < N;)
        total += searcher_ask(s, ids + total, 1000);
    assert_distinct_valid(ids, N, space_count(sp));
    searcher_free(s);
    free(ids);
    space_free(sp);
}

/* The strategies with a "start" option (SEARCHER_OPT_START). */
static const char *const walkers[] = {"gbfs", "na2c", "anneal", "greedy_ils"};
#define N_WALKERS ((int)(sizeof walkers / sizeof walkers[0]))

static searcher *new_with(const char *name, const space *sp, const char *options, uint64_t seed,
                          kt_error *err)
{
    json_t *o = json_loads(options, 0, NULL);
    assert_non_null(o);
    kt_error_clear(err);
    searcher *s = searcher_new(name, sp, o, seed, err);
    json_decref(o);
    return s;
}

static void tell_ms(searcher *s, config_id id, double ms)
{
    trial_result r;
    trial_result_init(&r);
    r.status = TRIAL_OK;
    r.time_ms = ms;
    searcher_tell(s, &id, &r, 1);
}

/* The GEMM tiling space of kernels/gemm_tiled/spec.json (its "cpu" parameters and restrictions)
 * at M = N = K = 64: 84 * 7 * 84 = 49,392 configurations. */
static space *space_gemm_tiled_64(void)
{
    space *sp = tiling_space_new("[1,2,4,8,16,32,64,128,256,512,1024,2048,4096]", 64);
    assert_int_equal(space_count(sp), 49392);
    return sp;
}

/* "paper" (the default of gbfs and na2c) is the paper's s_0 = [[m,1,1,1],[k,1],[n,1,1,1]] on the
 * gemm_tiled space: every strategy's first proposal, whatever the seed. */
static void paper_start_is_untiled_gemm(void **state)
{
    (void)state;
    space *sp = space_gemm_tiled_64();
    const double want[10] = {64, 1, 1, 1, 64, 1, 64, 1, 1, 1};
    kt_error err;
    for (int w = 0; w < N_WALKERS; w++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            int is_default = w < 2; /* gbfs, na2c */
            searcher *s = is_default
                              ? searcher_new(walkers[w], sp, NULL, seed, &err)
                              : new_with(walkers[w], sp, "{\"start\": \"paper\"}", seed, &err);
            assert_non_null(s);
            config_id id;
            int idx[10];
            assert_int_equal(searcher_ask(s, &id, 1), 1);
            assert_int_equal(space_decode(sp, id, idx), 0);
            for (int p = 0; p < 10; p++)
                assert_true(space_param_value_number(sp, p, idx[p]) == want[p]);
            assert_true(id == space_count(sp) - 1);
            searcher_free(s);
        }
    }
    space_free(sp);
}

/* A configuration object is the first proposal; once its result is told, the walk goes on from
 * it (the second proposal is one of its neighbours). */
static void object_start_is_first_and_walked_from(void **state)
{
    (void)state;
    space *sp = space_1000();
    int idx[3] = {2, 5, 7};
    config_id want, nb[64], ids[4];
    assert_int_equal(space_encode(sp, idx, &want), 0);
    int m = space_neighbours(sp, want, SPACE_NEIGHBOURS_HAMMING, nb, 64);
    m += space_neighbours(sp, want, SPACE_NEIGHBOURS_PAIR_SCALE, nb + m, 64 - m);
    kt_error err;
    for (int w = 0; w < N_WALKERS; w++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            searcher *s =
                new_with(walkers[w], sp, "{\"start\": {\"a\": 2, \"b\": 5, \"c\": 7}}", seed, &err);
            assert_non_null(s);
            assert_int_equal(searcher_ask(s, ids, 1), 1);
            assert_true(ids[0] == want);
            tell_ms(s, ids[0], 10);
            assert_int_equal(searcher_ask(s, ids + 1, 1), 1);
            int found = 0;
            for (int k = 0; k < m; k++)
                found |= nb[k] == ids[1];
            if (!found)
                fail_msg("%s seed %llu: second proposal %llu is no neighbour of the start",
                         walkers[w], (unsigned long long)seed, (unsigned long long)ids[1]);
            searcher_free(s);
        }
    }
    space_free(sp);
}

/* A start that is no configuration of the space, or "default" unresolved: KT_ERR_BAD_OPTION at
 * searcher_new, naming the option, with the space's reason (the parameter) as the hint. */
static void bad_start_rejected(void **state)
{
    (void)state;
    space *sp = space_1000(), *small = space_small();
    const struct {
        const char *options, *needle; /* needle: in the message or the hint */
    } bad[] = {
        {"{\"start\": {\"a\": 2, \"b\": 5, \"c\": 70}}", "'c'"},
        {"{\"start\": {\"a\": 2, \"b\": 5}}", "'c'"},
        {"{\"start\": {\"a\": 2, \"b\": 5, \"c\": 7, \"d\": 1}}", "'d'"},
        {"{\"start\": {\"a\": 2, \"b\": \"5\", \"c\": 7}}", "'b'"},
        {"{\"start\": \"default\"}", "default"},
        {"{\"start\": \"middle\"}", "random|default|paper"},
        {"{\"start\": 5}", "configuration object"},
        {"{\"start\": [2, 5, 7]}", "configuration object"},
    };
    kt_error err;
    for (int w = 0; w < N_WALKERS; w++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            assert_null(new_with(walkers[w], sp, bad[i].options, 1, &err));
            assert_int_equal(err.code, KT_ERR_BAD_OPTION);
            assert_non_null(strstr(err.message, "start"));
            if (!strstr(err.message, bad[i].needle) && !strstr(err.hint, bad[i].needle))
                fail_msg("%s %s: '%s' / '%s' lacks %s", walkers[w], bad[i].options, err.message,
                         err.hint, bad[i].needle);
        }
        /* x + y + z <= 7 is broken: the restriction is the reason. */
        assert_null(
            new_with(walkers[w], small, "{\"start\": {\"x\": 5, \"y\": 2, \"z\": 1}}", 1, &err));
        assert_int_equal(err.code, KT_ERR_BAD_OPTION);
        assert_non_null(strstr(err.hint, "x + y + z <= 7"));
        /* Valid starts of the restricted space are accepted. */
        searcher *s =
            new_with(walkers[w], small, "{\"start\": {\"x\": 5, \"y\": 1, \"z\": 1}}", 1, &err);
        assert_non_null(s);
        searcher_free(s);
    }
    /* Strategies without a start option do not take one. */
    assert_null(new_with("random", sp, "{\"start\": \"paper\"}", 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    space_free(sp);
    space_free(small);
}

/* anneal and greedy_ils default to "random": their first proposal is still the first draw of the
 * seed's rng stream (space_sample), as before the option existed, and an explicit "random" gives
 * the same run. */
static void random_start_keeps_the_stream(void **state)
{
    (void)state;
    space *sp = space_10k();
    objective o = {sp, NULL, 7};
    kt_error err;
    for (int w = 2; w < N_WALKERS; w++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            config_id a[200], b[200];
            kt_rng rng;
            kt_rng_seed(&rng, seed);
            searcher *s = searcher_new(walkers[w], sp, NULL, seed, &err);
            searcher *t = new_with(walkers[w], sp, "{\"start\": \"random\"}", seed, &err);
            assert_non_null(s);
            assert_non_null(t);
            assert_int_equal(drive(s, &o, a, 200, 3), 200);
            assert_int_equal(drive(t, &o, b, 200, 3), 200);
            assert_true(a[0] == space_sample(sp, &rng));
            assert_memory_equal(a, b, sizeof a);
            searcher_free(s);
            searcher_free(t);
        }
    }
    space_free(sp);
}

static void resolve_start_replaces_default(void **state)
{
    (void)state;
    kt_error err;
    json_t *opts = json_loads("{\"start\": \"default\", \"rho\": 3}", 0, NULL);
    json_t *def = json_loads("{\"a\": 1, \"b\": 2, \"c\": 3}", 0, NULL);
    kt_error_clear(&err);
    json_t *r = searcher_options_resolve_start(opts, def, &err);
    assert_non_null(r);
    assert_true(r != opts);
    assert_true(json_equal(json_object_get(r, "start"), def));
    assert_int_equal(json_integer_value(json_object_get(r, "rho")), 3);
    assert_int_equal(json_object_size(r), 2);
    /* the caller's options are left as sent (a job keeps them so) */
    assert_string_equal(json_string_value(json_object_get(opts, "start")), "default");
    /* the resolved options make a searcher that starts at the default */
    space *sp = space_1000();
    searcher *s = searcher_new("gbfs", sp, r, 1, &err);
    assert_non_null(s);
    config_id id;
    int idx[3] = {1, 2, 3};
    config_id want;
    assert_int_equal(space_encode(sp, idx, &want), 0);
    assert_int_equal(searcher_ask(s, &id, 1), 1);
    assert_true(id == want);
    searcher_free(s);
    space_free(sp);
    json_decref(r);

    /* No default known: an error that says so. */
    kt_error_clear(&err);
    assert_null(searcher_options_resolve_start(opts, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "default"));
    assert_non_null(strstr(err.hint, "paper"));
    json_decref(opts);

    /* No "default" asked for: the same options (a new reference), NULL stays NULL. */
    const char *same[] = {"{\"rho\": 3}", "{\"start\": \"paper\"}", "{\"start\": {\"a\": 1}}"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        opts = json_loads(same[i], 0, NULL);
        kt_error_clear(&err);
        r = searcher_options_resolve_start(opts, NULL, &err);
        assert_true(r == opts);
        assert_int_equal(err.code, KT_OK);
        assert_true(opts->refcount == 2);
        json_decref(r);
        json_decref(opts);
    }
    kt_error_clear(&err);
    assert_null(searcher_options_resolve_start(NULL, def, &err));
    assert_int_equal(err.code, KT_OK);
    json_decref(def);
}

/* The catalog shows the option as "string|object" with its choices and default. */
static void catalog_shows_start_option(void **state)
{
    (void)state;
    json_t *cat = searcher_catalog_json();
    int seen = 0;
    for (size_t i = 0; i < json_array_size(cat); i++) {
        json_t *s = json_array_get(cat, i);
        const char *name = json_string_value(json_object_get(s, "name"));
        json_t *o = json_object_get(json_object_get(s, "options"), "start");
        int walker = 0;
        for (int w = 0; w < N_WALKERS; w++)
            walker |= strcmp(name, walkers[w]) == 0;
        assert_int_equal(o != NULL, walker);
        if (!o)
            continue;
        seen++;
        assert_string_equal(json_string_value(json_object_get(o, "type")), "string|object");
        assert_string_equal(json_string_value(json_object_get(o, "choices")),
                            "random|default|paper");
        assert_string_equal(json_string_value(json_object_get(o, "default")),
                            strcmp(name, "gbfs") == 0 || strcmp(name, "na2c") == 0 ? "paper"
                                                                                   : "random");
    }
    assert_int_equal(seen, N_WALKERS);
    json_decref(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_lists_every_strategy),
        cmocka_unit_test(unknown_strategy_and_bad_options),
        cmocka_unit_test(option_validation_types_and_ranges),
        cmocka_unit_test(random_covers_space_once),
        cmocka_unit_test(random_on_restricted_space_stays_valid),
        cmocka_unit_test(random_is_seeded_and_resumable),
        cmocka_unit_test(random_first_proposal_is_uniform),
        cmocka_unit_test(exhaustive_walks_ids_in_order),
        cmocka_unit_test(ops_searcher_forwards),
        cmocka_unit_test(empty_space_proposes_nothing),
        cmocka_unit_test(random_on_big_space_is_fast_without_repeats),
        cmocka_unit_test(random_on_huge_space_keeps_memory_small),
        cmocka_unit_test(paper_start_is_untiled_gemm),
        cmocka_unit_test(object_start_is_first_and_walked_from),
        cmocka_unit_test(bad_start_rejected),
        cmocka_unit_test(random_start_keeps_the_stream),
        cmocka_unit_test(resolve_start_replaces_default),
        cmocka_unit_test(catalog_shows_start_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
