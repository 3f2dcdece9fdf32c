/* Unit tests of the mindmap strategy (search/mindmap.c) on a synthetic space (five numeric
 * parameters 1..256 in powers of two, one string parameter, a restriction) whose objective is a
 * known smooth function of (problem, configuration), and a synthetic oracle that rejects a region
 * (p2 * p3 >= 4096). A surrogate is trained on problems other than the searched ones. Checked: no
 * proposal without a surrogate, the registry's flags and options, refusal of a surrogate of other
 * parameters or after an ask, never an oracle-invalid configuration nor a repeat (batches, several
 * chains, failures told), a warm start's first ids, determinism and resume by replay, and search
 * quality: within 100 evaluations, the mean over 10 seeds of optimum / best found, against random;
 * the proposal sources of searcher_stats (they add up; gradient false proposes no gradient step).
 */
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

#include "core/rng.h"
#include "search/searcher.h"
#include "model/surrogate.h"

#include "search_test_util.h"
#include "skip_test_util.h"

enum { NP = 5, BUDGET = 100, SEEDS = 10 };

static space *mm_space(void)
{
    const char *v = "[1,2,4,8,16,32,64,128,256]";
    char params[1024];
    snprintf(params, sizeof params,
             "[{\"name\":\"p0\",\"values\":%s},{\"name\":\"p1\",\"values\":%s},"
             "{\"name\":\"p2\",\"values\":%s},{\"name\":\"p3\",\"values\":%s},"
             "{\"name\":\"p4\",\"values\":%s},"
             "{\"name\":\"s\",\"values\":[\"u\",\"v\",\"w\",\"x\"]}]",
             v, v, v, v, v);
    return make_space(params, "[\"p0 * p1 <= 8192\"]");
}

typedef struct problem {
    double n, m;
    double t[NP]; /* optimum of each log2 p */
    double pf[SURROGATE_MAX_PROBLEM_FEATURES];
} problem;

static problem make_problem(int k)
{
    problem pb;
    pb.n = 4 + (k * 37) % 250;
    pb.m = 2 + (k * 13) % 120;
    double ln = log2(pb.n), lm = log2(pb.m);
    pb.t[0] = 0.5 * ln + 1;
    pb.t[1] = 6 - 0.4 * lm;
    pb.t[2] = 1 + 0.3 * ln;
    pb.t[3] = 2 + 0.25 * lm;
    pb.t[4] = 7 - 0.3 * ln;
    json_t *pj = json_pack("{s:f, s:f}", "n", pb.n, "m", pb.m);
    assert_int_equal(surrogate_problem_features(pj, pb.pf, SURROGATE_MAX_PROBLEM_FEATURES), 2);
    json_decref(pj);
    return pb;
}

/* meta[0] + meta[1] = ln objective. */
static void mm_meta(const space *sp, const problem *pb, config_id id, double *meta)
{
    int idx[NP + 1];
    static const double cat[4] = {0.3, 0.0, 0.5, 0.2};
    assert_int_equal(space_decode(sp, id, idx), 0);
    meta[0] = meta[1] = 0;
    for (int i = 0; i < NP; i++) {
        double d = idx[i] - pb->t[i]; /* value index = log2 p */
        meta[i < 3 ? 0 : 1] += 0.15 * d * d;
    }
    meta[1] += cat[idx[NP]];
}

static int mm_valid(const space *sp, config_id id)
{
    int idx[NP + 1];
    if (space_decode(sp, id, idx) < 0)
        return 0;
    return idx[2] + idx[3] >= 12 ? 0 : 1;
}

/* The oracle the searcher is given: mm_valid, counting its calls and rejections. */
typedef struct oracle_ctx {
    const space *sp;
    long calls, rejected;
} oracle_ctx;

static int mm_oracle(void *arg, config_id id)
{
    oracle_ctx *o = arg;
    int ok = mm_valid(o->sp, id);
    o->calls++;
    o->rejected += !ok;
    return ok;
}

