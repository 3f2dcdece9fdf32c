/* runner/cuda_args — a CUDA kernel's arguments as cuLaunchKernel takes them (kernels/README.md,
 * "CUDA kernel ABI"): the buffers' device pointers in the spec's order, then the problem arguments
 * (long long; double for a float argument), then the scalars in their C types (f32 float, f64
 * double, i32 int, i64 long long), each value at an offset of one packed block aligned to its size,
 * as the CUDA parameter space lays a kernel's parameters out, and params[i] pointing at value i.
 * Pure (no driver call), so it is unit-tested without a GPU (tests/unit/test_runner_cuda_args.c).
 *
 * Call order: cuda_args_pack -> cuLaunchKernel(..., args.params, NULL). The struct holds the values
 * params point at: it must not move or go before the launches end. */
#ifndef KT_RUNNER_CUDA_ARGS_H
#define KT_RUNNER_CUDA_ARGS_H

#include <stddef.h>

#include "core/error.h"
#include "runner/runner.h"

#define CUDA_ARGS_MAX   (RUNNER_MAX_BUFFERS + RUNNER_MAX_PROBLEM + RUNNER_MAX_SCALARS)
#define CUDA_ARGS_BYTES (CUDA_ARGS_MAX * 8) /* every value is at most 8 bytes, aligned to it */

typedef struct cuda_args {
    _Alignas(8) unsigned char block[CUDA_ARGS_BYTES];
    size_t offset[CUDA_ARGS_MAX]; /* of value i in block, a multiple of size[i] */
    size_t size[CUDA_ARGS_MAX];   /* 4 or 8 */
    void *params[CUDA_ARGS_MAX];  /* block + offset[i] */
    int n;
    size_t bytes; /* block's bytes in use */
} cuda_args;

/* Packs q's arguments with the device pointers dptr[0..q->n_buffers) into out. 0, or -1 with err
 * (KT_ERR_BAD_REQUEST naming the scalar whose type the ABI does not take). */
int cuda_args_pack(const runner_measure_req *q, const unsigned long long *dptr, cuda_args *out,
                   kt_error *err);

#endif
