/* Unit tests of the predictor facade (model/predictor.h) on a synthetic kernel whose space depends
 * on the problem (model_test_util.h): every built algorithm trains, predicts only configurations
 * valid in the held-out problem's space, round-trips through save/load with identical predictions,
 * and evaluates to metrics in [0, 1]; training is deterministic for a seed; bad hyper-parameters,
 * another format version and damaged bytes are refused with clear errors; nearest picks the nearest
 * problem's best; the ensemble's top-5 holds every member's first choice, one member alone gives
 * that member's list, and its bytes are checked member by member. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/predictor.h"

#include "model_test_util.h"

static const int train_shapes[][2] = {{4, 4},     {8, 16},   {16, 8},   {32, 32},
                                      {64, 8},    {128, 64}, {256, 16}, {16, 256},
                                      {512, 512}, {1024, 4}, {24, 24},  {48, 96}};
static const int test_shapes[][2] = {{6, 6}, {100, 50}, {700, 300}, {20, 200}};
#define N_TRAIN ((int)(sizeof train_shapes / sizeof train_shapes[0]))
#define N_TEST  ((int)(sizeof test_shapes / sizeof test_shapes[0]))

static training_set *mt_set(const int (*shapes)[2], int n)
{
    json_t *params = mt_params(), *args = mt_arg_names();
    kt_error err;
    training_set *ts = training_set_new(params, args, &err);
    assert_non_null(ts);
    for (int i = 0; i < n; i++)
        assert_true(mt_add_problem(ts, shapes[i][0], shapes[i][1]) == i);
    json_decref(params);
    json_decref(args);
    return ts;
}

static const char *const kinds[] = {"nearest", "common", "xgb", "seq2seq", "local", "ensemble"};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* Small hyper-parameters so that the learned kinds train in a second. */
static json_t *small_hyper(const char *kind)
{
    if (strcmp(kind, "seq2seq") == 0)
        return json_pack("{s:i, s:i}", "hidden", 16, "epochs", 60);
    if (strcmp(kind, "xgb") == 0)
        return json_pack("{s:i}", "rounds", 20);
    if (strcmp(kind, "ensemble") == 0)
        return json_pack("{s:i, s:i, s:i}", "hidden", 16, "epochs", 60, "rounds", 20);
    return json_object();
}

/* NULL when the kind is not built in this tree (KT_ERR_NOT_IMPLEMENTED). */
static predictor *train_kind(const char *kind, const training_set *ts)
{
    json_t *h = small_hyper(kind);
    kt_error err;
    predictor *p = predictor_train(kind, ts, h, 1, &err);
    json_decref(h);
    if (!p && err.code == KT_ERR_NOT_IMPLEMENTED) {
        printf("  (%s: %s)\n", kind, err.message);
        return NULL;
    }
    if (!p)
        fail_msg("train %s: %s", kind, err.message);
    return p;
}

static const space *space_of(void *ctx, const json_t *problem, kt_error *err)
{
    space **cache = ctx;
    (void)err;
    int m = (int)json_integer_value(json_object_get(problem, "M"));
    for (int i = 0; i < N_TEST; i++) {
        if (test_shapes[i][0] == m)
            return cache[i];
    }
    return NULL;
}

