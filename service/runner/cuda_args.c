/* runner/cuda_args — see cuda_args.h. */
#include "runner/cuda_args.h"

#include <string.h>

/* Appends one value of size bytes (4 or 8) at the next offset aligned to its size. */
static void put(cuda_args *a, const void *value, size_t size)
{
    size_t off = (a->bytes + size - 1) / size * size;
    memcpy(a->block + off, value, size);
    a->offset[a->n] = off;
    a->size[a->n] = size;
    a->params[a->n] = a->block + off;
    a->n++;
    a->bytes = off + size;
}

int cuda_args_pack(const runner_measure_req *q, const unsigned long long *dptr, cuda_args *out,
                   kt_error *err)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < q->n_buffers; i++)
        put(out, &dptr[i], sizeof dptr[i]);
    for (int i = 0; i < q->n_problem; i++) {
        /* a float argument's word holds its double's bits (PROTOCOL.md) */
        put(out, &q->problem[i], sizeof q->problem[i]);
    }
    for (int i = 0; i < q->n_scalars && rc == 0; i++) {
        long long word = q->problem[q->n_problem + i];
        double d;
        memcpy(&d, &word, sizeof d);
        switch (q->scalars[i].type) {
        case KT_F32: {
            float f = (float)d;
            put(out, &f, sizeof f);
            break;
        }
        case KT_F64:
            put(out, &d, sizeof d);
            break;
        case KT_I32: {
            int v = (int)word;
            put(out, &v, sizeof v);
            break;
        }
        case KT_I64:
            put(out, &word, sizeof word);
            break;
        default:
            rc = kt_error_set(err, KT_ERR_BAD_REQUEST,
                              "scalars[%d]: a CUDA kernel takes f32, f64, i32 or i64 scalars, not "
                              "%s",
                              i, kt_dtype_name(q->scalars[i].type));
        }
    }
    return rc;
}