static surrogate *mm_surrogate(const space *sp, const surrogate_options *opts)
{
    const double w[2] = {1, 1};
    kt_error err;
    surrogate_data *d = surrogate_data_new(2, w, &err);
    kt_rng rng;
    kt_rng_seed(&rng, 77);
    for (int k = 0; k < 80; k++) {
        problem pb = make_problem(k);
        for (int i = 0; i < 300;) {
            config_id id = space_sample(sp, &rng);
            if (!mm_valid(sp, id))
                continue; /* the trainer keeps valid mappings only */
            double meta[2];
            mm_meta(sp, &pb, id, meta);
            assert_int_equal(surrogate_data_add(d, pb.pf, 2, sp, id, meta, k, &err), 0);
            i++;
        }
    }
    json_t *metrics = NULL;
    surrogate *s = surrogate_train(d, opts, &metrics, &err);
    if (!s)
        fail_msg("surrogate_train: %s", err.message);
    char *text = json_dumps(metrics, JSON_COMPACT);
    printf("surrogate: %s\n", text);
    free(text);
    json_decref(metrics);
    surrogate_data_free(d);
    return s;
}

static void evaluate_mm(const space *sp, const problem *pb, const config_id *ids, trial_result *r,
                        int n)
{
    for (int i = 0; i < n; i++) {
        double meta[2];
        trial_result_init(&r[i]);
        mm_meta(sp, pb, ids[i], meta);
        r[i].status = TRIAL_OK;
        r[i].time_ms = exp(meta[0] + meta[1]);
    }
}

/* A mindmap searcher with the surrogate and the oracle (o, which must outlive it). */
static searcher *mm_searcher(oracle_ctx *o, surrogate *m, const problem *pb, const json_t *options,
                             uint64_t seed)
{
    kt_error err;
    searcher *s = searcher_new("mindmap", o->sp, options, seed, &err);
    if (!s)
        fail_msg("searcher_new: %s", err.message);
    searcher_set_oracle(s, mm_oracle, o);
    assert_int_equal(searcher_set_surrogate(s, m, pb->pf, 2, &err), 0);
    return s;
}

/* Proposes up to want ids in batches; every result told (every fail_every-th as a failure). */
static int run(searcher *s, const space *sp, const problem *pb, config_id *ids, int want, int batch,
               int fail_every)
{
    trial_result r[64];
    int total = 0;
    while (total < want) {
        int ask = want - total < batch ? want - total : batch;
        int n = searcher_ask(s, ids + total, ask);
        assert_true(n >= 0 && n <= ask);
        if (n == 0)
            break;
        evaluate_mm(sp, pb, ids + total, r, n);
        for (int i = 0; fail_every && i < n; i++) {
            if ((total + i) % fail_every == fail_every - 1) {
                r[i].status = TRIAL_RUNTIME_ERROR;
                r[i].time_ms = NAN;
            }
        }
        searcher_tell(s, ids + total, r, n);
        total += n;
    }
    return total;
}

/* The group's state: the space and a surrogate trained once for every test. */
typedef struct fixture {
    space *sp;
    surrogate *m;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    fx->sp = mm_space();
    surrogate_options o = {.hidden = {64, 64}, .n_hidden = 2, .epochs = 30, .seed = 1};
    fx->m = mm_surrogate(fx->sp, &o);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    surrogate_free(fx->m);
    space_free(fx->sp);
    free(fx);
    return 0;
}