static void every_kind_valid_and_round_trips(void **state)
{
    (void)state;
    training_set *tr = mt_set(train_shapes, N_TRAIN), *te = mt_set(test_shapes, N_TEST);
    space *sps[N_TEST];
    for (int i = 0; i < N_TEST; i++)
        assert_non_null(sps[i] = mt_space(test_shapes[i][0], test_shapes[i][1]));
    int built = 0;
    for (int k = 0; k < N_KINDS; k++) {
        predictor *p = train_kind(kinds[k], tr);
        if (!p)
            continue;
        built++;
        assert_string_equal(predictor_kind(p), kinds[k]);
        strbuf bytes;
        kt_error err;
        strbuf_init(&bytes, 1 << 26);
        assert_int_equal(predictor_save(p, &bytes, &err), 0);
        predictor *q = predictor_load((const unsigned char *)bytes.data, bytes.len, &err);
        if (!q)
            fail_msg("load %s: %s", kinds[k], err.message);
        json_t *h1 = predictor_hyper_json(p), *h2 = predictor_hyper_json(q);
        assert_true(json_equal(h1, h2));
        json_decref(h1);
        json_decref(h2);
        for (int i = 0; i < N_TEST; i++) {
            predictor_candidate a[20], b[20];
            json_t *pr = mt_problem(test_shapes[i][0], test_shapes[i][1]);
            int na = predictor_predict(p, pr, sps[i], 20, a, &err);
            int nb = predictor_predict(q, pr, sps[i], 20, b, &err);
            assert_true(na >= 1);
            assert_int_equal(na, nb);
            for (int j = 0; j < na; j++) {
                config_id id;
                /* valid in the problem's space (A*B <= M), ids match, no repeats */
                assert_int_equal(space_config_from_json(sps[i], a[j].config, &id, &err), 0);
                assert_true(id == a[j].id);
                assert_true(json_equal(a[j].config, b[j].config));
                assert_true(a[j].score == b[j].score);
                assert_true(j == 0 || a[j].score <= a[j - 1].score + 1e-12);
                for (int l = 0; l < j; l++)
                    assert_true(a[l].id != a[j].id);
            }
            predictor_candidates_release(a, na);
            predictor_candidates_release(b, nb);
            json_decref(pr);
        }
        json_t *ev = predictor_evaluate(q, te, space_of, sps, &err);
        if (!ev)
            fail_msg("evaluate %s: %s", kinds[k], err.message);
        double acc = json_number_value(json_object_get(ev, "param_accuracy"));
        double per = json_number_value(json_object_get(ev, "perfect"));
        double w = json_number_value(json_object_get(ev, "top1_within_1_10"));
        printf("  %-8s %zu bytes: accuracy %.2f perfect %.2f within 1.10x %.2f, median %.3f\n",
               kinds[k], bytes.len, acc, per, w,
               json_number_value(json_object_get(ev, "top1_ratio_median")));
        assert_int_equal(json_integer_value(json_object_get(ev, "problems")), N_TEST);
        assert_int_equal(json_integer_value(json_object_get(ev, "measured")), N_TEST);
        assert_true(acc >= 0 && acc <= 1 && per >= 0 && per <= 1 && w >= 0 && w <= 1);
        assert_int_equal(json_array_size(json_object_get(ev, "heldout")), N_TEST);
        json_decref(ev);
        strbuf_release(&bytes);
        predictor_free(p);
        predictor_free(q);
    }
    assert_true(built >= 2);
    for (int i = 0; i < N_TEST; i++)
        space_free(sps[i]);
    training_set_free(tr);
    training_set_free(te);
}

static void nearest_takes_the_nearest(void **state)
{
    (void)state;
    training_set *tr = mt_set(train_shapes, N_TRAIN);
    predictor *p = train_kind("nearest", tr);
    /* (120, 70) is nearest to (128, 64): its best first */
    json_t *pr = mt_problem(120, 70);
    space *sp = mt_space(120, 70);
    predictor_candidate c[3];
    kt_error err;
    int n = predictor_predict(p, pr, sp, 3, c, &err);
    assert_int_equal(n, 3);
    const int *best = training_set_trial(tr, 5, 0, NULL);
    json_t *bj = training_set_config_json(tr, best);
    assert_true(json_equal(bj, c[0].config));
    /* a space where that best is invalid (M = 2: A*B <= 2) gets only valid ones */
    space *small = mt_space(2, 70);
    predictor_candidate d[5];
    json_t *pr2 = mt_problem(2, 70);
    int m = predictor_predict(p, pr2, small, 5, d, &err);
    assert_true(m >= 1);
    for (int i = 0; i < m; i++) {
        config_id id;
        assert_int_equal(space_config_from_json(small, d[i].config, &id, &err), 0);
    }
    predictor_candidates_release(c, n);
    predictor_candidates_release(d, m);
    json_decref(bj);
    json_decref(pr);
    json_decref(pr2);
    space_free(sp);
    space_free(small);
    predictor_free(p);
    training_set_free(tr);
}

