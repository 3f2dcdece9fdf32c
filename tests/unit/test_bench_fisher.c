/* Unit tests of `ktune bench --fisher` (bench/fisher/bench_fisher.h): Spearman's rank correlation
 * on hand-computed cases (ties included); the argument parser's defaults and refusals; a small run
 * (the shipped fashion-mnist-small's first 500 training images, vgg_fm, 1 epoch, the original and
 * one accepted and one rejected variant trained) whose report has the documented structure with
 * finite numbers in range, an original that beats chance, and verdicts that agree with the ratios
 * and the threshold; the structure check passes the run's result (as --from-json reprints it) and
 * refuses a broken copy; the table prints; the statistics (Spearman's p, the random check of
 * the same acceptance rate) on a hand-made result, and --replay pooling two training seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "bench/fisher/bench_fisher.h"

#define NETWORKS KT_SOURCE_DIR "/networks"

static void spearman(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5}, up[] = {10, 20, 30, 40, 50}, down[] = {5, 4, 3, 2, 1};
    assert_float_equal(bench_fisher_spearman(x, up, 5), 1.0, 1e-12);
    assert_float_equal(bench_fisher_spearman(x, down, 5), -1.0, 1e-12);
    /* d = (0, 0, 1, -1, 0): 1 - 6*2/(5*24) = 0.9 */
    double y[] = {1, 2, 4, 3, 5};
    assert_float_equal(bench_fisher_spearman(x, y, 5), 0.9, 1e-12);
    /* ties: ranks of t are 1.5, 1.5, 3, 4 -> Pearson of ranks with 1..4 = 0.9486832980505138 */
    double a[] = {1, 2, 3, 4}, t[] = {7, 7, 8, 9};
    assert_float_equal(bench_fisher_spearman(a, t, 4), 0.9486832980505138, 1e-12);
    double c[] = {3, 3, 3};
    assert_true(isnan(bench_fisher_spearman(x, c, 3)));
    assert_true(isnan(bench_fisher_spearman(x, up, 1)));
}

static int parse(int argc, char **argv, bench_fisher_options *o, char *msg)
{
    FILE *null = fopen("/dev/null", "w");
    int rc = bench_args_parse(&bench_fisher_args, argc, argv, o, msg, 256, null);
    fclose(null);
    return rc;
}

static void arguments(void **state)
{
    (void)state;
    bench_fisher_options o;
    char msg[256];
    char *plain[] = {"bench", "--fisher"};
    assert_true(bench_args_wanted(&bench_fisher_args, 2, plain));
    assert_false(bench_args_wanted(&bench_fisher_args, 1, plain));
    assert_int_equal(parse(2, plain, &o, msg), 0);
    assert_string_equal(o.data, "fashion-mnist");
    assert_int_equal(o.epochs, 3);
    assert_int_equal(o.train_images, 0);
    assert_float_equal(o.threshold, 1.0, 0);
    assert_int_equal(o.train_accepted, 3);
    assert_int_equal(o.train_rejected, 3);
    char *full[] = {"bench",          "--fisher",  "--network",   "vgg_fm",
                    "--network",      "resnet_fm", "--data",      "fashion-mnist-small",
                    "--epochs",       "2",         "--threshold", "0.9",
                    "--train-images", "500",       "--seed",      "7"};
    assert_int_equal(parse(16, full, &o, msg), 0);
    assert_int_equal(o.n_names, 2);
    assert_string_equal(o.names[1], "resnet_fm");
    assert_int_equal(o.epochs, 2);
    assert_int_equal(o.train_images, 500);
    assert_float_equal(o.threshold, 0.9, 0);
    assert_int_equal((int)o.seed, 7);
    char *bad_data[] = {"bench", "--fisher", "--data", "mnist"};
    assert_int_equal(parse(4, bad_data, &o, msg), -1);
    assert_non_null(strstr(msg, "--data"));
    char *bad_epochs[] = {"bench", "--fisher", "--epochs", "0"};
    assert_int_equal(parse(4, bad_epochs, &o, msg), -1);
    char *bad_thr[] = {"bench", "--fisher", "--threshold", "-1"};
    assert_int_equal(parse(4, bad_thr, &o, msg), -1);
    char *unknown[] = {"bench", "--fisher", "--spaces", "x"};
    assert_int_equal(parse(4, unknown, &o, msg), -1);
    assert_non_null(strstr(msg, "not an option of --fisher"));
    char *missing[] = {"bench", "--fisher", "--epochs"};
    assert_int_equal(parse(3, missing, &o, msg), -1);
    char *help[] = {"bench", "--fisher", "--help"};
    assert_int_equal(parse(3, help, &o, msg), 1);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    double x = json_number_value(v);
    assert_true(isfinite(x));
    return x;
}

