/* Unit tests of catalog/kernel_spec: specs written into a temporary folder load, each class of
 * error is skipped with a message naming the file and field, problems are validated, spaces see the
 * problem and device limits as constants, kernel_hash follows the sources; and a catalog built over
 * device records handed to it (no runner) offers the kernels on them. The real devices probed with
 * a fake ktune-runner and the real backend are in test_measure_real.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "catalog/catalog.h"
#include "catalog/kernel_spec.h"
#include "kspec_test_util.h"

/* The L1 of the fake runner's cpu is 256 bytes; other limits are generous. */
static const kspec_limits CPU_LIMITS = {{4, 256, 1048576, 8388608, 256}};

static kernel_spec *load_ok(const char *dir, const kspec_limits *cpu)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {cpu, NULL};
    char why[1024];
    kernel_spec *k = kernel_spec_load(dir, limits, why, sizeof why);
    if (!k)
        fail_msg("kernel_spec_load(%s): %s", dir, why);
    return k;
}

/* Loads spec text (written over spec.json) and expects a failure whose message holds every one
 * of the NULL-terminated needles. */
static void expect_skip(const fixture *f, const char *spec, ...)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {&CPU_LIMITS, NULL};
    char why[1024];
    va_list ap;
    write_file(f->dir, "spec.json", spec);
    kernel_spec *k = kernel_spec_load(f->dir, limits, why, sizeof why);
    if (k)
        fail_msg("spec loaded but should not have: %s", spec);
    va_start(ap, spec);
    for (const char *needle = va_arg(ap, const char *); needle; needle = va_arg(ap, const char *)) {
        if (!strstr(why, needle))
            fail_msg("message '%s' lacks '%s'", why, needle);
    }
    va_end(ap);
    write_file(f->dir, "spec.json", VALID_SPEC);
}

/* VALID_SPEC with the first occurrence of from replaced by to. */
static char *edited(const char *from, const char *to)
{
    const char *at = strstr(VALID_SPEC, from);
    if (!at)
        fail_msg("'%s' is not in the spec", from);
    size_t n = strlen(VALID_SPEC) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - VALID_SPEC), VALID_SPEC, to, at + strlen(from));
    return s;
}

static void expect_skip_edit(const fixture *f, const char *from, const char *to,
                             const char *needle1, const char *needle2)
{
    char *s = edited(from, to);
    expect_skip(f, s, needle1, needle2, (const char *)NULL);
    free(s);
}

/* --- kernel specs --------------------------------------------------------------------------- */

static void valid_spec_loads(void **state)
{
    fixture *f = *state;
    kernel_spec *k = load_ok(f->dir, &CPU_LIMITS);
    assert_string_equal(k->name, "vadd");
    assert_string_equal(k->summary, "y = x + x");
    assert_int_equal(k->n_args, 2);
    assert_string_equal(k->args[1].name, "m");
    assert_int_equal(k->args[1].max, 64);
    assert_int_equal(k->n_buffers, 2);
    assert_int_equal(k->buffers[1].role, KSPEC_OUTPUT);
    assert_int_equal(k->ref_kind, KSPEC_REF_C);
    assert_string_equal(k->ref_source, "reference.c"); /* a name among the kernel's files */
    assert_non_null(kernel_files_get(k->files, "reference.c", NULL));
    assert_int_equal(strlen(k->version), KFILES_VERSION_LEN);
    assert_true(k->variants[KSPEC_CPU].present);
    assert_false(k->variants[KSPEC_CUDA].present);
    const kspec_variant *v = &k->variants[KSPEC_CPU];
    assert_string_equal(v->source, "cpu.c");
    assert_int_equal(v->n_params, 2);
    assert_string_equal(v->param_names[1], "B");
    assert_int_equal(strlen(v->hash), KFILES_VERSION_LEN);
    assert_string_equal(k->test_problem_text, "{\"n\":64,\"m\":1}");
    assert_string_equal(v->default_text, "{\"B\":16,\"U\":1}");
    kernel_spec_free(k);
    /* Without device limits the spec loads too (the default is checked by value lists). */
    k = load_ok(f->dir, NULL);
    kernel_spec_free(k);
}

