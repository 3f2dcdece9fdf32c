/* neural/nn_network — parsing, validation and shape propagation of a network (nn_network.h). The
 * layers are kept flattened in forward order (a residual layer followed by its body). */
#include "neural/nn_network.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/hash.h"

#define NN_NETWORK_FILE_MAX (1 << 20)
#define NN_MAX_DEPTH        8           /* nesting of residual blocks */
#define NN_MAX_FLAT         (1LL << 26) /* values of a flattened map; weights of a linear layer */

struct nn_network {
    char name[NN_NAME_MAX + 1];
    char hash[17];
    nn_shape input;
    int classes;
    int nlayers;
    nn_layer layers[NN_MAX_LAYERS];
    int nconvs;
    int conv_layer[NN_MAX_LAYERS]; /* layer index of each conv */
    nn_conv_shape convs[NN_MAX_LAYERS];
};

typedef struct type_name {
    nn_layer_kind kind;
    const char *name;
} type_name;

static const type_name TYPES[] = {
    {NN_LAYER_CONV, "conv"},
    {NN_LAYER_BATCHNORM, "batchnorm"},
    {NN_LAYER_RELU, "relu"},
    {NN_LAYER_MAXPOOL, "maxpool"},
    {NN_LAYER_AVGPOOL, "avgpool"},
    {NN_LAYER_RESIDUAL, "residual"},
    {NN_LAYER_GLOBAL_AVGPOOL, "global_avgpool"},
    {NN_LAYER_FLATTEN, "flatten"},
    {NN_LAYER_LINEAR, "linear"},
};

static const char *kind_name(nn_layer_kind k)
{
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (TYPES[i].kind == k)
            return TYPES[i].name;
    return "?";
}

/* An integer member in [lo, hi]; def when absent and def >= lo, else required. */
static int get_int(const json_t *o, const char *key, int lo, int hi, int def, int *out,
                   const char *where, kt_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v && def >= lo) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: \"%s\" must be an integer in [%d, %d]", where,
                     key, lo, hi);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static int only_keys(const json_t *o, const char *const *keys, const char *where, kt_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        int ok = 0;
        for (int i = 0; keys[i]; i++)
            ok |= strcmp(k, keys[i]) == 0;
        if (!ok) {
            kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: unknown member \"%s\"", where, k);
            return -1;
        }
    }
    return 0;
}

static int parse_layers(nn_network *n, const json_t *arr, const char *path, int depth,
                        kt_error *err);

