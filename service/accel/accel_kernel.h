/* accel/accel_kernel — the loop nests the accelerator runs and their mapping spaces: `cnn_layer`
 * (dims N, K, C, P, Q, R, S from arguments N, K, C, P, Q, R, S, stride: P and Q are the OUTPUT rows
 * and columns, Table 1's "H, W" as in the paper's Timeloop problems; the input has
 * (P - 1) * stride + R rows) and `mttkrp` (dims I, J, K, L). A problem is validated from a
 * request's JSON (arguments, or {"preset": "<name>"} for the paper's Table 1 layers) into canonical
 * form.
 *
 * The mapping space of a (problem, device), built on the space engine so that every strategy works
 * on it unchanged. Parameters (the names are the contract; the surrogate and tests rely on them):
 *   <d>_L1, <d>_PE, <d>_L2 per dim d: the tile factor of d in the loops at L1 (inside a PE), across
 *       PEs (spatial) and at L2; values are the divisors of the dim; the DRAM factor is the rest
 *       (dim / (L1 * PE * L2)), restrictions keep the product a divisor of the dim;
 *   order_L1, order_L2, order_DRAM: the loop order at each level, outermost first, as a
 *       permutation of the kernel's reuse classes (dims indexing the same tensors: cnn_layer has 3,
 *       {N,P,Q} {K} {C,R,S}, so 6 orders; mttkrp 4, so 24), strings such as "K>NPQ>CRS". A loop
 *       order that interleaves two classes is never better for any tensor than the class-contiguous
 *       order of its innermost loops, and keeping only those keeps a space's ids within 64 bits;
 *   buf_L1_<t>, buf_L2_<t> per tensor t (cnn_layer: I, W, O; mttkrp: A, B, C, O): banks of each
 *       buffer allocated to t, 1.., with sum <= the device's banks (a restriction).
 * What couples dims (the PEs used <= pes, every tile fitting its allocation) the space engine
 * cannot express without enumerating the product of all dims: accel_evaluate checks it and a
 * mapping breaking it is an `invalid` trial with the reason.
 *
 * Lifecycle: kernels are static (never freed); problems are plain values; spaces from
 * accel_space_new are the caller's (space_free). */
#ifndef KT_ACCEL_ACCEL_KERNEL_H
#define KT_ACCEL_ACCEL_KERNEL_H

#include <jansson.h>

#include "core/error.h"
#include "core/rng.h"
#include "space/space.h"
#include "accel/accel_device.h"

/* The model's version: part of accel_kernel_hash, and the results' toolchain string. Changing what
 * the cost model computes changes it, so that no stored result of the old model is served. */
#define ACCEL_MODEL_VERSION "ktune accel model 1"

#define ACCEL_MAX_DIMS    7
#define ACCEL_MAX_ARGS    8
#define ACCEL_MAX_TENSORS 4

typedef struct accel_kernel accel_kernel; /* static */

const accel_kernel *accel_kernel_find(const char *name); /* NULL when unknown */
int accel_kernel_count(void);
const accel_kernel *accel_kernel_at(int i);
const char *accel_kernel_name(const accel_kernel *k);
/* FNV-1a of the kernel's definition and the model's version: the key's kernel_hash. */
uint64_t accel_kernel_hash(const accel_kernel *k);
/* {"name","summary","problem_arguments":[{"name","min","max","default"}],"presets":{"name":{args}},
 * "dims":[...],"tensors":[{"name","dims":[...]}]}, new reference. */
json_t *accel_kernel_json(const accel_kernel *k);

typedef struct accel_problem {
    const accel_kernel *kernel;
    long long arg[ACCEL_MAX_ARGS]; /* the kernel's arguments, in its order */
    long long dim[ACCEL_MAX_DIMS]; /* loop bounds (cnn_layer: N, K, C, P, Q, R, S) */
} accel_problem;

/* problem: NULL (every default), {"preset": name} alone, or arguments (missing ones default).
 * KT_ERR_BAD_PROBLEM naming the argument or preset and what is accepted (hint lists presets). */
int accel_problem_parse(const accel_kernel *k, const json_t *problem, accel_problem *out,
                        kt_error *err);
/* Canonical problem: every argument (presets expanded), new reference. */
json_t *accel_problem_json(const accel_problem *p);
/* A random problem of the kernel's training distribution (layer shapes of typical networks), for
 * surrogate training and the prediction report. Deterministic for the rng's state. */
void accel_problem_sample(const accel_kernel *k, kt_rng *rng, accel_problem *out);

/* The mapping space (see above); KT_ERR_SPACE_TOO_LARGE (with a hint) when it has more than
 * SPACE_MAX_COUNT (2^63 - 1: signed 64-bit ids) configurations. */
space *accel_space_new(const accel_problem *p, const accel_device *d, kt_error *err);

typedef struct accel_mapping {
    long long factor[ACCEL_MAX_DIMS][4];     /* [dim][L1, PE, L2, DRAM]; product = dim */
    int order[ACCEL_LEVELS][ACCEL_MAX_DIMS]; /* per level (L1, L2, DRAM) dims outermost first */
    int banks[2][ACCEL_MAX_TENSORS];         /* [L1, L2][tensor] */
} accel_mapping;

/* Decodes a configuration of accel_space_new(p, d) into a mapping; -1 with KT_ERR_INTERNAL when the
 * space is not one of p's. */
int accel_mapping_decode(const accel_problem *p, const space *sp, config_id id, accel_mapping *out,
                         kt_error *err);

#endif
