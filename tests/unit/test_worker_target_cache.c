/* worker/target_cache: one reopened target per job, shared; entries in use survive eviction;
 * forgotten jobs are freed when their last user lets go; reopen errors pass through. */
#include "replay_test_util.h"

#include <pthread.h>

#include "worker/target_cache.h"

static void shares_one_target_per_job(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target made;
    resolve_ok(c, "convolution", CONV, &made);
    target_cache *tc = target_cache_new(c, 4);
    kt_error err;
    assert_null(target_cache_find(tc, 7));
    const target *a = target_cache_open(tc, 7, &made.key, made.problem, NULL, &err);
    assert_non_null(a);
    const target *b = target_cache_find(tc, 7);
    const target *d = target_cache_open(tc, 7, &made.key, made.problem, NULL, &err);
    assert_ptr_equal(a, b);
    assert_ptr_equal(a, d);
    assert_string_equal(a->key.kernel_hash, made.key.kernel_hash);
    assert_int_equal(space_count(a->sp), 4362);
    target_cache_release(tc, a);
    target_cache_release(tc, b);
    target_cache_release(tc, d);
    /* Unused, it stays for the next trial of the job ... */
    const target *again = target_cache_find(tc, 7);
    assert_ptr_equal(again, a);
    assert_int_equal(target_cache_entries(tc), 1);
    /* ... until the job is forgotten: freed when its last user lets go. */
    target_cache_forget(tc, 7);
    assert_null(target_cache_find(tc, 7));
    assert_int_equal(target_cache_entries(tc), 1);
    target_cache_release(tc, again);
    assert_int_equal(target_cache_entries(tc), 0);
    target_cache_free(tc);
    target_release(&made);
    catalog_free(c);
}

static void entries_in_use_are_never_evicted(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target made;
    resolve_ok(c, "convolution", CONV, &made);
    target_cache *tc = target_cache_new(c, 2);
    kt_error err;
    const target *one = target_cache_open(tc, 1, &made.key, made.problem, NULL, &err);
    const target *two = target_cache_open(tc, 2, &made.key, made.problem, NULL, &err);
    assert_non_null(one);
    assert_non_null(two);
    /* Both in use: a third job finds no slot, and says so. */
    assert_null(target_cache_open(tc, 3, &made.key, made.problem, NULL, &err));
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    /* Job 1 is let go of: the third takes its slot, job 2 is still there. */
    target_cache_release(tc, one);
    const target *three = target_cache_open(tc, 3, &made.key, made.problem, NULL, &err);
    assert_non_null(three);
    assert_null(target_cache_find(tc, 1));
    const target *two_again = target_cache_find(tc, 2);
    assert_ptr_equal(two_again, two);
    /* A forgotten job in use stays valid for its user. */
    target_cache_forget(tc, 2);
    assert_null(target_cache_find(tc, 2));
    assert_int_equal(space_count(two->sp), 4362);
    target_cache_release(tc, two_again);
    target_cache_release(tc, two);
    target_cache_release(tc, three);
    target_cache_free(tc);
    target_release(&made);
    catalog_free(c);
}

static void reopen_errors_pass_through(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target made;
    resolve_ok(c, "convolution", CONV, &made);
    target_cache *tc = target_cache_new(c, 4);
    target_key changed = made.key;
    changed.kernel_hash = "ffffffffffffffff";
    kt_error err;
    assert_null(target_cache_open(tc, 9, &changed, made.problem, NULL, &err));
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_null(target_cache_find(tc, 9));
    changed = made.key;
    changed.toolchain = "gcc 9.9.9"; /* measured under another compiler */
    assert_null(target_cache_open(tc, 9, &changed, made.problem, NULL, &err));
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    assert_null(target_cache_find(tc, 9));
    target_cache_free(tc);
    target_release(&made);
    catalog_free(c);
}

typedef struct race_arg {
    target_cache *tc;
    const target_key *key;
    const json_t *problem;
    const target *got;
} race_arg;

static void *open_from_thread(void *p)
{
    race_arg *a = p;
    kt_error err;
    a->got = target_cache_open(a->tc, 5, a->key, a->problem, NULL, &err);
    return NULL;
}

static void threads_opening_at_once_share_one_entry(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target made;
    resolve_ok(c, "convolution", CONV, &made);
    target_cache *tc = target_cache_new(c, 8);
    enum { N = 4 };
    pthread_t th[N];
    race_arg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (race_arg){tc, &made.key, made.problem, NULL};
        assert_int_equal(pthread_create(&th[i], NULL, open_from_thread, &args[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        assert_non_null(args[i].got);
        assert_ptr_equal(args[i].got, args[0].got);
        target_cache_release(tc, args[i].got);
    }
    target_cache_free(tc);
    target_release(&made);
    catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shares_one_target_per_job),
        cmocka_unit_test(entries_in_use_are_never_evicted),
        cmocka_unit_test(reopen_errors_pass_through),
        cmocka_unit_test(threads_opening_at_once_share_one_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