static int parse_layer(nn_network *n, const json_t *l, const char *where, int depth, kt_error *err)
{
    if (!json_is_object(l))
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: a layer must be an object", where);
    const char *type = json_string_value(json_object_get(l, "type"));
    int kind = -1;
    for (size_t i = 0; type && i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strcmp(type, TYPES[i].name) == 0)
            kind = (int)TYPES[i].kind;
    if (kind < 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST,
                     "%s: \"type\" must be one of conv, batchnorm, relu, "
                     "maxpool, avgpool, residual, global_avgpool, flatten, linear",
                     where);
        return -1;
    }
    if (n->nlayers >= NN_MAX_LAYERS)
        return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: more than %d layers", where,
                            NN_MAX_LAYERS);
    int at = n->nlayers++;
    nn_layer *y = &n->layers[at];
    memset(y, 0, sizeof *y);
    y->kind = (nn_layer_kind)kind;
    y->conv = -1;
    switch (y->kind) {
    case NN_LAYER_CONV: {
        static const char *const keys[] = {"type", "name", "out", "kernel", "pad", NULL};
        const char *name = json_string_value(json_object_get(l, "name"));
        if (only_keys(l, keys, where, err) < 0)
            return -1;
        if (!name || !name[0] || strlen(name) > NN_NAME_MAX)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s: a conv needs a \"name\" of 1 to %d characters", where,
                                NN_NAME_MAX);
        for (int i = 0; i < n->nconvs; i++)
            if (strcmp(n->layers[n->conv_layer[i]].name, name) == 0)
                return kt_error_set(err, KT_ERR_BAD_REQUEST, "%s: conv name \"%s\" is used twice",
                                    where, name);
        snprintf(y->name, sizeof y->name, "%s", name);
        if (get_int(l, "out", 1, NN_MAX_CHANNELS, 0, &y->out, where, err) < 0 ||
            get_int(l, "kernel", 1, 15, 3, &y->kernel, where, err) < 0 ||
            get_int(l, "pad", 0, 7, y->kernel / 2, &y->pad, where, err) < 0)
            return -1;
        y->conv = n->nconvs;
        n->conv_layer[n->nconvs++] = at;
        return 0;
    }
    case NN_LAYER_MAXPOOL:
    case NN_LAYER_AVGPOOL: {
        static const char *const keys[] = {"type", "size", NULL};
        if (only_keys(l, keys, where, err) < 0)
            return -1;
        return get_int(l, "size", 1, 16, 2, &y->size, where, err);
    }
    case NN_LAYER_LINEAR: {
        static const char *const keys[] = {"type", "out", NULL};
        if (only_keys(l, keys, where, err) < 0)
            return -1;
        return get_int(l, "out", 1, 1 << 16, 0, &y->out, where, err);
    }
    case NN_LAYER_RESIDUAL: {
        static const char *const keys[] = {"type", "layers", NULL};
        if (only_keys(l, keys, where, err) < 0)
            return -1;
        if (depth >= NN_MAX_DEPTH)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s: residual blocks nested deeper than %d", where, NN_MAX_DEPTH);
        const json_t *body = json_object_get(l, "layers");
        if (!json_is_array(body) || json_array_size(body) == 0)
            return kt_error_set(err, KT_ERR_BAD_REQUEST,
                                "%s: a residual needs a non-empty \"layers\" array", where);
        if (parse_layers(n, body, where, depth + 1, err) < 0)
            return -1;
        n->layers[at].body = n->nlayers - at - 1;
        return 0;
    }
    default: {
        static const char *const keys[] = {"type", NULL};
        return only_keys(l, keys, where, err);
    }
    }
}

static int parse_layers(nn_network *n, const json_t *arr, const char *path, int depth,
                        kt_error *err)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[256];
        snprintf(where, sizeof where, "%s%slayers[%zu]", path, path[0] ? "." : "", i);
        if (parse_layer(n, json_array_get(arr, i), where, depth, err) < 0)
            return -1;
    }
    return 0;
}

static int set_shape_error(const nn_network *n, int i, kt_error *err, const char *what)
{
    const nn_layer *y = &n->layers[i];
    if (y->kind == NN_LAYER_CONV)
        return kt_error_set(err, KT_ERR_CONFIG, "layer %d (conv \"%s\"): %s", i, y->name, what);
    return kt_error_set(err, KT_ERR_CONFIG, "layer %d (%s): %s", i, kind_name(y->kind), what);
}

