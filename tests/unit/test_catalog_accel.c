/* Unit tests of catalog/'s accel devices (catalog_accel.c): the devices file loaded (accel/
 * devices.json, and bad files refused), /v1/devices and /v1/kernels entries, resolution (key
 * fields, a preset and its arguments are one problem_key, errors naming what is accepted), reopen
 * (a changed device is another class), the problem of a target, sampled problems and the
 * meta-statistics of a configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel_model.h"
#include "catalog/catalog.h"
#include "catalog/catalog_fleet.h"
#include "catalog/catalog_peak.h"
#include "core/log.h"

#define DEVICES_FILE KT_SOURCE_DIR "/accel/devices.json"
#define MINDMAP      "accel:mindmap"
#define SMALL        "accel:mindmap-small"

static catalog *open_accel(const char *path, kt_error *err)
{
    catalog_options opt = {.accel_devices_path = path};
    return catalog_new(&opt, err);
}

static catalog *open_ok(void)
{
    kt_error err;
    catalog *c = open_accel(DEVICES_FILE, &err);
    if (!c)
        fail_msg("catalog over %s: %s", DEVICES_FILE, err.message);
    return c;
}

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *v = json_string_value(json_object_get(json_array_get(arr, i), key));
        if (v && strcmp(v, value) == 0)
            return json_array_get(arr, i);
    }
    return NULL;
}

static json_t *parse(const char *text)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    return j;
}

static void resolve_ok(const catalog *c, const char *kernel, const char *device,
                       const char *problem, target *t)
{
    kt_error err;
    json_t *p = problem ? parse(problem) : NULL;
    if (catalog_resolve(c, kernel, device, p, t, &err) != 0)
        fail_msg("resolve %s on %s (%s): %s", kernel, device, problem ? problem : "null",
                 err.message);
    json_decref(p);
}

/* Writes text to a new temporary file; path is filled (unlink it after). */
static void write_temp(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "/tmp/kt_accel_devices_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* One device "mindmap" with the shipped parameters but pes. */
static void write_mindmap(char *path, size_t cap, int pes)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"devices\": [{\"name\": \"mindmap\", \"pes\": %d, \"l1_bytes\": 65536, "
             "\"l2_bytes\": 524288, \"l1_banks\": 8, \"l2_banks\": 8, \"word_bytes\": 2, "
             "\"clock_ghz\": 1.0, \"mac_pj\": 1.0, \"access_pj\": [2.2, 8.8, 128.0], "
             "\"words_per_cycle\": [3, 64, 16]}]}",
             pes);
    write_temp(path, cap, text);
}

static int is_hex16(const char *s)
{
    if (!s || strlen(s) != 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    }
    return 1;
}

static void devices_are_listed_with_their_parameters(void **state)
{
    (void)state;
    catalog *c = open_ok();
    assert_int_equal(catalog_num_devices(c), 2);
    json_t *devs = catalog_devices_json(c);
    assert_int_equal(json_array_size(devs), 2);
    const char *names[] = {MINDMAP, SMALL};
    long long pes[] = {256, 64};
    for (int i = 0; i < 2; i++) {
        json_t *d = find_by(devs, "name", names[i]);
        assert_non_null(d);
        assert_string_equal(json_string_value(json_object_get(d, "kind")), "accel");
        const char *klass = json_string_value(json_object_get(d, "class"));
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s:", names[i]);
        assert_int_equal(strncmp(klass, prefix, strlen(prefix)), 0);
        assert_true(is_hex16(klass + strlen(prefix)));
        assert_string_equal(json_string_value(json_object_get(d, "toolchain")),
                            CATALOG_ACCEL_TOOLCHAIN);
        assert_true(json_is_true(json_object_get(d, "available")));
        json_t *desc = json_object_get(d, "description");
        assert_int_equal(json_integer_value(json_object_get(desc, "pes")), pes[i]);
        assert_non_null(json_object_get(desc, "access_pj"));
        json_t *ks = json_object_get(d, "kernels");
        assert_int_equal(json_array_size(ks), 2);
        assert_string_equal(json_string_value(json_array_get(ks, 0)), "cnn_layer");
        assert_string_equal(json_string_value(json_array_get(ks, 1)), "mttkrp");
        assert_non_null(catalog_find_accel(c, names[i]));
    }
    assert_string_not_equal(json_string_value(json_object_get(json_array_get(devs, 0), "class")),
                            json_string_value(json_object_get(json_array_get(devs, 1), "class")));
    assert_null(catalog_find_accel(c, "accel:nope"));
    assert_null(catalog_find_accel(c, "mindmap"));
    json_decref(devs);

    /* The fleet records: kind accel, registered, but never merged back (catalog_fleet.c). */
    json_t *recs = catalog_fleet_records_json(c);
    json_t *r = find_by(recs, "name", MINDMAP);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "kind")), "accel");
    json_decref(recs);
    catalog_free(c);
}

