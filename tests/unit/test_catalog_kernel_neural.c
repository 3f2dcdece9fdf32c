/* Unit tests of the "neural" section of a kernel spec (catalog/kernel_spec_neural.c, issue 14): a
 * small spec (the kspec_test_util fixture's vadd with neural parameters G and Z) loads with its
 * transformations, every malformed section is refused naming its field, kernel_spec_space keeps
 * only the identity, kernel_spec_space_neural exactly the allowed transformations (checked config
 * by config with kernel_spec_neural_applied), buffers and FLOPs follow a configuration's neural
 * values, the derived features see the identity; and kernels/conv2d_neural/spec.json loads with
 * one space per transformation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/kernel_spec.h"
#include "space/space.h"
#include "kspec_test_util.h"

static const kspec_limits CPU_LIMITS = {{4, 32768, 1048576, 8388608, 512}};

static kernel_spec *load(const fixture *f, const char *text, char *why, size_t cap)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {&CPU_LIMITS, NULL};
    write_file(f->dir, "spec.json", text);
    return kernel_spec_load(f->dir, limits, why, cap);
}

/* NEURAL_SPEC with from replaced by to must be refused with a message holding needle. */
static void expect_refused(const fixture *f, const char *from, const char *to, const char *needle)
{
    const char *at = strstr(NEURAL_SPEC, from);
    if (!at)
        fail_msg("'%s' is not in the spec", from);
    char text[sizeof NEURAL_SPEC + 512], why[1024];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - NEURAL_SPEC), NEURAL_SPEC, to,
             at + strlen(from));
    kernel_spec *k = load(f, text, why, sizeof why);
    if (k)
        fail_msg("loaded but should not have: %s", text);
    if (!strstr(why, needle))
        fail_msg("message '%s' lacks '%s'", why, needle);
}

static void section_loads(void **state)
{
    fixture *f = *state;
    char why[1024];
    kernel_spec *k = load(f, NEURAL_SPEC, why, sizeof why);
    if (!k)
        fail_msg("%s", why);
    assert_true(kernel_spec_has_neural(k, KSPEC_CPU));
    assert_false(kernel_spec_has_neural(k, KSPEC_CUDA));
    assert_int_equal(kernel_spec_neural_count(k, KSPEC_CPU), 3);
    assert_int_equal(kernel_spec_neural_count(k, KSPEC_CUDA), 0);
    assert_string_equal(kernel_spec_neural_name(k, KSPEC_CPU, 0), "half");
    assert_string_equal(kernel_spec_neural_name(k, KSPEC_CPU, 2), "zed");
    assert_null(kernel_spec_neural_name(k, KSPEC_CPU, 3));
    assert_null(kernel_spec_neural_name(k, KSPEC_CPU, -1));
    assert_int_equal(k->n_neural, 2);
    assert_string_equal(k->neural_names[1], "Z");
    kspec_problem p;
    kt_error e;
    kt_error_clear(&e);
    json_t *prob = json_pack("{s:i}", "n", 64);
    assert_int_equal(kernel_spec_problem(k, prob, &p, &e), 0);
    assert_int_equal(p.n_neural, 2);
    assert_int_equal(p.neural[0], 1);
    assert_int_equal(p.neural[1], 0);
    assert_int_equal(p.elements[1], 256);
    assert_true(p.flops == 512.0);
    /* the derived features see the identity in place of the neural parameters */
    json_t *d = kernel_spec_derived_json(k);
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 1), "expr")),
                        "n*m//(1)");
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 2), "expr")),
                        "2*n*m//(1) + (0)");
    json_decref(d);
    /* a configuration's neural values size the buffers and the FLOPs */
    space *sp = kernel_spec_space_neural(k, KSPEC_CPU, &p, &CPU_LIMITS, 7u, &e);
    assert_non_null(sp);
    json_t *cfg = json_pack("{s:i, s:i, s:i}", "U", 2, "G", 8, "Z", 1);
    config_id id;
    assert_int_equal(space_config_from_json(sp, cfg, &id, &e), 0);
    assert_int_equal(kernel_spec_problem_neural(k, KSPEC_CPU, sp, id, &p, &e), 0);
    assert_int_equal(p.neural[0], 8);
    assert_int_equal(p.neural[1], 1);
    assert_int_equal(p.elements[0], 256);
    assert_int_equal(p.elements[1], 32);
    assert_true(p.flops == 65.0);
    unsigned mask = 99;
    assert_int_equal(kernel_spec_neural_applied(k, KSPEC_CPU, sp, id, &mask, &e), 0);
    assert_int_equal(mask, 6u); /* thin + zed */
    assert_int_equal(kernel_spec_neural_applied(k, KSPEC_CPU, sp, space_count(sp), &mask, &e), -1);
    assert_int_equal(e.code, KT_ERR_INTERNAL);
    json_decref(cfg);
    json_decref(prob);
    space_free(sp);
    kernel_spec_free(k);
}

