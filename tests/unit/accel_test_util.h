/* Helpers shared by the accel unit tests (tests/unit/test_accel_*.c): the shipped devices, presets
 * with their spaces, and random valid mappings. Header-only (each test is one translation unit). */
#ifndef KT_TESTS_ACCEL_TEST_UTIL_H
#define KT_TESTS_ACCEL_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_device.h"
#include "accel/accel_kernel.h"
#include "accel/accel_model.h"

#define ACCEL_DEVICES_FILE KT_SOURCE_DIR "/accel/devices.json"

/* The shipped devices ("mindmap", "mindmap-small"); fails the test when the file does not load. */
static inline accel_device *load_shipped(int *n)
{
    accel_device *devs = NULL;
    kt_error err;
    kt_error_clear(&err);
    if (accel_devices_load(ACCEL_DEVICES_FILE, &devs, n, &err) < 0)
        fail_msg("%s: %s", ACCEL_DEVICES_FILE, err.message);
    return devs;
}

static inline void parse_preset(const char *kernel, const char *preset, accel_problem *p)
{
    const accel_kernel *k = accel_kernel_find(kernel);
    assert_non_null(k);
    json_t *j = json_pack("{s:s}", "preset", preset);
    kt_error err;
    kt_error_clear(&err);
    if (accel_problem_parse(k, j, p, &err) < 0)
        fail_msg("%s %s: %s", kernel, preset, err.message);
    json_decref(j);
}

/* Table 1 of Mind Mappings. */
static const struct {
    const char *kernel, *preset;
} accel_presets[] = {{"cnn_layer", "resnet_conv3"},    {"cnn_layer", "resnet_conv4"},
                     {"cnn_layer", "inception_conv2"}, {"cnn_layer", "vgg_conv2"},
                     {"cnn_layer", "alexnet_conv2"},   {"cnn_layer", "alexnet_conv4"},
                     {"mttkrp", "mttkrp_0"},           {"mttkrp", "mttkrp_1"}};
#define N_ACCEL_PRESETS ((int)(sizeof accel_presets / sizeof accel_presets[0]))

static inline space *space_of(const accel_problem *p, const accel_device *d)
{
    kt_error err;
    kt_error_clear(&err);
    space *sp = accel_space_new(p, d, &err);
    if (!sp)
        fail_msg("accel_space_new: %s", err.message);
    return sp;
}

/* A uniformly sampled configuration that the model finds valid, within `tries` draws: 1 found (m,
 * s filled), 0 none. *drawn counts the draws. */
static inline int random_valid(const accel_problem *p, const accel_device *d, const space *sp,
                               kt_rng *rng, int tries, accel_mapping *m, accel_stats *s,
                               long long *drawn)
{
    for (int i = 0; i < tries; i++) {
        config_id id = space_sample(sp, rng);
        kt_error err;
        (*drawn)++;
        if (accel_mapping_decode(p, sp, id, m, &err) < 0)
            fail_msg("decode: %s", err.message);
        if (accel_evaluate(d, p, m, s))
            return 1;
    }
    return 0;
}

#endif