/* Propagates s through layers [i, end); returns 0 and the output in *s, -1 with err. */
static int walk(const nn_network *n, const nn_transform *per_conv, int i, int end, nn_shape *s,
                nn_shape *in, nn_shape *out, kt_error *err)
{
    char msg[KT_ERROR_MESSAGE_MAX + 64];
    while (i < end) {
        const nn_layer *y = &n->layers[i];
        if (in)
            in[i] = *s;
        int next = i + 1;
        switch (y->kind) {
        case NN_LAYER_CONV: {
            nn_transform t = per_conv ? per_conv[y->conv] : nn_transform_identity();
            if (s->flat)
                return set_shape_error(n, i, err, "a conv needs an image input, not a flat one");
            int H = s->h + 2 * y->pad, W = s->w + 2 * y->pad;
            if (H < y->kernel || W < y->kernel)
                return set_shape_error(n, i, err, "input smaller than the kernel");
            kt_error e;
            if (!nn_transform_valid(&t, s->c, y->out, H - y->kernel + 1, &e)) {
                snprintf(msg, sizeof msg, "%s", e.message);
                return set_shape_error(n, i, err, msg);
            }
            s->c = nn_transform_out_channels(&t, y->out);
            s->h = H - y->kernel + 1;
            s->w = W - y->kernel + 1;
            break;
        }
        case NN_LAYER_BATCHNORM:
            if (s->flat)
                return set_shape_error(n, i, err, "batch norm needs an image input");
            break;
        case NN_LAYER_RELU:
            break;
        case NN_LAYER_MAXPOOL:
        case NN_LAYER_AVGPOOL:
            if (s->flat || s->h < y->size || s->w < y->size)
                return set_shape_error(n, i, err, "pooling needs an image input at least its size");
            s->h /= y->size;
            s->w /= y->size;
            break;
        case NN_LAYER_RESIDUAL: {
            nn_shape b = *s;
            if (s->flat)
                return set_shape_error(n, i, err, "a residual block needs an image input");
            if (walk(n, per_conv, i + 1, i + 1 + y->body, &b, in, out, err) < 0)
                return -1;
            if (b.c != s->c || b.h != s->h || b.w != s->w || b.flat) {
                snprintf(msg, sizeof msg,
                         "the body's output %dx%dx%d differs from the block's input %dx%dx%d", b.c,
                         b.h, b.w, s->c, s->h, s->w);
                return set_shape_error(n, i, err, msg);
            }
            next = i + 1 + y->body;
            break;
        }
        case NN_LAYER_GLOBAL_AVGPOOL:
            if (s->flat)
                return set_shape_error(n, i, err, "global average pooling needs an image input");
            s->h = s->w = 1;
            break;
        case NN_LAYER_FLATTEN:
            /* In 64 bits: sides grow with padding (to 2,048 at most), so c x h x w may pass
             * INT_MAX; no linear layer takes more than NN_MAX_FLAT inputs anyway. */
            if ((long long)s->c * s->h * s->w > NN_MAX_FLAT) {
                snprintf(msg, sizeof msg, "flattening %dx%dx%d gives more than %lld values", s->c,
                         s->h, s->w, (long long)NN_MAX_FLAT);
                return set_shape_error(n, i, err, msg);
            }
            s->c = s->c * s->h * s->w;
            s->h = s->w = 1;
            s->flat = 1;
            break;
        case NN_LAYER_LINEAR:
            if (!s->flat)
                return set_shape_error(n, i, err, "linear needs a flat input (add \"flatten\")");
            if ((long long)s->c * y->out > NN_MAX_FLAT)
                return set_shape_error(n, i, err, "linear layer too large");
            s->c = y->out;
            break;
        }
        if (out)
            out[i] = *s;
        i = next;
    }
    return 0;
}

int nn_network_shapes(const nn_network *n, const nn_transform *per_conv, nn_shape *in,
                      nn_shape *out, kt_error *err)
{
    nn_shape s = n->input;
    if (walk(n, per_conv, 0, n->nlayers, &s, in, out, err) < 0)
        return -1;
    if (!s.flat || s.c != n->classes)
        return kt_error_set(err, KT_ERR_CONFIG,
                            "the network must end flat with %d outputs (a linear layer)",
                            n->classes);
    return 0;
}

/* 1 when a bottleneck of conv layer i propagates: the next conv consumes its channels before any
 * residual add (neither a block starts nor an enclosing body ends on the way). */
static int bottleneck_ok(const nn_network *n, int i)
{
    for (int r = 0; r < i; r++) {
        const nn_layer *y = &n->layers[r];
        if (y->kind != NN_LAYER_RESIDUAL || i > r + y->body)
            continue;
        int conv_after = 0;
        for (int j = i + 1; j <= r + y->body; j++)
            conv_after |= n->layers[j].kind == NN_LAYER_CONV;
        if (!conv_after)
            return 0;
    }
    for (int j = i + 1; j < n->nlayers; j++) {
        if (n->layers[j].kind == NN_LAYER_CONV)
            return 1;
        if (n->layers[j].kind == NN_LAYER_RESIDUAL)
            return 0;
    }
    return 1;
}

