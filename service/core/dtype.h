/* core/dtype — the element types of kernel buffers and scalars (kernels/README.md): names, sizes,
 * and conversion of one element to and from double (f16 and bf16 in software, round to nearest
 * even), shared by the spec loader (catalog) and the runner. Plain functions, no state. */
#ifndef KT_CORE_DTYPE_H
#define KT_CORE_DTYPE_H

#include <stddef.h>

/* f32 is 0: a buffer that names no dtype is fp32, as every kernel was before dtypes. */
typedef enum {
    KT_F32 = 0,
    KT_F16,
    KT_BF16,
    KT_F64,
    KT_I8,
    KT_I16,
    KT_I32,
    KT_I64,
    KT_U8,
    KT_N_DTYPES
} kt_dtype;

/* "f32", "f16", ... ("?" for a value outside the enum). */
const char *kt_dtype_name(kt_dtype t);
/* The dtype named s; -1 when s names none. */
int kt_dtype_parse(const char *s);
/* The accepted names, comma-separated ("f16, bf16, f32, ..."), for error messages. */
const char *kt_dtype_names(void);
/* Bytes per element (1, 2, 4 or 8). */
size_t kt_dtype_size(kt_dtype t);
/* 1 for f16, bf16, f32, f64. */
int kt_dtype_is_float(kt_dtype t);
/* The smallest and largest value of an integer dtype (0 and 0 for floating dtypes). */
void kt_dtype_int_range(kt_dtype t, double *lo, double *hi);
/* Element i of the array p of dtype t, as a double. */
double kt_dtype_get(kt_dtype t, const void *p, long long i);
/* Stores v into element i of p: floating dtypes round (f16/bf16 to nearest even, overflow to
 * infinity), integer dtypes round to nearest and clamp to their range (NaN stores 0). */
void kt_dtype_set(kt_dtype t, void *p, long long i, double v);

#endif