static void each_error_is_skipped_with_its_message(void **state)
{
    fixture *f = *state;
    expect_skip(f, "{\"name\": \"vadd\",", "spec.json", "not valid JSON", "line 1", NULL);
    expect_skip(f, "[1, 2]", "spec.json", "must hold a JSON object", NULL);
    /* missing fields */
    expect_skip_edit(f, "\"flops\": \"2*n*m\", ", "", "spec.json", "flops: missing");
    expect_skip_edit(f, ", \"role\": \"output\"", "", "buffers[1].role: missing", NULL);
    expect_skip_edit(f, "\"default\": {\"U\": 1, \"B\": 16}", "\"default\": {\"U\": 1}",
                     "variants.cpu.default: is not valid", "lacks parameter B");
    /* unknown fields, everywhere */
    expect_skip_edit(f, "\"summary\"", "\"colour\": 1, \"summary\"",
                     "spec.json: colour: unknown field", "accepted: name, summary");
    expect_skip_edit(f, "\"source\": \"cpu.c\"", "\"source\": \"cpu.c\", \"flags\": \"-O2\"",
                     "spec.json: variants.cpu.flags: unknown field", NULL);
    expect_skip_edit(f, "\"variants\": {\"cpu\"", "\"variants\": {\"opencl\": {}, \"cpu\"",
                     "variants.opencl: unknown field", "accepted: cpu, cuda");
    /* bad expressions name the field and the column */
    expect_skip_edit(f, "\"U*B <= 256\"", "\"U*B <= \"",
                     "variants.cpu.restrictions[0]: unexpected end of expression at column 8",
                     "(in 'U*B <= ')");
    expect_skip_edit(f, "\"2*n*m\"", "\"2*n*q\"", "spec.json: flops: unknown name 'q' at column 5",
                     "(in '2*n*q')");
    expect_skip_edit(f, "\"n*m <= 1048576\"", "\"n*m <= (1\"", "problem_restrictions[0]", "column");
    expect_skip_edit(f, "\"elements\": \"n*m\"", "\"elements\": \"n*U\"", "buffers[0].elements",
                     "unknown name 'U'");
    /* defaults that are not valid: a value off the list, a restriction (with the device's L1) */
    expect_skip_edit(f, "\"default\": {\"U\": 1,", "\"default\": {\"U\": 3,",
                     "variants.cpu.default: is not valid", "parameter U");
    expect_skip_edit(f, "\"default\": {\"U\": 1, \"B\": 16}", "\"default\": {\"U\": 1, \"B\": 128}",
                     "variants.cpu.default: is not valid for the default problem", "restriction 1");
    expect_skip_edit(f, "\"test_problem\": {\"n\": 64,", "\"test_problem\": {\"n\": 8,",
                     "default: is not valid for the test problem", "B <= n");
    expect_skip_edit(f, "\"default\": 1024}", "\"default\": 0}", "problem[0].default: 0",
                     "outside [1, 1048576]");
    /* references */
    expect_skip_edit(f, "{\"kind\": \"c\", \"source\": \"reference.c\"}", "{\"kind\": \"magic\"}",
                     "reference.kind: 'magic' is not known", "openblas_sgemm, c");
    expect_skip_edit(f, "{\"kind\": \"c\", \"source\": \"reference.c\"}",
                     "{\"kind\": \"openblas_sgemm\"}", "openblas_sgemm needs the problem arguments",
                     NULL);
    /* sources, names, types */
    expect_skip_edit(f, "\"source\": \"cpu.c\"", "\"source\": \"nosuch.c\"",
                     "variants.cpu.source: 'nosuch.c'", NULL);
    expect_skip_edit(f, "\"source\": \"cpu.c\"", "\"source\": \"../vadd/cpu.c\"", "plain file name",
                     NULL);
    expect_skip_edit(f, "{\"name\": \"U\", \"values\": [1, 2, 4, 8]}",
                     "{\"name\": \"n\", \"values\": [1, 2, 4, 8]}",
                     "'n' is also a problem argument", NULL);
    expect_skip_edit(f, "[1, 2, 4, 8]", "[1, 2.5]", "parameters[0].values[1]: must be an integer",
                     NULL);
    expect_skip_edit(f, "\"min\": 1, \"max\": 64", "\"min\": \"1\", \"max\": 64",
                     "problem[1].min: must be an integer", NULL);
    expect_skip_edit(f, "\"variants\": {\"cpu\"", "\"variants\": {}, \"x\": {\"cpu\"",
                     "spec.json: x: unknown field", NULL);
    /* The good spec still loads after all of that. */
    kernel_spec_free(load_ok(f->dir, &CPU_LIMITS));
}

