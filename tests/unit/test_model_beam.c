/* Unit tests of model/beam with a synthetic scorer (pseudo-random log-softmax distributions that
 * depend on the whole prefix): constrained results are always valid, width 1 constrained equals
 * greedy when greedy is valid, results come best first with their true total log-probability, an
 * exhaustive width gives the true top-k (over every configuration, or every valid one) found by
 * enumeration, and bad arguments and a failing scorer are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/beam.h"

#define NP 4
static const int NV[NP] = {3, 4, 3, 2};

typedef struct synth {
    uint64_t seed;
    int fail_at; /* the scorer fails on this call (-1: never) */
    int calls;
} synth;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int synth_scorer(void *ctx, const int *prefix, int len, double *logp)
{
    synth *s = ctx;
    if (s->fail_at >= 0 && s->calls == s->fail_at)
        return -1;
    s->calls++;
    uint64_t h = mix(s->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(len + 1));
    for (int i = 0; i < len; i++)
        h = mix(h ^ (uint64_t)(prefix[i] + 1) * 0x100000001b3ULL);
    double mx = -INFINITY, sum = 0;
    for (int v = 0; v < NV[len]; v++) {
        logp[v] = 4.0 * ((double)(mix(h + (uint64_t)v) >> 11) / 9007199254740992.0) - 2.0;
        mx = logp[v] > mx ? logp[v] : mx;
    }
    for (int v = 0; v < NV[len]; v++)
        sum += exp(logp[v] - mx);
    for (int v = 0; v < NV[len]; v++)
        logp[v] -= mx + log(sum);
    return 0;
}

/* Total log-probability of a complete sequence under the scorer. */
static double seq_logp(synth *s, const int *seq)
{
    double logp[8], total = 0;
    for (int len = 0; len < NP; len++) {
        assert_int_equal(synth_scorer(s, seq, len, logp), 0);
        total += logp[seq[len]];
    }
    return total;
}

static json_t *jparse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

/* A space with NV's shape and restrictions over interleaved parameters. */
static space *test_space(const char *restrictions)
{
    kt_error err;
    json_t *p = jparse("[{\"name\":\"a\",\"values\":[1,2,3]},{\"name\":\"b\",\"values\":[1,2,3,4]},"
                       "{\"name\":\"c\",\"values\":[1,2,3]},{\"name\":\"d\",\"values\":[0,1]}]");
    json_t *r = jparse(restrictions);
    space *sp = space_new(p, r, NULL, NULL, &err);
    json_decref(p);
    json_decref(r);
    if (!sp)
        fail_msg("space_new: %s", err.message);
    return sp;
}

static const char RESTR[] = "[\"a * c <= 3\", \"b != 2 or d == 1\", \"a + b != 5\"]";

static void constrained_results_are_valid_and_ordered(void **state)
{
    (void)state;
    space *sp = test_space(RESTR);
    assert_true(space_count(sp) > 0 && space_count(sp) < 72);
    int out[100 * NP];
    double score[100];
    for (uint64_t seed = 0; seed < 40; seed++) {
        for (int width = 1; width <= 8; width *= 2) {
            synth s = {seed, -1, 0};
            int n =
                beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, width, sp, 10, out, score);
            assert_true(n >= 1 && n <= 10);
            for (int i = 0; i < n; i++) {
                config_id id;
                assert_int_equal(space_encode(sp, out + i * NP, &id), 0);
                assert_true(fabs(score[i] - seq_logp(&s, out + i * NP)) < 1e-12);
                if (i > 0)
                    assert_true(score[i] <= score[i - 1]);
                for (int j = 0; j < i; j++) /* distinct */
                    assert_true(memcmp(out + i * NP, out + j * NP, sizeof(int) * NP) != 0);
            }
        }
    }
    space_free(sp);
}

static void width_one_constrained_is_greedy_when_greedy_is_valid(void **state)
{
    (void)state;
    space *sp = test_space(RESTR);
    int greedy[NP], cons[NP], hits = 0, misses = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        synth s = {seed, -1, 0};
        assert_int_equal(
            beam_search(NP, NV, synth_scorer, &s, BEAM_GREEDY, 0, NULL, 1, greedy, NULL), 1);
        /* greedy: the argmax at every step */
        double logp[8];
        for (int len = 0; len < NP; len++) {
            assert_int_equal(synth_scorer(&s, greedy, len, logp), 0);
            for (int v = 0; v < NV[len]; v++)
                assert_true(logp[v] <= logp[greedy[len]]);
        }
        assert_int_equal(
            beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, 1, sp, 1, cons, NULL), 1);
        config_id id;
        if (space_encode(sp, greedy, &id) == 0) {
            assert_memory_equal(greedy, cons, sizeof greedy);
            hits++;
        } else {
            assert_int_equal(space_encode(sp, cons, &id), 0);
            misses++;
        }
    }
    /* The test saw both cases. */
    printf("greedy valid for %d seeds, invalid (constrained differs) for %d\n", hits, misses);
    assert_true(hits > 10 && misses > 10);
    space_free(sp);
}

typedef struct ranked {
    int seq[NP];
    double score;
} ranked;

static int ranked_cmp(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    return a->score > b->score ? -1 : a->score < b->score ? 1 : 0;
}

