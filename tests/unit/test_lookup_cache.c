/* lookup/best_cache and the notification parser of lookup/best_listen, without a database: fills
 * and hits, invalidation by key (and what each kind of entry depends on), negative entries, a fill
 * that raced an invalidation or a flush, eviction, ETags and If-None-Match, concurrent use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/best_cache.h"
#include "lookup/best_listen.h"

/* A cache as its listener leaves it once it LISTENs: synced. */
static best_cache *cache_new(size_t entries, size_t bytes)
{
    best_cache *c = best_cache_new(entries, bytes);
    if (c)
        best_cache_set_synced(c, 1);
    return c;
}

static target_key key_of(const char *kernel, const char *cls, const char *problem)
{
    return (target_key){.kernel = kernel,
                        .device = "dev",
                        .device_class = cls,
                        .kernel_hash = "0123456789abcdef",
                        .problem_key = problem,
                        .toolchain = "gcc 12"};
}

/* Fills request q (its own name as the key) for key k with body. */
static int fill(best_cache *c, const char *q, target_key k, unsigned flags, int status,
                const char *body)
{
    best_cache_ticket t = best_cache_ticket_take(c, &k);
    return best_cache_put(c, &t, q, strlen(q), &k, flags, status, body, strlen(body), NULL);
}

static int has(best_cache *c, const char *q)
{
    best_cache_hit h;
    int rc = best_cache_get(c, q, strlen(q), &h);
    free(h.body);
    return rc == 1;
}

static void test_fill_and_hit(void **state)
{
    (void)state;
    best_cache *c = cache_new(100, 1 << 20);
    assert_non_null(c);
    best_cache_hit h;
    assert_int_equal(best_cache_get(c, "q1", 2, &h), 0);
    assert_int_equal(fill(c, "q1", key_of("gemm", "cpu:x", "{\"M\":1}"), BEST_CACHE_MEASURED, 200,
                          "{\"time_ms\":1}"),
                     1);
    assert_int_equal(best_cache_get(c, "q1", 2, &h), 1);
    assert_int_equal(h.status, 200);
    assert_int_equal(h.flags, BEST_CACHE_MEASURED);
    assert_int_equal(h.body_len, strlen("{\"time_ms\":1}"));
    assert_memory_equal(h.body, "{\"time_ms\":1}", h.body_len);
    char etag[32];
    best_cache_etag(h.body, h.body_len, etag);
    assert_string_equal(h.etag, etag);
    free(h.body);
    /* a key is compared whole: a prefix or a longer key is another request */
    assert_false(has(c, "q"));
    assert_false(has(c, "q12"));
    /* a second fill of the same request replaces the first */
    assert_int_equal(fill(c, "q1", key_of("gemm", "cpu:x", "{\"M\":1}"), BEST_CACHE_MEASURED, 200,
                          "{\"time_ms\":0.5}"),
                     1);
    assert_int_equal(best_cache_get(c, "q1", 2, &h), 1);
    assert_memory_equal(h.body, "{\"time_ms\":0.5}", h.body_len);
    free(h.body);
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 3); /* q1 before its fill, "q", "q12" */
    best_cache_free(c);
}

static void test_invalidate_by_key(void **state)
{
    (void)state;
    best_cache *c = cache_new(100, 1 << 20);
    target_key a = key_of("gemm", "cpu:x", "A"), b = key_of("gemm", "cpu:x", "B"),
               other_class = key_of("gemm", "cpu:y", "A"),
               other_kernel = key_of("conv", "cpu:x", "A");
    fill(c, "a-measured", a, BEST_CACHE_MEASURED, 200, "{}");
    fill(c, "a-measured-2", a, BEST_CACHE_MEASURED, 200, "{}"); /* another spelling of A */
    fill(c, "b-measured", b, BEST_CACHE_MEASURED, 200, "{}");
    fill(c, "b-predicted", b, BEST_CACHE_MODELS, 200, "{}");
    fill(c, "b-nearest", b, BEST_CACHE_MODELS | BEST_CACHE_WHOLE_KEY, 200, "{}");
    fill(c, "y-measured", other_class, BEST_CACHE_MEASURED, 200, "{}");
    fill(c, "conv-measured", other_kernel, BEST_CACHE_MEASURED, 200, "{}");
    /* a best row of problem A: A's entries and the key's whole-key entries */
    assert_int_equal(
        best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "A", 0), 3);
    assert_false(has(c, "a-measured"));
    assert_false(has(c, "a-measured-2"));
    assert_false(has(c, "b-nearest"));
    assert_true(has(c, "b-measured"));
    assert_true(has(c, "b-predicted"));
    assert_true(has(c, "y-measured"));
    assert_true(has(c, "conv-measured"));
    /* another toolchain or kernel hash is another key: nothing dropped */
    assert_int_equal(
        best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 13", "B", 0), 0);
    assert_int_equal(
        best_cache_invalidate(c, "gemm", "cpu:x", "fedcba9876543210", "gcc 12", "B", 0), 0);
    /* a model of the key: predicted (and nearest) answers go, measurements stay */
    fill(c, "b-nearest", b, BEST_CACHE_MODELS | BEST_CACHE_WHOLE_KEY, 200, "{}");
    assert_int_equal(
        best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", NULL, 1), 2);
    assert_true(has(c, "b-measured"));
    assert_false(has(c, "b-predicted"));
    assert_false(has(c, "b-nearest"));
    /* the last entry of a group goes, and the group can be filled again */
    assert_int_equal(
        best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "B", 0), 1);
    assert_int_equal(fill(c, "b-measured", b, BEST_CACHE_MEASURED, 200, "{}"), 1);
    assert_true(has(c, "b-measured"));
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 3); /* b-measured, y-measured, conv-measured */
    assert_int_equal(st.invalidated, 6);
    best_cache_free(c);
}