static void registry_and_refusals(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    assert_true(searcher_exists("mindmap"));
    assert_true(searcher_needs_surrogate("mindmap"));
    assert_false(searcher_needs_surrogate("random"));
    assert_false(searcher_needs_surrogate("nope"));
    assert_true(searcher_learns("mindmap"));
    json_t *cat = searcher_catalog_json();
    int found = 0;
    for (size_t i = 0; i < json_array_size(cat); i++) {
        json_t *e = json_array_get(cat, i);
        if (strcmp(json_string_value(json_object_get(e, "name")), "mindmap") != 0)
            continue;
        found = 1;
        json_t *o = json_object_get(e, "options");
        assert_true(json_real_value(json_object_get(json_object_get(o, "lr"), "default")) == 1.0);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(o, "inject_every"), "default")), 10);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(o, "anneal_every"), "default")), 50);
        assert_non_null(json_object_get(o, "t0"));
        assert_non_null(json_object_get(o, "anneal_factor"));
        json_t *g = json_object_get(o, "gradient"); /* issue 30's ablation switch */
        assert_string_equal(json_string_value(json_object_get(g, "type")), "boolean");
        assert_true(json_is_true(json_object_get(g, "default")));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(o, "project"), "choices")),
            "best|nearest|exact");
    }
    assert_true(found);
    json_decref(cat);

    /* no surrogate: nothing to propose */
    config_id ids[4];
    searcher *s = searcher_new("mindmap", sp, NULL, 1, NULL);
    assert_int_equal(searcher_ask(s, ids, 4), 0);
    kt_error err;
    problem pb = make_problem(5000);
    assert_int_equal(searcher_set_surrogate(s, fx->m, pb.pf, 2, &err), -1); /* after ask */
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    searcher_free(s);

    /* wrong feature count, other parameters */
    s = searcher_new("mindmap", sp, NULL, 1, NULL);
    assert_int_equal(searcher_set_surrogate(s, fx->m, pb.pf, 1, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    searcher_free(s);
    space *other = space_10k();
    s = searcher_new("mindmap", other, NULL, 1, NULL);
    assert_int_equal(searcher_set_surrogate(s, fx->m, pb.pf, 2, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(searcher_ask(s, ids, 4), 0);
    searcher_free(s);
    /* other strategies: a no-op */
    s = searcher_new("random", other, NULL, 1, NULL);
    assert_int_equal(searcher_set_surrogate(s, fx->m, pb.pf, 2, &err), 0);
    oracle_ctx oc = {other, 0, 0};
    searcher_set_oracle(s, mm_oracle, &oc);
    assert_int_equal(searcher_ask(s, ids, 4), 4);
    assert_int_equal(oc.calls, 0); /* random ignores the oracle */
    searcher_free(s);
    space_free(other);

    json_t *bad = json_pack("{s:f}", "anneal_factor", 1.5);
    assert_null(searcher_new("mindmap", sp, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(bad);
}

/* Never an oracle-invalid configuration, never a repeat: one chain asked one at a time, batches
 * of 7 with failures told, and 3 chains in batches of 5 asked before any tell. */
static void valid_and_distinct(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    problem pb = make_problem(4242);
    json_t *chains = json_pack("{s:i}", "chains", 3);
    const struct {
        const json_t *opts;
        int batch, fail_every;
    } runs[] = {{NULL, 1, 0}, {NULL, 7, 5}, {chains, 5, 0}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        config_id ids[600];
        oracle_ctx oc = {sp, 0, 0};
        searcher *s = mm_searcher(&oc, fx->m, &pb, runs[k].opts, 3 + k);
        double t0 = kt_clock_s();
        if (k == 2) { /* a batch before any result */
            assert_int_equal(searcher_ask(s, ids, 5), 5);
            trial_result r[5];
            evaluate_mm(sp, &pb, ids, r, 5);
            searcher_tell(s, ids, r, 5);
            assert_int_equal(run(s, sp, &pb, ids + 5, 595, runs[k].batch, 0), 595);
        } else {
            assert_int_equal(run(s, sp, &pb, ids, 600, runs[k].batch, runs[k].fail_every), 600);
        }
        double dt = kt_clock_s() - t0;
        assert_distinct_valid(ids, 600, space_count(sp));
        for (int i = 0; i < 600; i++)
            assert_int_equal(mm_valid(sp, ids[i]), 1);
        printf("run %zu: 600 proposals, %.0f us each (evaluation included), %ld oracle calls, %ld "
               "rejected\n",
               k, dt * 1e6 / 600, oc.calls, oc.rejected);
        assert_true(oc.rejected > 0); /* the oracle's region was reached and avoided */
        searcher_free(s);
    }
    json_decref(chains);
}

/* A warm start's first ids come first, in order, and are never proposed again. */
static void warm_start_first_ids(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    problem pb = make_problem(31337);
    const config_id first[] = {5, 17, 5, 42};
    searcher_history h = {first, 4, NULL, NULL, NULL, 0};
    oracle_ctx oc = {sp, 0, 0};
    searcher *s = mm_searcher(&oc, fx->m, &pb, NULL, 8);
    assert_int_equal(searcher_set_history(s, &h, NULL), 0);
    config_id ids[200];
    assert_int_equal(run(s, sp, &pb, ids, 200, 3, 0), 200);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[1], 17);
    assert_int_equal(ids[2], 42);
    assert_distinct_valid(ids, 200, space_count(sp));
    searcher_free(s);
}

static void deterministic_and_resumable(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    problem pb = make_problem(777);
    const int sizes[] = {3, 17, 1, 4, 9, 30, 4, 4, 2, 25};
    config_id a[128], b[128], c[128];
    trial_result r[32];
    oracle_ctx oa = {sp, 0, 0}, ob = {sp, 0, 0}, oc = {sp, 0, 0};
    searcher *sa = mm_searcher(&oa, fx->m, &pb, NULL, 99);
    searcher *sb = mm_searcher(&ob, fx->m, &pb, NULL, 99);
    searcher *sc = mm_searcher(&oc, fx->m, &pb, NULL, 100);
    int off = 0;
    for (int i = 0; i < 10; i++) {
        searcher *all[3] = {sa, sb, sc};
        config_id *out[3] = {a + off, b + off, c + off};
        for (int k = 0; k < 3; k++) {
            assert_int_equal(searcher_ask(all[k], out[k], sizes[i]), sizes[i]);
            evaluate_mm(sp, &pb, out[k], r, sizes[i]);
            searcher_tell(all[k], out[k], r, sizes[i]);
        }
        off += sizes[i];
    }
    assert_memory_equal(a, b, (size_t)off * sizeof *a);
    assert_memory_not_equal(a, c, (size_t)off * sizeof *a);
    searcher_free(sa);
    searcher_free(sb);
    searcher_free(sc);
}

/* Best time among n results. */
static double best_of(const trial_result *r, int n)
{
    double best = INFINITY;
    for (int i = 0; i < n; i++)
        if (r[i].status == TRIAL_OK && r[i].time_ms < best)
            best = r[i].time_ms;
    return best;
}

/* The optimum of pb among oracle-valid configurations (brute force). */
static double optimum(const space *sp, const problem *pb)
{
    double best = INFINITY, meta[2];
    for (config_id id = 0; id < space_count(sp); id++) {
        if (!mm_valid(sp, id))
            continue;
        mm_meta(sp, pb, id, meta);
        best = fmin(best, exp(meta[0] + meta[1]));
    }
    return best;
}

static void beats_random(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    double q_mm = 0, q_rand = 0, worst_mm = 1, evals_sum = 0;
    int within = 0;
    for (int seed = 1; seed <= SEEDS; seed++) {
        problem pb = make_problem(1000 + 7 * seed); /* not a training problem */
        double opt = optimum(sp, &pb);
        config_id ids[BUDGET];
        trial_result r[BUDGET];
        oracle_ctx oc = {sp, 0, 0};
        searcher *s = mm_searcher(&oc, fx->m, &pb, NULL, (uint64_t)seed);
        assert_int_equal(run(s, sp, &pb, ids, BUDGET, 1, 0), BUDGET);
        evaluate_mm(sp, &pb, ids, r, BUDGET);
        double qm = opt / best_of(r, BUDGET);
        int first = BUDGET;
        for (int i = BUDGET; i >= 1; i--)
            first = best_of(r, i) <= opt * 1.0000001 ? i : first;
        evals_sum += first;
        searcher_free(s);
        s = searcher_new("random", sp, NULL, (uint64_t)seed, NULL);
        assert_int_equal(run(s, sp, &pb, ids, BUDGET, 1, 0), BUDGET);
        evaluate_mm(sp, &pb, ids, r, BUDGET);
        double qr = opt / best_of(r, BUDGET);
        searcher_free(s);
        printf("seed %d: optimum %.4f, mindmap %.3f (optimum at evaluation %d), random %.3f\n",
               seed, opt, qm, first, qr);
        q_mm += qm / SEEDS;
        q_rand += qr / SEEDS;
        worst_mm = fmin(worst_mm, qm);
        within += qm >= 1 / 1.2;
    }
    printf("after %d evaluations, mean fraction of the optimum: mindmap %.3f (worst %.3f, %d of %d "
           "seeds within 20%%, mean evaluations to the optimum %.1f), random %.3f\n",
           BUDGET, q_mm, worst_mm, within, SEEDS, evals_sum / SEEDS, q_rand);
    assert_true(q_mm > q_rand);
    assert_true(q_mm >= 0.95);
    assert_true(within >= 9);
}

/* searcher_stats counts where every proposal came from: the counts add up to the proposals
 * (failures told too), gradient false (the ablation) proposes no gradient step, and with gradient
 * steps on they are the main source. */
static void sources_add_up(void **state)
{
    const fixture *fx = *state;
    space *sp = fx->sp;
    static const char *const names[] = {"start",    "injection", "gradient", "gradient_neighbour",
                                        "fallback", "random",    "restart"};
    json_t *off = json_pack("{s:b}", "gradient", 0);
    for (int k = 0; k < 2; k++) {
        problem pb = make_problem(777);
        config_id ids[300];
        oracle_ctx oc = {sp, 0, 0};
        searcher *s = mm_searcher(&oc, fx->m, &pb, k ? off : NULL, 5);
        assert_int_equal(run(s, sp, &pb, ids, 300, 1, 7), 300);
        json_t *st = searcher_stats(s);
        assert_non_null(st);
        json_int_t sum = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            assert_true(json_is_integer(json_object_get(st, names[i])));
            sum += json_integer_value(json_object_get(st, names[i]));
        }
        assert_int_equal(json_object_size(st), sizeof names / sizeof names[0]);
        assert_int_equal(sum, 300);
        json_int_t grad = json_integer_value(json_object_get(st, "gradient")) +
                          json_integer_value(json_object_get(st, "gradient_neighbour"));
        printf("gradient %s: %lld gradient (%lld of them a neighbour of the projection), %lld "
               "fallback, %lld injection, %lld restart of 300\n",
               k ? "off" : "on", (long long)grad,
               (long long)json_integer_value(json_object_get(st, "gradient_neighbour")),
               (long long)json_integer_value(json_object_get(st, "fallback")),
               (long long)json_integer_value(json_object_get(st, "injection")),
               (long long)json_integer_value(json_object_get(st, "restart")));
        if (k)
            assert_int_equal(grad, 0);
        else
            assert_true(grad > 150);
        json_decref(st);
        searcher_free(s);
    }
    searcher *r = searcher_new("random", sp, NULL, 1, NULL); /* no counters: NULL */
    assert_null(searcher_stats(r));
    searcher_free(r);
    json_decref(off);
}

/* KT_MINDMAP_BENCH=1: the time per proposal with the issue's 256-256-128 surrogate (5 epochs
 * only: the network's size, not its accuracy, sets the time), 1000 proposals one at a time. */
static void overhead_with_issue_size_network(void **state)
{
    const fixture *fx = *state;
    const char *on = getenv("KT_MINDMAP_BENCH");
    if (!on || strcmp(on, "1") != 0)
        KT_SKIP("a timing run: set KT_MINDMAP_BENCH=1 to run it");
    surrogate_options o = {.epochs = 5, .seed = 1};
    surrogate *m = mm_surrogate(fx->sp, &o);
    problem pb = make_problem(99);
    oracle_ctx oc = {fx->sp, 0, 0};
    searcher *s = mm_searcher(&oc, m, &pb, NULL, 1);
    config_id ids[1000];
    double t0 = kt_clock_s();
    clock_t c0 = clock(); /* CPU time: the machine may be shared */
    assert_int_equal(run(s, fx->sp, &pb, ids, 1000, 1, 0), 1000);
    printf("256-256-128 surrogate: %.0f us per proposal over 1000 (CPU time; wall %.0f us)\n",
           (double)(clock() - c0) / CLOCKS_PER_SEC * 1e6 / 1000, (kt_clock_s() - t0) * 1e6 / 1000);
    searcher_free(s);
    surrogate_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_and_refusals), cmocka_unit_test(valid_and_distinct),
        cmocka_unit_test(warm_start_first_ids),  cmocka_unit_test(deterministic_and_resumable),
        cmocka_unit_test(beats_random),          cmocka_unit_test(overhead_with_issue_size_network),
        cmocka_unit_test(sources_add_up),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
