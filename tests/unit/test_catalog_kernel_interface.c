/* Unit tests of the kernel interface of issue 27 in catalog/kernel_spec (kernels/README.md):
 * per-buffer dtype, tolerance and init, float problem arguments, scalar arguments, user metrics,
 * "verify", and a cpu variant's generated call, openmp and threads: a spec using all of them loads
 * with what it says, problems see float arguments and compute the scalars, data files are checked
 * against the buffers' sizes and hashed, and each error names its JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "catalog/kernel_spec.h"
#include "kspec_test_util.h"

static const kspec_limits LIMITS = {{4, 32768, 1048576, 8388608, 256}};

static const char AXPY_SPEC[] =
    "{\"name\": \"axpy\","
    " \"problem\": [{\"name\": \"n\", \"min\": 1, \"max\": 4096, \"default\": 64},"
    "              {\"name\": \"a\", \"type\": \"float\", \"min\": -10, \"max\": 10.5, "
    "\"default\": 2.5}],"
    " \"buffers\": [{\"name\": \"x\", \"elements\": \"n\", \"role\": \"input\", \"dtype\": "
    "\"f64\", \"init\": {\"kind\": \"normal\", \"mean\": 0, \"std\": 1}},"
    "               {\"name\": \"idx\", \"elements\": \"n\", \"role\": \"input\", \"dtype\": "
    "\"i32\", \"init\": {\"kind\": \"iota\"}},"
    "               {\"name\": \"h\", \"elements\": \"n\", \"role\": \"input\", \"dtype\": "
    "\"f16\"},"
    "               {\"name\": \"y\", \"elements\": \"n\", \"role\": \"output\", \"dtype\": "
    "\"f64\", \"tolerance\": {\"rtol\": 1e-12, \"atol\": 0}},"
    "               {\"name\": \"c\", \"elements\": \"n\", \"role\": \"output\", \"dtype\": "
    "\"i64\"}],"
    " \"scalars\": [{\"name\": \"alpha\", \"type\": \"f64\", \"value\": \"a*2\"},"
    "               {\"name\": \"count\", \"type\": \"i32\", \"value\": \"n\"}],"
    " \"metrics\": [{\"name\": \"gflops\", \"value\": \"2*n / (time_ms * 1e6)\"}],"
    " \"flops\": \"2*n*a\","
    " \"variants\": {\"cpu\": {\"source\": \"cpu.c\", \"entry\": \"axpy\","
    "   \"arguments\": [\"y\", \"x\", \"alpha\", \"n\", \"a\", \"count\"],"
    "   \"openmp\": true, \"threads\": \"NT\","
    "   \"parameters\": [{\"name\": \"NT\", \"values\": [1, 2, 4, 8]},"
    "                    {\"name\": \"B\", \"values\": [1, 2]}],"
    "   \"restrictions\": [\"B < a\"],"
    "   \"default\": {\"NT\": 1, \"B\": 1}}}}";

static kernel_spec *load(const fixture *f, const char *spec, char *why, size_t cap)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {&LIMITS, NULL};
    write_file(f->dir, "spec.json", spec);
    return kernel_spec_load(f->dir, limits, why, cap);
}

static kernel_spec *load_ok(const fixture *f, const char *spec)
{
    char why[1024];
    kernel_spec *k = load(f, spec, why, sizeof why);
    if (!k)
        fail_msg("kernel_spec_load: %s", why);
    return k;
}

/* AXPY_SPEC with the first occurrence of from replaced by to (malloc'd). */
static char *edited(const char *from, const char *to)
{
    const char *at = strstr(AXPY_SPEC, from);
    if (!at)
        fail_msg("'%s' is not in the spec", from);
    size_t n = strlen(AXPY_SPEC) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - AXPY_SPEC), AXPY_SPEC, to, at + strlen(from));
    return s;
}

/* The edited spec is refused with exactly want. */
static void expect_message(const fixture *f, const char *from, const char *to, const char *want)
{
    char why[1024];
    char *s = edited(from, to);
    kernel_spec *k = load(f, s, why, sizeof why);
    if (k)
        fail_msg("spec loaded but should not have: %s", s);
    if (strcmp(why, want) != 0)
        fail_msg("message\n  '%s'\nwanted\n  '%s'", why, want);
    free(s);
}