static void test_negative_entries(void **state)
{
    (void)state;
    best_cache *c = cache_new(100, 1 << 20);
    target_key a = key_of("gemm", "cpu:x", "A");
    const char *no_best = "{\"error\":{\"code\":\"no_best\"}}";
    /* source=measured: depends on A's best row only */
    assert_int_equal(fill(c, "miss-measured", a, 0, 404, no_best), 1);
    /* a miss that asked for a prediction, with fallback=nearest */
    assert_int_equal(
        fill(c, "miss-any-nearest", a, BEST_CACHE_MODELS | BEST_CACHE_WHOLE_KEY, 404, no_best), 1);
    best_cache_hit h;
    assert_int_equal(best_cache_get(c, "miss-measured", strlen("miss-measured"), &h), 1);
    assert_int_equal(h.status, 404);
    assert_int_equal(h.flags, 0);
    assert_memory_equal(h.body, no_best, h.body_len);
    free(h.body);
    /* a model of the key drops the miss that asked for one, not the measured-only one */
    best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", NULL, 1);
    assert_true(has(c, "miss-measured"));
    assert_false(has(c, "miss-any-nearest"));
    /* another problem of the key tuned: the nearest miss would go, the measured-only one stays */
    fill(c, "miss-any-nearest", a, BEST_CACHE_MODELS | BEST_CACHE_WHOLE_KEY, 404, no_best);
    best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "C", 0);
    assert_true(has(c, "miss-measured"));
    assert_false(has(c, "miss-any-nearest"));
    /* A itself tuned: the miss goes */
    best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "A", 0);
    assert_false(has(c, "miss-measured"));
    best_cache_free(c);
}

static void test_fill_that_raced_is_dropped(void **state)
{
    (void)state;
    best_cache *c = cache_new(100, 1 << 20);
    target_key a = key_of("gemm", "cpu:x", "A"), other = key_of("conv", "cpu:x", "A");
    /* ticket, then a change of the key is notified, then the (maybe old) answer comes back */
    best_cache_ticket t = best_cache_ticket_take(c, &a);
    best_cache_ticket t_other = best_cache_ticket_take(c, &other);
    best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "A", 0);
    assert_int_equal(best_cache_put(c, &t, "qa", 2, &a, BEST_CACHE_MEASURED, 200, "{}", 2, NULL),
                     0);
    assert_false(has(c, "qa"));
    /* another key's fill is not held up (unless it shares the stripe: then it is only refilled) */
    int rc = best_cache_put(c, &t_other, "qo", 2, &other, BEST_CACHE_MEASURED, 200, "{}", 2, NULL);
    assert_true(rc == 1 || rc == 0);
    /* a flush drops every fill under way */
    t = best_cache_ticket_take(c, &a);
    best_cache_flush(c);
    assert_int_equal(best_cache_put(c, &t, "qa", 2, &a, BEST_CACHE_MEASURED, 200, "{}", 2, NULL),
                     0);
    /* unsynced (the listener's connection broke): entries stay and are served, nothing is stored */
    t = best_cache_ticket_take(c, &a);
    assert_int_equal(best_cache_put(c, &t, "qa", 2, &a, BEST_CACHE_MEASURED, 200, "{}", 2, NULL),
                     1);
    best_cache_set_synced(c, 0);
    assert_true(has(c, "qa"));
    t = best_cache_ticket_take(c, &a);
    assert_int_equal(best_cache_put(c, &t, "qb", 2, &a, BEST_CACHE_MEASURED, 200, "{}", 2, NULL),
                     0);
    assert_false(has(c, "qb"));
    best_cache_set_synced(c, 1);
    best_cache_flush(c);
    /* a fresh ticket fills */
    t = best_cache_ticket_take(c, &a);
    assert_int_equal(best_cache_put(c, &t, "qa", 2, &a, BEST_CACHE_MEASURED, 200, "{}", 2, NULL),
                     1);
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_true(st.fills_dropped >= 2);
    best_cache_free(c);
}

