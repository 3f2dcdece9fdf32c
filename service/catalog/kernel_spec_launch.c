/* catalog/kernel_spec_launch — the CUDA launch geometry: block, grid and shared_bytes expressions
 * loaded from a cuda variant, and evaluated for one configuration and problem (kernel_spec_launch).
 */
#include "catalog/kernel_spec_impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int kspec_load_geometry(kspec_loader *L, const kernel_spec *k, kspec_variant *v, const json_t *obj,
                        const char *where)
{
    const char *names[KSPEC_MAX_PARAMS + KSPEC_MAX_ARGS];
    int n = 0;
    char field[128];
    for (int i = 0; i < v->n_params; i++)
        names[n++] = v->param_names[i];
    for (int i = 0; i < k->n_args; i++)
        names[n++] = k->args[i].name;
    expr_names en = {.n_params = n, .params = names};
    static const char *const which[] = {"block", "grid"};
    for (int w = 0; w < 2; w++) {
        const json_t *arr = kspec_need(L, obj, where, which[w]);
        if (!arr)
            return -1;
        if (!json_is_array(arr) || json_array_size(arr) != 3)
            return kspec_bad(L, "%s.%s: must be an array of 3 expressions (x, y, z)", where,
                             which[w]);
        for (size_t i = 0; i < 3; i++) {
            snprintf(field, sizeof field, "%s.%s[%zu]", where, which[w], i);
            kspec_expr *x = w == 0 ? &v->block[i] : &v->grid[i];
            if (kspec_parse_expr(L, x, json_array_get(arr, i), field, &en) < 0)
                return -1;
        }
    }
    const json_t *sh = json_object_get(obj, "shared_bytes");
    json_t *zero = NULL;
    if (!sh)
        sh = zero = json_string("0");
    snprintf(field, sizeof field, "%s.shared_bytes", where);
    int rc =
        sh ? kspec_parse_expr(L, &v->shared_bytes, sh, field, &en) : kspec_bad(L, "out of memory");
    json_decref(zero);
    return rc;
}

int kernel_spec_launch(const kernel_spec *k, const space *sp, config_id id, const kspec_problem *p,
                       long long block[3], long long grid[3], long long *shared_bytes,
                       kt_error *err)
{
    const kspec_variant *v = &k->variants[KSPEC_CUDA];
    expr_value slots[KSPEC_MAX_PARAMS + KSPEC_MAX_ARGS];
    int idx[KSPEC_MAX_PARAMS];
    int np = space_num_params(sp);

    if (!v->present || np != v->n_params || space_decode(sp, id, idx) < 0)
        return kt_error_set(err, KT_ERR_INTERNAL,
                            "configuration %llu is not one of the cuda space of kernel %s",
                            (unsigned long long)id, k->name);
    for (int i = 0; i < np; i++) {
        double d = space_param_value_number(sp, i, idx[i]);
        slots[i] = (expr_value){.type = EXPR_INT, .u.i = (int64_t)d};
    }
    for (int i = 0; i < k->n_args; i++)
        slots[np + i] = kernel_spec_arg_value(k, p, i);
    const kspec_expr *all[7] = {&v->block[0], &v->block[1], &v->block[2],    &v->grid[0],
                                &v->grid[1],  &v->grid[2],  &v->shared_bytes};
    long long *dst[7] = {&block[0], &block[1], &block[2],   &grid[0],
                         &grid[1],  &grid[2],  shared_bytes};
    for (int i = 0; i < 7; i++) {
        expr_value r;
        long long n = 0;
        long long lo = i == 6 ? 0 : 1;
        if (!all[i]->e || expr_eval(all[i]->e, slots, &r) < 0 || kspec_value_to_ll(&r, &n) < 0 ||
            n < lo || n > (1LL << 31) - 1)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s '%.200s' does not give an integer from %lld to 2^31-1",
                                i < 3 ? "block" : (i < 6 ? "grid" : "shared_bytes"),
                                all[i]->text ? all[i]->text : "", lo);
        *dst[i] = n;
    }
    return 0;
}
