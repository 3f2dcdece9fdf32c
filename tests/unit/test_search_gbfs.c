/* Unit tests of the gbfs strategy's own behaviour, Algorithm 1 of the G-BFS paper: the start (the
 * paper's s_0 on the tiling space, expanded, or restarted from when it fails), then
 * rho sampled neighbours of the fastest open configuration, a popped configuration never expanded
 * again, failures never expanded, rho >= |g(s)| expanding every neighbour, the paper's PAIR_SCALE
 * moves on the GEMM tiling space, and random restarts once no open configuration is left. (The
 * shared contract — valid, no repeats, determinism, replay, overhead — is in
 * test_search_strategies.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/searcher.h"

#include "search_test_util.h"

static searcher *gbfs_new(const space *sp, const char *options, uint64_t seed)
{
    json_t *o = json_loads(options, 0, NULL);
    assert_non_null(o);
    kt_error err;
    searcher *s = searcher_new("gbfs", sp, o, seed, &err);
    if (!s)
        fail_msg("searcher_new: %s", err.message);
    json_decref(o);
    return s;
}

static void tell_time(searcher *s, config_id id, double ms)
{
    trial_result r;
    trial_result_init(&r);
    r.status = isnan(ms) ? TRIAL_RUNTIME_ERROR : TRIAL_OK;
    r.time_ms = ms;
    searcher_tell(s, &id, &r, 1);
}

/* 1 if id is among the kind-neighbours of of. */
static int is_neighbour(const space *sp, config_id of, config_id id, space_neighbour_kind kind)
{
    config_id nb[256];
    int m = space_neighbours(sp, of, kind, nb, 256);
    for (int i = 0; i < m; i++) {
        if (nb[i] == id)
            return 1;
    }
    return 0;
}

static int contains(const config_id *ids, int n, config_id id)
{
    for (int i = 0; i < n; i++) {
        if (ids[i] == id)
            return 1;
    }
    return 0;
}

/* With rho >= |g(s)|, expanding `of` proposes exactly its ADJACENT neighbours not in seen[0..n):
 * asks for that many, checks they are those (in any order) and appends them to seen. Returns how
 * many. */
static int ask_expansion(searcher *s, const space *sp, config_id of, config_id *seen, int *n)
{
    config_id nb[64], got[64];
    int m = space_neighbours(sp, of, SPACE_NEIGHBOURS_ADJACENT, nb, 64), want = 0;
    for (int i = 0; i < m; i++) {
        if (!contains(seen, *n, nb[i]))
            nb[want++] = nb[i];
    }
    assert_true(want > 0);
    assert_int_equal(searcher_ask(s, got, want), want);
    for (int i = 0; i < want; i++) {
        assert_true(contains(nb, want, got[i]));
        assert_false(contains(got, i, got[i]));
        seen[(*n)++] = got[i];
    }
    return want;
}

/* rho = 2: the first batch after s_0 is two distinct neighbours of s_0. */
static void samples_rho_neighbours(void **state)
{
    (void)state;
    space *sp = space_10k();
    for (uint64_t seed = 1; seed <= 5; seed++) {
        searcher *s = gbfs_new(sp, "{\"rho\": 2, \"neighbourhood\": \"adjacent\"}", seed);
        config_id ids[3];
        assert_int_equal(searcher_ask(s, ids, 1), 1);
        tell_time(s, ids[0], 100);
        assert_int_equal(searcher_ask(s, ids + 1, 2), 2);
        assert_true(is_neighbour(sp, ids[0], ids[1], SPACE_NEIGHBOURS_ADJACENT));
        assert_true(is_neighbour(sp, ids[0], ids[2], SPACE_NEIGHBOURS_ADJACENT));
        assert_true(ids[1] != ids[2]);
        searcher_free(s);
    }
    space_free(sp);
}

/* The priority order of Algorithm 1: each expansion is of the fastest configuration still open
 * (measured, not yet expanded); failures are never expanded. */
static void expands_fastest_open_state(void **state)
{
    (void)state;
    space *sp = space_10k();
    searcher *s = gbfs_new(sp, "{\"rho\": 100, \"neighbourhood\": \"adjacent\"}", 3);
    config_id seen[256];
    int n = 0;

    assert_int_equal(searcher_ask(s, &seen[n], 1), 1); /* s_0 */
    config_id s0 = seen[n++];
    tell_time(s, s0, 100);

    int base = n, k = ask_expansion(s, sp, s0, seen, &n); /* g(s_0) */
    assert_true(k >= 3);
    config_id fast = seen[base], second = seen[base + 1], failed = seen[base + 2];
    for (int i = base; i < n; i++)
        tell_time(s, seen[i],
                  seen[i] == fast     ? 50
                  : seen[i] == second ? 70
                  : seen[i] == failed ? NAN
                                      : 300 + i);

    /* s_0 was popped; the fastest open one is `fast`. */
    base = n;
    ask_expansion(s, sp, fast, seen, &n);
    for (int i = base; i < n; i++)
        tell_time(s, seen[i], 500 + i);

    /* `fast` popped; `second` (70) is ahead of everything at 300+. */
    base = n;
    ask_expansion(s, sp, second, seen, &n);
    config_id newbest = seen[base];
    for (int i = base; i < n; i++)
        tell_time(s, seen[i], seen[i] == newbest ? 10 : 900 + i);

    ask_expansion(s, sp, newbest, seen, &n); /* a new best is expanded next */
    searcher_free(s);
    space_free(sp);
}