static void test_flush_and_notifications(void **state)
{
    (void)state;
    best_cache *c = cache_new(100, 1 << 20);
    target_key a = key_of("gemm", "cpu:x", "{\"K\":1,\"M\":2}");
    target_key b = key_of("gemm", "cpu:x", "B");
    fill(c, "qa", a, BEST_CACHE_MEASURED, 200, "{}");
    fill(c, "qb", b, BEST_CACHE_MODELS, 200, "{}");
    /* the payload of sql/007's trigger (the problem key is JSON inside JSON) */
    assert_int_equal(
        best_listen_apply(c, "ktune_best",
                          "{\"kernel\" : \"gemm\", \"device_class\" : \"cpu:x\", "
                          "\"kernel_hash\" : \"0123456789abcdef\", \"problem_key\" : "
                          "\"{\\\"K\\\":1,\\\"M\\\":2}\", \"toolchain\" : \"gcc 12\"}"),
        1);
    assert_false(has(c, "qa"));
    assert_true(has(c, "qb"));
    assert_int_equal(best_listen_apply(c, "ktune_models",
                                       "{\"kernel\":\"gemm\",\"device_class\":\"cpu:x\","
                                       "\"kernel_hash\":\"0123456789abcdef\",\"toolchain\":\"gcc "
                                       "12\"}"),
                     1);
    assert_false(has(c, "qb"));
    /* "*", a payload it cannot read or a best payload without its problem: flush everything */
    const char *flushing[][2] = {
        {"ktune_best", "*"},
        {"ktune_best", "{not json"},
        {"ktune_best", "{\"kernel\":\"gemm\",\"device_class\":\"cpu:x\",\"kernel_hash\":\"0\","
                       "\"toolchain\":\"t\"}"},
        {"ktune_models", "{\"kernel\":1}"},
        {"another_channel", "{}"},
    };
    for (size_t i = 0; i < sizeof flushing / sizeof flushing[0]; i++) {
        fill(c, "qa", a, BEST_CACHE_MEASURED, 200, "{}");
        fill(c, "qc", key_of("conv", "cuda:y", "C"), BEST_CACHE_MEASURED, 404, "{}");
        assert_int_equal(best_listen_apply(c, flushing[i][0], flushing[i][1]), -1);
        assert_false(has(c, "qa"));
        assert_false(has(c, "qc"));
    }
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.flushes, 5);
    best_cache_free(c);
}

static void test_bounds_evict_oldest(void **state)
{
    (void)state;
    best_cache *c = cache_new(3, 1 << 20);
    target_key a = key_of("gemm", "cpu:x", "A");
    fill(c, "q1", a, 0, 200, "{}");
    fill(c, "q2", a, 0, 200, "{}");
    fill(c, "q3", a, 0, 200, "{}");
    fill(c, "q4", a, 0, 200, "{}");
    assert_false(has(c, "q1"));
    assert_true(has(c, "q2") && has(c, "q3") && has(c, "q4"));
    best_cache_free(c);
    /* bytes: each entry costs its key, problem key, body and a fixed overhead */
    c = cache_new(1000, 1000);
    char body[400];
    memset(body, 'x', sizeof body - 1);
    body[sizeof body - 1] = '\0';
    fill(c, "q1", a, 0, 200, body);
    fill(c, "q2", a, 0, 200, body);
    assert_false(has(c, "q1"));
    assert_true(has(c, "q2"));
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_true(st.bytes <= 1000);
    assert_int_equal(st.evicted, 1);
    /* larger than the whole cache, or than BEST_CACHE_BODY_MAX: not stored */
    char *big = malloc(BEST_CACHE_BODY_MAX + 2);
    memset(big, 'y', BEST_CACHE_BODY_MAX + 1);
    big[BEST_CACHE_BODY_MAX + 1] = '\0';
    assert_int_equal(fill(c, "q3", a, 0, 200, big), 0);
    free(big);
    assert_int_equal(fill(c, "q3", a, 0, 200, "{}"), 1);
    best_cache_free(c);
    assert_null(best_cache_new(0, 10));
}

