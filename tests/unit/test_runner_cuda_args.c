/* Unit tests of runner/cuda_args (issue 27): a CUDA kernel's arguments packed as cuLaunchKernel
 * takes them, without a GPU. The pure packing: buffers' device pointers, then the problem words
 * (long long, a float argument's double), then the scalars in their C types, each at an offset
 * aligned to its size, params pointing at each value. Then the packing against NVRTC's own view of
 * a kernel: tests/kernels/typed_cuda/cuda.cu (f64 and i32 buffers, a float problem argument, an
 * f32 and an i32 scalar) compiled to PTX, whose .entry parameter list must have the types and sizes
 * the packing gives (skipped, saying why, where NVRTC is missing; a failure when
 * KTUNE_REQUIRE_NVRTC is set: make gpu-check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/cuda.h"
#include "runner/cuda_args.h"
#include "cuda_typed_request.h"
#include "skip_test_util.h"

static const unsigned long long DPTR[3] = {0x7f0000001000ULL, 0x7f0000002000ULL, 0x7f0000003000ULL};

/* typed_cuda's interface: y f64, x f64, idx i32; n = 1000, a = 0.75 (float); scalars alpha f32
 * (the word of 1.5), shift i32 = 3. */
static runner_measure_req *typed_request(void)
{
    runner_measure_req *q = calloc(1, sizeof *q);
    assert_non_null(q);
    const kt_dtype dtypes[3] = {KT_F64, KT_F64, KT_I32};
    q->n_buffers = 3;
    for (int i = 0; i < 3; i++) {
        q->buffers[i].dtype = dtypes[i];
        q->buffers[i].elements = 1000;
    }
    double a = 0.75, alpha = 1.5;
    q->n_problem = 2;
    q->problem[0] = 1000;
    memcpy(&q->problem[1], &a, sizeof a);
    q->problem_float[1] = 1;
    q->n_scalars = 2;
    q->scalars[0].type = KT_F32;
    q->scalars[0].value = alpha;
    memcpy(&q->problem[2], &alpha, sizeof alpha);
    q->scalars[1].type = KT_I32;
    q->scalars[1].value = 3;
    q->problem[3] = 3;
    q->n_call_args = -1;
    return q;
}

static void packs_each_value_aligned_to_its_size(void **state)
{
    (void)state;
    runner_measure_req *q = typed_request();
    cuda_args *a = malloc(sizeof *a);
    kt_error err;
    assert_non_null(a);
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), 0);
    const size_t offsets[7] = {0, 8, 16, 24, 32, 40, 44}, sizes[7] = {8, 8, 8, 8, 8, 4, 4};
    assert_int_equal(a->n, 7);
    assert_int_equal(a->bytes, 48);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(a->offset[i], offsets[i]);
        assert_int_equal(a->size[i], sizes[i]);
        assert_ptr_equal(a->params[i], a->block + offsets[i]);
    }
    unsigned long long p;
    long long n;
    double d;
    float f;
    int s;
    for (int i = 0; i < 3; i++) {
        memcpy(&p, a->params[i], sizeof p);
        assert_true(p == DPTR[i]);
    }
    memcpy(&n, a->params[3], sizeof n);
    assert_int_equal(n, 1000);
    memcpy(&d, a->params[4], sizeof d);
    assert_true(d == 0.75);
    memcpy(&f, a->params[5], sizeof f);
    assert_true(f == 1.5f);
    memcpy(&s, a->params[6], sizeof s);
    assert_int_equal(s, 3);
    free(a);
    free(q);
}

/* A 4-byte value followed by an 8-byte one leaves a gap: the 8-byte one starts at a multiple of 8.
 */
static void pads_before_a_wider_value(void **state)
{
    (void)state;
    runner_measure_req *q = typed_request();
    cuda_args *a = malloc(sizeof *a);
    kt_error err;
    assert_non_null(a);
    q->n_buffers = 1;
    q->n_problem = 1;
    q->problem[1] = -7; /* scalar 0: i32 -7 */
    double half = 0.5;
    memcpy(&q->problem[2], &half, sizeof half); /* scalar 1: f64 0.5 */
    q->scalars[0].type = KT_I32;
    q->scalars[1].type = KT_F64;
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), 0);
    assert_int_equal(a->n, 4);
    assert_int_equal(a->offset[2], 16);
    assert_int_equal(a->size[2], 4);
    assert_int_equal(a->offset[3], 24); /* not 20 */
    assert_int_equal(a->bytes, 32);
    int s;
    double d;
    memcpy(&s, a->params[2], sizeof s);
    memcpy(&d, a->params[3], sizeof d);
    assert_int_equal(s, -7);
    assert_true(d == 0.5);

    q->scalars[1].type = KT_I64;
    q->problem[2] = -(1LL << 40);
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), 0);
    long long w;
    memcpy(&w, a->params[3], sizeof w);
    assert_true(w == -(1LL << 40));

    q->scalars[1].type = KT_F16; /* no scalar type of the spec: refused by name */
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), -1);
    assert_non_null(strstr(err.message, "scalars[1]"));
    free(a);
    free(q);
}

