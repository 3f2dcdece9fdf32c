/* Unit tests of catalog/kernel_data and of the data files of a kernel given as data (issue 27,
 * POST /v1/kernels "data"): base64 both ways; every malformed entry refused with its field path
 * (name, dtype, encoding, base64, element size), the 512 KiB cap a body_too_large naming the file
 * and the cap; a spec whose init or answer names uploaded data loads, the data's bytes are part
 * of the version (an input or an answer changed alone: another version), a data file of another
 * dtype or unnamed by the spec is refused, and a problem that makes a buffer another length than
 * its data is a bad_problem naming the buffer, the expected and the given counts — at submit time
 * for the default problem, at tune time for a request's. No runner starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "catalog/catalog.h"
#include "catalog/kernel_data.h"
#include "catalog/kernel_spec.h"
#include "kspec_test_util.h"

static const kspec_limits CPU_LIMITS = {{4, 256, 1048576, 8388608, 256}};

/* y = x (copied), n f32 elements: x from the uploaded x.bin, y checked against y.bin */
static const char DATA_SPEC[] =
    "{\"name\": \"vcopy\","
    " \"problem\": [{\"name\": \"n\", \"min\": 1, \"max\": 64, \"default\": 16}],"
    " \"buffers\": [{\"name\": \"y\", \"elements\": \"n\", \"role\": \"output\"},"
    "               {\"name\": \"x\", \"elements\": \"n\", \"role\": \"input\","
    "                \"init\": {\"kind\": \"data\", \"file\": \"x.bin\"}}],"
    " \"flops\": \"0\","
    " \"verify\": {\"kind\": \"answer\", \"buffers\": {\"y\": {\"file\": \"y.bin\"}}},"
    " \"variants\": {\"cpu\": {\"source\": \"cpu.c\","
    "   \"parameters\": [{\"name\": \"U\", \"values\": [1, 2]}], \"default\": {\"U\": 1}}}}";
static const char COPY_SRC[] =
    "int ktune_kernel(float *const *b, const long long *p)\n"
    "{ for (long long i = 0; i < p[0]; i++) b[0][i] = b[1][i]; return 0; }\n";

static catalog *open_catalog(const fixture *f)
{
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f->cache,
                                 .cpu_core = -1};
    kt_error err;
    catalog_device *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(d[0].name, sizeof d[0].name, "cpu");
    d[0].kind = KSPEC_CPU;
    d[0].available = 1;
    d[0].klass = strdup("cpu:Handed_CPU:256");
    d[0].toolchain = strdup("gcc 12.2.0");
    d[0].description_text = strdup("{}");
    d[0].limits = CPU_LIMITS;
    catalog *c = catalog_new_real(&opt, &real, d, 1, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    return c;
}

/* {"dtype": dtype, "encoding": "base64", "data": base64 of n floats first, first+1, ...} */
static json_t *floats_entry(const char *dtype, int n, float first)
{
    float v[4096];
    assert_true(n <= 4096);
    for (int i = 0; i < n; i++)
        v[i] = first + (float)i;
    char *text = kt_base64_encode(v, (size_t)n * sizeof(float), NULL);
    json_t *e = json_pack("{s:s, s:s, s:s}", "dtype", dtype, "encoding", "base64", "data", text);
    free(text);
    return e;
}

static void base64_both_ways(void **state)
{
    (void)state;
    static const struct {
        const char *plain, *coded;
    } vectors[] = {{"", ""},
                   {"f", "Zg=="},
                   {"fo", "Zm8="},
                   {"foo", "Zm9v"},
                   {"foob", "Zm9vYg=="},
                   {"fooba", "Zm9vYmE="},
                   {"foobar", "Zm9vYmFy"}}; /* RFC 4648, section 10 */
    unsigned char out[16];
    size_t bad = 0;
    for (size_t i = 0; i < sizeof vectors / sizeof *vectors; i++) {
        char *text = kt_base64_encode(vectors[i].plain, strlen(vectors[i].plain), NULL);
        assert_string_equal(text, vectors[i].coded);
        free(text);
        long long n = kt_base64_decode(vectors[i].coded, strlen(vectors[i].coded), out, &bad);
        assert_int_equal(n, (long long)strlen(vectors[i].plain));
        assert_memory_equal(out, vectors[i].plain, (size_t)n);
    }
    assert_int_equal(kt_base64_decode("Zm9", 3, out, &bad), -1); /* not a multiple of 4 */
    assert_int_equal(kt_base64_decode("Zm*v", 4, out, &bad), -1);
    assert_int_equal(bad, 2);
    assert_int_equal(kt_base64_decode("Zg==Zg==", 8, out, &bad), -1); /* padding mid-text */
    assert_int_equal(kt_base64_decode("Z===", 4, out, &bad), -1);
}