/* VALID_SPEC with from replaced by to must be refused with exactly the message want: the file,
 * then the JSON path of the offending value, then what is wrong and what to write (issue 27: the
 * message reaches the caller of the API, who must find the value without the server's log). */
static void expect_message(const fixture *f, const char *from, const char *to, const char *want)
{
    const kspec_limits *limits[KSPEC_N_KINDS] = {&CPU_LIMITS, NULL};
    char why[1024];
    char *s = edited(from, to);
    write_file(f->dir, "spec.json", s);
    kernel_spec *k = kernel_spec_load(f->dir, limits, why, sizeof why);
    if (k)
        fail_msg("spec loaded but should not have: %s", s);
    if (strcmp(why, want) != 0)
        fail_msg("message\n  '%s'\nwanted\n  '%s'", why, want);
    free(s);
    write_file(f->dir, "spec.json", VALID_SPEC);
}

static void errors_name_the_field_path_first(void **state)
{
    fixture *f = *state;
    expect_message(f, "{\"name\": \"x\"", "{\"name\": \"in\"",
                   "spec.json: buffers[0].name: \"in\" is a Python keyword; expressions could "
                   "not name it: choose another name");
    expect_message(f, "{\"name\": \"U\"", "{\"name\": \"2U\"",
                   "spec.json: variants.cpu.parameters[0].name: \"2U\" must start with a letter "
                   "or '_'");
    expect_message(f, "{\"name\": \"m\"", "{\"name\": \"m-1\"",
                   "spec.json: problem[1].name: \"m-1\" may hold only letters, digits and '_'");
    expect_message(f, "\"B*4 <= l1d_bytes\"", "\"B*4 <= l1d_bytes && B > 1\"",
                   "spec.json: variants.cpu.restrictions[1]: unexpected '&' at column 19: write "
                   "\"and\" (in 'B*4 <= l1d_bytes && B > 1')");
    expect_message(f, "\"B <= n\"", "\"!(B > n)\"",
                   "spec.json: variants.cpu.restrictions[2]: unexpected character '!' at column 1: "
                   "write \"not\" (in '!(B > n)')");
    expect_message(f, "\"U*B <= 256\"", "\"U*B <= 256 || B < 4\"",
                   "spec.json: variants.cpu.restrictions[0]: unexpected '|' at column 13: write "
                   "\"or\" (in 'U*B <= 256 || B < 4')");
    expect_message(
        f, "\"elements\": \"n*m\"", "\"elements\": \"n*U\"",
        "spec.json: buffers[0].elements: unknown name 'U' at column 3: parameters: n, m (in "
        "'n*U')");
    expect_message(f, "\"min\": 1, \"max\": 64", "\"min\": \"1\", \"max\": 64",
                   "spec.json: problem[1].min: must be an integer");
    expect_message(f, "\"summary\"", "\"colour\": 1, \"summary\"",
                   "spec.json: colour: unknown field; accepted: name, summary, problem, "
                   "problem_restrictions, buffers, flops, tolerance, reference, variants, "
                   "test_problem, scalars, metrics, verify");
    expect_message(f, "\"rtol\": 1e-6", "\"rtol\": -1",
                   "spec.json: tolerance.rtol: must be a number >= 0");
    expect_message(f, "\"test_problem\": {\"n\": 64,", "\"test_problem\": {\"n\": 8,",
                   "spec.json: variants.cpu.default: is not valid for the test problem: the "
                   "configuration violates restriction 2 'B <= n'");
    kernel_spec_free(load_ok(f->dir, &CPU_LIMITS));
}

/* "default" as a list of {"when", "config"}: the first entry whose "when" holds on the device's
 * limits is its default (the last, without "when", when none holds or no limits are known); each
 * entry is validated, the chosen one against the device's space. */