/* The request ktuned sends for typed_cuda (cuda_typed_request.h), parsed by the runner's protocol
 * and packed: the words the protocol makes (a float argument's and an f32 scalar's as a double's
 * bits) come out as the kernel's C types. */
static void the_protocol_words_pack(void **state)
{
    (void)state;
    runner_measure_req *q = calloc(1, sizeof *q);
    cuda_args *a = malloc(sizeof *a);
    kt_error err;
    assert_non_null(q);
    assert_non_null(a);
    json_t *req = typed_cuda_request(1000, 0.75, 128);
    assert_non_null(req);
    if (runner_parse_measure(req, q, &err) < 0)
        fail_msg("%s", err.message);
    assert_int_equal(q->buffers[0].dtype, KT_F64);
    assert_int_equal(q->buffers[2].dtype, KT_I32);
    assert_int_equal(q->buffers[1].init, RUNNER_INIT_NORMAL);
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), 0);
    assert_int_equal(a->n, 7);
    long long n;
    double d;
    float f;
    int s;
    memcpy(&n, a->params[3], sizeof n);
    memcpy(&d, a->params[4], sizeof d);
    memcpy(&f, a->params[5], sizeof f);
    memcpy(&s, a->params[6], sizeof s);
    assert_int_equal(n, 1000);
    assert_true(d == 0.75);
    assert_true(f == 1.5f);
    assert_int_equal(s, 0); /* 1000 % 5 */
    json_decref(req);
    free(a);
    free(q);
}

/* The .entry's parameters of a PTX text: each ".param .<type> name" up to the closing ')'. */
static int ptx_params(const char *ptx, const char *entry, char types[][8], int max)
{
    char head[160];
    snprintf(head, sizeof head, ".entry %s(", entry);
    const char *at = strstr(ptx, head);
    int n = 0;
    if (!at)
        return -1;
    const char *end = strchr(at, ')');
    for (const char *s = strstr(at, ".param ."); s && s < end && n < max;
         s = strstr(s + 1, ".param .")) {
        /* ".param .align 8 .b8 x[8]" would be a struct: not used by the ABI */
        sscanf(s + strlen(".param ."), "%7s", types[n++]);
    }
    return n;
}

static void nvrtc_agrees_with_the_packing(void **state)
{
    (void)state;
    char path[1024], log[4096], *ptx = NULL;
    snprintf(path, sizeof path, "%s/tests/kernels/typed_cuda/cuda.cu", KT_SOURCE_DIR);
    json_t *defines = json_pack("{s:i}", "BLOCK", 128);
    int rc = cuda_compile_ptx(path, defines, 80, &ptx, log, sizeof log);
    json_decref(defines);
    if (rc == -2) {
        if (kt_skip_required("KTUNE_REQUIRE_NVRTC"))
            fail_msg("NVRTC is not available and KTUNE_REQUIRE_NVRTC is set: %s", log);
        KT_SKIP("NVRTC is not available: %s", log);
    }
    if (rc != 0)
        fail_msg("typed_cuda/cuda.cu does not compile: %s", log);
    char types[16][8];
    int n = ptx_params(ptx, "typed_kernel", types, 16);
    runner_measure_req *q = typed_request();
    cuda_args *a = malloc(sizeof *a);
    kt_error err;
    assert_non_null(a);
    assert_int_equal(cuda_args_pack(q, DPTR, a, &err), 0);
    if (n != a->n)
        fail_msg("the PTX entry takes %d parameters, the packing gives %d:\n%.2000s", n, a->n, ptx);
    /* pointers and long long: 64-bit integers; a: f64; alpha: f32; shift: 32-bit integer */
    const char *want[7] = {"u64", "u64", "u64", "u64", "f64", "f32", "u32"};
    for (int i = 0; i < n; i++) {
        size_t bits = strstr(types[i], "64") ? 64 : strstr(types[i], "32") ? 32 : 0;
        if (bits / 8 != a->size[i] || strcmp(types[i], want[i]) != 0)
            fail_msg("parameter %d: PTX .%s, the packing %zu bytes (want .%s)", i, types[i],
                     a->size[i], want[i]);
    }
    printf("typed_kernel's PTX parameters match the packing: %d values, %zu bytes\n", a->n,
           a->bytes);
    free(a);
    free(q);
    free(ptx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packs_each_value_aligned_to_its_size),
        cmocka_unit_test(pads_before_a_wider_value),
        cmocka_unit_test(the_protocol_words_pack),
        cmocka_unit_test(nvrtc_agrees_with_the_packing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