static void data_entries_are_checked(void **state)
{
    (void)state;
    kt_error err;
    json_t *d = json_pack("{s:o, s:o}", "x.bin", floats_entry("f32", 16, 0), "h.bin",
                          floats_entry("f64", 8, 0));
    kernel_data *kd = kernel_data_from_json(d, "data", &err);
    if (!kd)
        fail_msg("%s", err.message);
    assert_int_equal(kernel_data_count(kd), 2);
    int i = kernel_data_find(kd, "x.bin");
    size_t len = 0;
    const float *x = (const float *)kernel_data_bytes(kd, i, &len);
    assert_int_equal(len, 64);
    assert_true(x[15] == 15.0f);
    assert_int_equal(kernel_data_dtype(kd, kernel_data_find(kd, "h.bin")), KT_F64);
    assert_int_equal(strlen(kernel_data_sha256(kd, i)), KDATA_SHA_LEN);
    /* the stored form reads back to the same bytes */
    json_t *stored = kernel_data_json(kd);
    kernel_data *again = kernel_data_from_json(stored, "data", &err);
    assert_non_null(again);
    assert_string_equal(kernel_data_sha256(again, kernel_data_find(again, "x.bin")),
                        kernel_data_sha256(kd, i));
    kernel_data_free(again);
    json_decref(stored);
    kernel_data_free(kd);
    json_decref(d);

    static const struct {
        const char *json, *message;
    } bad[] = {
        {"{\"../x\": {\"dtype\": \"f32\", \"data\": \"AAAAAA==\"}}", "data.../x: not a plain file"},
        {"{\"x.bin\": {\"dtype\": \"f128\", \"data\": \"AAAAAA==\"}}", "data.x.bin.dtype: unknown"},
        {"{\"x.bin\": {\"data\": \"AAAAAA==\"}}", "data.x.bin.dtype: missing"},
        {"{\"x.bin\": {\"dtype\": \"f32\", \"encoding\": \"hex\", \"data\": \"00\"}}",
         "data.x.bin.encoding: must be \"base64\""},
        {"{\"x.bin\": {\"dtype\": \"f32\", \"data\": \"AAA*AA==\"}}",
         "data.x.bin.data: not base64 at character 3"},
        {"{\"x.bin\": {\"dtype\": \"f32\", \"data\": \"AAAAAAA=\"}}",
         "data.x.bin.data: 5 bytes are not a whole number of f32 elements"},
        {"{\"x.bin\": {\"dtype\": \"f32\", \"data\": \"\"}}", "data.x.bin.data: 0 bytes"},
        {"{\"x.bin\": {\"dtype\": \"f32\", \"size\": 1, \"data\": \"AAAAAA==\"}}",
         "data.x.bin.size: unknown field"},
        {"[]", "data: must be an object"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        json_t *j = json_loads(bad[k].json, 0, NULL);
        assert_non_null(j);
        assert_null(kernel_data_from_json(j, "data", &err));
        if (!strstr(err.message, bad[k].message))
            fail_msg("%s: got '%s', expected '%s'", bad[k].json, err.message, bad[k].message);
        json_decref(j);
    }
    /* the cap: 512 KiB decoded in all, a 413 naming the file and the cap */
    d = json_pack("{s:o, s:o}", "a.bin", floats_entry("f32", 4096, 0), "b.bin",
                  floats_entry("f32", 4096, 0));
    char *big = calloc(1, (size_t)KDATA_MAX_BYTES);
    char *text = kt_base64_encode(big, (size_t)KDATA_MAX_BYTES - 8192 + 4, NULL);
    json_object_set_new(d, "c.bin", json_pack("{s:s, s:s}", "dtype", "u8", "data", text));
    assert_null(kernel_data_from_json(d, "data", &err));
    assert_int_equal(err.code, KT_ERR_BODY_TOO_LARGE);
    assert_non_null(strstr(err.message, "data.c.bin.data: "));
    assert_non_null(strstr(err.message, "past 524288 bytes (512 KiB)"));
    free(text);
    free(big);
    json_decref(d);
}

/* The kernel of DATA_SPEC with x.bin and y.bin of n floats (x from x0, y from y0). */
static kernel_spec *parse(catalog *c, const char *spec_text, int nx, float x0, int ny, float y0,
                          kt_error *err)
{
    json_t *spec = json_loads(spec_text, 0, NULL);
    json_t *files = json_pack("{s:s}", "cpu.c", COPY_SRC);
    json_t *data = json_pack("{s:o, s:o}", "x.bin", floats_entry("f32", nx, x0), "y.bin",
                             floats_entry("f32", ny, y0));
    assert_non_null(spec);
    kernel_spec *k = catalog_kernel_parse(c, spec, files, data, err);
    json_decref(spec);
    json_decref(files);
    json_decref(data);
    return k;
}

static void kernel_with_data(void **state)
{
    fixture *f = *state;
    catalog *c = open_catalog(f);
    kt_error err;
    kernel_spec *k = parse(c, DATA_SPEC, 16, 1, 16, 1, &err);
    if (!k)
        fail_msg("%s", err.message);
    assert_int_equal(k->buffers[1].init.kind, KSPEC_INIT_FILE);
    assert_string_equal(k->buffers[1].init.file.path, "x.bin");
    assert_int_equal(strlen(k->buffers[1].init.file.sha256), KDATA_SHA_LEN);
    assert_int_equal(k->buffers[1].init.file.bytes, 64);
    assert_string_equal(k->buffers[0].answer.path, "y.bin");
    assert_int_equal(k->verify, KSPEC_VERIFY_ANSWER);
    char v1[KFILES_VERSION_LEN + 1];
    snprintf(v1, sizeof v1, "%s", k->version);

    /* tune time: another problem makes the buffers another length than the data */
    kspec_problem p;
    json_t *pr = json_pack("{s:i}", "n", 20);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_string_equal(err.message, "buffers.y: for this problem the buffer has 20 f32 elements "
                                     "(elements = n), but its data file y.bin holds 16 (64 bytes)");
    json_decref(pr);
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    kernel_spec_free(k);

    /* the same bytes: the same version; an input or an answer changed alone: another one */
    k = parse(c, DATA_SPEC, 16, 1, 16, 1, &err);
    assert_string_equal(k->version, v1);
    kernel_spec_free(k);
    k = parse(c, DATA_SPEC, 16, 2, 16, 1, &err);
    assert_string_not_equal(k->version, v1);
    kernel_spec_free(k);
    k = parse(c, DATA_SPEC, 16, 1, 16, 2, &err);
    assert_string_not_equal(k->version, v1);
    kernel_spec_free(k);

    /* submit time: the default problem (n = 16) against data of 15 elements */
    assert_null(parse(c, DATA_SPEC, 15, 1, 16, 1, &err));
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    assert_non_null(strstr(err.message, "spec: problem: the default problem: buffers.x: for this "
                                        "problem the buffer has 16 f32 elements (elements = n), "
                                        "but its data file x.bin holds 15 (60 bytes)"));
    catalog_free(c);
}

static void data_refused_with_field_paths(void **state)
{
    fixture *f = *state;
    catalog *c = open_catalog(f);
    kt_error err;
    json_t *spec = json_loads(DATA_SPEC, 0, NULL);
    json_t *files = json_pack("{s:s}", "cpu.c", COPY_SRC);
    json_t *data = json_pack("{s:o, s:o}", "x.bin", floats_entry("f64", 8, 0), "y.bin",
                             floats_entry("f32", 16, 0));
    /* a data file of another dtype than its buffer */
    assert_null(catalog_kernel_parse(c, spec, files, data, &err));
    assert_non_null(strstr(err.message, "spec: buffers[1].init.file: data file 'x.bin' holds f64 "
                                        "values, the buffer is f32"));
    /* a name the data lacks */
    json_object_set_new(data, "x.bin", floats_entry("f32", 16, 0));
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(spec, "buffers"), 1), "init"), "file",
        json_string("z.bin"));
    assert_null(catalog_kernel_parse(c, spec, files, data, &err));
    assert_non_null(strstr(err.message, "spec: buffers[1].init.file: 'z.bin' is not among the "
                                        "kernel's \"data\""));
    /* and without any data at all */
    assert_null(catalog_kernel_parse(c, spec, files, NULL, &err));
    assert_non_null(strstr(err.message, "'z.bin' is not among the kernel's \"data\""));
    /* a data file nothing names */
    json_object_set_new(
        json_object_get(json_array_get(json_object_get(spec, "buffers"), 1), "init"), "file",
        json_string("x.bin"));
    json_object_set_new(data, "extra.bin", floats_entry("f32", 4, 0));
    assert_null(catalog_kernel_parse(c, spec, files, data, &err));
    assert_int_equal(err.code, KT_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "data.extra.bin: not used"));
    json_object_del(data, "extra.bin");
    kernel_spec *k = catalog_kernel_parse(c, spec, files, data, &err);
    if (!k)
        fail_msg("%s", err.message);
    kernel_spec_free(k);
    /* a CUDA variant cannot take data inits (its argument packing carries fp32 defaults only) */
    json_object_set_new(json_object_get(spec, "variants"), "cuda",
                        json_pack("{s:s, s:s, s:[{s:s, s:[i]}], s:{s:i}, s:[s,s,s], s:[s,s,s]}",
                                  "source", "cpu.c", "entry", "k", "parameters", "name", "B",
                                  "values", 32, "default", "B", 32, "block", "B", "1", "1", "grid",
                                  "1", "1", "1"));
    assert_null(catalog_kernel_parse(c, spec, files, data, &err));
    if (!strstr(err.message, "a CUDA variant takes fp32 buffers with the default init"))
        fail_msg("%s", err.message);
    json_decref(spec);
    json_decref(files);
    json_decref(data);
    catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base64_both_ways),
        cmocka_unit_test(data_entries_are_checked),
        cmocka_unit_test_setup_teardown(kernel_with_data, setup, teardown),
        cmocka_unit_test_setup_teardown(data_refused_with_field_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
