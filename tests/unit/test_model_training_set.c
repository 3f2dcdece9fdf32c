/* Unit tests of model/training_set and model/problem_tokens: problems and trials added, deduped
 * (same problem -> same index; same configuration -> the lower time), refused trials skipped,
 * trials fastest first, and the split deterministic and independent of the order of adding; the
 * token and feature layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "model/problem_tokens.h"
#include "model/training_set.h"

#include "model_test_util.h"

static training_set *mt_new(void)
{
    json_t *params = mt_params(), *args = mt_arg_names();
    kt_error err;
    training_set *ts = training_set_new(params, args, &err);
    if (!ts)
        fail_msg("training_set_new: %s", err.message);
    json_decref(params);
    json_decref(args);
    return ts;
}

static void add_and_dedupe(void **state)
{
    (void)state;
    training_set *ts = mt_new();
    kt_error err;
    json_t *a = json_loads("{\"M\":64,\"N\":32}", 0, NULL),
           *b = json_loads("{\"N\":32,\"M\":64.0}", 0, NULL);
    int p = training_set_add_problem(ts, a, &err);
    assert_int_equal(p, 0);
    assert_int_equal(training_set_add_problem(ts, b, &err), 0); /* 64.0 is 64, key order */
    assert_int_equal(training_set_num_problems(ts), 1);
    assert_string_equal(training_set_problem_key(ts, 0), "{\"M\":64,\"N\":32}");
    json_t *c1 = json_loads("{\"A\":2,\"B\":4,\"C\":0,\"D\":\"y\",\"E\":7}", 0, NULL);
    json_t *c2 = json_loads("{\"A\":4,\"B\":4,\"C\":1,\"D\":\"x\",\"E\":7}", 0, NULL);
    json_t *bad1 =
        json_loads("{\"A\":3,\"B\":4,\"C\":0,\"D\":\"y\",\"E\":7}", 0, NULL);    /* 3 not a value */
    json_t *bad2 = json_loads("{\"A\":2,\"B\":4,\"D\":\"y\",\"E\":7}", 0, NULL); /* C missing */
    json_t *bad3 =
        json_loads("{\"A\":2,\"B\":4,\"C\":0,\"D\":1,\"E\":7}", 0, NULL); /* D a number */
    assert_int_equal(training_set_add_trial(ts, p, c1, 5.0), 1);
    assert_int_equal(training_set_add_trial(ts, p, c2, 3.0), 1);
    assert_int_equal(training_set_add_trial(ts, p, c1, 7.0), 1); /* higher: the 5.0 stays */
    assert_int_equal(training_set_add_trial(ts, p, bad1, 1.0), 0);
    assert_int_equal(training_set_add_trial(ts, p, bad2, 1.0), 0);
    assert_int_equal(training_set_add_trial(ts, p, bad3, 1.0), 0);
    assert_int_equal(training_set_add_trial(ts, p, c1, NAN), 0);
    assert_int_equal(training_set_add_trial(ts, p, c1, 0.0), 0);
    assert_int_equal(training_set_add_trial(ts, 7, c1, 1.0), 0);
    assert_int_equal(training_set_num_trials(ts, p), 2);
    double t;
    const int *r = training_set_trial(ts, p, 0, &t);
    assert_true(t == 3.0 && r[0] == 2 && r[2] == 1 && r[3] == 0);
    r = training_set_trial(ts, p, 1, &t);
    assert_true(t == 5.0 && r[0] == 1 && r[1] == 2);
    assert_int_equal(training_set_add_trial(ts, p, c1, 2.0), 1); /* lower: moves to the top */
    r = training_set_trial(ts, p, 0, &t);
    assert_true(t == 2.0 && r[0] == 1);
    int idx[5] = {2, 2, 1, 0, 0};
    assert_int_equal(training_set_find_trial(ts, p, idx, &t), 1);
    assert_true(t == 3.0);
    json_t *back = training_set_config_json(ts, idx);
    assert_true(json_equal(back, c2));
    /* problems are checked */
    json_t *np1 = json_loads("{\"M\":64}", 0, NULL),
           *np2 = json_loads("{\"M\":64,\"N\":\"x\"}", 0, NULL);
    json_t *np3 = json_loads("{\"M\":64,\"N\":1,\"Q\":2}", 0, NULL);
    assert_int_equal(training_set_add_problem(ts, np1, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_int_equal(training_set_add_problem(ts, np2, &err), -1);
    assert_int_equal(training_set_add_problem(ts, np3, &err), -1);
    assert_non_null(strstr(err.message, "Q"));
    json_t *dup = json_loads("[{\"name\":\"A\",\"values\":[1,1]}]", 0, NULL),
           *args = mt_arg_names();
    assert_null(training_set_new(dup, args, &err));
    assert_int_equal(err.code, KT_ERR_BAD_SPACE);
    json_decref(dup);
    json_decref(args);
    json_decref(np1);
    json_decref(np2);
    json_decref(np3);
    json_decref(back);
    json_decref(a);
    json_decref(b);
    json_decref(c1);
    json_decref(c2);
    json_decref(bad1);
    json_decref(bad2);
    json_decref(bad3);
    training_set_free(ts);
}

static const int shapes[][2] = {{4, 4},    {8, 16},   {16, 8},    {32, 32},  {64, 8},  {128, 64},
                                {256, 16}, {16, 256}, {512, 512}, {1024, 4}, {24, 24}, {48, 96}};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void split_is_deterministic(void **state)
{
    (void)state;
    training_set *fw = mt_new(), *bw = mt_new();
    kt_error err;
    for (int i = 0; i < N_SHAPES; i++) {
        mt_add_problem(fw, shapes[i][0], shapes[i][1]);
        mt_add_problem(bw, shapes[N_SHAPES - 1 - i][0], shapes[N_SHAPES - 1 - i][1]);
    }
    training_set *tr1, *te1, *tr2, *te2, *tr3, *te3;
    assert_int_equal(training_set_split(fw, 0.25, 7, &tr1, &te1, &err), 0);
    assert_int_equal(training_set_split(bw, 0.25, 7, &tr2, &te2, &err), 0);
    assert_int_equal(training_set_split(fw, 0.25, 8, &tr3, &te3, &err), 0);
    assert_int_equal(training_set_num_problems(te1), 3);
    assert_int_equal(training_set_num_problems(tr1), N_SHAPES - 3);
    assert_int_equal(training_set_num_problems(te2), 3);
    int differs = 0;
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int j = 0; j < 3; j++)
            found |=
                strcmp(training_set_problem_key(te1, i), training_set_problem_key(te2, j)) == 0;
        assert_true(found);
        int found3 = 0;
        for (int j = 0; j < 3; j++)
            found3 |=
                strcmp(training_set_problem_key(te1, i), training_set_problem_key(te3, j)) == 0;
        differs |= !found3;
        /* trials copied, fastest first */
        assert_int_equal(training_set_num_trials(te1, i),
                         training_set_num_trials(
                             fw, training_set_add_problem(fw, training_set_problem(te1, i), &err)));
        double t0, t1;
        training_set_trial(te1, i, 0, &t0);
        training_set_trial(te1, i, 1, &t1);
        assert_true(t0 <= t1);
    }
    assert_true(differs); /* another seed, another held-out quarter (for these shapes) */
    training_set_free(tr3);
    training_set_free(te3);
    for (int i = 0; i < training_set_num_problems(tr1); i++) {
        for (int j = 0; j < 3; j++)
            assert_string_not_equal(training_set_problem_key(tr1, i),
                                    training_set_problem_key(te1, j));
    }
    assert_int_equal(training_set_split(fw, 1.0, 7, &tr3, &te3, &err), -1);
    assert_int_equal(err.code, KT_ERR_OUT_OF_RANGE);
    training_set_free(tr1);
    training_set_free(te1);
    training_set_free(tr2);
    training_set_free(te2);
    training_set_free(fw);
    training_set_free(bw);
}