static void kernels_list_arguments_presets_and_the_space(void **state)
{
    (void)state;
    catalog *c = open_ok();
    json_t *ks = catalog_kernels_json(c);
    assert_int_equal(json_array_size(ks), 2);
    json_t *cnn = find_by(ks, "name", "cnn_layer");
    assert_non_null(cnn);
    assert_true(strlen(json_string_value(json_object_get(cnn, "summary"))) > 0);
    json_t *devs = json_object_get(cnn, "devices");
    assert_int_equal(json_array_size(devs), 2);
    json_t *d = find_by(devs, "device", MINDMAP);
    assert_non_null(d);
    json_t *args = json_object_get(d, "problem_arguments");
    const char *want[] = {"N", "K", "C", "P", "Q", "R", "S", "stride"};
    assert_int_equal(json_array_size(args), 8);
    for (int i = 0; i < 8; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(args, i), "name")),
                            want[i]);
    assert_non_null(json_object_get(json_object_get(d, "presets"), "resnet_conv3"));
    assert_int_equal(json_object_size(json_object_get(d, "presets")), 6);
    json_t *params = json_object_get(d, "parameters");
    assert_non_null(find_by(params, "name", "K_PE"));
    assert_non_null(find_by(params, "name", "order_L1"));
    assert_true(json_array_size(json_object_get(d, "restrictions")) > 0);
    json_t *count = json_object_get(d, "configurations");
    assert_true(json_is_null(count) || json_integer_value(count) > 0);
    assert_true(is_hex16(json_string_value(json_object_get(d, "hash"))));
    assert_int_equal(json_object_size(json_object_get(d, "problem")), 8);
    json_t *mt = find_by(ks, "name", "mttkrp");
    assert_int_equal(json_object_size(json_object_get(
                         json_array_get(json_object_get(mt, "devices"), 0), "presets")),
                     2);
    json_decref(ks);
    catalog_free(c);
}

static void preset_and_its_arguments_are_one_key(void **state)
{
    (void)state;
    catalog *c = open_ok();
    target a, b, k;
    resolve_ok(c, "cnn_layer", MINDMAP, "{\"preset\": \"resnet_conv3\"}", &a);
    assert_string_equal(a.key.kernel, "cnn_layer");
    assert_string_equal(a.key.device, MINDMAP);
    assert_int_equal(strncmp(a.key.device_class, MINDMAP ":", strlen(MINDMAP) + 1), 0);
    assert_true(is_hex16(a.key.kernel_hash));
    assert_string_equal(a.key.toolchain, CATALOG_ACCEL_TOOLCHAIN);
    assert_non_null(a.sp);
    assert_int_equal(a.owns_space, 1);
    assert_true(space_count(a.sp) > 1);
    assert_null(json_object_get(a.problem, "preset"));
    assert_int_equal(json_integer_value(json_object_get(a.problem, "K")), 128);

    /* The same problem given by its arguments (those the preset lists), and keyed only. */
    json_t *ks = catalog_kernels_json(c);
    json_t *d =
        find_by(json_object_get(find_by(ks, "name", "cnn_layer"), "devices"), "device", MINDMAP);
    char *args =
        json_dumps(json_object_get(json_object_get(d, "presets"), "resnet_conv3"), JSON_COMPACT);
    resolve_ok(c, "cnn_layer", MINDMAP, args, &b);
    assert_string_equal(a.key.problem_key, b.key.problem_key);
    kt_error err;
    json_t *p = parse(args);
    assert_int_equal(catalog_resolve_key(c, "cnn_layer", MINDMAP, p, &k, &err), 0);
    assert_null(k.sp);
    assert_string_equal(k.key.problem_key, a.key.problem_key);
    assert_string_equal(k.key.device_class, a.key.device_class);
    assert_string_equal(k.key.kernel_hash, a.key.kernel_hash);
    json_decref(p);
    free(args);
    json_decref(ks);

    /* The problem of a target, as the backend reads it. */
    accel_problem ap;
    assert_int_equal(catalog_accel_problem(c, &a, &ap, &err), 0);
    assert_int_equal(ap.dim[1], 128); /* K */
    assert_int_equal(ap.dim[3], 28);  /* P: the preset's output rows */

    /* The small device: another class, another space. */
    target s;
    resolve_ok(c, "cnn_layer", SMALL, "{\"preset\": \"resnet_conv3\"}", &s);
    assert_string_equal(s.key.problem_key, a.key.problem_key);
    assert_string_equal(s.key.kernel_hash, a.key.kernel_hash);
    assert_string_not_equal(s.key.device_class, a.key.device_class);

    /* A default problem (NULL and JSON null), and mttkrp. */
    target n1, n2, m;
    resolve_ok(c, "cnn_layer", MINDMAP, NULL, &n1);
    resolve_ok(c, "cnn_layer", MINDMAP, "null", &n2);
    assert_string_equal(n1.key.problem_key, n2.key.problem_key);
    resolve_ok(c, "mttkrp", MINDMAP, "{\"preset\": \"mttkrp_0\"}", &m);
    assert_string_not_equal(m.key.kernel_hash, a.key.kernel_hash);
    target_release(&a);
    target_release(&b);
    target_release(&k);
    target_release(&s);
    target_release(&n1);
    target_release(&n2);
    target_release(&m);
    catalog_free(c);
}