static void default_list_picks_by_device_limits(void **state)
{
    fixture *f = *state;
    const char *plain = "\"default\": {\"U\": 1, \"B\": 16}";
    char *s =
        edited(plain, "\"default\": [{\"when\": \"l1d_bytes >= 4096\", \"config\": {\"U\": 1, "
                      "\"B\": 64}}, {\"when\": \"vector_bits >= 256 and cores > 2\", "
                      "\"config\": {\"U\": 2, \"B\": 32}}, {\"config\": {\"U\": 4, \"B\": "
                      "16}}]");
    write_file(f->dir, "spec.json", s);
    kernel_spec *k = load_ok(f->dir, &CPU_LIMITS); /* L1 256 bytes, 4 cores, 256 bits */
    const kspec_variant *v = &k->variants[KSPEC_CPU];
    assert_int_equal(v->n_defaults, 3);
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, &CPU_LIMITS), "{\"B\":32,\"U\":2}");
    kspec_limits big_l1 = CPU_LIMITS, small = CPU_LIMITS;
    big_l1.v[1] = 32768;
    small.v[0] = 2;
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, &big_l1), "{\"B\":64,\"U\":1}");
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, &small), "{\"B\":16,\"U\":4}");
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, NULL), "{\"B\":16,\"U\":4}");
    assert_string_equal(v->default_text, "{\"B\":16,\"U\":4}");
    kernel_spec_free(k);
    k = load_ok(f->dir, NULL); /* no limits: values only */
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, NULL), "{\"B\":16,\"U\":4}");
    kernel_spec_free(k);
    free(s);
    /* the plain object keeps working */
    write_file(f->dir, "spec.json", VALID_SPEC);
    k = load_ok(f->dir, &CPU_LIMITS);
    assert_int_equal(k->variants[KSPEC_CPU].n_defaults, 0);
    assert_string_equal(kernel_spec_default(k, KSPEC_CPU, &CPU_LIMITS), "{\"B\":16,\"U\":1}");
    kernel_spec_free(k);
    /* refused: the picked entry is not valid on the device (B*4 <= l1d_bytes), a "when" on the
     * last entry, none on an earlier one, an unknown name, a bad config, an empty list */
    expect_skip_edit(
        f, plain,
        "\"default\": [{\"when\": \"cores >= 4\", \"config\": {\"U\": 1, \"B\": 128}}, "
        "{\"config\": {\"U\": 1, \"B\": 16}}]",
        "default: is not valid for the default problem", "restriction 1");
    expect_skip_edit(f, plain,
                     "\"default\": [{\"when\": \"cores >= 4\", \"config\": {\"U\": 1, \"B\": 16}}]",
                     "default[0].when: the last entry is the fallback", NULL);
    expect_skip_edit(f, plain,
                     "\"default\": [{\"config\": {\"U\": 1, \"B\": 16}}, {\"config\": {\"U\": 1, "
                     "\"B\": 16}}]",
                     "default[0].when: missing", NULL);
    expect_skip_edit(f, plain,
                     "\"default\": [{\"when\": \"U > 1\", \"config\": {\"U\": 1, \"B\": 16}}, "
                     "{\"config\": {\"U\": 1, \"B\": 16}}]",
                     "default[0].when", "unknown name 'U'");
    expect_skip_edit(f, plain,
                     "\"default\": [{\"when\": 7, \"config\": {\"U\": 1, \"B\": 16}}, "
                     "{\"config\": {\"U\": 1, \"B\": 16}}]",
                     "default[0].when: must be an expression", NULL);
    expect_skip_edit(f, plain, "\"default\": [{\"config\": {\"U\": 3, \"B\": 16}}]",
                     "default[0].config: is not valid", "parameter U");
    expect_skip_edit(f, plain, "\"default\": [{\"config\": {\"U\": 1, \"B\": 16}, \"if\": 1}]",
                     "default[0].if: unknown field", NULL);
    expect_skip_edit(f, plain, "\"default\": []", "list of 1 to 8 entries", NULL);
    kernel_spec_free(load_ok(f->dir, &CPU_LIMITS));
}

/* The catalog's gemm (kernels/gemm/spec.json) loads on CPUs of every ISA and cache shape: the
 * default its list gives each (kernel_spec_load checks it against the device's space) is valid. */
static void gemm_default_is_valid_on_every_isa(void **state)
{
    (void)state;
    static const struct {
        kspec_limits lim;
        const char *want; /* a fragment of the default picked */
    } cpus[] = {
        {{{2, 32768, 1048576, 33554432, 512}},
         "\"KC\":512,\"LOOP\":1,\"MC\":192,\"MR\":6,\"NC\":512,\"NR\":64"},
        {{{8, 49152, 524288, 8388608, 512}}, "\"NC\":256,\"NR\":64"},
        {{{4, 32768, 262144, 6291456, 256}}, "\"NC\":256,\"NR\":16"},
        {{{16, 32768, 1048576, 16777216, 256}}, "\"NC\":512,\"NR\":16"},
        {{{4, 32768, 262144, 0, 128}}, "\"NR\":8"},
        {{{1, 0, 0, 0, 512}}, "\"NR\":64"}, /* caches unknown */
        {{{1, 0, 0, 0, 128}}, "\"NR\":8"},
    };
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        kernel_spec *k = load_ok(KT_SOURCE_DIR "/kernels/gemm", &cpus[i].lim);
        const char *def = kernel_spec_default(k, KSPEC_CPU, &cpus[i].lim);
        if (!strstr(def, cpus[i].want))
            fail_msg("cpu %zu: default %s lacks %s", i, def, cpus[i].want);
        kernel_spec_free(k);
    }
}