static void tokens_layout(void **state)
{
    (void)state;
    double args[3] = {96, 1024, 1}, tok[3 * 13];
    float f[14];
    assert_int_equal(problem_tokens_dim(3), 13);
    problem_tokens(args, 3, tok);
    /* token 0: one-hot at 0, log2(96)/16, 96 = 2^5 * 3: divisible by 2..32, not 64 */
    assert_true(tok[0] == 1 && tok[1] == 0 && tok[2] == 0);
    assert_true(fabs(tok[3] - log2(96.0) / 16) < 1e-12);
    for (int j = 1; j <= 5; j++)
        assert_true(tok[3 + j] == 1);
    assert_true(tok[3 + 6] == 0);
    assert_true(fabs(tok[3 + 7] - 0.5) < 1e-12); /* 96 is half-way from 64 to 128 */
    assert_true(tok[3 + 8] == 0);
    /* token 1: 1024, a power of two */
    assert_true(tok[13 + 1] == 1 && tok[13 + 3 + 8] == 1 && tok[13 + 3 + 7] == 0);
    assert_int_equal(problem_features_dim(3), 14);
    problem_features(args, 3, f);
    assert_true(fabs(f[4] - 10) < 1e-6 && f[6] == 6 && f[2] == 5);
    assert_true(fabs(f[12] - (log2(96.0) + 10)) < 1e-5 && fabs(f[13] - 10) < 1e-5);
}

/* A list argument (Kernel Tuner's problem_size) is read element by element under "name[i]". */
static void list_arguments_by_element(void **state)
{
    (void)state;
    kt_error err;
    double a[3];
    json_t *names = json_pack("[s, s, s]", "problem_size[0]", "problem_size[1]", "n");
    json_t *problem = json_pack("{s:[i, i], s:i}", "problem_size", 4096, 64, "n", 7);
    assert_int_equal(training_set_args_from(names, problem, a, &err), 0);
    assert_true(a[0] == 4096 && a[1] == 64 && a[2] == 7);
    json_decref(problem);
    /* Too short a list, an element that is not a number, a number where a list is named, too
     * long a list. */
    const char *bad[] = {
        "{\"problem_size\": [4096], \"n\": 7}", "{\"problem_size\": [4096, \"x\"], \"n\": 7}",
        "{\"problem_size\": 4096, \"n\": 7}", "{\"problem_size\": [4096, 64, 2], \"n\": 7}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        problem = json_loads(bad[i], 0, NULL);
        assert_int_equal(training_set_args_from(names, problem, a, &err), -1);
        assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
        json_decref(problem);
    }
    json_decref(names);
    names = json_pack("[s, s]", "problem_size[0]", "problem_size[x]");
    problem = json_pack("{s:[i, i]}", "problem_size", 1, 2);
    assert_int_equal(training_set_args_from(names, problem, a, &err), -1);
    json_decref(problem);
    json_decref(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_and_dedupe),
        cmocka_unit_test(split_is_deterministic),
        cmocka_unit_test(tokens_layout),
        cmocka_unit_test(list_arguments_by_element),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
