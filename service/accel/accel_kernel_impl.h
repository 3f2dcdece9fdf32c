/* accel/accel_kernel_impl — the kernel definitions' layout, shared by this room's files only
 * (accel_kernel.c defines the two kernels, accel_space.c builds their spaces, accel_model.c
 * evaluates their mappings). A dim is "relevant" to a tensor when the tensor's index depends on
 * it; a reuse class is a set of dims with the same relevance to every tensor. */
#ifndef KT_ACCEL_ACCEL_KERNEL_IMPL_H
#define KT_ACCEL_ACCEL_KERNEL_IMPL_H

#include "accel/accel_kernel.h"

#define ACCEL_MAX_PRESETS 8
#define ACCEL_MAX_CLASSES 4

typedef struct accel_arg_def {
    const char *name;
    long long min, max, def;
} accel_arg_def;

typedef struct accel_tensor_def {
    const char *name;
    unsigned rel;   /* bit d: dim d is relevant */
    int n_halo;     /* sliding windows: extent (e[a] - 1) * stride + e[b] for each pair */
    int halo[2][2]; /* [pair][a = output dim, b = filter dim] */
    int output;     /* read-modify-write (partial sums) */
} accel_tensor_def;

typedef struct accel_preset {
    const char *name;
    long long arg[ACCEL_MAX_ARGS];
} accel_preset;

struct accel_kernel {
    const char *name;
    const char *summary;
    int n_args;
    accel_arg_def args[ACCEL_MAX_ARGS];
    int stride_arg; /* index of the stride argument, -1: none (stride 1) */
    int n_dims;     /* dims are the first n_dims arguments */
    const char *dims[ACCEL_MAX_DIMS];
    int n_tensors;
    accel_tensor_def tensors[ACCEL_MAX_TENSORS];
    int n_classes;
    unsigned class_mask[ACCEL_MAX_CLASSES];
    const char *class_name[ACCEL_MAX_CLASSES];
    int operands; /* input tensors read per iteration (MACs per iteration = operands - 1) */
    int n_presets;
    accel_preset presets[ACCEL_MAX_PRESETS];
    /* the training distribution (accel_problem_sample) */
    void (*sample)(const accel_kernel *k, kt_rng *rng, long long *arg);
};

/* The stride of a problem (1 when the kernel has none). */
long long accel_problem_stride(const accel_problem *p);
/* Upper bound of the configurations of p's space on a device with `banks` banks per buffer and no
 * PE or capacity pruning (a double: it may exceed 2^64). */
double accel_space_bound(const accel_problem *p, int banks);
/* Number of loop orders of k (n_classes!) and the order with index v: the class indices, outermost
 * first (permutations in lexicographic order). */
int accel_num_orders(const accel_kernel *k);
void accel_order_classes(const accel_kernel *k, int v, int *cls);
/* "K>NPQ>CRS" for order v. */
void accel_order_name(const accel_kernel *k, int v, char *buf, size_t cap);

#endif