/* Every configuration of the space for allow applies only allowed transformations, and one at
 * least unless it is the identity; the count of each kind is returned in seen (by mask). */
static uint64_t check_space(const kernel_spec *k, const kspec_problem *p, unsigned allow,
                            unsigned *seen_masks)
{
    kt_error e;
    kt_error_clear(&e);
    space *sp = allow ? kernel_spec_space_neural(k, KSPEC_CPU, p, &CPU_LIMITS, allow, &e)
                      : kernel_spec_space(k, KSPEC_CPU, p, &CPU_LIMITS, &e);
    if (!sp)
        fail_msg("space for mask %u: %s", allow, e.message);
    *seen_masks = 0;
    for (config_id id = 0; id < space_count(sp); id++) {
        unsigned mask;
        kspec_problem q = *p;
        assert_int_equal(kernel_spec_neural_applied(k, KSPEC_CPU, sp, id, &mask, &e), 0);
        assert_int_equal(kernel_spec_problem_neural(k, KSPEC_CPU, sp, id, &q, &e), 0);
        int identity = 1;
        for (int j = 0; j < k->n_neural; j++)
            identity &= q.neural[j] == k->neural_identity[j];
        if ((mask & ~allow) != 0 || (mask == 0) != identity)
            fail_msg("mask %u: configuration %llu applies %u (identity %d)", allow,
                     (unsigned long long)id, mask, identity);
        *seen_masks |= 1u << mask;
    }
    uint64_t n = space_count(sp);
    space_free(sp);
    return n;
}

static void space_follows_the_mask(void **state)
{
    fixture *f = *state;
    char why[1024];
    kernel_spec *k = load(f, NEURAL_SPEC, why, sizeof why);
    if (!k)
        fail_msg("%s", why);
    kspec_problem p;
    kt_error e;
    kt_error_clear(&e);
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &e), 0);
    unsigned seen;
    /* plain: the identity only (3 values of U) */
    assert_int_equal(check_space(k, &p, 0, &seen), 3);
    assert_int_equal(seen, 1u << 0);
    /* bits past the transformations are ignored */
    assert_int_equal(check_space(k, &p, 1u << 5, &seen), 3);
    /* half: G 1 or 2, Z 0 */
    assert_int_equal(check_space(k, &p, 1u, &seen), 6);
    assert_int_equal(seen, (1u << 0) | (1u << 1));
    /* zed alone: (1, 1) */
    assert_int_equal(check_space(k, &p, 4u, &seen), 6);
    assert_int_equal(seen, (1u << 0) | (1u << 4));
    /* all: G 1, 2, 4 × Z 0, 1 and G 8 with Z 1 (restriction) = 7 neural points */
    assert_int_equal(check_space(k, &p, 7u, &seen), 21);
    assert_int_equal(seen, (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6));
    kernel_spec_free(k);
}

