/* Unit tests of catalog/ over replay datasets: the catalog over datasets/ (devices, kernels,
 * resolve and its errors), bad files and folders, duplicates across folders, and every shared
 * gpu-spaces file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "core/file.h"
#include "core/log.h"
#include "replay_test_util.h"
#include "skip_test_util.h"

static void catalog_finds_three_devices(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    assert_int_equal(catalog_num_devices(c), 3);
    json_t *devs = catalog_devices_json(c);
    const char *names[] = {CONV, "replay:gemm_clblast-RTX_2080_Ti", PNPOLY};
    /* the gemm dataset names its kernel (issue 31): clblast_gemm, not the cpu catalog's gemm */
    const char *kernels[] = {"convolution", "clblast_gemm", "pnpoly"};
    for (int i = 0; i < 3; i++) {
        json_t *d = find_by(devs, "name", names[i]);
        assert_non_null(d);
        assert_string_equal(json_string_value(json_object_get(d, "kind")), "replay");
        assert_string_equal(json_string_value(json_object_get(d, "class")), names[i]);
        assert_string_equal(json_string_value(json_object_get(d, "toolchain")), "recorded");
        assert_true(json_is_true(json_object_get(d, "available")));
        assert_string_equal(json_string_value(json_array_get(json_object_get(d, "kernels"), 0)),
                            kernels[i]);
    }
    json_t *desc = json_object_get(find_by(devs, "name", CONV), "description");
    assert_string_equal(json_string_value(json_object_get(desc, "gpu")), "NVIDIA RTX A4000");
    assert_string_equal(json_string_value(json_object_get(desc, "recorded_kernel")),
                        "convolution_kernel");
    assert_int_equal(json_integer_value(json_object_get(desc, "configurations")), 4362);
    assert_int_equal(json_integer_value(json_object_get(desc, "valid")), 4201);
    assert_non_null(strstr(json_string_value(json_object_get(desc, "file")), ".json.gz"));
    json_decref(devs);

    json_t *ks = catalog_kernels_json(c);
    assert_int_equal(json_array_size(ks), 3);
    json_t *conv =
        json_array_get(json_object_get(find_by(ks, "name", "convolution"), "devices"), 0);
    assert_string_equal(json_string_value(json_object_get(conv, "device")), CONV);
    char *p = json_dumps(json_object_get(conv, "problem"), JSON_COMPACT);
    assert_string_equal(p, "{\"problem_size\":[4096,4096]}");
    free(p);
    json_t *params = json_object_get(conv, "parameters");
    assert_int_equal(json_array_size(params), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(params, 0), "name")),
                        "block_size_x");
    assert_int_equal(json_array_size(json_object_get(json_array_get(params, 0), "values")), 16);
    assert_int_equal(json_array_size(json_object_get(conv, "restrictions")), 4);
    assert_int_equal(json_integer_value(json_object_get(conv, "configurations")), 4362);
    json_t *gemm =
        json_array_get(json_object_get(find_by(ks, "name", "clblast_gemm"), "devices"), 0);
    assert_int_equal(json_integer_value(json_object_get(gemm, "configurations")), 17956);
    json_decref(ks);
    catalog_free(c);
}

static void resolve_canonicalises_the_problem(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    const char *given[] = {NULL, "{}", "{\"problem_size\": [4096, 4096]}",
                           "{\"problem_size\": [4096.0, 4096]}"};
    for (int i = 0; i < 4; i++) {
        json_t *p = given[i] ? json_loads(given[i], 0, NULL) : NULL;
        target t;
        kt_error err;
        assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), 0);
        assert_string_equal(t.key.problem_key, "{\"problem_size\":[4096,4096]}");
        assert_string_equal(t.key.kernel, "convolution");
        assert_string_equal(t.key.device, CONV);
        assert_string_equal(t.key.device_class, CONV);
        assert_int_equal(strlen(t.key.kernel_hash), 16);
        /* A dataset that records no toolchain is keyed by "recorded". */
        assert_string_equal(t.key.toolchain, "recorded");
        assert_int_equal(space_count(t.sp), 4362);
        assert_true(json_is_array(json_object_get(t.problem, "problem_size")));
        target_release(&t);
        json_decref(p);
    }
    target t;
    json_t *p = json_pack("{s:f}", "problem_size", 2e7);
    assert_int_equal(catalog_resolve(c, "pnpoly", PNPOLY, p, &t, NULL), 0);
    assert_string_equal(t.key.problem_key, "{\"problem_size\":20000000}");
    target_release(&t);
    json_decref(p);
    catalog_free(c);
}