static void interface_spec_loads(void **state)
{
    fixture *f = *state;
    kernel_spec *k = load_ok(f, AXPY_SPEC);
    assert_int_equal(k->n_args, 2);
    assert_false(k->args[0].is_float);
    assert_true(k->args[1].is_float);
    assert_true(k->args[1].fmax == 10.5 && k->args[1].fdef == 2.5);
    assert_int_equal(k->buffers[0].dtype, KT_F64);
    assert_int_equal(k->buffers[0].init.kind, KSPEC_INIT_NORMAL);
    assert_true(k->buffers[0].init.b == 1.0);
    assert_int_equal(k->buffers[1].dtype, KT_I32);
    assert_int_equal(k->buffers[1].init.kind, KSPEC_INIT_IOTA);
    assert_int_equal(k->buffers[2].dtype, KT_F16);
    assert_int_equal(k->buffers[2].init.kind, KSPEC_INIT_DEFAULT);
    /* tolerances: the buffer's own; an integer output without one is exact */
    assert_true(k->buffers[3].rtol == 1e-12 && k->buffers[3].atol == 0);
    assert_true(k->buffers[4].rtol == 0 && k->buffers[4].atol == 0);
    /* neither verify nor reference: the default configuration's output is the answer */
    assert_int_equal(k->ref_kind, KSPEC_REF_NONE);
    assert_int_equal(k->verify, KSPEC_VERIFY_DEFAULT);
    assert_string_equal(kernel_spec_verify_name(k->verify), "default");
    assert_int_equal(k->n_scalars, 2);
    assert_int_equal(k->scalars[0].type, KT_F64);
    assert_int_equal(k->scalars[1].type, KT_I32);
    assert_int_equal(k->n_metrics, 1);
    const kspec_variant *v = &k->variants[KSPEC_CPU];
    assert_string_equal(v->entry, "axpy");
    assert_int_equal(v->n_call_args, 6);
    assert_int_equal(v->call_args[0].kind, KSPEC_CALL_BUFFER);
    assert_int_equal(v->call_args[0].index, 3);
    assert_int_equal(v->call_args[2].kind, KSPEC_CALL_SCALAR);
    assert_int_equal(v->call_args[2].index, 0);
    assert_int_equal(v->call_args[3].kind, KSPEC_CALL_PROBLEM);
    assert_int_equal(v->call_args[4].index, 1);
    assert_true(v->openmp);
    assert_int_equal(v->threads_param, 0);
    assert_string_equal(v->restrictions_text, "[\"B < a\",\"NT <= cores\"]");
    kernel_spec_free(k);

    /* the existing kernel without any of it: f32 buffers, reference, no generated call */
    k = load_ok(f, VALID_SPEC);
    assert_int_equal(k->buffers[0].dtype, KT_F32);
    assert_int_equal(k->verify, KSPEC_VERIFY_REFERENCE);
    assert_true(k->buffers[1].rtol == 1e-6 && k->buffers[1].atol == 1e-7);
    assert_int_equal(k->variants[KSPEC_CPU].n_call_args, -1);
    assert_false(k->variants[KSPEC_CPU].openmp);
    kernel_spec_free(k);
}

