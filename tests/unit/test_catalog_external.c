/* Unit tests of catalog/catalog_external.c (issue 27): an external target from an inline space —
 * the key (kernel_version or the space's hash, class, toolchain "external", canonical problem), the
 * space built with the problem's arguments as constants, the default; every error a 400 naming its
 * JSON path; the key alone (GET /v1/best); reopening from the stored definition gives the same
 * target, and a catalog key goes on to catalog_reopen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "catalog/catalog.h"
#include "core/error.h"
#include "space/space.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

#define SPACE                                                                                      \
    "{\"parameters\": [{\"name\": \"BS\", \"values\": [32, 64, 128, 256]},"                        \
    " {\"name\": \"T\", \"values\": [1, 2, 4]}],"                                                  \
    " \"restrictions\": [\"BS * T <= 256\", \"n % BS == 0\"], \"default\": {\"BS\": 64, \"T\": "   \
    "1}}"

static void resolves_key_space_and_default(void **state)
{
    (void)state;
    json_t *space = parse(SPACE), *problem = parse("{\"n\": 128, \"alpha\": 0.5}");
    target t, v;
    kt_error err;
    kt_error_clear(&err);
    assert_int_equal(catalog_external_resolve("vadd", NULL, "laptop", space, problem, 1, &t, &err),
                     0);
    assert_string_equal(t.key.kernel, "vadd");
    assert_string_equal(t.key.device, "external");
    assert_string_equal(t.key.device_class, "laptop");
    assert_string_equal(t.key.toolchain, "external");
    assert_string_equal(t.key.problem_key, "{\"alpha\":0.5,\"n\":128}");
    assert_int_equal(strncmp(t.key.kernel_hash, "space:", 6), 0);
    assert_int_equal(strlen(t.key.kernel_hash), 6 + 16);
    /* BS*T <= 256 and 128 % BS == 0: BS 32 (T 1, 2, 4), 64 (1, 2, 4), 128 (1, 2). */
    assert_int_equal(space_count(t.sp), 8);
    json_t *def = catalog_default_config(NULL, &t);
    assert_non_null(def);
    assert_int_equal(json_integer_value(json_object_get(def, "BS")), 64);
    json_decref(def);
    /* The same space keys the same hash; a version keys by itself. */
    assert_int_equal(catalog_external_resolve("vadd", "v1", "laptop", space, problem, 0, &v, &err),
                     0);
    assert_string_equal(v.key.kernel_hash, "v1");
    assert_null(v.sp);
    target_release(&v);
    /* Reopening from the stored definition: the same target, the stored hash kept. */
    assert_int_equal(catalog_reopen_space(NULL, &t.key, t.problem, t.space_def, &v, &err), 0);
    assert_string_equal(v.key.kernel_hash, t.key.kernel_hash);
    assert_string_equal(v.key.problem_key, t.key.problem_key);
    assert_int_equal(space_count(v.sp), 8);
    target_release(&v);
    /* A changed problem does not reopen as the stored one. */
    json_t *other = parse("{\"n\": 256, \"alpha\": 0.5}");
    assert_int_equal(catalog_reopen_space(NULL, &t.key, other, t.space_def, &v, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    json_decref(other);
    /* The key alone. */
    assert_int_equal(catalog_external_key("vadd", "v1", "laptop", problem, &v, &err), 0);
    assert_string_equal(v.key.problem_key, "{\"alpha\":0.5,\"n\":128}");
    assert_null(v.sp);
    target_release(&v);
    target_release(&t);
    json_decref(space);
    json_decref(problem);
}

/* Each bad request is refused with the code and a message that starts with prefix. */
static void expect_error(const char *space_text, const char *problem_text, const char *version,
                         const char *klass, kt_code code, const char *prefix)
{
    json_t *space = space_text ? parse(space_text) : NULL;
    json_t *problem = problem_text ? parse(problem_text) : NULL;
    target t;
    kt_error err;
    kt_error_clear(&err);
    int rc = catalog_external_resolve("k", version, klass, space, problem, 1, &t, &err);
    if (rc != -1 || err.code != code || strncmp(err.message, prefix, strlen(prefix)) != 0)
        fail_msg("%s: rc %d code %d message '%s', wanted '%s'", space_text ? space_text : "(none)",
                 rc, (int)err.code, err.message, prefix);
    json_decref(space);
    json_decref(problem);
}

static void errors_name_the_path(void **state)
{
    (void)state;
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}], \"restrictions\":"
                 " [\"B > 0\", \"B > 0 && B < 2\"]}",
                 NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.restrictions[1]: unexpected '&'");
    expect_error(
        "{\"parameters\": [{\"name\": \"B\", \"values\": [1]}], \"restrictions\": [\"X > 1\"]}",
        NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.restrictions[0]:");
    expect_error("{\"parameters\": [{\"name\": \"in\", \"values\": [1]}]}", NULL, NULL, "c",
                 KT_ERR_BAD_SPACE, "space.parameters[0].name:");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2, 1]}]}", NULL, NULL, "c",
                 KT_ERR_BAD_SPACE, "space.parameters[0].values[2]: repeats values[0]");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [[1]]}]}", NULL, NULL, "c",
                 KT_ERR_BAD_SPACE, "space.parameters[0].values[0]:");
    expect_error(
        "{\"parameters\": [{\"name\": \"B\", \"values\": [1]}, {\"name\": \"B\", \"values\":"
        " [2]}]}",
        NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.parameters[1].name: 'B' is listed twice");
    expect_error("{\"parameters\": [{\"name\": \"n\", \"values\": [1]}]}", "{\"n\": 4}", NULL, "c",
                 KT_ERR_BAD_SPACE, "space.parameters[0].name: 'n' is also a problem argument");
    expect_error(
        "{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}], \"default\": {\"B\": 3}}", NULL,
        NULL, "c", KT_ERR_BAD_SPACE, "space.default:");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1]}], \"colour\": 1}", NULL,
                 NULL, "c", KT_ERR_BAD_SPACE, "space: unknown field 'colour'");
    expect_error("{\"parameters\": []}", NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.parameters:");
    expect_error(NULL, NULL, NULL, "c", KT_ERR_MISSING_FIELD, "field 'space' is required");
    expect_error(SPACE, "{\"n\": \"big\"}", NULL, "c", KT_ERR_BAD_PROBLEM,
                 "problem.n: must be a number");
    expect_error(SPACE, "{\"n\": 8}", "bad version!", "c", KT_ERR_OUT_OF_RANGE,
                 "field 'kernel_version'");
    expect_error(SPACE, "{\"n\": 8}", NULL, NULL, KT_ERR_MISSING_FIELD, "field 'device_class'");
    expect_error(SPACE, "{\"n\": 8}", NULL, "tab\there", KT_ERR_OUT_OF_RANGE,
                 "field 'device_class'");
}