static json_t *layers_json(const nn_network *n, int i, int end)
{
    json_t *arr = json_array();
    while (i < end) {
        const nn_layer *y = &n->layers[i];
        json_t *o = json_pack("{s:s}", "type", kind_name(y->kind));
        switch (y->kind) {
        case NN_LAYER_CONV:
            json_object_set_new(o, "name", json_string(y->name));
            json_object_set_new(o, "out", json_integer(y->out));
            json_object_set_new(o, "kernel", json_integer(y->kernel));
            json_object_set_new(o, "pad", json_integer(y->pad));
            break;
        case NN_LAYER_MAXPOOL:
        case NN_LAYER_AVGPOOL:
            json_object_set_new(o, "size", json_integer(y->size));
            break;
        case NN_LAYER_LINEAR:
            json_object_set_new(o, "out", json_integer(y->out));
            break;
        case NN_LAYER_RESIDUAL:
            json_object_set_new(o, "layers", layers_json(n, i + 1, i + 1 + y->body));
            break;
        default:
            break;
        }
        json_array_append_new(arr, o);
        i += y->kind == NN_LAYER_RESIDUAL ? 1 + y->body : 1;
    }
    return arr;
}

json_t *nn_network_json(const nn_network *n)
{
    return json_pack("{s:s, s:[i,i,i], s:i, s:o}", "name", n->name, "input", n->input.c, n->input.h,
                     n->input.w, "classes", n->classes, "layers", layers_json(n, 0, n->nlayers));
}

nn_network *nn_network_parse(const json_t *doc, kt_error *err)
{
    nn_network *n = NULL, *ret = NULL;
    nn_shape *in = NULL;
    static const char *const keys[] = {"name", "input", "classes", "layers", NULL};
    if (!json_is_object(doc)) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "a network must be a JSON object");
        goto done;
    }
    if (only_keys(doc, keys, "network", err) < 0)
        goto done;
    n = calloc(1, sizeof *n);
    in = calloc(NN_MAX_LAYERS, sizeof *in);
    if (!n || !in) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "network: out of memory");
        goto done;
    }
    const char *name = json_string_value(json_object_get(doc, "name"));
    if (!name || !name[0] || strlen(name) > NN_NAME_MAX) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "network: \"name\" must be 1 to %d characters",
                     NN_NAME_MAX);
        goto done;
    }
    snprintf(n->name, sizeof n->name, "%s", name);
    const json_t *input = json_object_get(doc, "input");
    int dims[3];
    for (int d = 0; d < 3; d++) {
        const json_t *v = json_array_get(input, (size_t)d);
        int hi = d == 0 ? NN_MAX_CHANNELS : NN_MAX_INPUT_SIDE;
        if (!json_is_array(input) || json_array_size(input) != 3 || !json_is_integer(v) ||
            json_integer_value(v) < 1 || json_integer_value(v) > hi) {
            kt_error_set(err, KT_ERR_BAD_REQUEST,
                         "network: \"input\" must be [channels, height, width] (channels at most "
                         "%d, sides at most %d)",
                         NN_MAX_CHANNELS, NN_MAX_INPUT_SIDE);
            goto done;
        }
        dims[d] = (int)json_integer_value(v);
    }
    n->input = (nn_shape){dims[0], dims[1], dims[2], 0};
    if (get_int(doc, "classes", 2, 1000, 0, &n->classes, "network", err) < 0)
        goto done;
    const json_t *layers = json_object_get(doc, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "network: \"layers\" must be a non-empty array");
        goto done;
    }
    if (parse_layers(n, layers, "", 0, err) < 0)
        goto done;
    if (n->nconvs == 0) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "network: no conv layer");
        goto done;
    }
    if (nn_network_shapes(n, NULL, in, NULL, err) < 0) {
        if (err)
            err->code = KT_ERR_BAD_REQUEST;
        kt_error_prefix(err, "network \"%s\"", n->name);
        goto done;
    }
    for (int c = 0; c < n->nconvs; c++) {
        int i = n->conv_layer[c];
        const nn_layer *y = &n->layers[i];
        nn_conv_shape *cs = &n->convs[c];
        /* memcpy, not snprintf: gcc -O1 (the sanitizer build) cannot tell the two apart. */
        size_t name_len = strnlen(y->name, sizeof cs->name - 1);
        memcpy(cs->name, y->name, name_len);
        cs->name[name_len] = '\0';
        cs->index = c;
        cs->C = in[i].c;
        cs->K = y->out;
        cs->H = in[i].h + 2 * y->pad;
        cs->W = in[i].w + 2 * y->pad;
        cs->R = cs->S = y->kernel;
        cs->pad = y->pad;
        for (int r = 0; r < i; r++)
            cs->in_residual |= n->layers[r].kind == NN_LAYER_RESIDUAL && i <= r + n->layers[r].body;
        cs->bottleneck_ok = bottleneck_ok(n, i);
    }
    json_t *canon = nn_network_json(n);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(canon);
    if (!text) {
        kt_error_set(err, KT_ERR_NO_MEMORY, "network: out of memory");
        goto done;
    }
    snprintf(n->hash, sizeof n->hash, "%016" PRIx64, kt_fnv1a(KT_FNV1A_OFFSET, text, strlen(text)));
    free(text);
    ret = n;
    n = NULL;