static void problems_are_validated(void **state)
{
    fixture *f = *state;
    kernel_spec *k = load_ok(f->dir, &CPU_LIMITS);
    kspec_problem p;
    kt_error err;
    static const struct {
        const char *problem, *needle1, *needle2;
    } bad[] = {
        {"{\"q\": 1}", "unknown problem argument 'q'", "accepted: n [1..1048576, default 1024], m"},
        {"{\"n\": 1.5}", "problem argument n must be an integer", NULL},
        {"{\"n\": \"12\"}", "problem argument n must be an integer", NULL},
        {"{\"n\": 0}", "n = 0 is outside its range [1, 1048576]", NULL},
        {"{\"m\": 65}", "m = 65 is outside its range [1, 64]", NULL},
        {"{\"n\": 1048576, \"m\": 2}", "violates restriction 0", "n*m <= 1048576"},
        {"[1, 2]", "must be a JSON object", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *pj = json_loads(bad[i].problem, JSON_DECODE_ANY, NULL);
        kt_error_clear(&err);
        assert_int_equal(kernel_spec_problem(k, pj, &p, &err), -1);
        assert_int_equal(err.code, KT_ERR_BAD_PROBLEM);
        if (!strstr(err.message, bad[i].needle1) ||
            (bad[i].needle2 && !strstr(err.message, bad[i].needle2)))
            fail_msg("problem %s: message '%s'", bad[i].problem, err.message);
        json_decref(pj);
    }
    /* Defaults filled; a real with an integral value is accepted; derived values computed. */
    json_t *pj = json_loads("{\"m\": 8.0}", 0, NULL);
    assert_int_equal(kernel_spec_problem(k, pj, &p, &err), 0);
    json_decref(pj);
    assert_int_equal(p.values[0], 1024);
    assert_int_equal(p.values[1], 8);
    assert_int_equal(p.elements[0], 8192);
    assert_true(p.flops == 16384.0);
    json_t *canon = kernel_spec_problem_json(k, &p);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"m\":8,\"n\":1024}");
    free(text);
    json_decref(canon);
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    assert_int_equal(p.values[1], 4);
    /* the predictors' derived features: every buffer's elements, then the flops */
    json_t *dj = kernel_spec_derived_json(k);
    text = json_dumps(dj, JSON_COMPACT);
    assert_string_equal(text, "[{\"name\":\"x\",\"expr\":\"n*m\"},{\"name\":\"y\",\"expr\":"
                              "\"n*m\"},{\"name\":\"flops\",\"expr\":\"2*n*m\"}]");
    free(text);
    json_decref(dj);
    kernel_spec_free(k);
}

static void space_sees_problem_and_limits(void **state)
{
    fixture *f = *state;
    kernel_spec *k = load_ok(f->dir, &CPU_LIMITS);
    kspec_problem p;
    kt_error err;
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    /* L1 256 bytes: B <= 64; U*B <= 256: 3 + 3 + 3 + 2 */
    space *sp = kernel_spec_space(k, KSPEC_CPU, &p, &CPU_LIMITS, &err);
    assert_non_null(sp);
    assert_int_equal(space_count(sp), 11);
    space_free(sp);
    /* A bigger L1 lets B = 128 in: + U in {1, 2} */
    kspec_limits big = CPU_LIMITS;
    big.v[1] = 32768;
    sp = kernel_spec_space(k, KSPEC_CPU, &p, &big, &err);
    assert_int_equal(space_count(sp), 13);
    space_free(sp);
    /* The problem is a constant too: B <= n with n = 32 leaves B in {16, 32} */
    json_t *pj = json_loads("{\"n\": 32}", 0, NULL);
    assert_int_equal(kernel_spec_problem(k, pj, &p, &err), 0);
    json_decref(pj);
    sp = kernel_spec_space(k, KSPEC_CPU, &p, &CPU_LIMITS, &err);
    assert_int_equal(space_count(sp), 8);
    space_free(sp);
    kernel_spec_free(k);
}