/* An imported Kernel Tuner cache (issue 27): a list problem argument (problem_size), which
 * restrictions do not see, and the explicit list of configurations instead of restrictions. */
static void problem_size_and_configurations(void **state)
{
    (void)state;
    json_t *space = parse("{\"parameters\": [{\"name\": \"B\", \"values\": [16, 32, 64]},"
                          " {\"name\": \"T\", \"values\": [1, 2]}],"
                          " \"configurations\": [[16, 1], [64, 2], [16, 1]]}");
    json_t *problem = parse("{\"problem_size\": [4096, 2048], \"n\": 8}");
    target t, v;
    kt_error err;
    kt_error_clear(&err);
    assert_int_equal(catalog_external_resolve("conv", NULL, "gpu", space, problem, 1, &t, &err), 0);
    assert_string_equal(t.key.problem_key, "{\"n\":8,\"problem_size\":[4096,2048]}");
    assert_int_equal(space_count(t.sp), 2); /* the duplicate is ignored */
    config_id id;
    json_t *in = parse("{\"B\": 64, \"T\": 2}"), *out = parse("{\"B\": 32, \"T\": 1}");
    assert_int_equal(space_config_from_json(t.sp, in, &id, &err), 0);
    assert_int_equal(space_config_from_json(t.sp, out, &id, &err), -1);
    /* Reopened from the stored definition: the same list. */
    assert_int_equal(catalog_reopen_space(NULL, &t.key, t.problem, t.space_def, &v, &err), 0);
    assert_int_equal(space_count(v.sp), 2);
    target_release(&v);
    /* The list is part of the space's hash. */
    json_t *grid = parse("{\"parameters\": [{\"name\": \"B\", \"values\": [16, 32, 64]},"
                         " {\"name\": \"T\", \"values\": [1, 2]}]}");
    assert_int_equal(catalog_external_resolve("conv", NULL, "gpu", grid, problem, 1, &v, &err), 0);
    assert_int_equal(space_count(v.sp), 6);
    assert_string_not_equal(v.key.kernel_hash, t.key.kernel_hash);
    target_release(&v);
    target_release(&t);
    json_decref(grid);
    json_decref(in);
    json_decref(out);
    json_decref(space);
    json_decref(problem);

    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}], \"restrictions\":"
                 " [\"B > 0\"], \"configurations\": [[1]]}",
                 NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.configurations: an explicit list");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}],"
                 " \"configurations\": [[1], [1, 2]]}",
                 NULL, NULL, "c", KT_ERR_BAD_SPACE,
                 "space.configurations[1]: must be an array of 1");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}],"
                 " \"configurations\": [[1], [3]]}",
                 NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.configurations:");
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}],"
                 " \"configurations\": []}",
                 NULL, NULL, "c", KT_ERR_BAD_SPACE, "space.configurations: must be an array");
    /* A list argument is no constant of the restrictions; its members are numbers. */
    expect_error("{\"parameters\": [{\"name\": \"B\", \"values\": [1, 2]}],"
                 " \"restrictions\": [\"B < problem_size\"]}",
                 "{\"problem_size\": [4]}", NULL, "c", KT_ERR_BAD_SPACE, "space.restrictions[0]:");
    expect_error(SPACE, "{\"n\": 8, \"problem_size\": [1, \"x\"]}", NULL, "c", KT_ERR_BAD_PROBLEM,
                 "problem.problem_size: a list must hold 1 to 8 numbers");
    expect_error(SPACE, "{\"n\": 8, \"problem_size\": []}", NULL, "c", KT_ERR_BAD_PROBLEM,
                 "problem.problem_size: a list");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resolves_key_space_and_default),
        cmocka_unit_test(errors_name_the_path),
        cmocka_unit_test(problem_size_and_configurations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