static void resolve_key_is_the_key_without_a_space(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target full, key;
    kt_error err;
    resolve_ok(c, "convolution", CONV, &full);
    assert_int_equal(catalog_resolve_key(c, "convolution", CONV, NULL, &key, &err), 0);
    assert_null(key.sp);
    assert_string_equal(key.key.problem_key, full.key.problem_key);
    assert_string_equal(key.key.kernel_hash, full.key.kernel_hash);
    assert_string_equal(key.key.device_class, full.key.device_class);
    assert_string_equal(key.key.toolchain, full.key.toolchain);
    assert_true(json_equal(key.problem, full.problem));
    target_release(&key);
    json_t *p = json_pack("{s:[ii]}", "problem_size", 1, 2);
    assert_int_equal(catalog_resolve_key(c, "convolution", CONV, p, &key, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_int_equal(catalog_resolve_key(c, "gemm", CONV, NULL, &key, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    json_decref(p);
    target_release(&full);
    catalog_free(c);
}

static void reopen_checks_the_stored_key(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target made, again;
    kt_error err;
    resolve_ok(c, "convolution", CONV, &made);
    target_key stored = made.key;
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), 0);
    assert_non_null(again.sp);
    assert_string_equal(again.key.problem_key, stored.problem_key);
    target_release(&again);

    stored.kernel_hash = "0000000000000000"; /* the dataset changed since */
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "0000000000000000"));
    stored = made.key;
    stored.device_class = "replay:another-gpu";
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    stored = made.key;
    stored.problem_key = "{\"problem_size\":[1,2]}";
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    /* Results measured under another toolchain are another key's: the stored job is refused, with
     * both toolchains named and a hint. */
    stored = made.key;
    stored.toolchain = "gcc 11.4.0";
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    assert_int_equal(kt_error_http_status(err.code), 409);
    assert_string_equal(kt_error_code_name(err.code), "toolchain_changed");
    assert_non_null(strstr(err.message, "'gcc 11.4.0'"));
    assert_non_null(strstr(err.message, "'recorded'"));
    assert_true(err.hint[0] != '\0');
    assert_null(again.problem);
    stored.toolchain = ""; /* a job stored before sql/004 */
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    stored.toolchain = NULL;
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    stored = made.key;
    stored.device = "replay:nothing-here";
    assert_int_equal(catalog_reopen(c, &stored, made.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    target_release(&made);
    catalog_free(c);
}

static void resolve_reports_each_error(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    target t;
    kt_error err;
    assert_int_equal(catalog_resolve(c, "convolution", "replay:nope", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "replay:nope"));
    assert_non_null(strstr(err.hint, PNPOLY));
    assert_int_equal(catalog_resolve(c, "gemm", CONV, NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_string_equal(err.hint, "device " CONV " offers: convolution");

    json_t *p = json_loads("{\"problem_size\": [1024, 1024]}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_string_equal(
        err.message,
        "dataset convolution_milo-A4000 was recorded at problem_size [4096, 4096] only");
    json_decref(p);
    p = json_loads("{\"x\": 1}", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_string_equal(err.message, "unknown problem argument 'x'; accepted: problem_size");
    json_decref(p);
    p = json_loads("[4096, 4096]", 0, NULL);
    assert_int_equal(catalog_resolve(c, "convolution", CONV, p, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    json_decref(p);
    catalog_free(c);
}

/* catalog_find_device: the one resolution of a device name, by its parsed kind. */
static void find_device_switches_on_the_kind(void **state)
{
    (void)state;
    catalog *c = open_catalog(DATASETS, 0);
    catalog_found_device f;
    kt_error err;
    assert_int_equal(catalog_find_device(c, CONV, CATALOG_FIND_FLEET, NULL, &f, &err), 0);
    assert_int_equal(f.dev.kind, KT_DEVICE_REPLAY);
    assert_string_equal(f.dev.name, "convolution_milo-A4000");
    assert_non_null(f.replay);
    assert_ptr_equal(f.replay, catalog_find_replay(c, CONV));
    assert_null(f.accel);
    assert_null(f.real);
    /* Parsed but not here: every kind a catalog of datasets does not have. */
    const char *absent[] = {"replay:nope", "accel:nope", "cpu", "cuda:0", "hip:0", "external"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        assert_int_equal(catalog_find_device(c, absent[i], CATALOG_FIND_LOCAL, NULL, &f, &err), -1);
        assert_int_equal(f.parsed, 1);
        assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
        assert_non_null(strstr(err.message, "unknown device"));
        assert_non_null(strstr(err.hint, PNPOLY));
    }
    /* Not a device name: the parser's why, and the hint of the devices there are. */
    assert_int_equal(catalog_find_device(c, "cuda:01", CATALOG_FIND_FLEET, NULL, &f, &err), -1);
    assert_int_equal(f.parsed, 0);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    assert_non_null(strstr(err.message, "without sign or leading zero"));
    assert_non_null(strstr(err.hint, CONV));
    target t;
    assert_int_equal(catalog_resolve(c, "convolution", "replay:", NULL, &t, &err), -1);
    assert_non_null(strstr(err.message, "field 'device'"));
    catalog_free(c);
}

static void bad_files_are_skipped(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_measure_XXXXXX";
    make_dir(dir);
    write_file(dir, "good.json", plain_cache, 0);
    write_file(dir, "broken.json", "{\"tune_params\": {", 0);
    write_file(dir, "nocache.json", "{\"tune_params\": {\"a\": [1]}}", 0);
    write_file(dir, "truncated.json.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56", 0);
    write_file(dir, "badexpr.json",
               "{\"tune_params\": {\"a\": [1]}, \"restrictions\": [\"a >\"], \"cache\": {}}", 0);
    write_file(dir, "notes.txt", "not a dataset", 0);
    catalog *c = open_catalog(dir, 0);
    assert_int_equal(catalog_num_devices(c), 1);
    json_t *devs = catalog_devices_json(c);
    assert_non_null(find_by(devs, "name", "replay:good"));
    json_decref(devs);
    catalog_free(c);
    rm_dir(dir);
}

/* Writes <name>.json: the plain cache with space name_A and the given toolchain JSON value. */
static void write_with_toolchain(const char *dir, const char *name, const char *toolchain)
{
    char text[4096], file[64], space[64];
    snprintf(space, sizeof space, "%s_A", name);
    snprintf(file, sizeof file, "%s.json", name);
    snprintf(text, sizeof text, "{\"space\": \"%s\", \"toolchain\": %s, %s", space, toolchain,
             plain_cache + 1);
    write_file(dir, file, text, 0);
}

/* A dataset may record the toolchain it was measured with: that is its key's toolchain; one that
 * is not a short printable string makes the file unusable (skipped like any bad file). */
static void dataset_toolchain_is_recorded_or_its_own(void **state)
{
    (void)state;
    char dir[] = "/tmp/kt_toolchain_XXXXXX";
    char tc[TARGET_TOOLCHAIN_MAX + 8];
    make_dir(dir);
    write_with_toolchain(dir, "own", "\"cuda driver 12.4, nvrtc 12.4\"");
    write_with_toolchain(dir, "empty", "\"\"");
    write_with_toolchain(dir, "number", "12");
    write_with_toolchain(dir, "control", "\"gcc\\t12\"");
    memset(tc, 'x', sizeof tc);
    tc[0] = '"';
    tc[TARGET_TOOLCHAIN_MAX + 2] = '"';
    tc[TARGET_TOOLCHAIN_MAX + 3] = '\0'; /* one character too many */
    write_with_toolchain(dir, "long", tc);
    tc[TARGET_TOOLCHAIN_MAX + 1] = '"';
    tc[TARGET_TOOLCHAIN_MAX + 2] = '\0'; /* the longest accepted */
    write_with_toolchain(dir, "longest", tc);

    catalog *c = open_catalog(dir, 0);
    assert_int_equal(catalog_num_devices(c), 2);
    target t;
    resolve_ok(c, "own", "replay:own_A", &t);
    assert_string_equal(t.key.toolchain, "cuda driver 12.4, nvrtc 12.4");
    target_release(&t);
    resolve_ok(c, "longest", "replay:longest_A", &t);
    assert_int_equal(strlen(t.key.toolchain), TARGET_TOOLCHAIN_MAX);
    target_release(&t);
    json_t *devs = catalog_devices_json(c);
    assert_string_equal(
        json_string_value(json_object_get(find_by(devs, "name", "replay:own_A"), "toolchain")),
        "cuda driver 12.4, nvrtc 12.4");
    assert_null(find_by(devs, "name", "replay:empty_A"));
    assert_null(find_by(devs, "name", "replay:number_A"));
    assert_null(find_by(devs, "name", "replay:long_A"));
    assert_null(find_by(devs, "name", "replay:control_A"));
    json_decref(devs);
    catalog_free(c);
    rm_dir(dir);
}

static void missing_folder_is_config_error(void **state)
{
    (void)state;
    const char *dirs[] = {DATASETS, "/nonexistent/kt_datasets"};
    catalog_options opt = {.dataset_dirs = dirs, .n_dataset_dirs = 2};
    kt_error err;
    assert_null(catalog_new(&opt, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "/nonexistent/kt_datasets"));
    opt.n_dataset_dirs = 1;
    opt.replay_speed = -1;
    assert_null(catalog_new(&opt, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
}

static void both_folders_keep_first_of_duplicates(void **state)
{
    (void)state;
    if (access(GPU_SPACES, R_OK) != 0)
        KT_SKIP("%s is absent (the shared datasets, ../shared/data, are not on this machine)",
                GPU_SPACES);
    const char *dirs[] = {DATASETS, GPU_SPACES};
    catalog_options opt = {.dataset_dirs = dirs, .n_dataset_dirs = 2};
    catalog *c = catalog_new(&opt, NULL);
    assert_non_null(c);
    assert_int_equal(catalog_num_devices(c), 8);
    json_t *devs = catalog_devices_json(c);
    const char *file = json_string_value(
        json_object_get(json_object_get(find_by(devs, "name", CONV), "description"), "file"));
    assert_non_null(strstr(file, "/datasets/"));
    json_decref(devs);
    catalog_free(c);
}

/* Counts the cache keys of a dataset file independently of the catalog's parsing (the whole-file
 * read is core/file's, tested in test_core_file.c). */
static size_t count_cache_keys(const char *path)
{
    size_t len = 0;
    char *buf = kt_file_read_gz(path, (size_t)1 << 30, &len, NULL);
    assert_non_null(buf);
    json_t *root = json_loadb(buf, len, 0, NULL);
    free(buf);
    assert_non_null(root);
    size_t keys = json_object_size(json_object_get(root, "cache"));
    json_decref(root);
    return keys;
}

static void every_shared_space_loads(void **state)
{
    (void)state;
    DIR *d = opendir(GPU_SPACES);
    if (!d)
        KT_SKIP("%s is absent (the shared datasets, ../shared/data, are not on this machine)",
                GPU_SPACES);
    catalog *c = open_catalog(GPU_SPACES, 0);
    assert_int_equal(catalog_num_devices(c), 8);
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 9 || strcmp(e->d_name + n - 8, ".json.gz") != 0)
            continue;
        char path[512], device[256], kernel[64];
        snprintf(path, sizeof path, "%s/%s", GPU_SPACES, e->d_name);
        snprintf(device, sizeof device, "replay:%.*s", (int)(n - 8), e->d_name);
        snprintf(kernel, sizeof kernel, "%.*s", (int)strcspn(e->d_name, "_"), e->d_name);
        target t;
        resolve_ok(c, kernel, device, &t);
        assert_int_equal(space_count(t.sp), count_cache_keys(path));
        target_release(&t);
        seen++;
    }
    closedir(d);
    assert_int_equal(seen, 8);
    catalog_free(c);
}

int main(void)
{
    kt_log_init(KT_LOG_WARN); /* the skipped-file warnings stay visible */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_finds_three_devices),
        cmocka_unit_test(resolve_canonicalises_the_problem),
        cmocka_unit_test(resolve_reports_each_error),
        cmocka_unit_test(find_device_switches_on_the_kind),
        cmocka_unit_test(resolve_key_is_the_key_without_a_space),
        cmocka_unit_test(reopen_checks_the_stored_key),
        cmocka_unit_test(bad_files_are_skipped),
        cmocka_unit_test(dataset_toolchain_is_recorded_or_its_own),
        cmocka_unit_test(missing_folder_is_config_error),
        cmocka_unit_test(both_folders_keep_first_of_duplicates),
        cmocka_unit_test(every_shared_space_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