static void refusals(void **state)
{
    (void)state;
    training_set *tr = mt_set(train_shapes, 4);
    kt_error err;
    json_t *bad = json_pack("{s:i}", "topp", 3);
    assert_null(predictor_train("nearest", tr, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_non_null(strstr(err.message, "topp"));
    json_decref(bad);
    bad = json_pack("{s:i}", "rounds", 3); /* an xgb key is not nearest's */
    assert_null(predictor_train("nearest", tr, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(bad);
    bad = json_pack("{s:f}", "next_weight", 1.5);
    assert_null(predictor_train("common", tr, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(bad);
    bad = json_pack("{s:f}", "top", 2.5);
    assert_null(predictor_train("common", tr, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(bad);
    assert_null(predictor_train("forest", tr, NULL, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    assert_false(predictor_kind_exists("forest"));
    assert_true(predictor_kind_exists(predictor_default_kind()));
    /* no problem */
    json_t *params = mt_params(), *args = mt_arg_names();
    training_set *empty = training_set_new(params, args, &err);
    assert_null(predictor_train("common", empty, NULL, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    /* format version, magic, damage */
    predictor *p = predictor_train("common", tr, NULL, 1, &err);
    assert_non_null(p);
    strbuf b;
    strbuf_init(&b, 1 << 24);
    assert_int_equal(predictor_save(p, &b, &err), 0);
    assert_true(strncmp(b.data, "ktune-model 2 common\n", 21) == 0);
    b.data[12] = '9';
    assert_null(predictor_load((unsigned char *)b.data, b.len, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_string_equal(err.message, "model format 9, this build reads 1-2");
    b.data[12] = '0';
    assert_null(predictor_load((unsigned char *)b.data, b.len, &err));
    assert_string_equal(err.message, "model format 0, this build reads 1-2");
    b.data[12] = '2';
    b.data[0] = 'x';
    assert_null(predictor_load((unsigned char *)b.data, b.len, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    b.data[0] = 'k';
    assert_null(predictor_load((unsigned char *)b.data, b.len / 2, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    /* a space of other parameters */
    json_t *op = json_loads("[{\"name\":\"A\",\"values\":[1,2]}]", 0, NULL);
    space *other = space_new(op, NULL, NULL, NULL, &err);
    predictor_candidate c[1];
    json_t *pr = mt_problem(8, 8);
    assert_int_equal(predictor_predict(p, pr, other, 1, c, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_int_equal(predictor_predict(p, pr, other, 101, c, &err), -1);
    assert_int_equal(err.code, KT_ERR_OUT_OF_RANGE);
    json_t *badp = json_pack("{s:i}", "M", 8);
    space *sp = mt_space(8, 8);
    assert_int_equal(predictor_predict(p, badp, sp, 1, c, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    space_free(sp);
    json_decref(badp);
    json_decref(pr);
    json_decref(op);
    space_free(other);
    strbuf_release(&b);
    predictor_free(p);
    json_decref(params);
    json_decref(args);
    training_set_free(empty);
    training_set_free(tr);
}

static const space *space_fails(void *ctx, const json_t *problem, kt_error *err)
{
    (void)ctx;
    (void)problem;
    kt_error_set(err, KT_ERR_BAD_PROBLEM, "refused here");
    return NULL;
}

/* predictor_evaluate: NULL without an error skips a problem, NULL with one fails the call. */
static void evaluate_skips_and_fails(void **state)
{
    (void)state;
    training_set *tr = mt_set(train_shapes, N_TRAIN), *te = mt_set(test_shapes, N_TEST);
    assert_int_equal(mt_add_problem(te, 3000, 7), N_TEST); /* space_of knows no M = 3000 */
    space *sps[N_TEST];
    for (int i = 0; i < N_TEST; i++)
        sps[i] = mt_space(test_shapes[i][0], test_shapes[i][1]);
    predictor *p = train_kind("nearest", tr);
    kt_error err;
    json_t *ev = predictor_evaluate(p, te, space_of, sps, &err);
    assert_non_null(ev);
    assert_int_equal(json_integer_value(json_object_get(ev, "problems")), N_TEST);
    json_decref(ev);
    assert_null(predictor_evaluate(p, te, space_fails, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    predictor_free(p);
    for (int i = 0; i < N_TEST; i++)
        space_free(sps[i]);
    training_set_free(tr);
    training_set_free(te);
}

/* One tuned problem with one trial is enough for every kind (a fresh service's first model). */
static void one_problem_one_trial(void **state)
{
    (void)state;
    json_t *params = mt_params(), *args = mt_arg_names(), *pr = mt_problem(64, 64);
    json_t *cfg = json_loads("{\"A\":4,\"B\":2,\"C\":1,\"D\":\"y\",\"E\":7}", 0, NULL);
    kt_error err;
    training_set *ts = training_set_new(params, args, &err);
    int p0 = training_set_add_problem(ts, pr, &err);
    assert_int_equal(training_set_add_trial(ts, p0, cfg, 2.5), 1);
    space *sp = mt_space(100, 30);
    json_t *q = mt_problem(100, 30);
    for (int k = 0; k < N_KINDS; k++) {
        predictor *p = train_kind(kinds[k], ts);
        predictor_candidate c[5];
        int n = predictor_predict(p, q, sp, 5, c, &err);
        assert_true(n >= 1);
        if (strcmp(kinds[k], "nearest") == 0 || strcmp(kinds[k], "common") == 0)
            assert_true(json_equal(c[0].config, cfg)); /* the only thing they know */
        predictor_candidates_release(c, n);
        predictor_free(p);
    }
    json_decref(q);
    space_free(sp);
    training_set_free(ts);
    json_decref(cfg);
    json_decref(pr);
    json_decref(params);
    json_decref(args);
}

/* The same set and seed give the same bytes, for every kind. */
static void training_is_deterministic(void **state)
{
    (void)state;
    training_set *tr = mt_set(train_shapes, 6);
    for (int k = 0; k < N_KINDS; k++) {
        predictor *a = train_kind(kinds[k], tr), *b = train_kind(kinds[k], tr);
        strbuf x, y;
        kt_error err;
        strbuf_init(&x, 1 << 26);
        strbuf_init(&y, 1 << 26);
        assert_int_equal(predictor_save(a, &x, &err), 0);
        assert_int_equal(predictor_save(b, &y, &err), 0);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.data, y.data, x.len);
        strbuf_release(&x);
        strbuf_release(&y);
        predictor_free(a);
        predictor_free(b);
    }
    training_set_free(tr);
}

/* The ensemble: the first choice of every member of weight 1 (seq2seq, nearest, xgb, local; common
 * counts 0.5) is in its top-5 (after the fused best), its top-1 is one of the members' candidates;
 * one member alone (the others' weights 0) gives that member's list; every weight 0 is refused;
 * damaged member bytes are refused. */
static void ensemble_fuses_its_members(void **state)
{
    (void)state;
    static const char *const members[] = {"seq2seq", "nearest", "xgb", "local", "common"};
    training_set *tr = mt_set(train_shapes, N_TRAIN);
    predictor *e = train_kind("ensemble", tr), *m[5];
    kt_error err;
    for (int i = 0; i < 5; i++)
        m[i] = train_kind(members[i], tr);
    for (int t = 0; t < N_TEST; t++) {
        space *sp = mt_space(test_shapes[t][0], test_shapes[t][1]);
        json_t *pr = mt_problem(test_shapes[t][0], test_shapes[t][1]);
        predictor_candidate c[5], d[20];
        int n = predictor_predict(e, pr, sp, 5, c, &err), top1_known = 0;
        assert_int_equal(n, 5);
        for (int i = 0; i < 5; i++) {
            int nd = predictor_predict(m[i], pr, sp, 20, d, &err), found = 0;
            assert_true(nd >= 1);
            for (int j = 0; j < n; j++)
                found += c[j].id == d[0].id; /* the member's favourite is in the top-5 */
            assert_int_equal(found, i < 4 ? 1 : found);
            for (int j = 0; j < nd; j++)
                top1_known += c[0].id == d[j].id;
            predictor_candidates_release(d, nd);
        }
        assert_true(top1_known >= 1);
        predictor_candidates_release(c, n);
        json_decref(pr);
        space_free(sp);
    }
    /* nearest alone: the same list as nearest */
    json_t *h = json_pack("{s:f, s:f, s:f, s:f}", "w_seq2seq", 0.0, "w_common", 0.0, "w_xgb", 0.0,
                          "w_local", 0.0);
    predictor *alone = predictor_train("ensemble", tr, h, 1, &err);
    json_decref(h);
    assert_non_null(alone);
    space *sp = mt_space(100, 50);
    json_t *pr = mt_problem(100, 50);
    predictor_candidate a[10], b[10];
    int na = predictor_predict(alone, pr, sp, 10, a, &err);
    int nb = predictor_predict(m[1], pr, sp, 10, b, &err); /* nearest */
    assert_true(na >= 1);
    assert_int_equal(na, nb);
    for (int j = 0; j < na; j++)
        assert_true(a[j].id == b[j].id);
    predictor_candidates_release(a, na);
    predictor_candidates_release(b, nb);
    /* its bytes hold only nearest: cut them anywhere and loading fails cleanly */
    strbuf bytes;
    strbuf_init(&bytes, 1 << 26);
    assert_int_equal(predictor_save(alone, &bytes, &err), 0);
    assert_non_null(strstr(bytes.data, "\"members\":[{\"kind\":\"nearest\""));
    {
        /* a member whose kind is not the one its weight names is refused */
        const char *at = strstr(bytes.data, "\"kind\":\"nearest\"");
        strbuf bad;
        strbuf_init(&bad, 1 << 26);
        assert_int_equal(strbuf_append(&bad, bytes.data, (size_t)(at - bytes.data)), 0);
        assert_int_equal(strbuf_append(&bad, "\"kind\":\"common\"", 15), 0);
        assert_int_equal(strbuf_append(&bad, at + 16, bytes.len - (size_t)(at + 16 - bytes.data)),
                         0);
        assert_null(predictor_load((const unsigned char *)bad.data, bad.len, &err));
        assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
        if (!strstr(err.message, "not nearest"))
            fail_msg("%s", err.message);
        strbuf_release(&bad);
    }
    for (size_t cut = 0; cut < bytes.len; cut += 1 + bytes.len / 97) {
        predictor *q = predictor_load((const unsigned char *)bytes.data, cut, &err);
        assert_null(q);
        assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    }
    strbuf_release(&bytes);
    /* every weight 0 */
    h = json_pack("{s:f, s:f, s:f, s:f, s:f}", "w_seq2seq", 0.0, "w_nearest", 0.0, "w_common", 0.0,
                  "w_xgb", 0.0, "w_local", 0.0);
    assert_null(predictor_train("ensemble", tr, h, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(h);
    h = json_pack("{s:f}", "fuse_c", -1.0);
    assert_null(predictor_train("ensemble", tr, h, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(h);
    json_decref(pr);
    space_free(sp);
    predictor_free(alone);
    for (int i = 0; i < 5; i++)
        predictor_free(m[i]);
    predictor_free(e);
    training_set_free(tr);
}

/* local: a configuration near-best on three neighbours beats the nearest one's single best (which
 * nearest picks); one beyond 1 + tol of every neighbour's best only fills. */
static void local_votes_across_neighbours(void **state)
{
    (void)state;
    json_t *params = mt_params(), *args = mt_arg_names();
    kt_error err;
    training_set *ts = training_set_new(params, args, &err);
    static const char *const cfg[] = {
        "{\"A\":4,\"B\":2,\"C\":1,\"D\":\"y\",\"E\":7}", /* X: (64, 64)'s best */
        "{\"A\":2,\"B\":2,\"C\":1,\"D\":\"x\",\"E\":7}", /* Y: within 3% on all three */
        "{\"A\":8,\"B\":1,\"C\":0,\"D\":\"z\",\"E\":7}", /* Z: (64, 128)'s best */
        "{\"A\":1,\"B\":4,\"C\":0,\"D\":\"x\",\"E\":7}", /* W: (128, 64)'s best */
        "{\"A\":1,\"B\":1,\"C\":0,\"D\":\"z\",\"E\":7}", /* V: 1.5x everywhere */
    };
    static const int shape[3][2] = {{64, 64}, {64, 128}, {128, 64}};
    static const int best[3] = {0, 2, 3};
    static const double y_ratio[3] = {1.03, 1.02, 1.01};
    for (int i = 0; i < 3; i++) {
        json_t *pr = mt_problem(shape[i][0], shape[i][1]);
        int p = training_set_add_problem(ts, pr, &err);
        json_t *b = json_loads(cfg[best[i]], 0, NULL), *y = json_loads(cfg[1], 0, NULL);
        json_t *v = json_loads(cfg[4], 0, NULL);
        assert_int_equal(training_set_add_trial(ts, p, b, 1.0), 1);
        assert_int_equal(training_set_add_trial(ts, p, y, y_ratio[i]), 1);
        assert_int_equal(training_set_add_trial(ts, p, v, 1.5), 1);
        json_decref(b);
        json_decref(y);
        json_decref(v);
        json_decref(pr);
    }
    json_t *q = mt_problem(70, 70);
    space *sp = mt_space(70, 70);
    predictor *loc = train_kind("local", ts), *near = train_kind("nearest", ts);
    predictor_candidate c[5], d[1];
    int n = predictor_predict(loc, q, sp, 5, c, &err);
    assert_int_equal(predictor_predict(near, q, sp, 1, d, &err), 1);
    json_t *x = json_loads(cfg[0], 0, NULL), *y = json_loads(cfg[1], 0, NULL);
    json_t *v = json_loads(cfg[4], 0, NULL);
    assert_true(json_equal(d[0].config, x)); /* nearest: (64, 64)'s best */
    assert_int_equal(n, 5);
    assert_true(json_equal(c[0].config, y)); /* local: the one good on all three */
    assert_true(json_equal(c[4].config, v)); /* 1.5x: only as the fill, last */
    assert_true(c[3].score > c[4].score);
    predictor_candidates_release(c, n);
    predictor_candidates_release(d, 1);
    json_t *bad = json_pack("{s:i}", "neighbours", 0);
    assert_null(predictor_train("local", ts, bad, 1, &err));
    assert_int_equal(err.code, KT_ERR_BAD_OPTION);
    json_decref(bad);
    json_decref(x);
    json_decref(y);
    json_decref(v);
    json_decref(q);
    space_free(sp);
    predictor_free(loc);
    predictor_free(near);
    training_set_free(ts);
    json_decref(params);
    json_decref(args);
}

/* The check of POST /v1/models: the training's own check of keys and ranges, without a training
 * set (issue 26: 1e300 was stored and broke every later list). */
static void hyper_checked_without_training(void **state)
{
    (void)state;
    static const struct {
        const char *kind, *hyper;
        int ok;
    } cases[] = {
        {NULL, "{}", 1},
        {NULL, "{\"epochs\": 100, \"w_xgb\": 0}", 1},
        {"seq2seq", "{\"epochs\": 1e300}", 0},
        {"seq2seq", "{\"epochs\": 2.5}", 0},
        {"seq2seq", "{\"epochs\": 100000}", 1},
        {"seq2seq", "{\"epochs\": 100001}", 0},
        {"nearest", "{\"rounds\": 10}", 0},
        {"xgb", "{\"rounds\": 10}", 1},
        {"xgb", "{\"colour\": 1}", 0},
        {"magic", "{}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *h = json_loads(cases[i].hyper, 0, NULL);
        kt_error err;
        kt_error_clear(&err);
        assert_non_null(h);
        int rc = predictor_hyper_check(cases[i].kind, h, &err);
        if ((rc == 0) != cases[i].ok)
            fail_msg("case %zu (%s %s): rc %d, %s", i, cases[i].kind ? cases[i].kind : "default",
                     cases[i].hyper, rc, err.message);
        if (!cases[i].ok)
            assert_int_equal(err.code, KT_ERR_BAD_OPTION);
        json_decref(h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind_valid_and_round_trips),
        cmocka_unit_test(nearest_takes_the_nearest),
        cmocka_unit_test(refusals),
        cmocka_unit_test(training_is_deterministic),
        cmocka_unit_test(evaluate_skips_and_fails),
        cmocka_unit_test(one_problem_one_trial),
        cmocka_unit_test(ensemble_fuses_its_members),
        cmocka_unit_test(local_votes_across_neighbours),
        cmocka_unit_test(hyper_checked_without_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
