/* Unit tests of neural/nn_train: a small CNN trained on the shipped Fashion-MNIST copy (1000
 * training, 500 test images) for 5 epochs (lr 0.1, batch 32) reaches a test accuracy well above
 * chance (10%) and its loss falls; the same seed gives the same result; a grouped variant trains
 * too; bad options and data are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "neural/nn_train.h"

#define SMALL_DIR KT_SOURCE_DIR "/networks/data/fashion-mnist-small"

static const char *NET =
    "{\"name\": \"small\", \"input\": [1, 28, 28], \"classes\": 10, \"layers\": ["
    "{\"type\": \"conv\", \"name\": \"c1\", \"out\": 16}, {\"type\": \"batchnorm\"},"
    "{\"type\": \"relu\"}, {\"type\": \"maxpool\"},"
    "{\"type\": \"conv\", \"name\": \"c2\", \"out\": 32}, {\"type\": \"batchnorm\"},"
    "{\"type\": \"relu\"}, {\"type\": \"maxpool\"},"
    "{\"type\": \"global_avgpool\"}, {\"type\": \"flatten\"}, {\"type\": \"linear\", \"out\": "
    "10}]}";

typedef struct progress_log {
    int calls;
    double first_loss, last_loss, last_acc;
} progress_log;

static void on_progress(void *arg, int epoch, double loss, double acc)
{
    progress_log *p = arg;
    p->calls++;
    if (epoch == 1)
        p->first_loss = loss;
    p->last_loss = loss;
    p->last_acc = acc;
}

static void trains_above_chance(void **state)
{
    (void)state;
    kt_error err;
    json_error_t je;
    json_t *doc = json_loads(NET, 0, &je);
    nn_network *net = nn_network_parse(doc, &err);
    json_decref(doc);
    assert_non_null(net);
    nn_dataset_paths paths = {"/nonexistent", SMALL_DIR};
    nn_dataset train, test;
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "train", 0, &paths, &train, &err), 0);
    assert_int_equal(nn_dataset_load("fashion-mnist-small", "test", 0, &paths, &test, &err), 0);
    nn_train_opts o = nn_train_default_opts();
    assert_int_equal(o.epochs, 3);
    o.batch = 32;
    o.epochs = 5;
    o.lr = 0.1;
    progress_log log = {0, 0, 0, 0};
    o.progress = on_progress;
    o.progress_arg = &log;
    nn_train_result r, r2, rg;
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r, &err), 0);
    print_message("dense: loss %.3f, test accuracy %.3f, %lld params, %.1f s\n", r.train_loss,
                  r.test_accuracy, r.params, r.seconds);
    assert_int_equal(log.calls, 5);
    assert_true(log.last_loss < log.first_loss);
    assert_true(log.last_acc == r.test_accuracy);
    assert_true(r.test_accuracy > 0.5);
    assert_int_equal(r.params, 16 * 9 + 32 + 16 * 32 * 9 + 64 + 32 * 10 + 10);
    /* a grouped c2 (groups 4) trains too, with fewer parameters */
    nn_transform per[2] = {{1, 1, 0}, {4, 1, 0}};
    o.progress = NULL;
    o.epochs = 2;
    assert_int_equal(nn_train(net, per, &train, &test, &o, &rg, &err), 0);
    print_message("groups 4: loss %.3f, test accuracy %.3f, %lld params\n", rg.train_loss,
                  rg.test_accuracy, rg.params);
    assert_true(rg.test_accuracy > 0.3);
    assert_true(rg.params < r.params);
    /* same seed, same result (1 epoch on a part of the set) */
    train.n = 256;
    o.epochs = 1;
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r, &err), 0);
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r2, &err), 0);
    assert_true(r.train_loss == r2.train_loss && r.test_accuracy == r2.test_accuracy);
    o.seed = 2;
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r2, &err), 0);
    assert_true(r.train_loss != r2.train_loss);
    /* refused */
    o.batch = 1;
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    o.batch = 32;
    test.classes = 3;
    assert_int_equal(nn_train(net, NULL, &train, &test, &o, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    test.classes = 10;
    per[1].groups = 3;
    assert_int_equal(nn_train(net, per, &train, &test, &o, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    train.n = 1000;
    nn_dataset_release(&train);
    nn_dataset_release(&test);
    nn_network_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trains_above_chance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