static void malformed_sections_are_refused(void **state)
{
    fixture *f = *state;
    expect_refused(f, "\"neural\": {", "\"neural\": {\"extra\": 1, ",
                   "variants.cpu.neural.extra: unknown field");
    expect_refused(f, "\"parameters\": [\"G\", \"Z\"]", "\"parameters\": \"G\"",
                   "neural.parameters: must be an array");
    expect_refused(f, "\"parameters\": [\"G\", \"Z\"]", "\"parameters\": [\"G\", \"G\"]",
                   "lists 'G' twice");
    expect_refused(f, "\"parameters\": [\"G\", \"Z\"], \"identity\": {\"G\": 1, \"Z\": 0}",
                   "\"parameters\": [\"G\", \"n\"], \"identity\": {\"G\": 1, \"n\": 0}",
                   "'n' is a problem argument");
    expect_refused(f, "\"parameters\": [\"G\", \"Z\"], \"identity\": {\"G\": 1, \"Z\": 0}",
                   "\"parameters\": [\"G\", \"Z\", \"Q\"], \"identity\": {\"G\": 1, \"Z\": 0, "
                   "\"Q\": 0}",
                   "'Q' is not a parameter of the variant");
    expect_refused(f, "\"identity\": {\"G\": 1, \"Z\": 0}", "\"identity\": {\"G\": 3, \"Z\": 0}",
                   "identity.G: 3 is not one of the parameter's values");
    expect_refused(f, "\"identity\": {\"G\": 1, \"Z\": 0}", "\"identity\": {\"G\": 1}",
                   "identity: must be an object giving every neural parameter");
    expect_refused(f, "\"identity\": {\"G\": 1, \"Z\": 0}", "\"identity\": {\"G\": 1, \"Y\": 0}",
                   "identity.Z: missing");
    expect_refused(f, "{\"name\": \"thin\"", "{\"name\": \"half\"", "name: 'half' is listed twice");
    expect_refused(f, "\"when\": \"G >= 4\"", "\"when\": \"G >= 1\"",
                   "holds (or fails) for the identity");
    expect_refused(f, "\"when\": \"G >= 4\"", "\"when\": \"U >= 4\"", "transformations[1].when");
    expect_refused(f, "\"when\": \"G >= 4\"", "\"when\": 4", "must be an expression");
    expect_refused(f, "{\"name\": \"half\", \"when\": \"G == 2\"}", "{\"name\": \"half\"}",
                   "transformations[0].when: missing");
    expect_refused(f, "\"transformations\": [", "\"transformations\": [], \"x\": [",
                   "neural.x: unknown field");
    /* buffers see the neural parameters only when a section names them */
    expect_refused(f, "\"neural\": {", "\"no_neural\": {", "unknown name 'G'");
}

/* kernels/conv2d_neural: the plain space is conv2d's (identity only), each transformation alone
 * gives configurations applying exactly it. */
static void conv2d_neural_spec_loads(void **state)
{
    (void)state;
    const kspec_limits *limits[KSPEC_N_KINDS] = {&CPU_LIMITS, NULL};
    char why[1024], dir[1024];
    snprintf(dir, sizeof dir, "%s/kernels/conv2d_neural", KT_SOURCE_DIR);
    kernel_spec *k = kernel_spec_load(dir, limits, why, sizeof why);
    if (!k)
        fail_msg("%s", why);
    assert_int_equal(kernel_spec_neural_count(k, KSPEC_CPU), 5);
    static const char *const names[] = {"group", "bottleneck", "spatial_group", "unroll_group",
                                        "split_group"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(kernel_spec_neural_name(k, KSPEC_CPU, i), names[i]);
    kspec_problem p;
    kt_error e;
    kt_error_clear(&e);
    json_t *prob =
        json_pack("{s:i, s:i, s:i, s:i, s:i}", "C", 64, "K", 32, "H", 10, "W", 10, "N", 1);
    assert_int_equal(kernel_spec_problem(k, prob, &p, &e), 0);
    space *plain = kernel_spec_space(k, KSPEC_CPU, &p, &CPU_LIMITS, &e);
    assert_non_null(plain);
    uint64_t base = space_count(plain);
    assert_true(base > 0);
    space_free(plain);
    for (int i = 0; i < 5; i++) {
        space *sp = kernel_spec_space_neural(k, KSPEC_CPU, &p, &CPU_LIMITS, 1u << i, &e);
        assert_non_null(sp);
        uint64_t with = 0;
        for (config_id id = 0; id < space_count(sp); id++) {
            unsigned mask;
            assert_int_equal(kernel_spec_neural_applied(k, KSPEC_CPU, sp, id, &mask, &e), 0);
            assert_true(mask == 0 || mask == 1u << i);
            with += mask != 0;
        }
        assert_int_equal(space_count(sp) - with, base);
        printf("  conv2d_neural C=64 K=32 10x10: %-13s %llu configurations (+ %llu identity)\n",
               names[i], (unsigned long long)with, (unsigned long long)base);
        assert_true(with > 0);
        space_free(sp);
    }
    json_decref(prob);
    kernel_spec_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(section_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(space_follows_the_mask, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_sections_are_refused, setup, teardown),
        cmocka_unit_test(conv2d_neural_spec_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
