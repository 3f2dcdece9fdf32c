/* neural/nn_transform — the formulas of nn_transform.h, once (see the header for the semantics). */
#include "neural/nn_transform.h"

#include <stdio.h>
#include <string.h>

#define NN_TRANSFORM_MAX_FACTOR 1024 /* groups and bottleneck above this are not a layer's */

nn_transform nn_transform_identity(void)
{
    nn_transform t = {1, 1, 0};
    return t;
}

int nn_transform_is_identity(const nn_transform *t)
{
    return t->groups == 1 && t->bottleneck == 1 && t->seq == 0;
}

int nn_transform_valid(const nn_transform *t, int C, int K, int P, kt_error *err)
{
    int g = t->groups, b = t->bottleneck, s = t->seq;
    if (g < 1 || b < 1 || s < 0 || s > 3)
        return kt_error_set(err, KT_ERR_CONFIG,
                            "transformation (groups %d, bottleneck %d, seq %d): groups and "
                            "bottleneck must be >= 1 and seq 0..3",
                            g, b, s),
               0;
    if (C < 1 || K < 1 || P < 1)
        return kt_error_set(err, KT_ERR_CONFIG, "layer C=%d K=%d P=%d is not a layer", C, K, P), 0;
    if (K % b != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "bottleneck %d does not divide K=%d", b, K), 0;
    int Kp = K / b;
    if (C % g != 0)
        return kt_error_set(err, KT_ERR_CONFIG, "groups %d does not divide C=%d", g, C), 0;
    switch (s) {
    case 0:
        if (Kp % g != 0)
            return kt_error_set(err, KT_ERR_CONFIG, "groups %d does not divide K'=K/b=%d", g, Kp),
                   0;
        break;
    case 1:
        if (g < 2 || g > P)
            return kt_error_set(err, KT_ERR_CONFIG,
                                "spatial_group needs 2 <= groups <= P (groups %d, P %d)", g, P),
                   0;
        break;
    case 2:
        if (g < 2 || NN_UNROLL % g != 0 || Kp % NN_UNROLL != 0)
            return kt_error_set(err, KT_ERR_CONFIG,
                                "unroll_group needs groups >= 2 dividing %d and K'=%d a multiple "
                                "of %d (groups %d)",
                                NN_UNROLL, Kp, NN_UNROLL, g),
                   0;
        break;
    default:
        if (Kp % (4 * g) != 0 || C % (2 * g) != 0)
            return kt_error_set(
                       err, KT_ERR_CONFIG,
                       "split_group needs K'=%d a multiple of 4*groups and C=%d a multiple "
                       "of 2*groups (groups %d)",
                       Kp, C, g),
                   0;
        break;
    }
    return 1;
}

int nn_transform_out_channels(const nn_transform *t, int K)
{
    return t->bottleneck >= 1 ? K / t->bottleneck : K;
}

long long nn_transform_weights(const nn_transform *t, int C, int K, int R, int S)
{
    long long Kp = nn_transform_out_channels(t, K), g = t->groups, rs = (long long)R * S;
    if (t->seq == 3)
        return (Kp / 2) * (C / g) * rs + (Kp / 2) * (C / (2 * g)) * rs;
    return Kp * (C / g) * rs;
}

void nn_transform_inputs(const nn_transform *t, int C, int K, int P, int k, int y, int *first,
                         int *count)
{
    int Kp = nn_transform_out_channels(t, K), g = t->groups, grp = 0, cg = C / g;
    switch (t->seq) {
    case 0:
        grp = k / (Kp / g);
        break;
    case 1:
        grp = (int)((long long)y * g / P);
        break;
    case 2:
        grp = (k % NN_UNROLL) / (NN_UNROLL / g);
        break;
    default:
        if (k < Kp / 2) {
            grp = k / ((Kp / 2) / g);
        } else {
            cg = C / (2 * g);
            grp = (k - Kp / 2) / ((Kp / 2) / (2 * g));
        }
        break;
    }
    *first = grp * cg;
    *count = cg;
}

long long nn_transform_weight_offset(const nn_transform *t, int C, int K, int R, int S, int k)
{
    long long Kp = nn_transform_out_channels(t, K), g = t->groups, rs = (long long)R * S;
    if (t->seq == 3 && k >= Kp / 2)
        return (Kp / 2) * (C / g) * rs + (k - Kp / 2) * (C / (2 * g)) * rs;
    return (long long)k * (C / g) * rs;
}

static int member_int(const json_t *config, const char *name, int lo, int hi, int def, int *out,
                      kt_error *err)
{
    const json_t *v = json_object_get(config, name);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return kt_error_set(err, KT_ERR_CONFIG, "%s must be an integer in [%d, %d]", name, lo, hi);
    *out = (int)json_integer_value(v);
    return 0;
}

int nn_transform_from_config(const json_t *config, nn_transform *out, kt_error *err)
{
    nn_transform t = nn_transform_identity();
    if (!json_is_object(config))
        return kt_error_set(err, KT_ERR_CONFIG, "configuration is not an object");
    if (member_int(config, "GROUPS", 1, NN_TRANSFORM_MAX_FACTOR, 1, &t.groups, err) < 0 ||
        member_int(config, "BOTTLENECK", 1, NN_TRANSFORM_MAX_FACTOR, 1, &t.bottleneck, err) < 0 ||
        member_int(config, "SEQ", 0, 3, 0, &t.seq, err) < 0)
        return -1;
    *out = t;
    return 0;
}

void nn_transform_describe(const nn_transform *t, char *buf, int cap)
{
    const char *parts[3];
    int n = 0;
    if (t->seq == 0 && t->groups > 1)
        parts[n++] = "group";
    if (t->bottleneck > 1)
        parts[n++] = "bottleneck";
    if (t->seq == 1)
        parts[n++] = "spatial_group";
    else if (t->seq == 2)
        parts[n++] = "unroll_group";
    else if (t->seq == 3)
        parts[n++] = "split_group";
    if (cap <= 0)
        return;
    buf[0] = '\0';
    if (n == 0) {
        snprintf(buf, (size_t)cap, "none");
        return;
    }
    int used = 0;
    for (int i = 0; i < n && used < cap; i++) {
        int w = snprintf(buf + used, (size_t)(cap - used), "%s%s", i ? "+" : "", parts[i]);
        if (w < 0)
            break;
        used += w;
    }
}