static void cuda_json_is_the_cuda_variant(void **state)
{
    fixture *f = *state;
    write_file(f->dir, "cuda.json", CUDA_JSON);
    kspec_limits cuda = {{1024, 49152, 65536, 32, 90}};
    const kspec_limits *limits[KSPEC_N_KINDS] = {&CPU_LIMITS, &cuda};
    char why[1024];
    kernel_spec *k = kernel_spec_load(f->dir, limits, why, sizeof why);
    if (!k)
        fail_msg("%s", why);
    const kspec_variant *v = &k->variants[KSPEC_CUDA];
    assert_true(v->present);
    assert_string_equal(v->entry, "vadd_kernel");
    assert_non_null(strstr(v->file, "cuda.json"));
    /* one version for the kernel: the hash of everything compiled, cuda.json included */
    assert_string_equal(v->hash, k->version);
    assert_string_equal(k->variants[KSPEC_CPU].hash, k->version);
    kspec_problem p;
    kt_error err;
    assert_int_equal(kernel_spec_problem(k, NULL, &p, &err), 0);
    space *sp = kernel_spec_space(k, KSPEC_CUDA, &p, &cuda, &err);
    assert_int_equal(space_count(sp), 4); /* T = 2048 > max_threads_per_block */
    json_t *cfg = json_pack("{s:i}", "T", 64);
    config_id id;
    assert_int_equal(space_config_from_json(sp, cfg, &id, &err), 0);
    json_decref(cfg);
    long long block[3], grid[3], shared;
    assert_int_equal(kernel_spec_launch(k, sp, id, &p, block, grid, &shared, &err), 0);
    assert_int_equal(block[0], 64);
    assert_int_equal(block[1], 1);
    assert_int_equal(grid[0], 4096 / 64);
    assert_int_equal(shared, 256);
    space_free(sp);
    kernel_spec_free(k);
    /* Errors in cuda.json name that file. */
    write_file(f->dir, "cuda.json", "{\"source\": \"cuda.cu\"}");
    k = kernel_spec_load(f->dir, limits, why, sizeof why);
    assert_null(k);
    assert_non_null(strstr(why, "cuda.json: cuda.entry: missing"));
    write_file(f->dir, "cuda.json",
               "{\"source\": \"cuda.cu\", \"entry\": \"k\", \"parameters\": "
               "[{\"name\": \"T\", \"values\": [1]}], \"block\": [\"T\"], "
               "\"grid\": [1, 1, 1], \"default\": {\"T\": 1}}");
    k = kernel_spec_load(f->dir, limits, why, sizeof why);
    assert_null(k);
    assert_non_null(strstr(why, "cuda.json: cuda.block: must be an array of 3 expressions"));
    char path[256];
    snprintf(path, sizeof path, "%s/cuda.json", f->dir);
    unlink(path);
}

static void hash_follows_the_sources(void **state)
{
    fixture *f = *state;
    char h1[KFILES_VERSION_LEN + 1], h2[sizeof h1], h3[sizeof h1], h4[sizeof h1];
    kernel_spec *k = load_ok(f->dir, &CPU_LIMITS);
    snprintf(h1, sizeof h1, "%s", k->variants[KSPEC_CPU].hash);
    kernel_spec_free(k);
    k = load_ok(f->dir, &CPU_LIMITS);
    assert_string_equal(k->variants[KSPEC_CPU].hash, h1); /* stable */
    kernel_spec_free(k);
    write_file(f->dir, "cpu.c",
               "int ktune_kernel(float *const *b, const long long *p) { return 1; }\n");
    k = load_ok(f->dir, &CPU_LIMITS);
    snprintf(h2, sizeof h2, "%s", k->variants[KSPEC_CPU].hash);
    kernel_spec_free(k);
    write_file(f->dir, "reference.c", "/* changed */\n");
    k = load_ok(f->dir, &CPU_LIMITS);
    snprintf(h3, sizeof h3, "%s", k->variants[KSPEC_CPU].hash);
    kernel_spec_free(k);
    char *spec = edited("\"summary\": \"y = x + x\"", "\"summary\": \"y = 2x\"");
    write_file(f->dir, "spec.json", spec);
    free(spec);
    k = load_ok(f->dir, &CPU_LIMITS);
    snprintf(h4, sizeof h4, "%s", k->variants[KSPEC_CPU].hash);
    kernel_spec_free(k);
    write_file(f->dir, "spec.json", VALID_SPEC);
    assert_string_not_equal(h1, h2);
    assert_string_not_equal(h2, h3);
    assert_string_not_equal(h3, h4);
    assert_string_not_equal(h1, h4);
}