static void expect_error(const catalog *c, const char *kernel, const char *device,
                         const char *problem, kt_code code, const char *in_message,
                         const char *in_hint)
{
    target t;
    kt_error err;
    kt_error_clear(&err);
    json_t *p = problem ? parse(problem) : NULL;
    assert_int_equal(catalog_resolve(c, kernel, device, p, &t, &err), -1);
    json_decref(p);
    if (err.code != code)
        fail_msg("%s on %s (%s): code %s, not %s: %s", kernel, device, problem,
                 kt_error_code_name(err.code), kt_error_code_name(code), err.message);
    if (in_message && !strstr(err.message, in_message))
        fail_msg("message '%s' does not name '%s'", err.message, in_message);
    if (in_hint && !strstr(err.hint, in_hint))
        fail_msg("hint '%s' does not name '%s'", err.hint, in_hint);
}

static void bad_requests_name_what_is_accepted(void **state)
{
    (void)state;
    catalog *c = open_ok();
    expect_error(c, "cnn_layer", MINDMAP, "{\"preset\": \"resnet_conv9\"}", KT_ERR_BAD_PROBLEM,
                 "resnet_conv9", "resnet_conv3");
    expect_error(c, "cnn_layer", MINDMAP, "{\"preset\": \"resnet_conv3\", \"K\": 64}",
                 KT_ERR_BAD_PROBLEM, NULL, "resnet_conv3");
    expect_error(c, "cnn_layer", MINDMAP, "{\"X\": 3}", KT_ERR_BAD_PROBLEM, "X", NULL);
    expect_error(c, "cnn_layer", MINDMAP, "{\"K\": 0}", KT_ERR_BAD_PROBLEM, "K", NULL);
    expect_error(c, "cnn_layer", MINDMAP, "[1]", KT_ERR_BAD_PROBLEM, NULL, NULL);
    expect_error(c, "gemm", MINDMAP, NULL, KT_ERR_UNKNOWN_KERNEL, "gemm", "cnn_layer, mttkrp");
    expect_error(c, NULL, MINDMAP, NULL, KT_ERR_UNKNOWN_KERNEL, NULL, "cnn_layer");
    expect_error(c, "cnn_layer", "accel:nope", NULL, KT_ERR_UNKNOWN_DEVICE, "accel:nope", MINDMAP);
    catalog_free(c);
}

