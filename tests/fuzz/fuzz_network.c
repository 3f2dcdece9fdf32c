/* libFuzzer target: network descriptions (neural/nn_network.c, issue 14; a tuning request may carry
 * one inline): the input is parsed as JSON and, when it is a valid network, its canonical form is
 * re-parsed (same hash), every conv queried, and a few transformations of each conv checked for
 * validity and parameter counts. Issue 26: the bound checker runs on every parsed network (what a
 * request's network is judged by before it is queued): nn_cost_of must succeed with positive
 * figures, nn_cost_check must agree with them and the limits, and every valid transformation of a
 * conv must cost no more than the original (fewer or as many parameters and activation values: the
 * bound judges the original for all its candidates). Nothing is computed on the network (no model).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "neural/nn_cost.h"
#include "neural/nn_network.h"

/* Values of every layer's output with per applied (per NULL: the original); -1 when invalid. */
static double activation_values(const nn_network *n, const nn_transform *per)
{
    static nn_shape out[NN_MAX_LAYERS];
    if (nn_network_shapes(n, per, NULL, out, NULL) < 0)
        return -1;
    double v = 0;
    for (int i = 0; i < nn_network_layer_count(n); i++)
        v += (double)out[i].c * out[i].h * out[i].w;
    return v;
}

/* The bound checker on n: figures positive and consistent, the check agreeing with the limits. */
static void check_cost(const nn_network *n)
{
    kt_error err;
    nn_cost c, one;
    if (nn_cost_of(n, 64, &c, &err) != 0 || nn_cost_of(n, 1, &one, &err) != 0)
        __builtin_trap();
    if (c.model_bytes <= 0 || !(c.pass_flops > 0) || one.model_bytes > c.model_bytes ||
        one.pass_flops > c.pass_flops)
        __builtin_trap();
    if (c.largest_layer < 0 || c.largest_layer >= nn_network_layer_count(n) ||
        c.costliest_layer < 0 || c.costliest_layer >= nn_network_layer_count(n) ||
        c.costliest_flops > c.pass_flops)
        __builtin_trap();
    int fits =
        c.model_bytes <= NN_COST_MAX_MODEL_BYTES && 3 * c.pass_flops <= NN_COST_MAX_CHECK_FLOPS;
    kt_error_clear(&err);
    int rc = nn_cost_check(n, 64, 3, &err);
    if ((rc == 0) != fits || (rc != 0 && (err.code != KT_ERR_BAD_REQUEST || !err.message[0] ||
                                          !err.hint[0] || !strstr(err.message, "limit of"))))
        __builtin_trap();
    if (nn_cost_of(n, 0, &c, &err) == 0 || nn_cost_of(n, NN_COST_MAX_BATCH + 1, &c, &err) == 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return 0;
    kt_error err;
    kt_error_clear(&err);
    nn_network *n = nn_network_parse(doc, &err);
    json_decref(doc);
    if (!n)
        return 0;
    json_t *canon = nn_network_json(n);
    nn_network *again = nn_network_parse(canon, &err);
    if (!again || strcmp(nn_network_hash(n), nn_network_hash(again)) != 0)
        __builtin_trap();
    json_decref(canon);
    nn_network_free(again);
    check_cost(n);
    static const nn_transform ts[] = {{2, 1, 0}, {4, 2, 0}, {2, 1, 1},
                                      {2, 1, 2}, {1, 1, 3}, {1, 2, 0}};
    static nn_transform per[NN_MAX_LAYERS];
    int nc = nn_network_conv_count(n);
    long long params = nn_network_params(n, NULL);
    double values = activation_values(n, NULL);
    for (int c = 0; c < nc; c++) {
        nn_conv_shape cs;
        if (nn_network_conv(n, c, &cs) < 0 || nn_network_find_conv(n, cs.name) != c)
            __builtin_trap();
        for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++) {
            for (int i = 0; i < nc; i++)
                per[i] = i == c ? ts[t] : nn_transform_identity();
            int ok = nn_network_transforms_valid(n, per, &err);
            long long p = nn_network_params(n, per);
            if (ok != (p >= 0))
                __builtin_trap();
            if (ok && (p > params || activation_values(n, per) > values))
                __builtin_trap(); /* a candidate costing more than the bound judged */
        }
    }
    if (params <= 0 || values <= 0)
        __builtin_trap();
    nn_network_free(n);
    return 0;
}
