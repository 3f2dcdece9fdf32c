/* Unit tests of the derived problem features (model/derived.h) and their plumbing: values of a
 * conv2d-like description for a known problem (ints, Python true division, refusals), a training
 * set carrying them per problem and through a split, predictors trained on them (xgb, seq2seq,
 * ensemble) that round-trip through save/load with identical candidates and see more features,
 * and a format-1 model (no derived features) that still loads and predicts as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/derived.h"
#include "model/predictor.h"
#include "model/problem_tokens.h"

#include "model_test_util.h"

static const char *const conv_args = "[\"N\",\"C\",\"K\",\"H\",\"W\",\"R\",\"S\"]";
static const char *const conv_derived = "[{\"name\":\"input\",\"expr\":\"N*C*H*W\"},{\"name\":"
                                        "\"output\",\"expr\":\"N*K*(H-R+1)*(W-S+1)\"},"
                                        "{\"name\":\"flops\",\"expr\":\"2*N*K*(H-R+1)*(W-S+1)*C*R*"
                                        "S\"},{\"name\":\"half\",\"expr\":\"H/2\"}]";

static void values_of_a_known_problem(void **state)
{
    (void)state;
    json_t *names = json_loads(conv_args, 0, NULL), *desc = json_loads(conv_derived, 0, NULL);
    kt_error err;
    derived *d = derived_new(desc, names, &err);
    assert_non_null(d);
    assert_int_equal(derived_count(d), 4);
    assert_true(json_equal(derived_desc(d), desc));
    /* LeNet's first layer: N=1 C=1 K=6 H=W=32 R=S=5 -> 28x28 output */
    const double args[] = {1, 1, 6, 32, 32, 5, 5};
    double v[4];
    assert_int_equal(derived_eval(d, args, v, &err), 0);
    assert_true(v[0] == 1024.0);
    assert_true(v[1] == 6.0 * 28 * 28);
    assert_true(v[2] == 2.0 * 6 * 28 * 28 * 25);
    assert_true(v[3] == 16.0);
    const double odd[] = {1, 1, 6, 7, 32, 5, 5};
    assert_int_equal(derived_eval(d, odd, v, &err), 0);
    assert_true(v[3] == 3.5); /* Python's true division */
    /* xgb's row: the arguments' features unchanged, then log2 / fraction / trailing zeros each */
    double all[11];
    float f0[4 * 7 + 2], f[4 * 7 + 2 + 3 * 4];
    memcpy(all, args, sizeof args);
    assert_int_equal(derived_eval(d, args, all + 7, &err), 0);
    assert_int_equal(problem_features_derived_dim(7, 4), 42);
    problem_features(args, 7, f0);
    problem_features_derived(all, 7, 4, f);
    assert_memory_equal(f, f0, sizeof f0);
    assert_true(f[30] == 10.0f && f[31] == 0.0f && f[32] == 6.0f); /* input 1024 */
    assert_true(f[33] == (float)log2(4704.0) && f[35] == 5.0f);    /* output 6*28*28 = 147*32 */
    assert_true(f[39] == 4.0f && f[40] == 0.0f && f[41] == 4.0f);  /* half 16 */
    assert_int_equal(derived_count(NULL), 0);
    assert_int_equal(derived_eval(NULL, args, v, &err), 0);
    derived_free(d);
    json_decref(desc);

    /* refusals */
    static const struct {
        const char *desc;
        kt_code code;
        const char *needle;
    } bad[] = {
        {"{\"name\":\"x\"}", KT_ERR_BAD_REQUEST, "not an array"},
        {"[{\"name\":\"x\"}]", KT_ERR_BAD_REQUEST, "each item"},
        {"[{\"name\":\"\",\"expr\":\"N\"}]", KT_ERR_BAD_REQUEST, "each item"},
        {"[{\"name\":\"x\",\"expr\":\"N\",\"more\":1}]", KT_ERR_BAD_REQUEST, "each item"},
        {"[{\"name\":\"x\",\"expr\":\"N*Q\"}]", KT_ERR_BAD_EXPRESSION, "derived feature x"},
        {"[{\"name\":\"x\",\"expr\":\"N*(\"}]", KT_ERR_BAD_EXPRESSION, "derived feature x"},
        {"[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", KT_ERR_BAD_REQUEST, "at most 16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = json_loads(bad[i].desc, 0, NULL);
        assert_non_null(b);
        kt_error_clear(&err);
        assert_null(derived_new(b, names, &err));
        if (err.code != bad[i].code || !strstr(err.message, bad[i].needle))
            fail_msg("%s: %d '%s'", bad[i].desc, err.code, err.message);
        json_decref(b);
    }
    /* an expression Python could not evaluate for this problem */
    desc = json_loads("[{\"name\":\"ratio\",\"expr\":\"N // (H - R)\"}]", 0, NULL);
    assert_non_null(d = derived_new(desc, names, &err));
    const double flat[] = {1, 1, 6, 5, 32, 5, 5};
    assert_int_equal(derived_eval(d, flat, v, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_non_null(strstr(err.message, "derived feature ratio (N // (H - R))"));
    derived_free(d);
    json_decref(desc);
    json_decref(names);
}

static training_set *mt_derived_set(const char *desc_text, const int (*shapes)[2], int n)
{
    json_t *params = mt_params(), *args = mt_arg_names();
    json_t *desc = desc_text ? json_loads(desc_text, 0, NULL) : NULL;
    kt_error err;
    training_set *ts = training_set_new(params, args, &err);
    assert_non_null(ts);
    assert_int_equal(training_set_set_derived(ts, desc, &err), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(mt_add_problem(ts, shapes[i][0], shapes[i][1]), i);
    json_decref(params);
    json_decref(args);
    json_decref(desc);
    return ts;
}

static const char *const mt_derived = "[{\"name\":\"area\",\"expr\":\"M*N\"},"
                                      "{\"name\":\"slack\",\"expr\":\"M - N + 1000\"}]";

static void training_set_carries_them(void **state)
{
    (void)state;
    static const int shapes[][2] = {{4, 4}, {8, 16}, {16, 8}, {32, 32}, {64, 8}, {128, 64}};
    training_set *ts = mt_derived_set(mt_derived, shapes, 6);
    kt_error err;
    assert_int_equal(training_set_num_args(ts), 2);
    assert_int_equal(training_set_num_derived(ts), 2);
    const double *a = training_set_problem_args(ts, 2);
    assert_true(a[0] == 16 && a[1] == 8 && a[2] == 128 && a[3] == 1008);
    /* only before the first problem */
    assert_int_equal(training_set_set_derived(ts, NULL, &err), -1);
    assert_int_equal(err.code, KT_ERR_INTERNAL);
    training_set *tr, *te;
    assert_int_equal(training_set_split(ts, 0.5, 3, &tr, &te, &err), 0);
    assert_true(json_equal(training_set_derived(tr), training_set_derived(ts)));
    assert_int_equal(training_set_num_derived(te), 2);
    for (int i = 0; i < training_set_num_problems(te); i++) {
        const double *x = training_set_problem_args(te, i);
        assert_true(x[2] == x[0] * x[1] && x[3] == x[0] - x[1] + 1000);
    }
    training_set_free(tr);
    training_set_free(te);
    /* a problem whose derived value fails is refused, naming the feature */
    training_set *zs = mt_derived_set("[{\"name\":\"inv\",\"expr\":\"1 // (M - 5)\"}]", shapes, 0);
    json_t *pr = mt_problem(5, 5);
    assert_int_equal(training_set_add_problem(zs, pr, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_non_null(strstr(err.message, "inv"));
    assert_int_equal(training_set_num_problems(zs), 0);
    json_decref(pr);
    training_set_free(zs);
    /* none: [] is the same as NULL */
    training_set *ns = mt_derived_set("[]", shapes, 1);
    assert_null(training_set_derived(ns));
    assert_int_equal(training_set_num_derived(ns), 0);
    training_set_free(ns);
    training_set_free(ts);
}

static const int train_shapes[][2] = {{4, 4},    {8, 16},   {16, 8},   {32, 32},   {64, 8},
                                      {128, 64}, {256, 16}, {16, 256}, {512, 512}, {1024, 4}};
static const int test_shapes[][2] = {{6, 6}, {100, 50}, {700, 300}};
#define N_TRAIN ((int)(sizeof train_shapes / sizeof train_shapes[0]))
#define N_TEST  ((int)(sizeof test_shapes / sizeof test_shapes[0]))

/* Small hyper-parameters so that the learned kinds train in a second (NULL: the defaults). */
static json_t *small_hyper(const char *kind, int use_derived)
{
    if (strcmp(kind, "seq2seq") == 0)
        return json_pack("{s:i, s:i, s:i}", "hidden", 16, "epochs", 40, "derived", use_derived);
    if (strcmp(kind, "xgb") == 0)
        return json_pack("{s:i, s:i}", "rounds", 10, "derived", use_derived);
    if (strcmp(kind, "ensemble") == 0)
        return json_pack("{s:i, s:i, s:i, s:i}", "hidden", 16, "epochs", 40, "rounds", 10,
                         "derived", use_derived);
    if (strcmp(kind, "nearest") == 0 || strcmp(kind, "local") == 0)
        return json_pack("{s:i}", "derived", use_derived);
    return NULL;
}

/* Top-10 of p and q for every test shape are the same (ids and scores). */
static void same_predictions(predictor *p, predictor *q)
{
    kt_error err;
    for (int i = 0; i < N_TEST; i++) {
        space *sp = mt_space(test_shapes[i][0], test_shapes[i][1]);
        json_t *pr = mt_problem(test_shapes[i][0], test_shapes[i][1]);
        predictor_candidate a[10], b[10];
        int na = predictor_predict(p, pr, sp, 10, a, &err);
        int nb = predictor_predict(q, pr, sp, 10, b, &err);
        assert_true(na >= 1);
        assert_int_equal(na, nb);
        for (int j = 0; j < na; j++)
            assert_true(a[j].id == b[j].id && a[j].score == b[j].score);
        predictor_candidates_release(a, na);
        predictor_candidates_release(b, nb);
        json_decref(pr);
        space_free(sp);
    }
}

/* Saves p and loads the bytes (edited by edit when not NULL). */
static predictor *reload(const predictor *p, strbuf *bytes, void (*edit)(strbuf *))
{
    kt_error err;
    strbuf_init(bytes, 1 << 26);
    assert_int_equal(predictor_save(p, bytes, &err), 0);
    if (edit)
        edit(bytes);
    predictor *q = predictor_load((const unsigned char *)bytes->data, bytes->len, &err);
    if (!q)
        fail_msg("load: %s", err.message);
    return q;
}

static void models_round_trip(void **state)
{
    (void)state;
    static const char *const kinds[] = {"xgb", "seq2seq", "nearest", "local", "ensemble"};
    training_set *plain = mt_derived_set(NULL, train_shapes, N_TRAIN);
    training_set *with = mt_derived_set(mt_derived, train_shapes, N_TRAIN);
    kt_error err;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        json_t *h = small_hyper(kinds[k], 1), *h0 = small_hyper(kinds[k], 0);
        predictor *p = predictor_train(kinds[k], with, h, 1, &err);
        predictor *o = predictor_train(kinds[k], plain, h, 1, &err);
        predictor *z = predictor_train(kinds[k], with, h0, 1, &err);
        if (!p || !o || !z)
            fail_msg("train %s: %s", kinds[k], err.message);
        strbuf bp, bo, bz;
        predictor *q = reload(p, &bp, NULL);
        predictor *r = reload(o, &bo, NULL);
        predictor *y = reload(z, &bz, NULL);
        /* "derived": 0 drops them: the model is the one trained without (but its hyper line) */
        assert_null(strstr(bz.data, "\"derived\":["));
        assert_non_null(strstr(bz.data, "\"derived\":0"));
        same_predictions(z, y);
        same_predictions(z, r);
        /* the derived description travels in the meta line; the plain model has none */
        assert_true(strncmp(bp.data, "ktune-model 2 ", 14) == 0);
        assert_non_null(strstr(bp.data, "\"derived\":[{\"name\":\"area\",\"expr\":\"M*N\"}"));
        assert_null(strstr(bo.data, "\"derived\":["));
        if (strcmp(kinds[k], "xgb") == 0) { /* 4 per argument and 2 more, 3 per derived value */
            assert_non_null(strstr(bp.data, "\"features\":16"));
            assert_non_null(strstr(bo.data, "\"features\":10"));
        } else if (strcmp(kinds[k], "seq2seq") == 0) { /* one-hot of 2 or 4 tokens, then 10 */
            assert_non_null(strstr(bp.data, "\"token_dim\":14"));
            assert_non_null(strstr(bo.data, "\"token_dim\":12"));
        }
        same_predictions(p, q);
        same_predictions(o, r);
        /* a problem that is not numbers is refused before its features are derived */
        json_t *bad = json_pack("{s:s, s:i}", "M", "x", "N", 1);
        predictor_candidate c[1];
        space *sp = mt_space(8, 8);
        assert_int_equal(predictor_predict(q, bad, sp, 1, c, &err), -1);
        assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
        space_free(sp);
        json_decref(bad);
        printf("  %-8s %zu bytes with derived features, %zu without\n", kinds[k], bp.len, bo.len);
        strbuf_release(&bp);
        strbuf_release(&bo);
        predictor_free(p);
        predictor_free(q);
        predictor_free(o);
        predictor_free(r);
        predictor_free(z);
        predictor_free(y);
        strbuf_release(&bz);
        json_decref(h);
        json_decref(h0);
    }
    training_set_free(plain);
    training_set_free(with);
}

/* Format 1 is format 2 without "derived": the header's version as an older build wrote it. */
static void as_format_1(strbuf *b)
{
    assert_true(strncmp(b->data, "ktune-model 2 ", 14) == 0);
    b->data[12] = '1';
}

static void format_1_still_loads(void **state)
{
    (void)state;
    static const char *const kinds[] = {"nearest", "common", "xgb", "seq2seq", "local", "ensemble"};
    training_set *plain = mt_derived_set(NULL, train_shapes, N_TRAIN);
    training_set *with = mt_derived_set(mt_derived, train_shapes, N_TRAIN);
    json_t *h = NULL;
    kt_error err;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        h = small_hyper(kinds[k], 0);
        predictor *p = predictor_train(kinds[k], plain, h, 1, &err);
        if (!p)
            fail_msg("train %s: %s", kinds[k], err.message);
        strbuf b;
        predictor *q = reload(p, &b, as_format_1);
        same_predictions(p, q);
        strbuf_release(&b);
        predictor_free(q);
        predictor_free(p);
        json_decref(h);
    }
    /* a format-1 model never reads "derived" (a format-2 field): trained with derived features,
     * relabelled 1, its xgb boosters see fewer features than the meta says and it is refused */
    h = small_hyper("xgb", 1);
    predictor *p = predictor_train("xgb", with, h, 1, &err);
    assert_non_null(p);
    strbuf b;
    strbuf_init(&b, 1 << 26);
    assert_int_equal(predictor_save(p, &b, &err), 0);
    as_format_1(&b);
    assert_null(predictor_load((const unsigned char *)b.data, b.len, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    strbuf_release(&b);
    predictor_free(p);
    json_decref(h);
    training_set_free(plain);
    training_set_free(with);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_of_a_known_problem),
        cmocka_unit_test(training_set_carries_them),
        cmocka_unit_test(models_round_trip),
        cmocka_unit_test(format_1_still_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
