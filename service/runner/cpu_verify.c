/* runner/cpu_verify — a problem's outputs against their expected values (runner.h), shared by the
 * CPU half (cpu_measure.c) and the CUDA half (cuda_measure.c, which downloads the device's outputs
 * into the host state first): per buffer dtype and tolerance, in double. */
#include <math.h>
#include <string.h>

#include "runner/runner.h"

/* One element against its expected value (in double; f16/bf16 converted in software). */
static void check_element(cpu_verify_result *v, int *nan_seen, double o, double e, double rtol,
                          double atol, int i, long long k)
{
    double d = fabs(o - e);
    if (isnan(d))
        *nan_seen = 1;
    else if (d > v->max_abs_err)
        v->max_abs_err = d;
    if (d <= atol + rtol * fabs(e))
        return; /* false for NaN */
    if (v->bad++ == 0) {
        v->first_buffer = i;
        v->first_index = k;
        v->first_value = o;
        v->first_expected = e;
    }
}

void cpu_problem_verify(const cpu_problem *p, cpu_verify_result *v)
{
    int nan_seen = 0;
    memset(v, 0, sizeof *v);
    v->first_buffer = -1;
    for (int i = 0; i < p->n_buffers; i++) {
        const runner_buffer *b = &p->buffers[i];
        if (!b->output || !p->expected[i])
            continue;
        if (b->dtype == KT_F32) { /* the common case, without a call per element */
            const float *o = p->data[i], *e = p->expected[i];
            for (long long k = 0; k < b->elements; k++)
                check_element(v, &nan_seen, o[k], e[k], b->rtol, b->atol, i, k);
            continue;
        }
        for (long long k = 0; k < b->elements; k++)
            check_element(v, &nan_seen, kt_dtype_get(b->dtype, p->data[i], k),
                          kt_dtype_get(b->dtype, p->expected[i], k), b->rtol, b->atol, i, k);
    }
    if (nan_seen)
        v->max_abs_err = NAN;
}

void cpu_verify_extras(const cpu_problem *p, const cpu_verify_result *v, json_t *extras)
{
    json_object_set_new(extras, "max_abs_err", runner_json_real(v->max_abs_err));
    if (v->bad > 0) {
        json_object_set_new(extras, "bad_elements", json_integer(v->bad));
        json_object_set_new(extras, "first_bad_buffer",
                            json_string(p->buffers[v->first_buffer].name));
        json_object_set_new(extras, "first_bad_index", json_integer(v->first_index));
        json_object_set_new(extras, "first_bad_value", runner_json_real(v->first_value));
        json_object_set_new(extras, "first_bad_expected", runner_json_real(v->first_expected));
    }
}