static void bad_device_files_are_config_errors(void **state)
{
    (void)state;
    kt_error err;
    char path[64];
    assert_null(open_accel("/nonexistent/devices.json", &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    write_temp(path, sizeof path, "{\"devices\": [{\"name\": \"x\"}]}");
    assert_null(open_accel(path, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    unlink(path);
    write_temp(path, sizeof path, "not json");
    assert_null(open_accel(path, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    unlink(path);
    /* No file: no accel devices, and an accel name is unknown. */
    catalog_options none = {0};
    catalog *c = catalog_new(&none, &err);
    assert_non_null(c);
    assert_int_equal(catalog_num_devices(c), 0);
    expect_error(c, "cnn_layer", MINDMAP, NULL, KT_ERR_UNKNOWN_DEVICE, MINDMAP, NULL);
    catalog_free(c);
}

static void reopen_checks_the_stored_key(void **state)
{
    (void)state;
    catalog *c = open_ok();
    target a, r;
    kt_error err;
    resolve_ok(c, "cnn_layer", MINDMAP, "{\"preset\": \"vgg_conv2\"}", &a);
    assert_int_equal(catalog_reopen(c, &a.key, a.problem, &r, &err), 0);
    assert_string_equal(r.key.problem_key, a.key.problem_key);
    assert_int_equal(space_count(r.sp), space_count(a.sp));
    target_release(&r);

    target_key k = a.key;
    k.kernel_hash = "0000000000000000";
    assert_int_equal(catalog_reopen(c, &k, a.problem, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFLICT);
    k = a.key;
    k.device_class = "accel:mindmap:0000000000000000";
    assert_int_equal(catalog_reopen(c, &k, a.problem, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    k = a.key;
    k.toolchain = "ktune accel model 0";
    assert_int_equal(catalog_reopen(c, &k, a.problem, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    k = a.key;
    k.problem_key = "{}";
    assert_int_equal(catalog_reopen(c, &k, a.problem, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);

    /* The same name with other parameters is another class: the stored job is refused. */
    char path[64];
    write_mindmap(path, sizeof path, 128);
    catalog *c2 = open_accel(path, &err);
    unlink(path);
    assert_non_null(c2);
    assert_int_equal(catalog_reopen(c2, &a.key, a.problem, &r, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_DEVICE);
    catalog_free(c2);
    /* ... and the same parameters are the same class. */
    write_mindmap(path, sizeof path, 256);
    c2 = open_accel(path, &err);
    unlink(path);
    assert_non_null(c2);
    assert_int_equal(catalog_reopen(c2, &a.key, a.problem, &r, &err), 0);
    target_release(&r);
    catalog_free(c2);
    target_release(&a);
    catalog_free(c);
}

static void sampled_problems_resolve(void **state)
{
    (void)state;
    catalog *c = open_ok();
    kt_rng r1, r2;
    kt_error err;
    kt_rng_seed(&r1, 5);
    kt_rng_seed(&r2, 5);
    for (int i = 0; i < 20; i++) {
        json_t *p1 = catalog_sample_problem(c, "cnn_layer", MINDMAP, &r1, &err);
        json_t *p2 = catalog_sample_problem(c, "cnn_layer", MINDMAP, &r2, &err);
        assert_non_null(p1);
        assert_true(json_equal(p1, p2));
        target t;
        assert_int_equal(catalog_resolve_key(c, "cnn_layer", MINDMAP, p1, &t, &err), 0);
        target_release(&t);
        json_decref(p1);
        json_decref(p2);
    }
    assert_null(catalog_sample_problem(c, "gemm", MINDMAP, &r1, &err));
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    assert_null(catalog_sample_problem(c, "cnn_layer", "cpu", &r1, &err));
    assert_int_equal(err.code, KT_ERR_NOT_IMPLEMENTED);
    catalog_free(c);
}

static void meta_gives_the_objective(void **state)
{
    (void)state;
    catalog *c = open_ok();
    target t;
    kt_error err;
    kt_rng rng;
    kt_rng_seed(&rng, 11);
    resolve_ok(c, "cnn_layer", MINDMAP, "{\"preset\": \"resnet_conv3\"}", &t);
    const accel_device *d = catalog_find_accel(c, MINDMAP);
    accel_problem p;
    assert_int_equal(catalog_accel_problem(c, &t, &p, &err), 0);
    accel_stats lb;
    accel_lower_bound(d, &p, &lb);
    int valid = 0, invalid = 0;
    for (int i = 0; i < 400; i++) {
        config_id id = space_sample(t.sp, &rng);
        double meta[CATALOG_ACCEL_META_MAX], w[CATALOG_ACCEL_META_MAX];
        int n = -1;
        int rc = catalog_accel_meta(c, &t, id, meta, CATALOG_ACCEL_META_MAX, w, &n, &err);
        assert_true(rc == 0 || rc == 1);
        accel_mapping m;
        accel_stats s;
        assert_int_equal(accel_mapping_decode(&p, t.sp, id, &m, &err), 0);
        assert_int_equal(accel_evaluate(d, &p, &m, &s), rc);
        if (rc == 0) {
            invalid++;
            assert_int_equal(n, 0);
            continue;
        }
        valid++;
        assert_int_equal(n, 12); /* 3 levels x 3 tensors + 3 */
        double sum = 0;
        for (int j = 0; j < n; j++)
            sum += w[j] * meta[j];
        assert_true(fabs(sum - log(s.edp / lb.edp)) < 1e-6 * (1 + fabs(sum)));
        /* Too small a buffer is an error, not a short answer. */
        assert_int_equal(catalog_accel_meta(c, &t, id, meta, 4, NULL, &n, &err), -1);
    }
    assert_true(valid > 0);
    print_message("resnet_conv3 on mindmap: %d valid, %d invalid of 400 sampled\n", valid, invalid);
    double meta[CATALOG_ACCEL_META_MAX];
    int n;
    assert_int_equal(
        catalog_accel_meta(c, &t, space_count(t.sp), meta, CATALOG_ACCEL_META_MAX, NULL, &n, &err),
        -1);
    target_release(&t);
    catalog_free(c);
}

/* The peak rate of GET /v1/devices (issue 31): computed where every factor is known, "peak
 * unknown" with the reason where one is not (a CPU without a known frequency). */
static void peak_known_only_from_known_factors(void **state)
{
    (void)state;
    char basis[256];
    double g = -1;
    json_t *accel = json_pack("{s:i, s:f}", "pes", 256, "clock_ghz", 1.0);
    assert_int_equal(catalog_peak("accel", accel, &g, basis, sizeof basis), 1);
    assert_true(fabs(g - 512.0) < 1e-9);
    assert_non_null(strstr(basis, "256 PEs"));
    /* H100 SXM: 132 SMs x 128 lanes x 2 x 1980 MHz = 66,908 GFLOP/s, NVIDIA's 67 TFLOPS */
    json_t *cuda =
        json_pack("{s:i, s:i, s:f}", "sms", 132, "compute_capability", 90, "clock_mhz", 1980.0);
    assert_int_equal(catalog_peak("cuda", cuda, &g, basis, sizeof basis), 1);
    assert_true(fabs(g - 66908.16) < 0.01);
    json_object_set_new(cuda, "clock_mhz", json_null());
    assert_int_equal(catalog_peak("cuda", cuda, &g, basis, sizeof basis), 0);
    assert_non_null(strstr(basis, "no clock rate"));
    json_t *cpu = json_pack("{s:[s,s,s], s:i, s:n, s:i}", "isa", "avx", "avx2", "fma",
                            "physical_cores", 8, "max_mhz", "cores", 16);
    assert_int_equal(catalog_peak("cpu", cpu, &g, basis, sizeof basis), 0);
    assert_non_null(strstr(basis, "frequency is not known"));
    json_object_set_new(cpu, "max_mhz", json_real(3000.0));
    assert_int_equal(catalog_peak("cpu", cpu, &g, basis, sizeof basis), 1);
    assert_true(fabs(g - 8 * 8 * 2 * 2 * 3.0) < 1e-9); /* 768: physical cores, not threads */
    assert_int_equal(catalog_peak("replay", cpu, &g, basis, sizeof basis), 0);
    json_t *dev = json_pack("{s:s, s:O}", "kind", "accel", "description", accel);
    catalog_peak_set(dev);
    assert_true(fabs(json_number_value(json_object_get(dev, "peak_gflops")) - 512.0) < 1e-9);
    json_object_set_new(dev, "kind", json_string("cpu"));
    json_object_set(dev, "description", cpu);
    json_object_set_new(cpu, "max_mhz", json_null());
    catalog_peak_set(dev);
    assert_true(json_is_null(json_object_get(dev, "peak_gflops")));
    assert_non_null(strstr(json_string_value(json_object_get(dev, "peak_basis")), "unknown"));
    json_decref(dev);
    json_decref(accel);
    json_decref(cuda);
    json_decref(cpu);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices_are_listed_with_their_parameters),
        cmocka_unit_test(kernels_list_arguments_presets_and_the_space),
        cmocka_unit_test(preset_and_its_arguments_are_one_key),
        cmocka_unit_test(bad_requests_name_what_is_accepted),
        cmocka_unit_test(bad_device_files_are_config_errors),
        cmocka_unit_test(reopen_checks_the_stored_key),
        cmocka_unit_test(sampled_problems_resolve),
        cmocka_unit_test(meta_gives_the_objective),
        cmocka_unit_test(peak_known_only_from_known_factors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