done:
    free(in);
    free(n);
    return ret;
}

nn_network *nn_network_load_file(const char *path, kt_error *err)
{
    size_t len = 0;
    nn_network *n = NULL;
    json_error_t je;
    char *text = kt_file_read_all(path, NN_NETWORK_FILE_MAX, &len, err);
    if (!text)
        return NULL;
    json_t *doc = json_loadb(text, len, 0, &je);
    if (!doc) {
        kt_error_set(err, KT_ERR_BAD_REQUEST, "%s:%d: %s", path, je.line, je.text);
    } else {
        n = nn_network_parse(doc, err);
        if (!n)
            kt_error_prefix(err, "%s", path);
    }
    json_decref(doc);
    free(text);
    return n;
}

void nn_network_free(nn_network *n)
{
    free(n);
}

const char *nn_network_name(const nn_network *n)
{
    return n->name;
}

const char *nn_network_hash(const nn_network *n)
{
    return n->hash;
}

int nn_network_conv_count(const nn_network *n)
{
    return n->nconvs;
}

int nn_network_conv(const nn_network *n, int i, nn_conv_shape *out)
{
    if (i < 0 || i >= n->nconvs)
        return -1;
    *out = n->convs[i];
    return 0;
}

int nn_network_find_conv(const nn_network *n, const char *name)
{
    for (int i = 0; name && i < n->nconvs; i++)
        if (strcmp(n->convs[i].name, name) == 0)
            return i;
    return -1;
}

int nn_network_layer_count(const nn_network *n)
{
    return n->nlayers;
}

const nn_layer *nn_network_layer(const nn_network *n, int i)
{
    return i >= 0 && i < n->nlayers ? &n->layers[i] : NULL;
}

nn_shape nn_network_input(const nn_network *n)
{
    return n->input;
}

int nn_network_classes(const nn_network *n)
{
    return n->classes;
}

int nn_network_transforms_valid(const nn_network *n, const nn_transform *per_conv, kt_error *err)
{
    if (!per_conv)
        return 1;
    for (int c = 0; c < n->nconvs; c++)
        if (per_conv[c].bottleneck > 1 && !n->convs[c].bottleneck_ok) {
            kt_error_set(err, KT_ERR_CONFIG,
                         "conv \"%s\": a bottleneck cannot apply (its output meets a residual "
                         "add)",
                         n->convs[c].name);
            return 0;
        }
    return nn_network_shapes(n, per_conv, NULL, NULL, err) == 0;
}

long long nn_network_params(const nn_network *n, const nn_transform *per_conv)
{
    nn_shape in[NN_MAX_LAYERS], out[NN_MAX_LAYERS];
    if (!nn_network_transforms_valid(n, per_conv, NULL) ||
        nn_network_shapes(n, per_conv, in, out, NULL) < 0)
        return -1;
    long long p = 0;
    for (int i = 0; i < n->nlayers; i++) {
        const nn_layer *y = &n->layers[i];
        if (y->kind == NN_LAYER_CONV) {
            nn_transform t = per_conv ? per_conv[y->conv] : nn_transform_identity();
            p += nn_transform_weights(&t, in[i].c, y->out, y->kernel, y->kernel);
        } else if (y->kind == NN_LAYER_BATCHNORM) {
            p += 2LL * in[i].c;
        } else if (y->kind == NN_LAYER_LINEAR) {
            p += (long long)in[i].c * y->out + y->out;
        }
    }
    return p;
}