static void small_run(void **state)
{
    (void)state;
    bench_fisher_options o;
    char msg[256];
    char *argv[] = {"bench",
                    "--fisher",
                    "--networks",
                    NETWORKS,
                    "--network",
                    "vgg_fm",
                    "--data",
                    "fashion-mnist-small",
                    "--epochs",
                    "1",
                    "--train-accepted",
                    "1",
                    "--train-rejected",
                    "1",
                    "--fisher-batch",
                    "16",
                    "--train-images",
                    "500",
                    "--batch",
                    "32"};
    assert_int_equal(parse(20, argv, &o, msg), 0);
    kt_error err;
    json_t *res = bench_fisher_run(&o, NULL, NULL, &err);
    if (!res)
        fail_msg("bench_fisher_run: %s", err.message);
    assert_int_equal(bench_fisher_check(res, &err), 0);
    assert_string_equal(json_string_value(json_object_get(res, "mode")), "fisher");
    assert_int_equal((int)num(res, "train_images"), 500);
    assert_int_equal((int)num(res, "test_images"), 500);
    const json_t *nets = json_object_get(res, "networks");
    assert_int_equal(json_array_size(nets), 1);
    const json_t *net = json_array_get(nets, 0);
    assert_string_equal(json_string_value(json_object_get(net, "name")), "vgg_fm");
    const json_t *vs = json_object_get(net, "variants");
    assert_true(json_array_size(vs) > 20); /* single layers of 6 convs and combinations */
    int trained = 0, acc = 0, rej = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(vs, i, v)
    {
        double ratio = num(v, "fisher_ratio");
        assert_true(ratio >= 0);
        assert_int_equal(json_is_true(json_object_get(v, "accepted")), ratio >= 1.0);
        double pr = num(v, "params_ratio");
        assert_true(pr > 0 && (i == 0 ? pr == 1.0 : pr < 1.0)); /* every change removes weights */
        if (!json_is_true(json_object_get(v, "trained")))
            continue;
        trained++;
        double a = num(v, "test_accuracy");
        assert_true(a >= 0 && a <= 1);
        if (i == 0) {
            assert_true(a > 0.2); /* chance is 0.1 */
            assert_float_equal(num(v, "accuracy_diff"), 0, 0);
            assert_float_equal(ratio, 1.0, 1e-12);
        } else if (json_is_true(json_object_get(v, "accepted"))) {
            acc++;
        } else {
            rej++;
        }
    }
    assert_int_equal(trained, 3);
    assert_int_equal(acc, 1);
    assert_int_equal(rej, 1);
    const json_t *tm = json_object_get(res, "timing");
    assert_true(num(tm, "fisher_seconds") > 0);
    assert_true(num(tm, "train_seconds") > num(tm, "fisher_seconds"));
    const json_t *sp = json_object_get(res, "spearman");
    assert_int_equal((int)num(sp, "n"), 2); /* the candidates trained, not the original */
    assert_non_null(json_object_get(res, "random_check"));

    /* What --from-json reads back passes the check; a broken copy does not. */
    char *text = json_dumps(res, JSON_COMPACT);
    json_error_t je;
    json_t *back = json_loads(text, 0, &je);
    assert_non_null(back);
    assert_int_equal(bench_fisher_check(back, &err), 0);
    json_object_set_new(json_array_get(vs, 0), "test_accuracy", json_real(1.5));
    assert_int_equal(bench_fisher_check(res, &err), -1);
    assert_non_null(strstr(err.message, "test_accuracy"));
    json_object_set_new(back, "mode", json_string("predict"));
    assert_int_equal(bench_fisher_check(back, &err), -1);

    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    json_object_set_new(back, "mode", json_string("fisher"));
    bench_fisher_print_table(back, mem);
    fclose(mem);
    assert_non_null(strstr(buf, "vgg_fm"));
    assert_non_null(strstr(buf, "original"));
    assert_non_null(strstr(buf, "Spearman"));
    assert_non_null(strstr(buf, "training / check"));
    free(buf);
    free(text);
    json_decref(back);
    json_decref(res);
}

/* A network's result by hand: the original and six candidates, one training seed (seed), the
 * accuracy differences diffs, Fisher ratios 0.35..1.6 (the last three accepted). */
static json_t *hand_result(int seed, const double *diffs)
{
    json_t *vs = json_array();
    for (int i = 0; i < 7; i++) {
        double ratio = i == 0 ? 1.0 : 0.1 + 0.25 * i, acc = 0.8 + (i ? diffs[i - 1] : 0);
        char desc[32];
        snprintf(desc, sizeof desc, i ? "conv%d: group g=2" : "original", i);
        json_array_append_new(
            vs, json_pack("{s:s,s:[],s:i,s:f,s:f,s:f,s:b,s:f,s:b,s:f,s:f,s:f,s:f,s:[f],s:[f]}",
                          "description", desc, "changes", "params", 1000 - i, "params_ratio",
                          1.0 - i / 1000.0, "fisher", ratio * 2, "fisher_ratio", ratio, "accepted",
                          i > 0 && ratio >= 1, "fisher_seconds", 0.1, "trained", 1, "test_accuracy",
                          acc, "accuracy_diff", acc - 0.8, "train_loss", 0.5, "train_seconds", 10.0,
                          "accuracies", acc, "accuracy_diffs", acc - 0.8));
    }
    json_t *net =
        json_pack("{s:s,s:s,s:i,s:i,s:f,s:i,s:i,s:i,s:n,s:[i],s:o}", "name", "hand", "hash", "0",
                  "convs", 6, "params", 1000, "fisher", 2.0, "candidates", 6, "accepted", 3,
                  "trained", 7, "spearman", "train_seeds", seed, "variants", vs);
    return json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:f,s:f,s:i,s:i,s:i,s:i,s:[i],s:[o]}", "mode",
                     "fisher", "data", "fashion-mnist", "train_images", 100, "test_images", 100,
                     "epochs", 1, "batch", 64, "lr", 0.05, "threshold", 1.0, "fisher_batch", 64,
                     "seed", 1, "fisher_seeds", 1, "seeds", 1, "train_seeds", seed, "networks",
                     net);
}