/* --- a catalog over handed device records (no runner is started) ----------------------------- */

/* A calloc'd pair of records as device_discover would give: an available cpu with CPU_LIMITS and
 * the "cuda" entry that says why there is none. */
static catalog_device *handed_devices(int *n)
{
    catalog_device *d = calloc(2, sizeof *d);
    assert_non_null(d);
    snprintf(d[0].name, sizeof d[0].name, "cpu");
    d[0].kind = KSPEC_CPU;
    d[0].available = 1;
    d[0].klass = strdup("cpu:Handed_CPU:256");
    d[0].toolchain = strdup("gcc 12.2.0");
    d[0].description_text = strdup("{\"model\": \"Handed CPU\"}");
    d[0].limits = CPU_LIMITS;
    snprintf(d[1].name, sizeof d[1].name, "cuda");
    d[1].kind = KSPEC_CUDA;
    d[1].reason = strdup("no CUDA driver here");
    d[1].klass = strdup("cuda");
    d[1].description_text = strdup("{}");
    *n = 2;
    return d;
}

static void catalog_takes_handed_devices(void **state)
{
    fixture *f = *state;
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f->cache,
                                 .cpu_core = -1};
    kt_error err;
    int n = 0;
    assert_int_equal(catalog_real_check(&real, &err), 0);
    catalog_device *handed = handed_devices(&n);
    catalog *c = catalog_new_real(&opt, &real, handed, n, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    assert_int_equal(catalog_num_devices(c), 2);
    assert_true(catalog_has_real(c));
    const catalog_device *cpu = catalog_find_real(c, "cpu");
    assert_non_null(cpu);
    assert_non_null(cpu->lock);
    assert_null(catalog_find_real(c, "cuda")->lock);
    assert_string_equal(catalog_real_unavailable(c, "cuda:0"), "no CUDA driver here");
    assert_null(catalog_real_unavailable(c, "cpu"));
    assert_int_equal(catalog_measure_options(c)->min_repeats, 5);
    json_t *devs = catalog_devices_json(c);
    assert_int_equal(json_array_size(devs), 2);
    json_t *d0 = json_array_get(devs, 0);
    assert_string_equal(json_string_value(json_object_get(d0, "class")), "cpu:Handed_CPU:256");
    assert_string_equal(json_string_value(json_object_get(d0, "toolchain")), "gcc 12.2.0");
    assert_true(json_is_null(json_object_get(json_array_get(devs, 1), "toolchain")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(d0, "kernels"), 0)),
                        "vadd");
    json_decref(devs);
    target t;
    assert_int_equal(catalog_resolve(c, "vadd", "cpu", NULL, &t, &err), 0);
    assert_string_equal(t.key.device_class, "cpu:Handed_CPU:256");
    assert_string_equal(t.key.toolchain, "gcc 12.2.0");
    assert_true(t.owns_space);
    target_release(&t);
    /* The key-only resolution and a reopen give the same toolchain; another one is refused. */
    assert_int_equal(catalog_resolve_key(c, "vadd", "cpu", NULL, &t, &err), 0);
    assert_string_equal(t.key.toolchain, "gcc 12.2.0");
    target_key stored = t.key;
    stored.toolchain = "clang 17.0.6";
    target again;
    assert_int_equal(catalog_reopen(c, &stored, t.problem, &again, &err), -1);
    assert_int_equal(err.code, KT_ERR_TOOLCHAIN_CHANGED);
    assert_non_null(strstr(err.message, "clang 17.0.6"));
    stored.toolchain = "gcc 12.2.0";
    assert_int_equal(catalog_reopen(c, &stored, t.problem, &again, &err), 0);
    target_release(&again);
    target_release(&t);
    catalog_free(c);

    /* Without kernel folders the records are not used, and freed all the same. */
    real.n_kernel_dirs = 0;
    handed = handed_devices(&n);
    c = catalog_new_real(&opt, &real, handed, n, &err);
    assert_non_null(c);
    assert_int_equal(catalog_num_devices(c), 0);
    catalog_free(c);
    /* A failing catalog frees them too. */
    real.n_kernel_dirs = 1;
    real.min_repeats = -1;
    assert_int_equal(catalog_real_check(&real, &err), -1);
    assert_int_equal(err.code, KT_ERR_CONFIG);
    handed = handed_devices(&n);
    assert_null(catalog_new_real(&opt, &real, handed, n, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    /* An available device must say its toolchain: results are keyed by it. */
    real.min_repeats = 0;
    handed = handed_devices(&n);
    free(handed[0].toolchain);
    handed[0].toolchain = NULL;
    assert_null(catalog_new_real(&opt, &real, handed, n, &err));
    assert_int_equal(err.code, KT_ERR_CONFIG);
    assert_non_null(strstr(err.message, "toolchain"));
}
/* Issue 27: a kernel folder that fails to load is kept with its error. /v1/kernels lists it as
 * "invalid" with that error, and a request naming it gets kernel_invalid with the file and field
 * path, not "device cpu does not offer kernel"; the good kernel beside it is "ready". */
static void invalid_kernel_is_told_to_the_caller(void **state)
{
    fixture *f = *state;
    const char *kdirs[] = {f->kernels};
    catalog_options opt = {.n_dataset_dirs = 0};
    catalog_real_options real = {.kernel_dirs = kdirs,
                                 .n_kernel_dirs = 1,
                                 .runner = "/nonexistent/ktune-runner",
                                 .cache_dir = f->cache,
                                 .cpu_core = -1};
    char broken[160];
    kt_error err;
    int n = 0;
    snprintf(broken, sizeof broken, "%s/mine", f->kernels);
    assert_int_equal(mkdir(broken, 0700), 0);
    char *spec = edited("{\"name\": \"x\"", "{\"name\": \"in\"");
    write_file(broken, "spec.json", spec);
    free(spec);
    catalog_device *handed = handed_devices(&n);
    catalog *c = catalog_new_real(&opt, &real, handed, n, &err);
    if (!c)
        fail_msg("catalog_new_real: %s", err.message);
    const char *want = "kernel mine cannot be used: spec.json: buffers[0].name: \"in\" is a Python "
                       "keyword; expressions could not name it: choose another name";
    target t;
    kt_error_clear(&err);
    assert_int_equal(catalog_resolve(c, "mine", "cpu", NULL, &t, &err), -1);
    if (err.code != KT_ERR_KERNEL_INVALID)
        fail_msg("%s: %s", kt_error_code_name(err.code), err.message);
    assert_string_equal(err.message, want);
    assert_non_null(strstr(err.hint, "kernel folder mine"));
    assert_non_null(strstr(err.hint, "no restart"));
    char hint[KT_ERROR_HINT_MAX];
    snprintf(hint, sizeof hint, "%s", err.hint);
    kt_error_clear(&err);
    assert_int_equal(catalog_resolve_key(c, "mine", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_KERNEL_INVALID);
    /* an unknown name stays unknown_kernel */
    assert_int_equal(catalog_resolve(c, "nosuch", "cpu", NULL, &t, &err), -1);
    assert_int_equal(err.code, KT_ERR_UNKNOWN_KERNEL);
    json_t *ks = catalog_kernels_json(c);
    assert_int_equal(json_array_size(ks), 2);
    json_t *good = json_array_get(ks, 0), *bad = json_array_get(ks, 1);
    assert_string_equal(json_string_value(json_object_get(good, "name")), "vadd");
    assert_string_equal(json_string_value(json_object_get(good, "status")), "ready");
    assert_string_equal(json_string_value(json_object_get(bad, "name")), "mine");
    assert_string_equal(json_string_value(json_object_get(bad, "status")), "invalid");
    assert_int_equal(json_array_size(json_object_get(bad, "devices")), 0);
    json_t *e = json_object_get(bad, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "kernel_invalid");
    assert_string_equal(json_string_value(json_object_get(e, "message")), want);
    assert_string_equal(json_string_value(json_object_get(e, "hint")), hint);
    json_decref(ks);
    catalog_free(c);
}

int main(void)
{
    kt_log_init(KT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(valid_spec_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(each_error_is_skipped_with_its_message, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_name_the_field_path_first, setup, teardown),
        cmocka_unit_test_setup_teardown(default_list_picks_by_device_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(gemm_default_is_valid_on_every_isa, setup, teardown),
        cmocka_unit_test_setup_teardown(problems_are_validated, setup, teardown),
        cmocka_unit_test_setup_teardown(space_sees_problem_and_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(cuda_json_is_the_cuda_variant, setup, teardown),
        cmocka_unit_test_setup_teardown(hash_follows_the_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(catalog_takes_handed_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_kernel_is_told_to_the_caller, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