static void test_etags(void **state)
{
    (void)state;
    char e1[32], e2[32], e3[32];
    best_cache_etag("{\"a\":1}", 7, e1);
    best_cache_etag("{\"a\":1}", 7, e2);
    best_cache_etag("{\"a\":2}", 7, e3);
    /* the same bytes, the same ETag (in any process: no pointer, no time in it) */
    assert_string_equal(e1, e2);
    assert_string_not_equal(e1, e3);
    assert_int_equal(e1[0], '"');
    assert_int_equal(e1[strlen(e1) - 1], '"');
    /* a known value: FNV-1a 64 of the bytes, then the length */
    best_cache_etag("", 0, e2);
    assert_string_equal(e2, "\"cbf29ce484222325-0\"");
}

static int live_refs;

static void count_retain(void *p)
{
    (void)p;
    live_refs++;
}

static void count_release(void *p)
{
    (void)p;
    live_refs--;
}

static void test_attachments_are_counted(void **state)
{
    (void)state;
    best_cache *c = cache_new(2, 1 << 20);
    best_cache_set_attach_ops(c, count_retain, count_release);
    target_key a = key_of("gemm", "cpu:x", "A");
    static int token;
    live_refs = 1; /* the reference handed to the put */
    best_cache_ticket t = best_cache_ticket_take(c, &a);
    assert_int_equal(best_cache_put(c, &t, "q1", 2, &a, 0, 200, "{}", 2, &token), 1);
    assert_int_equal(live_refs, 1);
    best_cache_hit h;
    assert_int_equal(best_cache_get(c, "q1", 2, &h), 1);
    assert_ptr_equal(h.attach, &token); /* no copy of the body when there is an attachment */
    assert_null(h.body);
    assert_int_equal(h.body_len, 2);
    assert_int_equal(live_refs, 2);
    count_release(h.attach);
    /* dropped: invalidated, evicted, replaced, a race lost, flushed, freed — each releases once */
    best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", "A", 0);
    assert_int_equal(live_refs, 0);
    for (int i = 0; i < 3; i++) { /* the third evicts the first */
        char q[16];
        snprintf(q, sizeof q, "e%d", i);
        live_refs++;
        t = best_cache_ticket_take(c, &a);
        best_cache_put(c, &t, q, strlen(q), &a, 0, 200, "{}", 2, &token);
    }
    assert_int_equal(live_refs, 2);
    live_refs++;
    t = best_cache_ticket_take(c, &a);
    best_cache_put(c, &t, "e2", 2, &a, 0, 200, "{}", 2, &token); /* replaces e2 */
    assert_int_equal(live_refs, 2);
    live_refs++;
    t = best_cache_ticket_take(c, &a);
    best_cache_flush(c);
    assert_int_equal(best_cache_put(c, &t, "e3", 2, &a, 0, 200, "{}", 2, &token), 0);
    assert_int_equal(live_refs, 0);
    live_refs++;
    t = best_cache_ticket_take(c, &a);
    best_cache_put(c, &t, "e4", 2, &a, 0, 200, "{}", 2, &token);
    best_cache_free(c);
    assert_int_equal(live_refs, 0);
}

typedef struct race_arg {
    best_cache *c;
    int stop_after;
} race_arg;

static void *reader(void *p)
{
    race_arg *r = p;
    char q[32];
    for (int i = 0; i < r->stop_after; i++) {
        snprintf(q, sizeof q, "q%d", i % 50);
        target_key k = key_of("gemm", "cpu:x", i % 2 ? "A" : "B");
        if (!has(r->c, q))
            fill(r->c, q, k, BEST_CACHE_MEASURED, 200, "{\"x\":1}");
    }
    return NULL;
}

static void test_concurrent_lookups_fills_invalidations(void **state)
{
    (void)state;
    best_cache *c = cache_new(40, 1 << 20); /* fewer than the requests: eviction too */
    race_arg r = {c, 20000};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &r), 0);
    for (int i = 0; i < 2000; i++) {
        best_cache_invalidate(c, "gemm", "cpu:x", "0123456789abcdef", "gcc 12", i % 2 ? "A" : "B",
                              i % 3 == 0);
        if (i % 500 == 0)
            best_cache_flush(c);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    best_cache_stats st;
    best_cache_stats_get(c, &st);
    assert_true(st.entries <= 40);
    best_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_and_hit),
        cmocka_unit_test(test_invalidate_by_key),
        cmocka_unit_test(test_negative_entries),
        cmocka_unit_test(test_fill_that_raced_is_dropped),
        cmocka_unit_test(test_flush_and_notifications),
        cmocka_unit_test(test_bounds_evict_oldest),
        cmocka_unit_test(test_etags),
        cmocka_unit_test(test_attachments_are_counted),
        cmocka_unit_test(test_concurrent_lookups_fills_invalidations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