/* The statistics on a hand-made result: Fisher's three accepted are the three best of six, so
 * one random draw of three in C(6,3) = 20 is as good (p about 0.05); the random check's mean is
 * the candidates' mean; Spearman 1. Two training seeds pooled by --replay: the accuracies
 * appended, the means pooled; another --seed's Fisher scores refused. */
static void statistics_and_replay(void **state)
{
    (void)state;
    kt_error err;
    double d1[] = {-0.06, -0.04, -0.02, 0.00, 0.01, 0.02},
           d2[] = {-0.05, -0.05, -0.01, 0.01, 0.0, 0.03};
    json_t *a = hand_result(1, d1), *b = hand_result(2, d2);
    assert_int_equal(bench_fisher_summarise(a, 20000, 1, &err), 0);
    assert_int_equal(bench_fisher_summarise(b, 1000, 1, &err), 0);
    assert_int_equal(bench_fisher_check(a, &err), 0);
    const json_t *rc = json_object_get(a, "random_check"), *sp = json_object_get(a, "spearman");
    assert_int_equal((int)num(rc, "accepted"), 3);
    assert_float_equal(num(rc, "fisher_accepted_mean_diff"), 0.01, 1e-12);
    assert_float_equal(num(rc, "fisher_rejected_mean_diff"), -0.04, 1e-12);
    assert_float_equal(num(rc, "random_accepted_mean_diff"), -0.015, 0.002);
    assert_float_equal(num(rc, "p_one_sided"), 0.05, 0.01);
    assert_float_equal(num(sp, "rho"), 1.0, 1e-12);
    assert_true(num(sp, "p_permutation") < 0.01); /* 1 / 720 orders as good */

    char pa[] = "/tmp/test_bench_fisher_a_XXXXXX", pb[] = "/tmp/test_bench_fisher_b_XXXXXX";
    int fa = mkstemp(pa), fb = mkstemp(pb);
    assert_true(fa >= 0 && fb >= 0);
    assert_int_equal(json_dumpfd(a, fa, 0), 0);
    assert_int_equal(json_dumpfd(b, fb, 0), 0);
    close(fa);
    close(fb);
    const char *both[] = {pa, pb};
    json_t *p = bench_fisher_replay(both, 2, 20000, &err);
    if (!p)
        fail_msg("replay: %s", err.message);
    assert_int_equal((int)num(p, "seeds"), 2);
    const json_t *v = json_array_get(
        json_object_get(json_array_get(json_object_get(p, "networks"), 0), "variants"), 6);
    assert_int_equal(json_array_size(json_object_get(v, "accuracies")), 2);
    assert_float_equal(num(v, "accuracy_diff"), 0.025, 1e-12);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(p, "random_check"), "per_seed")), 2);
    json_decref(p);
    /* the same seed twice, and another --seed's Fisher scores, are refused */
    const char *twice[] = {pa, pa};
    assert_null(bench_fisher_replay(twice, 2, 1000, &err));
    assert_non_null(strstr(err.message, "twice"));
    json_object_set_new(
        json_array_get(
            json_object_get(json_array_get(json_object_get(b, "networks"), 0), "variants"), 3),
        "fisher", json_real(9.0));
    fb = open(pb, O_WRONLY | O_TRUNC);
    assert_int_equal(json_dumpfd(b, fb, 0), 0);
    close(fb);
    assert_null(bench_fisher_replay(both, 2, 1000, &err));
    assert_non_null(strstr(err.message, "differs"));
    unlink(pa);
    unlink(pb);
    json_decref(a);
    json_decref(b);
}

static void unknown_network(void **state)
{
    (void)state;
    bench_fisher_options o;
    char msg[256];
    char *argv[] = {"bench",     "--fisher", "--networks", NETWORKS,
                    "--network", "alexnet",  "--data",     "fashion-mnist-small"};
    assert_int_equal(parse(8, argv, &o, msg), 0);
    kt_error err;
    assert_null(bench_fisher_run(&o, NULL, NULL, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "alexnet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spearman),        cmocka_unit_test(arguments),
        cmocka_unit_test(unknown_network), cmocka_unit_test(statistics_and_replay),
        cmocka_unit_test(small_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