static void exhaustive_width_gives_the_true_top_k(void **state)
{
    (void)state;
    space *sp = test_space(RESTR);
    int raw = 3 * 4 * 3 * 2;
    ranked all[72], valid[72];
    int out[72 * NP];
    double score[72];
    for (uint64_t seed = 100; seed < 130; seed++) {
        synth s = {seed, -1, 0};
        int n_valid = 0;
        for (int r = 0; r < raw; r++) {
            int rem = r;
            for (int p = NP - 1; p >= 0; p--) {
                all[r].seq[p] = rem % NV[p];
                rem /= NV[p];
            }
            all[r].score = seq_logp(&s, all[r].seq);
            config_id id;
            if (space_encode(sp, all[r].seq, &id) == 0)
                valid[n_valid++] = all[r];
        }
        assert_int_equal(n_valid, (int)space_count(sp));
        qsort(all, (size_t)raw, sizeof *all, ranked_cmp);
        qsort(valid, (size_t)n_valid, sizeof *valid, ranked_cmp);
        for (int k = 1; k <= raw; k += 7) {
            int n = beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, raw, NULL, k, out, score);
            assert_int_equal(n, k);
            for (int i = 0; i < n; i++) {
                assert_memory_equal(out + i * NP, all[i].seq, sizeof all[i].seq);
                assert_true(fabs(score[i] - all[i].score) < 1e-12);
            }
            n = beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, raw, sp, k, out, score);
            assert_int_equal(n, k < n_valid ? k : n_valid);
            for (int i = 0; i < n; i++) {
                assert_memory_equal(out + i * NP, valid[i].seq, sizeof valid[i].seq);
                assert_true(fabs(score[i] - valid[i].score) < 1e-12);
            }
        }
    }
    space_free(sp);
}

static void k_larger_than_width_and_empty_spaces(void **state)
{
    (void)state;
    int out[100 * NP];
    double score[100];
    synth s = {7, -1, 0};
    /* Width 2, k 5: the last step keeps up to 5, and has 2 prefixes x 2 values of d. */
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, 2, NULL, 5, out, score), 4);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, 2, NULL, 3, out, score), 3);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_GREEDY, 9, NULL, 3, out, score), 2);
    /* Everything infeasible: nothing survives. */
    space *sp = test_space("[\"a > 5\"]");
    assert_int_equal(space_count(sp), 0);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, 4, sp, 3, out, score),
                     0);
    space_free(sp);
    /* Only one valid configuration: found at any width. */
    sp = test_space("[\"a == 3\", \"b == 1\", \"c == 1\", \"d == 0\"]");
    for (int width = 1; width <= 4; width++) {
        assert_int_equal(
            beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, width, sp, 3, out, score), 1);
        int want[NP] = {2, 0, 0, 0};
        assert_memory_equal(out, want, sizeof want);
    }
    space_free(sp);
}

static double neg_inf_scorer_logp[4];
static int masked_scorer(void *ctx, const int *prefix, int len, double *logp)
{
    (void)ctx;
    (void)prefix;
    for (int v = 0; v < NV[len]; v++)
        logp[v] = neg_inf_scorer_logp[v];
    return 0;
}

static void bad_arguments_and_failing_scorers(void **state)
{
    (void)state;
    int out[10 * NP];
    double score[10];
    synth s = {1, -1, 0};
    space *sp = test_space(RESTR);
    assert_int_equal(beam_search(0, NV, synth_scorer, &s, BEAM_FREE, 2, NULL, 1, out, score), -1);
    assert_int_equal(beam_search(NP, NULL, synth_scorer, &s, BEAM_FREE, 2, NULL, 1, out, score),
                     -1);
    assert_int_equal(beam_search(NP, NV, NULL, &s, BEAM_FREE, 2, NULL, 1, out, score), -1);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, 0, NULL, 1, out, score), -1);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, 2, NULL, 0, out, score), -1);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, BEAM_FREE, 2, NULL, 1, NULL, score), -1);
    assert_int_equal(
        beam_search(NP, NV, synth_scorer, &s, BEAM_CONSTRAINED, 2, NULL, 1, out, score), -1);
    int nv_bad[NP] = {3, 4, 3, 3}; /* not the space's shape */
    assert_int_equal(
        beam_search(NP, nv_bad, synth_scorer, &s, BEAM_CONSTRAINED, 2, sp, 1, out, score), -1);
    assert_int_equal(
        beam_search(NP - 1, NV, synth_scorer, &s, BEAM_CONSTRAINED, 2, sp, 1, out, score), -1);
    assert_int_equal(beam_search(NP, NV, synth_scorer, &s, (beam_mode)7, 2, NULL, 1, out, score),
                     -1);
    for (int fail_at = 0; fail_at < 6; fail_at++) {
        synth f = {1, fail_at, 0};
        assert_int_equal(
            beam_search(NP, NV, synth_scorer, &f, BEAM_CONSTRAINED, 3, sp, 2, out, score), -1);
    }
    /* Values of probability 0 are never chosen: with every value impossible, nothing survives. */
    for (int v = 0; v < 4; v++)
        neg_inf_scorer_logp[v] = -INFINITY;
    assert_int_equal(beam_search(NP, NV, masked_scorer, NULL, BEAM_FREE, 2, NULL, 1, out, score),
                     0);
    neg_inf_scorer_logp[1] = 0.0;
    neg_inf_scorer_logp[0] = NAN;
    assert_int_equal(beam_search(NP, NV, masked_scorer, NULL, BEAM_FREE, 4, NULL, 5, out, score),
                     1);
    int want[NP] = {1, 1, 1, 1};
    assert_memory_equal(out, want, sizeof want);
    space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constrained_results_are_valid_and_ordered),
        cmocka_unit_test(width_one_constrained_is_greedy_when_greedy_is_valid),
        cmocka_unit_test(exhaustive_width_gives_the_true_top_k),
        cmocka_unit_test(k_larger_than_width_and_empty_spaces),
        cmocka_unit_test(bad_arguments_and_failing_scorers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
