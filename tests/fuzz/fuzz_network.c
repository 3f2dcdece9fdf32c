/* libFuzzer target: network descriptions (neural/nn_network.c, issue 14; a tuning request may carry
 * one inline): the input is parsed as JSON and, when it is a valid network, its canonical form is
 * re-parsed (same hash), every conv queried, and a few transformations of each conv checked for
 * validity and parameter counts. Nothing is computed on the network (no model is built). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "neural/nn_network.h"

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
    static const nn_transform ts[] = {{2, 1, 0}, {4, 2, 0}, {2, 1, 1},
                                      {2, 1, 2}, {1, 1, 3}, {1, 2, 0}};
    nn_transform per[NN_MAX_LAYERS];
    int nc = nn_network_conv_count(n);
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
        }
    }
    if (nn_network_params(n, NULL) <= 0)
        __builtin_trap();
    nn_network_free(n);
    return 0;
}