static void float_arguments_and_scalars(void **state)
{
    fixture *f = *state;
    kernel_spec *k = load_ok(f, AXPY_SPEC);
    kspec_problem p;
    kt_error err;
    kt_error_clear(&err);
    /* defaults: a = 2.5, alpha = a*2, count = n */
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    assert_true(p.fvalues[1] == 2.5);
    assert_true(p.scalars[0] == 5.0);
    assert_true(p.scalars[1] == 64.0);
    assert_true(p.flops == 2 * 64 * 2.5);
    json_t *pr = json_pack("{s:i, s:f}", "n", 100, "a", 0.75);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), 0);
    json_decref(pr);
    assert_true(p.fvalues[1] == 0.75 && p.scalars[0] == 1.5 && p.values[0] == 100);
    /* the canonical problem (and so the problem key) keeps a float a real */
    json_t *canon = kernel_spec_problem_json(k, &p);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"a\":0.75,\"n\":100}");
    free(text);
    json_decref(canon);
    /* an integer given for a float argument is that number */
    pr = json_pack("{s:i}", "a", 3);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), 0);
    json_decref(pr);
    assert_true(p.fvalues[1] == 3.0);
    /* restrictions see the float: B < a holds for B = 1 and 2 at a = 3, only B = 1 at a = 1.5 */
    space *sp = kernel_spec_space(k, KSPEC_CPU, &p, &LIMITS, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 3 * 2); /* NT <= cores (4, added by "threads"): 1, 2, 4 */
    space_free(sp);
    pr = json_pack("{s:f}", "a", 1.5);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), 0);
    json_decref(pr);
    sp = kernel_spec_space(k, KSPEC_CPU, &p, &LIMITS, &err);
    assert_int_equal(space_count(sp), 3);
    space_free(sp);
    /* out of range, and not a number */
    pr = json_pack("{s:f}", "a", 11.0);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), -1);
    assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
    assert_non_null(strstr(err.message, "problem argument a must be a number in [-10, 10.5]"));
    json_decref(pr);
    pr = json_pack("{s:s}", "a", "x");
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), -1);
    json_decref(pr);
    /* metrics: over the problem and time_ms */
    kernel_spec_problem(k, NULL, &p, &err);
    json_t *m = kernel_spec_metrics_json(k, &p, 0.5);
    assert_true(fabs(json_real_value(json_object_get(m, "gflops")) - 128.0 / 0.5e6) < 1e-15);
    json_decref(m);
    kernel_spec_free(k);
}

static void scalar_values_are_checked_per_problem(void **state)
{
    fixture *f = *state;
    char *s = edited("\"value\": \"n\"}", "\"value\": \"n/3\"}");
    kernel_spec *k = NULL;
    char why[1024];
    /* the default problem (n = 64) gives count = 21.33..., not an i32: refused at load */
    k = load(f, s, why, sizeof why);
    assert_null(k);
    assert_string_equal(why, "spec.json: problem: the default problem: for this problem scalar "
                             "count = n/3 is not a finite i32 value");
    free(s);
}

