/* A measure request (service/runner/PROTOCOL.md) of tests/kernels/typed_cuda on a CUDA device, as
 * ktuned's real backend sends it: f64 and i32 buffers with their inits and tolerance, the float
 * problem argument a, the scalars alpha (f32, a*2) and shift (i32, n % 5), BLOCK threads per block.
 * Shared by test_runner_cuda_args.c (parsed and packed, no GPU) and test_runner_cuda.c (measured on
 * a GPU). Header-only (a static inline function) because only test executables use it. The caller
 * owns the reference returned. */
#ifndef KT_TEST_CUDA_TYPED_REQUEST_H
#define KT_TEST_CUDA_TYPED_REQUEST_H

#include <jansson.h>

static inline json_t *typed_cuda_request(long long n, double a, int block)
{
    json_t *buffers = json_pack(
        "[{s:s, s:I, s:s, s:s, s:{s:f, s:f}}, {s:s, s:I, s:s, s:s, s:{s:s, s:f, s:f}}, "
        "{s:s, s:I, s:s, s:s, s:{s:s}}]",
        "name", "y", "elements", (json_int_t)n, "role", "output", "dtype", "f64", "tolerance",
        "rtol", 1e-12, "atol", 1e-12, "name", "x", "elements", (json_int_t)n, "role", "input",
        "dtype", "f64", "init", "kind", "normal", "mean", 0.0, "std", 2.0, "name", "idx",
        "elements", (json_int_t)n, "role", "input", "dtype", "i32", "init", "kind", "iota");
    json_t *scalars =
        json_pack("[{s:s, s:s, s:f}, {s:s, s:s, s:I}]", "name", "alpha", "type", "f32", "value",
                  a * 2, "name", "shift", "type", "i32", "value", (json_int_t)(n % 5));
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:{s:i}, s:[I, f], s:[s, s], s:o, s:o, s:{s:s, s:s}, "
        "s:{s:f, s:f}, s:f, s:[i, i, i], s:[I, i, i], s:i, s:i, s:i, s:f, s:f}",
        "id", 1, "op", "measure", "kernel", "typed_cuda", "source",
        KT_SOURCE_DIR "/tests/kernels/typed_cuda/cuda.cu", "entry", "typed_kernel", "defines",
        "BLOCK", block, "problem", (json_int_t)n, a, "problem_names", "n", "a", "buffers", buffers,
        "scalars", scalars, "reference", "kind", "c", "source",
        KT_SOURCE_DIR "/tests/kernels/typed_cuda/reference.c", "tolerance", "rtol", 1e-6, "atol",
        1e-7, "flops", 3.0 * (double)n, "block", block, 1, 1, "grid",
        (json_int_t)((n + block - 1) / block), 1, 1, "shared_bytes", 0, "min_repeats", 3,
        "max_repeats", 20, "min_seconds", 0.01, "max_seconds", 1.0);
}

#endif