/* rho >= |g(s)|: every neighbour of s is proposed; with nothing else open, the search then
 * restarts at a random configuration instead of stalling. */
static void full_expansion_then_restart(void **state)
{
    (void)state;
    space *sp = space_10k();
    searcher *s = gbfs_new(sp, "{\"rho\": 100, \"neighbourhood\": \"adjacent\"}", 5);
    config_id ids[32], nb[32];

    assert_int_equal(searcher_ask(s, ids, 1), 1);
    tell_time(s, ids[0], 1);
    int m = space_neighbours(sp, ids[0], SPACE_NEIGHBOURS_ADJACENT, nb, 32);
    assert_true(m >= 4 && m + 1 < 32);
    assert_int_equal(searcher_ask(s, ids + 1, m + 1), m + 1);
    for (int i = 1; i <= m; i++)
        assert_true(is_neighbour(sp, ids[0], ids[i], SPACE_NEIGHBOURS_ADJACENT));
    /* Q is empty (s_0 popped, its neighbours not told yet): a restart, valid and new. */
    assert_distinct_valid(ids, (size_t)m + 2, space_count(sp));
    /* A failed restart point leaves nothing open: still no stall. */
    tell_time(s, ids[m + 1], NAN);
    assert_int_equal(searcher_ask(s, ids + m + 2, 3), 3);
    assert_distinct_valid(ids, (size_t)m + 5, space_count(sp));
    searcher_free(s);
    space_free(sp);
}

/* Default options on the GEMM tiling space: g(s) is the paper's action space (one factor x2,
 * another of the same dimension /2), rho = 5. */
static void pair_scale_on_tiling_space(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    searcher *s = searcher_new("gbfs", sp, NULL, 7, NULL);
    assert_non_null(s);
    config_id ids[8];
    assert_int_equal(searcher_ask(s, ids, 1), 1);
    tell_time(s, ids[0], 1);
    config_id nb[256];
    int m = space_neighbours(sp, ids[0], SPACE_NEIGHBOURS_PAIR_SCALE, nb, 256);
    int rho = m < 5 ? m : 5;
    assert_true(rho >= 1);
    assert_int_equal(searcher_ask(s, ids + 1, rho), rho);
    for (int i = 1; i <= rho; i++)
        assert_true(is_neighbour(sp, ids[0], ids[i], SPACE_NEIGHBOURS_PAIR_SCALE));
    assert_distinct_valid(ids, (size_t)rho + 1, space_count(sp));
    searcher_free(s);
    space_free(sp);
}

/* rho = 1 expands one sampled neighbour per popped state (possibly a visited one, so nothing):
 * restarts still reach every configuration of the small restricted space exactly once. */
static void rho_one_covers_space_by_restarts(void **state)
{
    (void)state;
    space *sp = space_small();
    objective o = {sp, NULL, 0};
    searcher *s = gbfs_new(sp, "{\"rho\": 1}", 9);
    config_id ids[130];
    assert_int_equal(drive(s, &o, ids, 130, 1), 120);
    assert_distinct_valid(ids, 120, 120);
    assert_int_equal(searcher_ask(s, ids, 1), 0);
    searcher_free(s);
    space_free(sp);
}

/* The paper's s_0 = [[m,1,1,1],[k,1],[n,1,1,1]] on the tiling space (the default start): proposed
 * first, then expanded by rho of the paper's moves; a failed s_0 is never expanded (the search
 * restarts at random: none of the next proposals is a neighbour of s_0). */
static void paper_start_expanded_or_restarted(void **state)
{
    (void)state;
    space *sp = space_gemm_tiling();
    config_id s0 = space_count(sp) - 1, ids[6];
    int idx[10];
    assert_int_equal(space_decode(sp, s0, idx), 0);
    assert_true(space_param_value_number(sp, 0, idx[0]) == 1024); /* m0 = m */
    assert_true(space_param_value_number(sp, 1, idx[1]) == 1);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        for (int fails = 0; fails < 2; fails++) {
            searcher *s = searcher_new("gbfs", sp, NULL, seed, NULL);
            assert_non_null(s);
            assert_int_equal(searcher_ask(s, ids, 1), 1);
            assert_true(ids[0] == s0);
            tell_time(s, s0, fails ? NAN : 100);
            assert_int_equal(searcher_ask(s, ids + 1, 5), 5);
            for (int i = 1; i <= 5; i++)
                assert_int_equal(is_neighbour(sp, s0, ids[i], SPACE_NEIGHBOURS_PAIR_SCALE), !fails);
            assert_distinct_valid(ids, 6, space_count(sp));
            searcher_free(s);
        }
    }
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_rho_neighbours),
        cmocka_unit_test(expands_fastest_open_state),
        cmocka_unit_test(full_expansion_then_restart),
        cmocka_unit_test(pair_scale_on_tiling_space),
        cmocka_unit_test(rho_one_covers_space_by_restarts),
        cmocka_unit_test(paper_start_expanded_or_restarted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