static void data_files_are_sized_and_hashed(void **state)
{
    fixture *f = *state;
    char bytes[64 * 8];
    memset(bytes, 0, sizeof bytes);
    char path[256];
    snprintf(path, sizeof path, "%s/x.bin", f->dir);
    FILE *fp = fopen(path, "wb");
    fwrite(bytes, 1, sizeof bytes, fp); /* 64 doubles: the default problem's n */
    fclose(fp);
    char *s = edited("\"init\": {\"kind\": \"normal\", \"mean\": 0, \"std\": 1}",
                     "\"init\": {\"kind\": \"file\", \"file\": \"x.bin\"}");
    kernel_spec *k = load_ok(f, s);
    assert_int_equal(k->buffers[0].init.kind, KSPEC_INIT_FILE);
    assert_int_equal(k->buffers[0].init.file.bytes, 512);
    assert_non_null(strstr(k->buffers[0].init.file.path, "/vadd/x.bin"));
    char hash[KFILES_VERSION_LEN + 1];
    snprintf(hash, sizeof hash, "%s", k->variants[KSPEC_CPU].hash);
    /* another problem size does not fit the file */
    kspec_problem p;
    kt_error err;
    json_t *pr = json_pack("{s:i}", "n", 65);
    assert_int_equal(kernel_spec_problem(k, pr, &p, &err), -1);
    assert_string_equal(err.message,
                        "buffers.x: for this problem the buffer has 65 f64 elements "
                        "(elements = n), but its data file x.bin holds 64 (512 bytes)");
    json_decref(pr);
    kernel_spec_free(k);
    /* other bytes: another version of the kernel */
    bytes[0] = 1;
    fp = fopen(path, "wb");
    fwrite(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    k = load_ok(f, s);
    assert_string_not_equal(k->variants[KSPEC_CPU].hash, hash);
    kernel_spec_free(k);
    /* not a whole number of elements */
    fp = fopen(path, "wb");
    fwrite(bytes, 1, 13, fp);
    fclose(fp);
    char why[1024];
    assert_null(load(f, s, why, sizeof why));
    assert_string_equal(why, "spec.json: buffers[0].init.file: holds 13 bytes, not a whole number "
                             "of f64 elements (8 bytes each, raw little-endian)");
    free(s);
    /* an answer file for each output */
    fp = fopen(path, "wb");
    fwrite(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    s = edited("\"flops\"", "\"verify\": {\"kind\": \"answer\", \"buffers\": {\"y\": {\"file\": "
                            "\"x.bin\"}, \"c\": {\"file\": \"x.bin\"}}}, \"flops\"");
    k = load_ok(f, s);
    assert_int_equal(k->verify, KSPEC_VERIFY_ANSWER);
    assert_non_null(k->buffers[3].answer.path);
    assert_int_equal(k->buffers[4].answer.bytes, 512);
    kernel_spec_free(k);
    free(s);
}

static void each_error_names_its_path(void **state)
{
    fixture *f = *state;
    expect_message(f, "\"dtype\": \"f16\"", "\"dtype\": \"f128\"",
                   "spec.json: buffers[2].dtype: must be one of f16, bf16, f32, f64, i8, i16, "
                   "i32, i64, u8");
    expect_message(f, "\"dtype\": \"i32\", \"init\": {\"kind\": \"iota\"}",
                   "\"dtype\": \"i32\", \"init\": {\"kind\": \"ramp\"}",
                   "spec.json: buffers[1].init.kind: must be one of uniform, normal, constant, "
                   "iota, zeros, file, data");
    expect_message(f, "\"init\": {\"kind\": \"iota\"}",
                   "\"init\": {\"kind\": \"uniform\", \"min\": 3, \"max\": 1}",
                   "spec.json: buffers[1].init: min 3 is greater than max 1");
    expect_message(f, "\"init\": {\"kind\": \"iota\"}", "\"init\": {\"kind\": \"iota\", \"x\": 1}",
                   "spec.json: buffers[1].init.x: unknown field; accepted: kind");
    expect_message(f, "\"dtype\": \"f16\"}", "\"dtype\": \"f16\", \"tolerance\": {\"rtol\": 1}}",
                   "spec.json: buffers[2].tolerance.atol: missing");
    expect_message(f, "\"dtype\": \"f16\"}",
                   "\"dtype\": \"f16\", \"tolerance\": {\"rtol\": 1, \"atol\": 0}}",
                   "spec.json: buffers[2].tolerance: only an output buffer is compared");
    expect_message(f, "\"type\": \"f64\", \"value\": \"a*2\"",
                   "\"type\": \"f16\", \"value\": \"a*2\"",
                   "spec.json: scalars[0].type: must be one of f32, f64, i32, i64");
    expect_message(f, "\"value\": \"a*2\"", "\"value\": \"a*q\"",
                   "spec.json: scalars[0].value: unknown name 'q' at column 3: parameters: n, a "
                   "(in 'a*q')");
    expect_message(f, "{\"name\": \"alpha\"", "{\"name\": \"x\"",
                   "spec.json: scalars[0].name: 'x' is also a buffer");
    /* the entries of an array: objects, names that are identifiers, each once */
    expect_message(f, "{\"name\": \"count\"", "{\"name\": \"alpha\"",
                   "spec.json: scalars[1].name: 'alpha' is listed twice");
    expect_message(f, "{\"name\": \"c\"", "{\"name\": \"y\"",
                   "spec.json: buffers[4].name: 'y' is listed twice");
    expect_message(f, "{\"name\": \"c\"", "{\"name\": \"2c\"",
                   "spec.json: buffers[4].name: \"2c\" must start with a letter or '_'");
    expect_message(f, "[{\"name\": \"gflops\", \"value\": \"2*n / (time_ms * 1e6)\"}]",
                   "[{\"name\": \"gflops\", \"value\": \"n\"}, {\"name\": \"gflops\", "
                   "\"value\": \"n\"}]",
                   "spec.json: metrics[1].name: 'gflops' is listed twice");
    expect_message(f, "[{\"name\": \"gflops\", \"value\": \"2*n / (time_ms * 1e6)\"}]", "[3]",
                   "spec.json: metrics[0]: must be an object {\"name\", \"value\"}");
    expect_message(f, "{\"name\": \"count\", \"type\": \"i32\", \"value\": \"n\"}", "[]",
                   "spec.json: scalars[1]: must be an object {\"name\", \"type\", \"value\"}");
    expect_message(f, "\"2*n / (time_ms * 1e6)\"", "\"2*n / (time * 1e6)\"",
                   "spec.json: metrics[0].value: unknown name 'time' at column 8: parameters: n, "
                   "a, time_ms (in '2*n / (time * 1e6)')");
    expect_message(f, "\"flops\"", "\"verify\": {\"kind\": \"golden\"}, \"flops\"",
                   "spec.json: verify.kind: must be one of reference, default, answer, none");
    expect_message(f, "\"flops\"", "\"verify\": {\"kind\": \"reference\"}, \"flops\"",
                   "spec.json: verify.kind: \"reference\" needs a \"reference\" section: add one, "
                   "or verify against \"default\" or \"answer\"");
    expect_message(f, "\"flops\"",
                   "\"verify\": {\"kind\": \"answer\", \"buffers\": {\"x\": {\"file\": "
                   "\"cpu.c\"}}}, \"flops\"",
                   "spec.json: verify.buffers.x: not an output buffer of the kernel");
    expect_message(f, "\"flops\"",
                   "\"verify\": {\"kind\": \"answer\", \"buffers\": {\"y\": {\"file\": "
                   "\"no.bin\"}}}, \"flops\"",
                   "spec.json: verify.buffers.y.file: 'no.bin': No such file or directory");
    expect_message(f, "\"count\"]", "\"cnt\"]",
                   "spec.json: variants.cpu.arguments[5]: 'cnt' is not a buffer, scalar or "
                   "problem argument of the kernel");
    expect_message(f, "\"entry\": \"axpy\",", "",
                   "spec.json: variants.cpu.entry: missing (a generated call needs both \"entry\" "
                   "and \"arguments\")");
    expect_message(f, "\"threads\": \"NT\"", "\"threads\": \"T\"",
                   "spec.json: variants.cpu.threads: must name a parameter of the variant (the "
                   "thread count)");
    expect_message(f, "\"openmp\": true", "\"openmp\": false",
                   "spec.json: variants.cpu.threads: needs \"openmp\": true");
    expect_message(f, "\"type\": \"float\"", "\"type\": \"double\"",
                   "spec.json: problem[1].type: must be \"int\" (the default) or \"float\"");
    expect_message(f, "\"default\": 2.5", "\"default\": 12.5",
                   "spec.json: problem[1].default: 12.5 is outside [-10, 10.5]");
    /* a CUDA variant takes dtypes, inits, scalars and float arguments, but verifies against a
     * reference only: refused at load, saying so */
    write_file(f->dir, "cuda.cu", "extern \"C\" __global__ void k() {}\n");
    expect_message(f, "\"variants\": {",
                   "\"variants\": {\"cuda\": {\"source\": \"cuda.cu\", \"entry\": \"k\", "
                   "\"parameters\": [{\"name\": \"T\", \"values\": [32]}], \"block\": [\"T\", "
                   "\"1\", \"1\"], \"grid\": [\"1\", \"1\", \"1\"], \"default\": {\"T\": 32}}, ",
                   "spec.json: variants.cuda: a CUDA variant verifies against a reference only "
                   "(verify is \"default\")");
}

/* tests/kernels/typed_cuda: a CUDA variant with f64 and i32 buffers and their inits, a float
 * problem argument and f32 / i32 scalars loads (runner/cuda_args.h packs them). */
static void cuda_variant_takes_the_interface(void **state)
{
    (void)state;
    char why[1024];
    const kspec_limits *lim[KSPEC_N_KINDS] = {NULL, NULL};
    kernel_spec *k =
        kernel_spec_load(KT_SOURCE_DIR "/tests/kernels/typed_cuda", lim, why, sizeof why);
    if (!k)
        fail_msg("%s", why);
    assert_true(k->variants[KSPEC_CUDA].present);
    assert_int_equal(k->n_buffers, 3);
    assert_int_equal(k->buffers[0].dtype, KT_F64);
    assert_int_equal(k->buffers[2].dtype, KT_I32);
    assert_int_equal(k->n_scalars, 2);
    assert_int_equal(k->scalars[0].type, KT_F32);
    assert_true(k->args[1].is_float);
    kernel_spec_free(k);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(interface_spec_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(float_arguments_and_scalars, setup, teardown),
        cmocka_unit_test_setup_teardown(scalar_values_are_checked_per_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(data_files_are_sized_and_hashed, setup, teardown),
        cmocka_unit_test_setup_teardown(each_error_names_its_path, setup, teardown),
        cmocka_unit_test(cuda_variant_takes_the_interface),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
